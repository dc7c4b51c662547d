"""What the LLM-call layer (:mod:`sourcebias.llmcalls`) costs on top of raw HTTP requests.

A :class:`~sourcebias.llmcalls.simulated.SimulatedServer` runs in a child process (so the
client's CPU time is measured alone) and answers every chat completion after ``--delay``
seconds (a stand-in for a model) with ``top_logprobs``. The same ``--calls`` requests
(distinct prompts, ``logprobs`` with 20 top tokens, ``max_tokens=1``) are sent

* raw: an httpx thread pool of ``--concurrency`` posting the request bodies and parsing the JSON;
* ours, cold: ``open_client("openai:sim@URL", concurrency=...)`` ``.answer(calls)`` with a fresh
  answer store (cache keys, retries, choice log-probabilities, one appended line per answer);
* ours, warm: the same calls again (all read from the store, no request).

It prints wall seconds, CPU seconds of this process and peak Python memory (tracemalloc) of
each, and the ratios ours/raw.

Usage:
    python benchmarks/bench_llmcalls_overhead.py [--calls 400] [--concurrency 4] [--delay 0.01]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import subprocess
import sys
import tempfile
import time
import tracemalloc

import httpx

SERVER = """
import sys, time, math
from sourcebias.llmcalls.simulated import SimulatedServer
delay = float(sys.argv[1])
def respond(messages, params):
    time.sleep(delay)
    return "Yes", [{"Yes": math.log(0.6), "No": math.log(0.3), "Maybe": math.log(0.05)}]
with SimulatedServer(respond) as url:
    print(url, flush=True)
    sys.stdin.read()
"""


def measure(fn):
    tracemalloc.start()
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, wall, cpu, peak


def raw(url: str, prompts: list[str], concurrency: int) -> list[float]:
    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=concurrency + 2)) as client:

        def one(p: str) -> float:
            body = {
                "model": "sim",
                "messages": [{"role": "user", "content": p}],
                "max_tokens": 1,
                "temperature": 0.0,
                "seed": 0,
                "logprobs": True,
                "top_logprobs": 20,
            }
            r = client.post(f"{url}/chat/completions", json=body)
            r.raise_for_status()
            top = r.json()["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            return next(e["logprob"] for e in top if e["token"] == "Yes")

        with cf.ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, prompts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.01)
    args = ap.parse_args()
    from sourcebias.llmcalls import open_client, user_call

    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(args.delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        prompts = [f"Is passage {i} relevant? Answer Yes or No." for i in range(args.calls)]
        calls = [user_call(p, max_tokens=1, choices=("Yes", "No")) for p in prompts]
        rows = [("raw httpx", *measure(lambda: raw(url, prompts, args.concurrency))[1:])]
        with tempfile.TemporaryDirectory() as cache:
            client = open_client(f"openai:sim@{url}", cache_dir=cache, concurrency=args.concurrency)
            cold = measure(lambda: client.answer(calls))
            warm = measure(lambda: client.answer(calls))
            assert all(a.choice_logprobs["Yes"] is not None for a in cold[0]) and all(a.cached for a in warm[0])
            rows += [("llmcalls, cold store", *cold[1:]), ("llmcalls, warm store", *warm[1:])]
            client.close()
    finally:
        proc.communicate("", timeout=10)
    print(f"{args.calls} calls, concurrency {args.concurrency}, server delay {args.delay * 1000:.0f} ms per call (server in a child process)")
    print(f"{'path':<22} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'wall/raw':>9} {'CPU/raw':>8}")
    base = rows[0]
    for name, wall, cpu, peak in rows:
        print(f"{name:<22} {wall:8.2f} {cpu:8.2f} {peak:9.1f} {wall / base[1]:9.2f} {cpu / base[2]:8.2f}")


if __name__ == "__main__":
    main()
