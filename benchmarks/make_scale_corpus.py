"""Make a mixed corpus of any size with MS MARCO's shape, in the Cocktail layout, from real text.

Why: every measurement of sourcebias ran on corpora of at most 7,266 documents, while Cocktail's
flagship dataset (MS MARCO) has 542,203 passages per source and 6,979 queries. The real MS MARCO
cannot be downloaded here, so this script builds a stand-in with the shape that decides BM25's cost:

* passages of ~58 words on average (MS MARCO's mean; lengths drawn from a gamma distribution with
  that mean and a spread like MS MARCO's, 10 to 200 words), no titles;
* each human passage has an LLM twin with the same ``_id``, whose length is the human length times
  a ratio drawn from the per-twin length ratios of the development corpora (``../shared/data``'s
  nfcorpus and nq-utd, LLM words / human words), so the mixed corpus has Cocktail's length ratio;
* the words are real: human passages are made of sentences resampled from the development corpora's
  human documents and twins of sentences from their LLM documents, so tokenisation, stop words and
  Porter stemming cost what they cost on real passages (the vocabulary is that of the development
  corpora, ~40k terms, smaller than MS MARCO's: posting lists are longer than MS MARCO's would be);
* 6,979 queries (MS MARCO dev's count) with about one judged passage each (1.065 on average, as in
  MS MARCO dev): each query is a few words (lengths of the development corpora's queries) drawn from
  its judged human passage, so BM25 finds something and the measures are not all zero.

Deterministic from ``--seed``: the same arguments write byte-identical files. Written to the folder
given (outside the repository), in the layout every command reads::

    OUT/corpus/human.jsonl, OUT/corpus/llama-2-7b-chat-tmp0.2.jsonl   {"_id", "title", "text"}
    OUT/queries.jsonl                                                   {"_id", "text"}
    OUT/qrels/test.tsv                                                  query-id corpus-id score

    python benchmarks/make_scale_corpus.py OUT --docs 1084406 [--queries 6979] [--seed 0] [--data DIR]

The development corpora are found as ``benchmarks/script_data.py`` says (nq-utd ships with
sourcebias; nfcorpus after ``sourcebias download nfcorpus``), or in ``--data DIR``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np
import script_data

SOURCES = ("human", "llama-2-7b-chat-tmp0.2")
DEV_DATASETS = ("nfcorpus", "nq-utd")
MEAN_WORDS = 58.0  # MS MARCO passages: 58 words on average (Cocktail's Table 1 and MS MARCO v1)
SHAPE = 4.0  # gamma shape: sd = mean / 2, about MS MARCO's spread of passage lengths
SECOND_JUDGED = 0.065  # MS MARCO dev: 7,437 relevance judgements for 6,980 queries
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


def read_jsonl(path: Path) -> list[dict]:
    path = path if path.exists() else path.with_name(path.name + ".gz")  # the built-in nq-utd is compressed
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_pools(data: Path | None) -> tuple[list[list[str]], list[float], list[int]]:
    """Sentence pools (human, LLM) as word lists, the per-twin length ratios and real query lengths."""
    pools: list[list[str]] = [[], []]
    ratios: list[float] = []
    qlens: list[int] = []
    for name in DEV_DATASETS:
        folder = data / name if data is not None else script_data.folder(name)
        docs = [{d["_id"]: d for d in read_jsonl(folder / "corpus" / f"{s}.jsonl")} for s in SOURCES]
        for k, corpus in enumerate(docs):
            for d in corpus.values():
                pools[k].extend(s for s in SENTENCE_END.split(" ".join(d["text"].split())) if len(s.split()) >= 3)
        for i, h in docs[0].items():
            if i in docs[1] and (nh := len(h["text"].split())) >= 10:
                ratios.append(len(docs[1][i]["text"].split()) / nh)
        qlens += [len(q["text"].split()) for q in read_jsonl(folder / "queries.jsonl")]
    return [sorted(set(p)) for p in pools], sorted(ratios), sorted(qlens)


def passage(rng: np.random.Generator, pool: list[str], words: int) -> str:
    """Whole sentences drawn from the pool until ``words`` words, the last cut at that word."""
    out: list[str] = []
    while len(out) < words:
        out += pool[int(rng.integers(len(pool)))].split()
    return " ".join(out[:words])


def write_corpora(out: Path, n: int, rng: np.random.Generator, pools: list[list[str]], ratios: list[float]) -> list[str]:
    """Write both sources' corpora; return the human texts (the queries are drawn from them)."""
    lengths = np.clip(np.rint(rng.gamma(SHAPE, MEAN_WORDS / SHAPE, n)), 10, 200).astype(int)
    twin_lengths = np.clip(np.rint(lengths * rng.choice(np.asarray(ratios), n)), 5, 400).astype(int)
    humans: list[str] = []
    (out / "corpus").mkdir(parents=True, exist_ok=True)
    width = len(str(n - 1))
    with (out / "corpus" / f"{SOURCES[0]}.jsonl").open("w", encoding="utf-8") as fh, (out / "corpus" / f"{SOURCES[1]}.jsonl").open("w", encoding="utf-8") as ft:
        for i in range(n):
            doc_id = f"P{i:0{width}d}"
            text = passage(rng, pools[0], int(lengths[i]))
            humans.append(text)
            fh.write(json.dumps({"_id": doc_id, "title": "", "text": text}) + "\n")
            ft.write(json.dumps({"_id": doc_id, "title": "", "text": passage(rng, pools[1], int(twin_lengths[i]))}) + "\n")
    return humans


