"""The cost of Lucene's one-byte length norms: sourcebias' Lucene BM25 (bit-exact with
Elasticsearch) against bm25s with exact lengths (the previous default), on the same term ids.

Index nfcorpus (both sources) and score every dev query, each way, in the same run; print the
times, the ratio and how much the rankings differ.

    OMP_NUM_THREADS=1 python benchmarks/bench_bm25_lucene.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(here.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument("--split", default="dev")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import bm25s

    from sourcebias.data import load_dataset
    from sourcebias.retrieval.lexical import EnglishAnalyzer
    from sourcebias.retrieval.lucene import LuceneBM25

    ds = load_dataset(args.dataset, split=args.split)
    analyzer = EnglishAnalyzer()
    vocab: dict[str, int] = {}
    docs = analyzer.to_ids(ds.corpus.retrieval_texts(), vocab, grow=True)
    qids = ds.evaluation_queries()
    queries = analyzer.to_ids([ds.queries[q] for q in qids], vocab, grow=False)
    print(f"{ds.name}: {len(docs):,} documents, {len(vocab):,} terms, {len(queries)} queries")

    def lucene():
        s = LuceneBM25(norms="lucene").index(docs, len(vocab))
        return s.score_batch(queries)

    def plain():
        m = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        m.index((docs, dict(vocab)), show_progress=False)
        return np.stack([m.get_scores(q) if q else np.zeros(len(docs), dtype=np.float32) for q in queries])

    t_l, t_p = [], []
    for _ in range(args.repeat):  # interleaved: both see the same machine load
        t = time.perf_counter()
        a = lucene()
        t_l.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = plain()
        t_p.append(time.perf_counter() - t)
    changed = np.mean([list(np.argsort(-a[i], kind="stable")[:10]) != list(np.argsort(-b[i], kind="stable")[:10]) for i in range(len(queries))])
    ml, mp = statistics.median(t_l), statistics.median(t_p)
    print(f"Lucene norms (sourcebias):   {ml:6.2f} s (median of {args.repeat}, index + score)")
    print(f"exact lengths (bm25s):       {mp:6.2f} s")
    print(f"ratio Lucene / bm25s = {ml / mp:.2f}")
    print(f"queries whose top 10 changes with the norms: {changed:.1%}")


if __name__ == "__main__":
    main()
