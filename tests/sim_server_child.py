"""A :class:`~sourcebias.llmcalls.simulated.SimulatedServer` in a child process (so that it can be
killed with -9 and restarted, and so that its CPU is not the client's): ``python
sim_server_child.py --port P [--latency S] [--parallel K] [--model M]``. It answers with
:func:`respond` and serves until killed. Used by the fault and pool tests
(:class:`server_process.SimulatedProcess`) and by the client benchmarks; not part of the package."""

from __future__ import annotations

import argparse
import hashlib
import math
import threading


def respond(messages, params):
    """The last message upper-cased, and Yes/No log-probabilities drawn from its digest: a
    deterministic answer, different for every prompt (so a call answered with another call's
    answer is seen)."""
    text = messages[-1]["content"] if messages else "plain"
    p = 0.05 + 0.9 * int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    return text.upper(), [{"Yes": math.log(p), "No": math.log(1 - p)}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--parallel", type=int, default=None)
    ap.add_argument("--model", default="sim")
    args = ap.parse_args()
    from sourcebias.llmcalls.simulated import SimulatedServer

    with SimulatedServer(respond, model=args.model, port=args.port, latency=args.latency, parallel=args.parallel) as url:
        print(url, flush=True)
        threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()
