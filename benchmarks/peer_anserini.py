"""Lucene (Anserini's own indexer and searcher) + pytrec_eval doing `sourcebias evaluate -r bm25`'s work.

The work is ``peer_bm25s.py``'s: load the Cocktail layout; BM25 with k1=1.2, b=0.75 and Lucene's
English analyzer (Anserini's default: StandardTokenizer, possessives, lower case, English stop
words, Porter); index and rank the mixed corpus and each sole corpus, top 1000; NDCG/MAP/Recall/P at
1, 3, 5, 10 with trec_eval for each target; the TREC runs and a metrics table written.

How: the corpora are written as Anserini ``JsonCollection`` folders (``{"id", "contents"}``, the
title and text joined as sourcebias joins them; the mixed corpus is a folder linking both files) and
the queries as a TSV topic file; then one JVM (``AnseriniSide.java``) runs Anserini's
``IndexCollection`` three times and ``SearchCollection`` three times (``-bm25 -bm25.k1 1.2 -bm25.b
0.75 -hits 1000``), each with one thread (``-threads 1``), the serial garbage collector and the heap
given (``--heap``); Anserini writes the runs (scores rounded to 4 decimals, ties ordered by document
id: its ``ScoreTiesAdjusterReranker``); pytrec_eval scores them as the other sides do.

Set-up (nothing of it is a dependency of sourcebias): Java 17, and Anserini's fat jar, which
Pyserini's wheel ships (``pip download --no-deps pyserini==0.24.0``, then unzip
``pyserini/resources/jars/anserini-0.24.0-fatjar.jar``); ``bench_bm25_scale.py --anserini-jar``
compiles ``AnseriniSide.java`` once and runs this script. Prints one JSON line of the phases' wall
and CPU seconds (load, JVM start, analyse + index, rank + write the runs, score, write)::

    python benchmarks/peer_anserini.py DATASET SPLIT OUT --jar JAR --classes DIR [--heap 1g]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from peer_bm25s import PHASES, SCORED_DEPTH, SOURCES, load, phase, score_setting


def write_collections(work: Path, args: argparse.Namespace) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The corpora as JsonCollection folders (the mixed one links both files), the topics as TSV."""
    docs, queries, qrels, qids = load(args.dataset, args.split)
    for s in SOURCES:
        folder = work / "docs" / s
        folder.mkdir(parents=True)
        with (folder / "docs.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"id": f"{s}/{d['_id']}", "contents": (d.get("title") or "") + " " + d["text"]}) + "\n" for d in docs[s])
        (work / "docs" / "mixed").mkdir(exist_ok=True)
        os.symlink(folder / "docs.jsonl", work / "docs" / "mixed" / f"{s}.jsonl")
    with (work / "topics.tsv").open("w", encoding="utf-8") as fh:
        fh.writelines(f"{q}\t{' '.join(queries[q].split())}\n" for q in qids)
    return qids, qrels


def plan(work: Path, out: Path, memory_mb: int) -> str:
    lines = []
    for setting in ("mixed", *SOURCES):
        index = ["-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator", "-input", str(work / "docs" / setting)]
        index += ["-index", str(work / "index" / setting), "-threads", "1", "-memoryBuffer", str(memory_mb), "-quiet"]
        lines.append("\t".join(["index", "io.anserini.index.IndexCollection", *index]))
    for setting in ("mixed", *SOURCES):
        search = ["-index", str(work / "index" / setting), "-topics", str(work / "topics.tsv"), "-topicReader", "TsvString"]
        search += ["-output", str(out / f"anserini.{setting}.trec"), "-bm25", "-bm25.k1", "1.2", "-bm25.b", "0.75", "-hits", "1000"]
        search += ["-threads", "1", "-parallelism", "1", "-arbitraryScoreTieBreak", "-runtag", "anserini"]
        lines.append("\t".join(["rank", "io.anserini.search.SearchCollection", *search]))
    return "\n".join(lines) + "\n"


def read_run(path: Path, depth: int) -> dict[str, dict[str, float]]:
    """The run file's top ``depth`` documents per query (trec_eval reads no deeper for the measures)."""
    run: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            q, _, d, r, s, _ = line.split()
            if int(r) <= depth:
                run.setdefault(q, {})[d] = float(s)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", type=Path)
    ap.add_argument("split")
    ap.add_argument("out", type=Path)
    ap.add_argument("--jar", required=True, help="Anserini's fat jar")
    ap.add_argument("--classes", required=True, help="the folder holding the compiled AnseriniSide.class")
    ap.add_argument("--heap", default="1g", help="the JVM's -Xmx (and -Xms)")
    ap.add_argument(
        "--memory-buffer", type=int, default=256, help="IndexCollection's -memoryBuffer, MB (default 256; Anserini's own 4096 exceeds a sized heap)"
    )
    ap.add_argument("--java", default="java")
    args = ap.parse_args()
    start = time.process_time()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "anserini-work"
    shutil.rmtree(work, ignore_errors=True)
    with phase("load"):
        import numpy as np  # noqa: F401 (imported here so that the load phase holds the imports)
        import pytrec_eval  # noqa: F401 (imported here so that the load phase holds the imports)

        qids, qrels = write_collections(work, args)
        (work / "plan.tsv").write_text(plan(work, args.out, args.memory_buffer), encoding="utf-8")
    java = [
        args.java,
        "-XX:+UseSerialGC",
        f"-Xms{args.heap}",
        f"-Xmx{args.heap}",
        "-cp",
        f"{args.jar}{os.pathsep}{args.classes}",
        "AnseriniSide",
        str(work / "plan.tsv"),
    ]
    w = time.perf_counter()
    res = subprocess.run(java, check=True, capture_output=True, text=True)
    jvm_wall = time.perf_counter() - w
    line = next(x for x in res.stdout.splitlines() if x.startswith("ANSERINI_STEPS "))
    steps_text, jvm_cpu = line[len("ANSERINI_STEPS ") :].rsplit(" ", 1)
    steps = json.loads(steps_text)
    for name, sw, sc in steps:
        acc = PHASES.setdefault("analyse+index" if name == "index" else "rank+write runs", [0.0, 0.0])
        acc[0] += sw
        acc[1] += sc
    PHASES["jvm start"] = [jvm_wall - sum(s[1] for s in steps), float(jvm_cpu) - sum(s[2] for s in steps)]
    rows = []
    with phase("score"):
        for setting, targets in (("mixed", [*SOURCES, "all"]), *((s, [s]) for s in SOURCES)):
            rows += score_setting("anserini", setting, targets, read_run(args.out / f"anserini.{setting}.trec", SCORED_DEPTH), qrels, qids)
    with phase("write"), (args.out / "metrics.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("retriever", "corpus", "target", "metric", "value"), *rows])
    shutil.rmtree(work)
    PHASES["total_cpu_in_process"] = [0.0, time.process_time() - start]
    print(json.dumps({"phases": PHASES, "heap": args.heap, "jar": Path(args.jar).name, "queries": len(qids)}))


if __name__ == "__main__":
    main()
