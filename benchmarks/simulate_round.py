"""What one round of ``sourcebias simulate`` costs against a full re-index + re-encode, per retriever.

The issue's target: a round adding 1% to a 100k-document synthetic corpus costs at most 0.2x a
full re-index + re-encode of that corpus, the ratio measured in one run.

A synthetic corpus (seeded): ``--docs`` documents of about 50 words (Poisson, mean 50) drawn from a
Zipfian vocabulary of pseudo-words (the generator of ``benchmarks/bm25_incremental.py``), source
``human``; then a round of ``--added`` documents (default 1%), source ``gen-round1``; ``--queries``
queries of 3-8 frequent words. For each retriever, in the same run:

* setup (not timed in the ratio, printed): the loop index of ``sourcebias simulate``
  (``sourcebias.simulate.indexes.loop_index``) holds the base corpus: BM25 as a segmented index;
  dense (``minilm``) with the base vectors encoded once into a temporary embedding store and
  held in memory;
* (i) the round: ``index.add(corpus, new positions)`` then ``index.rank(corpus, queries, 100, 0)``;
* (ii) the full path: the same retriever ranks the whole corpus afresh with
  ``retrieve(corpus, queries, 100, seed=0)``: BM25 re-analyses and re-indexes every document
  (its analyzer already warm from the same texts, as a simulation process's would be: this
  favours the full path); dense with ``cache=false`` (no store) re-encodes every document.
  The retrievers (and the encoder) are built before the clock starts, for both paths.

Prints the seconds of each path, the ratio round / full (target <= 0.2) and whether the two runs
agree: for BM25 positions and scores equal bit for bit; for dense the number of queries whose
top 100 is identical and the largest score difference (the round encodes the new documents in
other batches than the full pass, and batch padding moves float32 results by ~1e-7, which can
swap near-ties).

Dense size: MiniLM on one CPU thread encodes about 8-25 of these ~150-token documents per second,
so a 100k re-encode takes hours; ``--dense-docs`` (default 5,000 plus 1%) sets the dense corpus
separately; ``--dense-docs 100000 --device cuda`` measures the stated size on a GPU.

    OMP_NUM_THREADS=1 python benchmarks/simulate_round.py [--docs 100000] [--added N] [--queries 50]
        [--dense-docs 5000] [--retrievers bm25,minilm] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bm25_incremental import pseudo_words, synthetic_texts


def make_corpora(texts: list[str], n_base: int, n_added: int):
    """``(base corpus, base + added corpus, added positions)``; ids ``h<i>`` / ``g<i>``."""
    from sourcebias.data.corpus import Corpus, Document

    base = [Document(f"h{i}", "human", "", texts[i]) for i in range(n_base)]
    added = [Document(f"g{i}", "gen-round1", "", texts[n_base + i]) for i in range(n_added)]
    return Corpus.from_documents(base), Corpus.from_documents(base + added), list(range(n_base, n_base + n_added))


def compare(a, b) -> tuple[int, int, float]:
    """``(queries with identical positions, queries, largest |score difference| where identical)``."""
    same, diff = 0, 0.0
    for q in a.positions:
        pa, pb = np.asarray(a.positions[q]), np.asarray(b.positions.get(q, []))
        if pa.shape == pb.shape and np.array_equal(pa, pb):
            same += 1
            if len(pa):
                diff = max(diff, float(np.max(np.abs(np.asarray(a.scores[q], np.float64) - np.asarray(b.scores[q], np.float64)))))
    return same, len(a.positions), diff


def bench(spec: str, texts: list[str], n_base: int, n_added: int, queries: dict[str, str], device: str | None) -> dict:
    """Setup, round and full path of one retriever; the figures as a dict."""
    from sourcebias.retrieval import build_retriever
    from sourcebias.simulate.indexes import loop_index

    base, full, new_pos = make_corpora(texts, n_base, n_added)
    dense = spec != "bm25"
    opts = {"device": device} if (dense and device) else {}
    with tempfile.TemporaryDirectory(prefix="simround-store-") as store:
        t = time.perf_counter()
        index = loop_index(spec, spec, cache_dir=store if dense else None, device=device if dense else None)
        index.add(base, range(n_base))
        t_setup = time.perf_counter() - t
        rebuild = build_retriever(f"{spec},cache=false" if dense else spec, **opts)
        if dense:
            assert rebuild.cache_dir is None, "the full path must not read an embedding store"
            rebuild.embed(["warm up the encoder"], "query")
        else:
            rebuild.analyzer.to_ids(base.retrieval_texts(), {}, grow=True)  # warm, as in a simulation process
        print(f"{spec}: setup ({type(index).__name__}, update = {index.update!r}) holding {n_base:,} documents: {t_setup:.1f} s", flush=True)

        t = time.perf_counter()
        index.add(full, new_pos)
        run_round = index.rank(full, queries, 100, 0)
        t_round = time.perf_counter() - t
        print(f"{spec}: (i)  round: add {n_added:,} + rank {len(full):,}: {t_round:8.3f} s", flush=True)

        t = time.perf_counter()
        run_full = rebuild.retrieve(full, queries, 100, seed=0)
        t_full = time.perf_counter() - t
        print(f"{spec}: (ii) full re-{'encode' if dense else 'index'} + rank {len(full):,}: {t_full:8.3f} s", flush=True)
    same, n_q, diff = compare(run_round, run_full)
    print(
        f"{spec}: ratio round / full = {t_round / t_full:.4f} (target <= 0.2); "
        f"queries with identical top 100: {same}/{n_q}; largest score difference there: {diff:.3g}",
        flush=True,
    )
    return {"spec": spec, "docs": len(full), "setup": t_setup, "round": t_round, "full": t_full, "same": same, "queries": n_q, "diff": diff}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000, help="base documents for BM25")
    ap.add_argument("--added", type=int, default=None, help="documents a round adds (default 1%% of the base)")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--dense-docs", type=int, default=5_000, help="base documents for dense retrievers (see the docstring)")
    ap.add_argument("--retrievers", default="bm25,minilm")
    ap.add_argument("--device", default=None, help="encoder device for dense retrievers (cpu, cuda)")
    ap.add_argument("--vocabulary", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    print(
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, torch threads {torch.get_num_threads()}, "
        f"os.cpu_count() {os.cpu_count()}, device {args.device or 'default'}",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    words = pseudo_words(rng, args.vocabulary)
    n_max = max(args.docs, args.dense_docs)
    added_max = args.added if args.added is not None else max(n_max // 100, 1)
    texts = synthetic_texts(rng, words, n_max + added_max, mean_len=50)
    queries = {f"q{i}": " ".join(rng.choice(words[:5000], size=int(rng.integers(3, 9)))) for i in range(args.queries)}
    rows = []
    for spec in [s.strip() for s in args.retrievers.split(",") if s.strip()]:
        n_base = args.docs if spec == "bm25" else args.dense_docs
        n_added = args.added if args.added is not None else max(n_base // 100, 1)
        # the added documents are always the texts after the largest base, so sizes share them
        sub = texts[:n_base] + texts[n_max : n_max + n_added]
        rows.append(bench(spec, sub, n_base, n_added, queries, args.device))
    print("\nretriever   documents   setup s   round s    full s   round/full   identical top-100")
    for r in rows:
        print(
            f"{r['spec']:<10} {r['docs']:>10,} {r['setup']:>9.1f} {r['round']:>9.3f} {r['full']:>9.3f} {r['round'] / r['full']:>12.4f}   {r['same']}/{r['queries']}"
        )
    tr, tf = sum(r["round"] for r in rows), sum(r["full"] for r in rows)
    print(f"{'total':<10} {'':>10} {sum(r['setup'] for r in rows):>9.1f} {tr:>9.3f} {tf:>9.3f} {tr / tf:>12.4f}")
    bad = [r["spec"] for r in rows if r["spec"] == "bm25" and (r["same"] != r["queries"] or r["diff"] != 0.0)]
    if bad:
        raise SystemExit(f"the round's BM25 run differs from the full run's: {bad}")


if __name__ == "__main__":
    main()
