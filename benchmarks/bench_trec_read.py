"""Benchmark: reading a TREC run back, ours against ranx and ir_measures at their best.

A run of ``--queries`` x ``--depth`` lines over a corpus of ``--docs`` documents (two sources,
``<source>/<doc_id>`` names, float32 scores with BM25's repeats, written by ``Run.write_trec``) is
read in a fresh process by each side. Each first reads a 20-line run (start-up: its imports,
numba's compilation or cache, first-use costs; printed apart), then the run is timed to the run
in memory (each at its best: a warm process):

* **ours**: ``sourcebias.Run.from_trec`` (the bulk reader, :mod:`sourcebias.retrieval.trec_bulk`,
  past 1 MB): names mapped to (doc_id, source) through the docno map, every line checked, equal
  scores ordered by the tie rule;
* **ours-lines**: the same through the line-by-line reader (as every run was read before);
* **ranx**: ``ranx.Run.from_file(path, kind="trec")``, its one documented way to read a TREC
  file (a Python loop over lines, then numba's typed dicts);
* **ir_measures**: ``ir_measures.read_trec_run(path)`` consumed into ``{qid: {docno: score}}``,
  the dict its measures take (a generator of named tuples; no check of names);
* **pyarrow**: ``pyarrow.csv.read_csv`` of the file alone, the floor of a parse (no names mapped,
  no check, no order).

Each side runs ``--repeat`` times; the median is printed, with wall and CPU seconds, peak resident
memory of the process, and the ratios ours / each peer.

    python benchmarks/bench_trec_read.py [--queries 324 6980] [--depth 1000] [--docs 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SIDES = ("ours", "ours-lines", "ranx", "ir_measures", "pyarrow")

#: the child: imports and reads, then prints its own rusage (CPU and peak RSS of this process alone)
CHILD = r"""
import json, resource, sys, time
side, path, warm, docs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t0, c0 = time.perf_counter(), time.process_time()
if side.startswith("ours"):
    import sourcebias as sb
    from sourcebias.retrieval import trec_bulk
    if side == "ours-lines":
        trec_bulk.MIN_BYTES = 1 << 62
    else:
        trec_bulk.MIN_BYTES = 0  # the warm-up file too: its imports are start-up
    corpus = sb.Corpus.keys_only([f"d{i}" for i in range(docs)] * 2, ["human"] * docs + ["llm"] * docs)
    def read(p):
        run = sb.Run.from_trec(p, corpus, docnos=sb.DocnoMap.sourcebias(corpus))
        if side == "ours":
            trec_bulk.MIN_BYTES = 1 << 20
        return sum(len(x) for x in run.positions.values())
elif side == "ranx":
    from ranx import Run
    def read(p):
        return sum(len(d) for d in Run.from_file(p, kind="trec").run.values())
elif side == "ir_measures":
    import ir_measures
    def read(p):
        run = {}
        for sd in ir_measures.read_trec_run(p):
            run.setdefault(sd.query_id, {})[sd.doc_id] = sd.score
        return sum(len(d) for d in run.values())
else:
    import pyarrow.csv as pcsv
    def read(p):
        opts = pcsv.ReadOptions(column_names=list("qzdrst"))
        return pcsv.read_csv(p, read_options=opts, parse_options=pcsv.ParseOptions(delimiter=" ")).num_rows
read(warm)  # imports, numba's compilation (or its cache), first-use costs: start-up
t1, c1 = time.perf_counter(), time.process_time()
n = read(path)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"n": n, "start_wall_s": t1 - t0, "start_cpu_s": c1 - c0, "wall_s": t2 - t1, "cpu_s": c2 - c1,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_run(path: Path, queries: int, depth: int, docs: int, seed: int = 0) -> None:
    """A run as sourcebias writes one: per query ``depth`` distinct documents of the mixed corpus,
    float32 scores rounded to 1/64 (BM25's scores repeat)."""
    import numpy as np

    import sourcebias as sb

    rng = np.random.default_rng(seed)
    corpus = sb.Corpus.keys_only([f"d{i}" for i in range(docs)] * 2, ["human"] * docs + ["llm"] * docs)
    positions, scores = {}, {}
    for q in range(queries):
        pos = rng.choice(2 * docs, size=depth, replace=False)
        s = np.sort(np.round(rng.gamma(2.0, 4.0, size=depth) * 64) / 64)[::-1].astype(np.float32)
        positions[f"q{q}"], scores[f"q{q}"] = pos.astype(np.int64), s
    sb.Run(corpus, "bm25", positions, scores).write_trec(path)


def run_side(side: str, path: Path, warm: Path, docs: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, side, str(path), str(warm), str(docs)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[324, 6980])
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=20000, help="documents per source")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sides", nargs="+", default=list(SIDES), choices=SIDES)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.trec"
        write_run(warm, 2, 10, args.docs, seed=1)
        for queries in args.queries:
            path = Path(tmp) / f"q{queries}.trec"
            write_run(path, queries, args.depth, args.docs)
            lines = queries * args.depth
            print(f"{queries:,} queries x {args.depth:,}: {lines:,} lines, {path.stat().st_size / 2**20:.0f} MB", flush=True)
            res = {}
            for side in args.sides:
                trials = [run_side(side, path, warm, args.docs) for _ in range(args.repeat)]
                assert all(t["n"] == lines for t in trials), (side, trials[0]["n"], lines)
                res[side] = {k: statistics.median(t[k] for t in trials) for k in ("start_wall_s", "start_cpu_s", "wall_s", "cpu_s", "peak_mb")}
                r = res[side]
                cpus = ", ".join(f"{t['cpu_s']:.2f}" for t in trials)
                print(
                    f"  {side:>11}: {r['wall_s']:6.2f} s wall {r['cpu_s']:6.2f} s CPU {r['peak_mb']:7.0f} MB peak; start-up {r['start_cpu_s']:.2f} s CPU  (CPU: {cpus})",
                    flush=True,
                )
            rows.append((queries, lines, res))
    print("\n| queries | lines | side | wall s | CPU s | peak MB | start-up CPU s | ours / side: wall, CPU, memory |")
    print("|---|---|---|---|---|---|---|---|")
    for queries, lines, res in rows:
        o = res.get("ours")
        for side, r in res.items():
            ratio = f"{o['wall_s'] / r['wall_s']:.2f}, {o['cpu_s'] / r['cpu_s']:.2f}, {o['peak_mb'] / r['peak_mb']:.2f}" if o and side != "ours" else ""
            print(f"| {queries:,} | {lines:,} | {side} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} | {r['start_cpu_s']:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
