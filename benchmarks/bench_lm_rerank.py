"""Benchmark: throughput of the causal-LM re-ranker (``lm:``) by batching mode.

Scores the same (query, document) pairs — BM25's top ``--depth`` on the mixed NQ-UTD corpus
for the first ``--queries`` queries — three ways, with one loaded model:

* ``unbatched``: one pair per forward pass, whole ``prompt + query`` sequence;
* ``batched``: ``--batch-size`` pairs per pass, whole sequences, left-padded;
* ``shared-prefix`` (the default mode): each distinct document's prompt runs once per batch of
  documents and its key/value cache serves all of that document's queries.

It prints pairs per second for each mode and the largest score difference from the unbatched
scores (float rounding only). Every mode scores the same pairs (no memo is involved).

    python benchmarks/bench_lm_rerank.py [--dataset ../shared/data/nq-utd] [--queries 8] [--depth 20] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=str(here.parent / "shared" / "data" / "nq-utd"))
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch

    from sourcebias.data import load_dataset
    from sourcebias.retrieval import BM25
    from sourcebias.retrieval.rerank import CausalLMReranker

    ds = load_dataset(args.dataset, split="test")
    qids = ds.evaluation_queries()[: args.queries]
    queries = {q: ds.queries[q] for q in qids}
    run = BM25().retrieve(ds.corpus, queries, args.depth)
    texts = ds.corpus.retrieval_texts()
    qs = [queries[q] for q in qids for _ in run.positions[q]]
    docs = [texts[i] for q in qids for i in run.positions[q]]
    lm = CausalLMReranker(args.model, batch_size=args.batch_size, device=args.device)
    t0 = time.perf_counter()
    lm._ensure_loaded()
    print(f"{args.model}: loaded in {time.perf_counter() - t0:.1f} s; torch threads {torch.get_num_threads()}; "
          f"{len(qs)} pairs ({len(set(docs))} distinct documents), {len(qids)} queries x top {args.depth}")

    results = {}
    for mode, batch, shared in (("unbatched", 1, False), ("batched", args.batch_size, False), ("shared-prefix", args.batch_size, True)):
        lm.batch_size, lm._prefix_ok = batch, shared
        t0 = time.perf_counter()
        scores = lm.score_pairs(qs, docs)
        dt = time.perf_counter() - t0
        results[mode] = scores
        diff = np.abs(scores - results["unbatched"]).max()
        print(f"{mode:>14}: {dt:7.1f} s  {len(qs) / dt:6.2f} pairs/s  max |score - unbatched| = {diff:.1e}")


if __name__ == "__main__":
    main()
