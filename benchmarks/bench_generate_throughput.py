"""Throughput of ``sourcebias generate`` over HTTP against the server's raw throughput.

Starts ``sourcebias serve --model smollm2`` on a loopback port, then for each concurrency
(default 1, 2, 4) sends the same requests (same documents, prompt, max_tokens, temperature and
per-document seeds) twice:

* raw: a thread pool posting the request bodies with httpx directly (no retries, no
  post-processing, no files) -- what the server can deliver;
* ours: :func:`sourcebias.generation.rewrite.rewrite_corpus` with the OpenAI backend (reading
  the corpus, prompts, retries, post-processing, appending + flushing each line, manifest).

It prints documents/s for both and the ratio ours/raw. Both paths get the same seeds, so the
server generates the same tokens in both (the completion-token totals are printed as a check).

Note on this machine (2 CPU cores, shared): the server answers one request at a time, so
concurrency does not raise its throughput; the ratio measures what sourcebias costs on top.

Usage:
    python benchmarks/bench_generate_throughput.py [--docs 12] [--max-tokens 16] [--concurrency 1 2 4] [--rounds 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import script_data

REPO = Path(__file__).resolve().parents[1]


def pick_documents(dataset: Path, n: int) -> list[dict]:
    return script_data.records(dataset, "corpus/human.jsonl")[:n]  # plain or gzip-compressed (the built-in nq-utd)


def raw_run(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    """Post every body with ``concurrency`` threads; return (seconds, completion tokens)."""
    with httpx.Client(timeout=600, limits=httpx.Limits(max_connections=concurrency + 2)) as client:

        def one(body: dict) -> int:
            r = client.post(f"{url}/chat/completions", json=body)
            r.raise_for_status()
            return int(r.json()["usage"]["completion_tokens"])

        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(concurrency) as pool:
            tokens = sum(pool.map(one, bodies))
        return time.perf_counter() - t0, tokens


def ours_run(url: str, corpus_dir: Path, settings, concurrency: int) -> tuple[float, int]:
    from sourcebias.generation.rewrite import resolve_target, rewrite_corpus
    from sourcebias.llmcalls.backends.openai import OpenAIBackend

    backend = OpenAIBackend([url], "smollm2", concurrency=concurrency, timeout=600)
    try:
        t0 = time.perf_counter()
        summary = rewrite_corpus(resolve_target(corpus_dir, "bench"), backend, settings, overwrite=True)
        seconds = time.perf_counter() - t0
    finally:
        backend.close()
    if summary.failed:
        raise RuntimeError(f"{summary.failed} documents failed")
    return seconds, summary.completion_tokens


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=None, help="an nq-utd folder (default: the one that ships with sourcebias; see script_data.py)")
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--max-tokens", type=int, default=16, help="fixed answer budget (min = max), so both paths generate the same tokens")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--rounds", type=int, default=1, help="repeat each measurement and report the median")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--threads", type=int, default=1, help="PyTorch threads of the server (1 is fastest on a shared 2-core CPU)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)

    from sourcebias.generation.prompts import load_prompt
    from sourcebias.generation.rewrite import RewriteSettings, document_seed

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from server_process import ServerProcess  # the test harness

    docs = pick_documents(args.dataset or script_data.folder("nq-utd"), args.docs)
    prompt = load_prompt("kdd")
    settings = RewriteSettings(prompt, min_new_tokens=args.max_tokens, max_new_tokens=args.max_tokens)
    bodies = [
        {
            "model": "smollm2",
            "messages": prompt.messages(d["text"], d.get("title", "")),
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": args.max_tokens,
            "seed": document_seed(settings.seed, d["_id"]),
        }
        for d in docs
    ]
    work = Path(tempfile.mkdtemp(prefix="sb-bench-"))
    (work / "corpus").mkdir()
    with (work / "corpus" / "human.jsonl").open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")

    print(f"Starting sourcebias serve --model {args.model} ...", file=sys.stderr)
    results = []
    with ServerProcess(args.model, extra_args=["--max-pending", "256", "--threads", str(args.threads)], log_path=work / "server.log") as server:
        raw_run(server.url, bodies[:1], 1)  # warm-up (first forward passes are slower)
        for c in args.concurrency:
            raw_t, ours_t = [], []
            for _ in range(args.rounds):
                t, raw_tokens = raw_run(server.url, bodies, c)
                raw_t.append(t)
                t, our_tokens = ours_run(server.url, work, settings, c)
                ours_t.append(t)
            raw_s, ours_s = statistics.median(raw_t), statistics.median(ours_t)
            row = {
                "concurrency": c,
                "documents": len(docs),
                "raw_docs_per_s": len(docs) / raw_s,
                "ours_docs_per_s": len(docs) / ours_s,
                "ratio_ours_to_raw": raw_s / ours_s,
                "raw_completion_tokens": raw_tokens,
                "ours_completion_tokens": our_tokens,
                "raw_seconds": raw_t,
                "ours_seconds": ours_t,
            }
            results.append(row)
            print(
                f"concurrency {c}: raw {row['raw_docs_per_s']:.3f} docs/s, sourcebias {row['ours_docs_per_s']:.3f} docs/s, ours/raw {row['ratio_ours_to_raw']:.3f} (tokens {raw_tokens} vs {our_tokens})",
                file=sys.stderr,
            )

    print(
        f"\n{len(docs)} nq-utd documents, max_tokens {args.max_tokens}, SmolLM2-135M on `sourcebias serve --threads {args.threads}` (CPU, {os.cpu_count()} cores), median of {args.rounds} round(s)"
    )
    print("| concurrency | raw httpx docs/s | sourcebias docs/s | ours / raw |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['concurrency']} | {r['raw_docs_per_s']:.3f} | {r['ours_docs_per_s']:.3f} | {r['ratio_ours_to_raw']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    script_data.run(main)
