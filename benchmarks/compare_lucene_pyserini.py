"""sourcebias' embedded BM25 against real Lucene: top-10 scores document by document.

Real Lucene comes from Pyserini (Anserini's fat jar), installed in a throwaway virtual
environment outside the project; it is no dependency of sourcebias and no test imports this
script. Set-up (Debian; Pyserini 0.24.0 = Anserini 0.24.0 = Lucene 9.9.1)::

    apt-get update && apt-get install -y openjdk-17-jdk-headless   # if `java -version` is < 17
    python3 -m venv VENV                      # any folder outside the repository
    VENV/bin/pip install --no-deps pyserini==0.24.0
    VENV/bin/pip install pyjnius pandas tqdm scipy faiss-cpu "torch==2.13.0" \\
        transformers scikit-learn onnxruntime openai tiktoken   # torch: the CPU wheel, pinned

Then, from the repository with the project's own environment active::

    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 OPENAI_API_KEY=x   # pyserini imports openai
    OMP_NUM_THREADS=1 python benchmarks/compare_lucene_pyserini.py \\
        --pyserini-python VENV/bin/python ../shared/data/nq-utd:test ../shared/data/nfcorpus:dev

For each dataset the mixed corpus (every source, in the order sourcebias loads it, each document
its title and text joined as the lexical retrievers see it) is written as a JsonCollection and
indexed by Pyserini with one thread (so Lucene's internal document ids follow the corpus order)
and its default analyzer, Lucene's English chain (StandardTokenizer, EnglishPossessiveFilter,
LowerCaseFilter, the English stop set, PorterStemFilter: Elasticsearch's ``english``). The
evaluation queries are searched by Lucene's ``IndexSearcher`` with ``BM25Similarity(k1, b)``
(default 1.2 and 0.75, Elasticsearch's and sourcebias' ``bm25``) and Anserini's bag-of-words
query; each document of Lucene's top 10 is then compared with sourcebias' score of the same
document (``bm25``, the full score matrix): within the tolerance, and equal to the last bit.
``--all-queries`` searches every query of ``queries.jsonl`` (nfcorpus: all 3,237, other splits'
included); ``--keep DIR`` keeps Lucene's side for the next run.

Measured with sourcebias' current analyzer: every one of Lucene's top-10 documents scores the
same float32 value as ours, and every top 10 has the same documents in the same order —
nq-utd test 800 of 800 documents (80 queries), nfcorpus dev 2,832 of 2,832 (324 queries),
nfcorpus with all 3,237 queries 28,929 of 28,929; every document's terms equal Lucene's. ``--analysis`` also compares every
document's terms with Lucene's analyzer's and lists the terms that differ most often.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

# -- the Lucene side: run under the Pyserini interpreter, reads only files this script wrote --


def lucene_side(work: Path, k1: float, b: float, depth: int, analysis: bool) -> None:
    """Index with Pyserini, then search with Lucene's own ``IndexSearcher`` and
    ``BM25Similarity(k1, b)``: Pyserini's ``LuceneSearcher`` rounds scores to 4 decimals, and the
    comparison wants Lucene's float32 scores as they are."""
    from jnius import autoclass, cast
    from pyserini.analysis import get_lucene_analyzer

    index = work / "index"
    cmd = [
        sys.executable,
        "-m",
        "pyserini.index.lucene",
        "--collection",
        "JsonCollection",
        "--input",
        str(work / "docs"),
        "--index",
        str(index),
        "--generator",
        "DefaultLuceneDocumentGenerator",
        "--threads",
        "1",
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
        autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(str(index)).toPath())
    )
    searcher = autoclass("org.apache.lucene.search.IndexSearcher")(cast("org.apache.lucene.index.IndexReader", reader))
    searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(k1, b))
    analyzer = get_lucene_analyzer()  # Anserini's default: the English chain with Porter
    # Anserini's bag-of-words query: one SHOULD clause per distinct term, boosted by its count
    # (what Lucene's BooleanQuery.rewrite makes of Elasticsearch's match query's clauses)
    generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
    stored = reader.storedFields()
    with (work / "lucene.tsv").open("w", encoding="utf-8") as out:
        for line in (work / "queries.jsonl").open(encoding="utf-8"):
            q = json.loads(line)
            for hit in searcher.search(generator.buildQuery("contents", analyzer, q["text"]), depth).scoreDocs:
                out.write(f"{q['id']}\t{stored.document(hit.doc).get('id')}\t{float(hit.score)!r}\n")
    if analysis:
        from pyserini.analysis import Analyzer

        terms = Analyzer(analyzer)
        with (work / "lucene_terms.jsonl").open("w", encoding="utf-8") as out:
            for line in (work / "docs" / "docs.jsonl").open(encoding="utf-8"):
                d = json.loads(line)
                out.write(json.dumps({"id": d["id"], "terms": terms.analyze(d["contents"])}) + "\n")