def write_queries(out: Path, humans: list[str], n_queries: int, rng: np.random.Generator, qlens: list[int]) -> int:
    """Queries of a few words from their judged passage; qrels with ~1.065 judged passages each."""
    n = len(humans)
    width, qwidth = len(str(n - 1)), len(str(n_queries - 1))
    judged = rng.choice(n, size=n_queries, replace=n_queries > n)
    rows = 0
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fq, (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as fr:
        fr.write("query-id\tcorpus-id\tscore\n")
        for k, j in enumerate(judged):
            words = sorted(set(WORD.findall(humans[int(j)].lower())))
            size = min(len(words), int(np.clip(qlens[int(rng.integers(len(qlens)))], 3, 12)))
            text = " ".join(words[int(w)] for w in rng.permutation(len(words))[:size])
            qid = f"Q{k:0{qwidth}d}"
            fq.write(json.dumps({"_id": qid, "text": text}) + "\n")
            extra = [int(rng.integers(n))] if rng.random() < SECOND_JUDGED else []
            for d in dict.fromkeys([int(j), *extra]):
                fr.write(f"{qid}\tP{d:0{width}d}\t1\n")
                rows += 1
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder to write (refused if it holds a corpus already)")
    ap.add_argument("--docs", type=int, required=True, help="documents in the mixed corpus (two per passage); MS MARCO: 1084406")
    ap.add_argument("--queries", type=int, default=6979)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=None, help="a folder holding nfcorpus/ and nq-utd/ (default: the datasets known by name)")
    args = ap.parse_args()
    if not 2 <= args.docs <= 1_100_000:
        sys.exit(f"--docs must be between 2 and 1,100,000, got {args.docs}")
    if (args.out / "corpus").exists():
        sys.exit(f"{args.out} already holds a corpus; give an empty or new folder")
    pools, ratios, qlens = load_pools(args.data)
    rng = np.random.default_rng(args.seed)
    humans = write_corpora(args.out, args.docs // 2, rng, pools, ratios)
    rows = write_queries(args.out, humans, args.queries, rng, qlens)
    (args.out / "SHAPE.json").write_text(
        json.dumps(
            {
                "docs_per_source": len(humans),
                "queries": args.queries,
                "judgements": rows,
                "seed": args.seed,
                "sentences": {"human": len(pools[0]), "llm": len(pools[1])},
                "twin_length_ratio_mean": float(np.mean(ratios)),
                "twin_pairs_measured": len(ratios),
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {len(humans):,} passages per source, {args.queries:,} queries, {rows:,} judgements to {args.out}")


if __name__ == "__main__":
    script_data.run(main)
