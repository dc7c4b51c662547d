"""What does a zero-shot detector cost in an audit? The documents of an audit of 80 queries × top 10
(BM25 on nq-utd: every document in a top 10) are scored by each detector, on a seeded sample of
them, with empty caches; the time is set against a bare forward pass of the same LM over the same
texts, truncated the same way (the perplexity scorer: one pass, target log-probabilities only).

    python benchmarks/bench_detect_cost.py [--sample 24] [--max-tokens 64] [--detector SPEC ...]

Prints, per detector: seconds per text, the ratio to the bare pass, and the extrapolated time of
the whole audit's documents on this machine (CPU unless a GPU is there). Run it under the same load
as what it is compared with: on a shared CPU every figure moves with the load, the ratio less.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import script_data

DEFAULT = ("fast-detectgpt:lm:smollm2", "fast-detectgpt:lm:gemma3-270m", "raidar:smollm2")


def audit_texts(dataset: str, queries: int) -> list[str]:
    from sourcebias.audit.analysis import audit_positions
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate, parse_measure
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(dataset)
    res = evaluate(ds, [build_retriever("bm25")], measures=[parse_measure("NDCG@10")])
    run = next(r for k, r in res.runs.items() if k.setting == "mixed")
    keep = run.query_ids[:queries]
    positions = audit_positions({"bm25": type(run)(run.corpus, run.name, {q: run.positions[q] for q in keep}, {q: run.scores[q] for q in keep})}, 10)
    return [run.corpus.texts[int(p)] for p in positions]


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bare_pass(model: str, texts: list[str], max_tokens: int, cache: str) -> float:
    from sourcebias.analysis.perplexity import CausalPerplexity

    lm = CausalPerplexity(model, max_tokens=max_tokens, cache_dir=cache)
    _ = lm.scorer  # load outside the clock
    return timed(lambda: lm.encode_documents(texts))


def detector_time(spec: str, texts: list[str], max_tokens: int, cache: str) -> float:
    from sourcebias.detect import build_detector

    if spec.startswith("raidar:"):
        det = build_detector(f"{spec},max_words={max_tokens * 3 // 4},max_new_tokens={max_tokens + 16}", cache_dir=cache, threads=1)
    else:
        det = build_detector(f"{spec},max_tokens={max_tokens}", cache_dir=cache)
        _ = det.engine.scorers  # load outside the clock
    return timed(lambda: det.score_texts(texts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--queries", type=int, default=80)
    ap.add_argument("--sample", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--detector", action="append")
    args = ap.parse_args()
    texts = audit_texts(args.dataset, args.queries)
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in sorted(rng.permutation(len(texts))[: args.sample])]
    print(
        f"audit of {args.queries} queries × top 10 on {Path(args.dataset).name}: {len(texts):,} documents; timed on a sample of {len(sample)}, {args.max_tokens} tokens, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    print("| detector | s/text | bare forward pass s/text | ratio | whole audit (extrapolated) |")
    print("|---|---:|---:|---:|---:|")
    for spec in args.detector or DEFAULT:
        with tempfile.TemporaryDirectory() as cache:
            from sourcebias.core.cache import default_cache_dir

            for sub in ("gguf", "gguf-src"):  # converted models are shared; values and rewrites start empty
                (default_cache_dir() / sub).mkdir(parents=True, exist_ok=True)
                os.symlink(default_cache_dir() / sub, Path(cache) / sub)
            model = spec.split(":")[-1].split("+")[0]
            det = detector_time(spec, sample, args.max_tokens, cache)
            bare = bare_pass(model, sample, args.max_tokens, cache)
        n = len(sample)
        print(f"| {spec} | {det / n:.3f} | {bare / n:.3f} | {det / bare:.1f}× | {det / n * len(texts) / 60:.1f} min |", flush=True)


if __name__ == "__main__":
    script_data.run(main)
