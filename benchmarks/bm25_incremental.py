"""What one round of ``sourcebias simulate`` costs BM25: rebuilding the index against appending
to a segmented one (sourcebias.retrieval.segments.SegmentedBM25), on the same texts.

A synthetic corpus (seeded): 100,000 documents of about 60 words drawn from a Zipfian vocabulary
of pseudo-words, then a round of 1,000 new documents and 50 queries. Timed, interleaved, in one
run:

(i)  rebuild: analyze all 101,000 documents and index them with LuceneBM25 (what the BM25
     retriever does), then score the 50 queries;
(ii) append: a SegmentedBM25 already holding the 100,000 documents adds the 1,000 and scores the
     same 50 queries.

Both analyzers have already seen the 100,000 documents (the rebuild's analyzer is warm, as it
would be in a simulation's process: the comparison favours the rebuild). Prints the median
times, the ratio append / rebuild (target at most 0.2) and whether the scores are equal bit for
bit.

    OMP_NUM_THREADS=1 python benchmarks/bm25_incremental.py [--docs 100000] [--new 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np


def pseudo_words(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct lower-case pseudo-words of two to four consonant-vowel syllables."""
    cons, vows = list("bcdfghjklmnprstvz"), list("aeiou")
    words: set[str] = set()
    while len(words) < n:
        k = int(rng.integers(2, 5))
        words.add("".join(cons[int(rng.integers(len(cons)))] + vows[int(rng.integers(len(vows)))] for _ in range(k)))
    return sorted(words)


def synthetic_texts(rng: np.random.Generator, words: list[str], n_docs: int, mean_len: int = 60, zipf_s: float = 1.07) -> list[str]:
    """Documents of Poisson(mean_len) words (at least one), word ranks Zipfian with exponent ``zipf_s``."""
    p = 1.0 / np.arange(1, len(words) + 1) ** zipf_s
    p /= p.sum()
    lengths = np.maximum(rng.poisson(mean_len, n_docs), 1)
    draws = rng.choice(len(words), size=int(lengths.sum()), p=p)
    vocab = np.asarray(words, dtype=object)
    out, pos = [], 0
    for n in lengths:
        out.append(" ".join(vocab[draws[pos : pos + n]]))
        pos += n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--new", type=int, default=1_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--vocabulary", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from sourcebias.retrieval.lexical import EnglishAnalyzer
    from sourcebias.retrieval.lucene import LuceneBM25
    from sourcebias.retrieval.segments import SegmentedBM25

    rng = np.random.default_rng(args.seed)
    words = pseudo_words(rng, args.vocabulary)
    texts = synthetic_texts(rng, words, args.docs + args.new)
    old, new = texts[: args.docs], texts[args.docs :]
    queries = [" ".join(rng.choice(words[:5000], size=int(rng.integers(3, 9)))) for _ in range(args.queries)]

    t = time.perf_counter()
    base = SegmentedBM25()
    base.add(old)
    t_base = time.perf_counter() - t
    rebuild_analyzer = EnglishAnalyzer()
    rebuild_analyzer.to_ids(old, {}, grow=True)  # warm, as a rebuild in the same process would be
    n_terms = len(base.vocab)
    print(
        f"{len(texts):,} documents ({args.docs:,} + {args.new:,}), {n_terms:,} terms in the first {args.docs:,}, "
        f"{sum(len(s.docs) for s in base.segments):,} postings; {args.queries} queries; first index built in {t_base:.1f} s"
    )

    def rebuild() -> np.ndarray:
        vocab: dict[str, int] = {}
        docs = rebuild_analyzer.to_ids(texts, vocab, grow=True)
        q = rebuild_analyzer.to_ids(queries, vocab, grow=False)
        return LuceneBM25(norms="lucene").index(docs, len(vocab)).score_batch(q)

    def fresh_copy() -> SegmentedBM25:  # the index holding the first documents, untouched by earlier repeats
        idx = copy.copy(base)
        idx.vocab, idx.segments, idx._df = dict(base.vocab), list(base.segments), base._df.copy()
        return idx

    t_r, t_a = [], []
    for _ in range(args.repeat):  # interleaved: both see the same machine load
        t = time.perf_counter()
        a = rebuild()
        t_r.append(time.perf_counter() - t)
        idx = fresh_copy()
        t = time.perf_counter()
        idx.add(new)
        b = idx.score_batch(queries)
        t_a.append(time.perf_counter() - t)
    equal = a.shape == b.shape and np.array_equal(a.view(np.int32), b.view(np.int32))
    mr, ma = statistics.median(t_r), statistics.median(t_a)
    print(f"(i)  rebuild {len(texts):,} + score:          {mr:7.3f} s (median of {args.repeat})")
    print(f"(ii) append {args.new:,} to {args.docs:,} + score:   {ma:7.3f} s")
    print(f"ratio append / rebuild = {ma / mr:.3f} (target <= 0.2)")
    print(f"scores equal bit for bit: {equal}")
    if not equal:
        raise SystemExit("the appended index's scores differ from the rebuilt one's")


if __name__ == "__main__":
    main()