# -- the sourcebias side --------------------------------------------------------------------


def write_inputs(work: Path, texts: list[str], queries: dict[str, str]) -> None:
    (work / "docs").mkdir(parents=True, exist_ok=True)
    with (work / "docs" / "docs.jsonl").open("w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            out.write(json.dumps({"id": str(i), "contents": text}) + "\n")
    with (work / "queries.jsonl").open("w", encoding="utf-8") as out:
        for qid, text in queries.items():
            out.write(json.dumps({"id": qid, "text": text}) + "\n")


def our_scores(corpus, queries: dict[str, str], k1: float, b: float) -> dict[str, np.ndarray]:
    """sourcebias' ``bm25`` scores of every document, per query (the retriever's score blocks)."""
    from sourcebias.retrieval.lexical import BM25

    scores: dict[str, np.ndarray] = {}
    for block in BM25(k1=k1, b=b).score(corpus, queries, depth=10):
        assert block.positions is None  # every document, in corpus order
        dense = block.scores.toarray() if hasattr(block.scores, "toarray") else block.scores  # sparse: the matching documents
        scores.update(zip(block.query_ids, dense))
    return scores


def compare_scores(work: Path, ours: dict[str, np.ndarray], tolerance: float) -> dict:
    rows = [line.rstrip("\n").split("\t") for line in (work / "lucene.tsv").open(encoding="utf-8")]
    n = within = equal = 0
    off: list[tuple[float, str, int, float, float]] = []
    for qid, doc, score in rows:
        mine, theirs = float(ours[qid][int(doc)]), float(score)
        n += 1
        equal += mine == theirs
        rel = abs(mine - theirs) / abs(theirs) if theirs else abs(mine)
        if rel <= tolerance:
            within += 1
        else:
            off.append((rel, qid, int(doc), theirs, mine))
    off.sort(reverse=True)
    # the top lists themselves: ours by score, ties by corpus position (Lucene: by internal id)
    lucene_top: dict[str, list[int]] = {}
    for qid, doc, _ in rows:
        lucene_top.setdefault(qid, []).append(int(doc))
    same_top = sum(np.argsort(-ours[q], kind="stable")[: len(docs)].tolist() == docs for q, docs in lucene_top.items())
    return {
        "documents": n,
        "within": within,
        "equal": equal,
        "off": off,
        "queries_off": len({o[1] for o in off}),
        "same_top": same_top,
        "queries": len(lucene_top),
    }


def compare_terms(work: Path, texts: list[str], top: int) -> None:
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    analyzer = EnglishAnalyzer()
    missing: Counter[str] = Counter()  # terms Lucene emits and we do not
    extra: Counter[str] = Counter()
    differ = 0
    for line in (work / "lucene_terms.jsonl").open(encoding="utf-8"):
        d = json.loads(line)
        theirs, mine = Counter(d["terms"]), Counter(analyzer(texts[int(d["id"])]))
        if theirs != mine:
            differ += 1
            missing.update(theirs - mine)
            extra.update(mine - theirs)
    print(f"  analysis: {differ:,} of {len(texts):,} documents' terms differ from Lucene's")
    print(f"    Lucene's terms we lack: {missing.most_common(top)}")
    print(f"    our terms Lucene lacks: {extra.most_common(top)}")


def run_dataset(spec: str, args: argparse.Namespace) -> dict:
    from sourcebias.data import load_dataset

    path, _, split = spec.rpartition(":") if ":" in spec else (spec, "", "test")
    ds = load_dataset(path, split=split)
    texts = ds.corpus.retrieval_texts()
    qids = list(ds.queries) if args.all_queries else ds.evaluation_queries()
    queries = {q: ds.queries[q] for q in qids}
    with tempfile.TemporaryDirectory(prefix="lucene-compare-") as tmp:
        work = Path(args.keep) / f"{ds.name}-{'all' if args.all_queries else split}" if args.keep else Path(tmp)
        if not (work / "lucene.tsv").exists() or (args.analysis and not (work / "lucene_terms.jsonl").exists()):
            write_inputs(work, texts, queries)
            cmd = [args.pyserini_python, __file__, "--lucene-side", str(work), "--k1", str(args.k1), "--b", str(args.b), "--depth", str(args.depth)]
            subprocess.run(cmd + (["--analysis"] if args.analysis else []), check=True)
        result = compare_scores(work, our_scores(ds.corpus, queries, args.k1, args.b), args.tolerance)
        print(f"{ds.name} ({'all queries' if args.all_queries else split}): {len(texts):,} documents, {len(qids)} queries")
        print(
            f"  Lucene's top {args.depth}: {result['documents']:,} documents; within {args.tolerance:.1%}: {result['within']:,} "
            f"({result['within'] / max(result['documents'], 1):.3%}); bit-equal float32: {result['equal']:,}; "
            f"off: {len(result['off'])} in {result['queries_off']} queries"
        )
        print(f"  queries whose top {args.depth} (documents and order) equal Lucene's: {result['same_top']} of {result['queries']}")
        for rel, qid, doc, theirs, mine in result["off"][: args.show]:
            print(f"    {qid:>12} {ds.corpus.source_of(doc)}/{ds.corpus.doc_ids[doc]}: Lucene {theirs:.6g}, ours {mine:.6g} ({rel:.2%})")
        if args.analysis:
            compare_terms(work, texts, args.show)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", help="PATH[:SPLIT] (split default test)")
    ap.add_argument("--pyserini-python", default=os.environ.get("PYSERINI_PYTHON"), help="the throwaway venv's interpreter (default: $PYSERINI_PYTHON)")
    ap.add_argument("--k1", type=float, default=1.2)
    ap.add_argument("--b", type=float, default=0.75)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=0.001, help="relative difference counted as equal (0.1%%)")
    ap.add_argument("--show", type=int, default=15, help="how many differing documents / terms to print")
    ap.add_argument("--all-queries", action="store_true", help="search every query of queries.jsonl, not only the split's judged ones")
    ap.add_argument("--analysis", action="store_true", help="also compare every document's terms with Lucene's")
    ap.add_argument(
        "--keep", help="keep Lucene's index and results in this folder and reuse them on the next run (for the same corpus, queries, k1, b and depth)"
    )
    ap.add_argument("--lucene-side", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lucene_side:
        lucene_side(args.lucene_side, args.k1, args.b, args.depth, args.analysis)
        return
    if not args.pyserini_python:
        ap.error("give --pyserini-python (or set $PYSERINI_PYTHON): the Pyserini venv's python")
    totals = [run_dataset(spec, args) for spec in args.datasets]
    n, within = sum(t["documents"] for t in totals), sum(t["within"] for t in totals)
    print(f"all: {within:,} of {n:,} top-{args.depth} documents within {args.tolerance:.1%} ({within / max(n, 1):.3%})")


if __name__ == "__main__":
    main()
