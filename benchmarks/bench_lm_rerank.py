"""Benchmark: throughput of the causal-LM re-ranker (``lm:``) by batching mode.

Scores the same (query, document) pairs three ways, with one loaded model. The pairs are those
of the real workload — BM25's top ``--depth`` (100) on the mixed NQ-UTD corpus for every query —
restricted to ``--docs`` documents drawn at random (seeded), so each document comes with as
many queries as in a full evaluation (about 5 at depth 100):

* ``unbatched``: one pair per forward pass, whole ``prompt + query`` sequence;
* ``batched``: ``--batch-size`` pairs per pass, whole sequences, left-padded;
* ``shared-prefix`` (the default mode): each distinct document's prompt runs once per batch of
  documents and its key/value cache serves all of that document's queries.

It prints pairs per second for each mode and the largest score difference from the unbatched
scores (float rounding only). Every mode scores the same pairs (no memo is involved).

    python benchmarks/bench_lm_rerank.py [--dataset DIR] [--docs 30] [--depth 100] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--docs", type=int, default=30)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch

    from sourcebias.data import load_dataset
    from sourcebias.retrieval import BM25
    from sourcebias.retrieval.rerankers.causal_lm import CausalLMReranker

    ds = load_dataset(args.dataset, split="test")
    qids = ds.evaluation_queries()
    queries = {q: ds.queries[q] for q in qids}
    run = BM25().retrieve(ds.corpus, queries, args.depth)
    texts = ds.corpus.retrieval_texts()
    retrieved = sorted({int(i) for q in qids for i in run.positions[q]})
    chosen = set(np.random.default_rng(args.seed).choice(retrieved, size=min(args.docs, len(retrieved)), replace=False).tolist())
    pairs = [(queries[q], texts[i]) for q in qids for i in run.positions[q].tolist() if i in chosen]
    qs, docs = [q for q, _ in pairs], [d for _, d in pairs]
    lm = CausalLMReranker(args.model, batch_size=args.batch_size, device=args.device)
    t0 = time.perf_counter()
    lm._ensure_loaded()
    print(
        f"{args.model}: loaded in {time.perf_counter() - t0:.1f} s; torch threads {torch.get_num_threads()}; "
        f"{len(qs)} pairs: {len(set(docs))} documents of BM25's top {args.depth} with all their queries"
    )

    results = {}
    for mode, batch, shared in (("unbatched", 1, False), ("batched", args.batch_size, False), ("shared-prefix", args.batch_size, True)):
        lm._scorer.batch_size, lm._scorer._prefix_ok = batch, shared
        t0 = time.perf_counter()
        scores = lm.score_pairs(qs, docs)
        dt = time.perf_counter() - t0
        results[mode] = scores
        diff = np.abs(scores - results["unbatched"]).max()
        print(f"{mode:>14}: {dt:7.1f} s  {len(qs) / dt:6.2f} pairs/s  max |score - unbatched| = {diff:.1e}")


if __name__ == "__main__":
    script_data.run(main)
