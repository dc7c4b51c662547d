"""Benchmark: `sourcebias evaluate -r bm25` against bm25s and Lucene at their best, as the corpus grows.

Why: Cocktail's MS MARCO has 1,084,406 passages in its mixed corpus and 6,979 queries; this
measures what the whole evaluation costs at that size and below it, against the peers doing the same
work as a competent user runs them: load the two corpora, the queries and the qrels; BM25 (k1=1.2,
b=0.75, English stop words, Porter); index and rank the mixed corpus and each sole corpus, top 1000;
NDCG/MAP/Recall/P at 1, 3, 5, 10 with trec_eval for each target; the TREC runs and a metrics table
written. sourcebias does more (input checks, the tie rule, per-query values, the statistics, the
figure, a manifest).

Sides (each run cold, in a fresh process under a fresh measuring parent, one after the other):

* ``ours``: ``sourcebias evaluate DATASET -r bm25 --split test``;
* ``ours-nofigure``: the same with ``--no-figure`` (matplotlib's import and drawing, a fixed cost
  of about 0.5 s and 20 MB, are the one part of ``ours`` that no peer does and that a user may
  leave out; reported in a table of its own, beside the first);
* ``bm25s-numpy`` and ``bm25s-numba``: ``peer_bm25s.py`` (bm25s + pytrec_eval: the corpus tokenized
  once and sliced for the sole corpora, runs from the sorted top-k, one thread); the faster of
  the two per size is "bm25s at its best", and the table says which;
* ``anserini``: ``peer_anserini.py`` (Anserini's IndexCollection and SearchCollection in one JVM,
  one thread, the serial collector, the heap given: ``--heap``, by default 256 MB + 1 KB per
  document + 200 KB per query, since ``SearchCollection`` holds every query's hits, stored fields
  loaded, until it writes the run: with 265 MB for 6,979 queries it spent its time collecting
  garbage), when ``--anserini-jar`` names Anserini's fat jar (Pyserini's wheel ships it).

Measured per run: wall time; CPU time (user + system of the process and its children, from
``resource.getrusage(RUSAGE_CHILDREN)``); peak memory, the peak of the summed resident memory of the
process tree (psutil, sampled every 50 ms) and the largest single process (``ru_maxrss``); the load
average before and after; the commit; each side's phases (load, analyse, index, rank, score, write).
Results go to ``OUT/scale.json`` as they come: a rerun skips what is there (``--again`` measures it
anew), so a long run is resumable by size and side. The corpora are ``make_scale_corpus.py``'s, one
folder per size and query count (``--queries 324`` for nfcorpus dev's count)::

    python benchmarks/make_scale_corpus.py DATA/s100000 --docs 100000            # 6,979 queries
    python benchmarks/make_scale_corpus.py DATA/q324-s100000 --docs 100000 --queries 324
    python benchmarks/bench_bm25_scale.py DATA/s10000 DATA/s100000 ... --out OUT --anserini-jar JAR
    python benchmarks/bench_bm25_scale.py --out OUT --table                       # the table, the slopes, the figure
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SIDES = ("ours", "ours-nofigure", "bm25s-numpy", "bm25s-numba", "anserini")
PHASE_ORDER = ("load", "analyse", "index", "rank", "score", "statistics", "write")

# The measuring parent: runs the command, samples the process tree's RSS, reports rusage.
MEASURE = r"""
import json, os, resource, subprocess, sys, time, psutil
cmd = json.loads(sys.argv[1])
t = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
tree_peak = 0
root = psutil.Process(p.pid)
while p.poll() is None:
    try:
        procs = [root] + root.children(recursive=True)
        tree_peak = max(tree_peak, sum(q.memory_info().rss for q in procs if q.is_running()))
    except psutil.Error:
        pass
    time.sleep(0.05)
wall = time.perf_counter() - t
out = p.stdout.read().decode(errors="replace")[-20000:]
err = p.stderr.read().decode(errors="replace")[-2000:]
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024,
                  "tree_peak_mb": tree_peak / 2**20, "stdout": out, "stderr": err}))
"""


def measure(cmd: list[str], env: dict[str, str]) -> dict:
    """One cold run of ``cmd`` under a fresh measuring parent, with the load average around it."""
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(cmd)], env=env, check=True, capture_output=True, text=True).stdout
    res = json.loads(out)
    res["load"], res["load_after"] = load, os.getloadavg()[0]
    if res["rc"] != 0:
        raise SystemExit(f"{cmd[:4]} failed (exit {res['rc']}):\n{res['stderr']}")
    return res


def commit() -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(HERE.parent), *a], capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--", "src", "benchmarks") else "")


def shape(folder: Path) -> tuple[int, int]:
    """Documents of the mixed corpus and queries evaluated (those with a judged passage)."""
    with (folder / "corpus" / "human.jsonl").open("rb") as fh:
        docs = 2 * sum(1 for _ in fh)
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        queries = len({line.split("\t")[0] for line in list(fh)[1:] if line.strip() and int(line.split("\t")[2]) > 0})
    return docs, queries


def our_phases(out: Path, wall: float) -> dict[str, float]:
    """Our phases' wall seconds, from the manifest's timings and the BM25 runs' own timings; what
    is left of the process's wall time (start-up, the figure, writing) is ``write``."""
    manifest = json.loads((out / "manifest.json").read_text())["timings_s"]
    result = json.loads((out / "result.json").read_text())
    phases = {"load": manifest["load_s"], "analyse": 0.0, "index": 0.0, "rank": 0.0, "score": 0.0, "statistics": manifest["statistics_s"]}
    for entry in result["run_info"]:
        for k in ("analyse", "index", "rank"):
            phases[k] += entry["info"].get("timings_s", {}).get(f"{k}_s", 0.0)
    phases["score"] = sum(t["evaluate_s"] for t in manifest["per_ranking"].values())
    retrieve = sum(t["retrieve_s"] for t in manifest["per_ranking"].values())
    phases["rank"] += retrieve - phases["analyse"] - phases["index"] - phases["rank"]  # the tie rule and top-k, with the ranking
    phases["write"] = wall - sum(phases.values())
    return {k: round(v, 2) for k, v in phases.items()}


def run_side(side: str, folder: Path, tmp: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "SOURCEBIAS_CACHE": tempfile.mkdtemp(dir=tmp)}
    out = tmp / side
    if side.startswith("ours"):
        flags = ["--no-figure"] if side == "ours-nofigure" else []
        res = measure(
            [sys.executable, "-m", "sourcebias", "evaluate", str(folder), "-r", "bm25", "--split", "test", "--output", str(out), "--overwrite", *flags], env
        )
        res["phases"] = our_phases(out, res["wall_s"])
        return res
    if side.startswith("bm25s"):
        cmd = [sys.executable, str(HERE / "peer_bm25s.py"), str(folder), "test", str(out), "--backend", side.split("-")[1]]
    else:
        docs, queries = shape(folder)
        heap = args.heap if args.heap != "auto" else f"{256 + docs // 1024 + queries // 5}m"  # SearchCollection holds every hit until it writes
        cmd = [sys.executable, str(HERE / "peer_anserini.py"), str(folder), "test", str(out), "--jar", args.anserini_jar, "--classes", str(args.classes)]
        cmd += ["--heap", heap, "--memory-buffer", str(max(16, int(heap[:-1]) // 4))]
    res = measure(cmd, env)
    reported = json.loads(res["stdout"].strip().splitlines()[-1])
    res["phases"] = {k: round(v[0], 2) for k, v in reported["phases"].items() if k != "total_cpu_in_process"}
    res["phases_cpu"] = {k: round(v[1], 2) for k, v in reported["phases"].items() if k != "total_cpu_in_process"}
    res["reported"] = {k: v for k, v in reported.items() if k != "phases"}
    return res


def metrics_of(folder: Path) -> dict[tuple[str, str, str], float]:
    """metrics.csv as ``{(corpus, target, trec_eval measure): value}`` (ours names the measures ``NDCG@10``)."""
    import csv

    trec = {"NDCG": "ndcg_cut", "MAP": "map_cut", "Recall": "recall", "P": "P"}
    out = {}
    with (folder / "metrics.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            metric = row["metric"]
            if "@" in metric:
                name, k = metric.split("@")
                if name not in trec:
                    continue
                metric = f"{trec[name]}_{k}"
            corpus = row.get("corpus") or row.get("setting")
            out[(corpus, row["target"], metric)] = float(row["value"])
    return out


def compare_metrics(tmp: Path, sides: list[str]) -> dict[str, float]:
    """The largest difference of any metric between ours and each other side (same corpus, target, measure)."""
    ours = metrics_of(tmp / "ours") if "ours" in sides else {}
    diffs = {}
    for side in sides:
        if side == "ours" or not ours:
            continue
        theirs = metrics_of(tmp / side)
        common = ours.keys() & theirs.keys()
        diffs[side] = max((abs(ours[k] - theirs[k]) for k in common), default=float("nan"))
        diffs[f"{side}_compared"] = len(common)
    return diffs


def median_run(runs: list[dict]) -> dict:
    """Of a side's repeated runs, the run of median CPU time (the upper median of an even count),
    with every run's wall, CPU, peak and load under ``runs`` when there are several."""
    chosen = dict(sorted(runs, key=lambda r: r["cpu_s"])[len(runs) // 2])
    if len(runs) > 1:
        chosen["runs"] = [{k: r[k] for k in ("wall_s", "cpu_s", "tree_peak_mb", "load")} for r in runs]
    return chosen


def best_bm25s(row: dict) -> str | None:
    """The bm25s backend with the lower CPU time at this size (the reference), if either ran."""
    ran = [s for s in ("bm25s-numpy", "bm25s-numba") if s in row]
    return min(ran, key=lambda s: row[s]["cpu_s"]) if ran else None


def slope(xs: list[float], ys: list[float]) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0]) if len(xs) > 1 else float("nan")


def table(rows: list[dict]) -> str:
    head = (
        "| documents | queries | ours wall / CPU s | ours peak MB | bm25s at its best | bm25s wall / CPU s | bm25s peak MB | "
        "CPU ours / bm25s | memory ours / bm25s | Lucene wall / CPU s | Lucene peak MB | CPU ours / Lucene | load (ours, bm25s, Lucene) | commit |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        o, b = r.get("ours"), best_bm25s(r)
        a = r.get("anserini")

        def cell(m: dict | None) -> tuple[str, str]:
            return (f"{m['wall_s']:,.1f} / {m['cpu_s']:,.1f}", f"{m['tree_peak_mb']:,.0f}") if m else ("–", "–")

        ow, op = cell(o)
        bw, bp = cell(r[b] if b else None)
        aw, ap = cell(a)
        cpu_b = f"{o['cpu_s'] / r[b]['cpu_s']:.2f}" if o and b else "–"
        mem_b = f"{o['tree_peak_mb'] / r[b]['tree_peak_mb']:.2f}" if o and b else "–"
        cpu_a = f"{o['cpu_s'] / a['cpu_s']:.2f}" if o and a else "–"
        loads = ", ".join(f"{r[s]['load']:.1f}" if s in r else "–" for s in ("ours", b or "", "anserini"))
        commits = sorted({r[s]["commit"] for s in SIDES if s in r})
        other = next((s for s in ("bm25s-numpy", "bm25s-numba") if s in r and s != b), None)
        best = (b or "–").replace("bm25s-", "") + (f" ({other.replace('bm25s-', '')}: {r[other]['cpu_s']:,.1f} s CPU)" if other else "")
        lines.append(
            f"| {r['docs']:,} | {r['queries']:,} | {ow} | {op} | {best} | {bw} | {bp} | {cpu_b} | {mem_b} | {aw} | {ap} | {cpu_a} | {loads} | {', '.join(commits)} |"
        )
    return "\n".join(lines)


def no_figure_table(rows: list[dict]) -> str:
    """``ours`` with ``--no-figure`` against bm25s at its best, where it ran ("" when nowhere)."""
    lines = [
        "| documents | queries | ours --no-figure wall / CPU s | peak MB | CPU / bm25s | memory / bm25s | with the figure: CPU / bm25s, memory / bm25s |",
        "|" + "---|" * 7,
    ]
    for r in rows:
        n, b, o = r.get("ours-nofigure"), best_bm25s(r), r.get("ours")
        if not n or not b:
            continue
        with_fig = f"{o['cpu_s'] / r[b]['cpu_s']:.2f}, {o['tree_peak_mb'] / r[b]['tree_peak_mb']:.2f}" if o else "–"
        lines.append(
            f"| {r['docs']:,} | {r['queries']:,} | {n['wall_s']:,.1f} / {n['cpu_s']:,.1f} | {n['tree_peak_mb']:,.0f} | "
            f"{n['cpu_s'] / r[b]['cpu_s']:.2f} | {n['tree_peak_mb'] / r[b]['tree_peak_mb']:.2f} | {with_fig} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def phases_table(rows: list[dict]) -> str:
    """Each side's phases (wall seconds), side by side, per size."""
    lines = ["| documents | queries | side | " + " | ".join(PHASE_ORDER) + " | other |", "|" + "---|" * (len(PHASE_ORDER) + 4)]
    for r in rows:
        for side in SIDES:
            if side not in r:
                continue
            ph = dict(r[side]["phases"])
            if side == "anserini":  # Lucene analyses while it indexes, and writes the run while it ranks
                ph["index"] = ph.pop("analyse+index", 0.0)
                ph["rank"] = ph.pop("rank+write runs", 0.0)
            cells = [f"{ph.pop(k):.1f}" if k in ph else "–" for k in PHASE_ORDER]
            other = ", ".join(f"{k} {v:.1f}" for k, v in ph.items())
            lines.append(f"| {r['docs']:,} | {r['queries']:,} | {side} | " + " | ".join(cells) + f" | {other} |")
    return "\n".join(lines)


def figure(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 6.6))
    for ax, key, label in ((axes[0], "cpu_s", "CPU time (s)"), (axes[1], "tree_peak_mb", "peak memory, process tree (MB)")):
        for queries, dash in sorted({(r["queries"], "-" if r["queries"] > 1000 else ":") for r in rows}, reverse=True):
            sub = [r for r in rows if r["queries"] == queries]
            for side, marker, colour, name in (
                ("ours", "o", "tab:blue", "sourcebias evaluate -r bm25"),
                ("bm25s", "s", "tab:orange", "bm25s at its best"),
                ("anserini", "^", "tab:green", "Lucene (Anserini)"),
            ):
                pts = [(r["docs"], r[best_bm25s(r) if side == "bm25s" else side][key]) for r in sub if (best_bm25s(r) if side == "bm25s" else side) in r]
                if pts:
                    xs, ys = zip(*pts)
                    fit = f" (slope {slope(list(xs), list(ys)):.2f})" if len(xs) > 1 else ""
                    ax.plot(xs, ys, marker=marker, color=colour, linestyle=dash, label=f"{name}, {queries:,} queries{fit}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        if high < 10 * low:  # less than a decade: plain numbers, not 4 x 10^0 on every tick
            from matplotlib.ticker import FormatStrFormatter

            for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
                axis(FormatStrFormatter("%.4g"))
        ax.set_xlabel("documents in the mixed corpus")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)  # below the axes: no point hidden
    fig.suptitle("BM25 evaluation against corpus size (mixed + two sole corpora, top 1000, 16 measures)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(rows: list[dict], out: Path) -> None:
    print(table(rows))
    print()
    if nofig := no_figure_table(rows):
        print(nofig)
        print()
    print(phases_table(rows))
    for queries in sorted({r["queries"] for r in rows}):
        sub = [r for r in rows if r["queries"] == queries]
        for side in ("ours", "bm25s", "anserini"):
            pts = [(r["docs"], r[best_bm25s(r) if side == "bm25s" else side]["cpu_s"]) for r in sub if (best_bm25s(r) if side == "bm25s" else side) in r]
            if len(pts) > 1:
                print(f"slope of log CPU time against log size, {queries:,} queries, {side}: {slope(*map(list, zip(*pts))):.2f}")
    for r in rows:
        for side in SIDES:
            if len(r.get(side, {}).get("runs", [])) > 1:
                cpus = ", ".join(f"{m['cpu_s']:.2f}" for m in r[side]["runs"])
                print(f"{r['docs']:,} documents, {r['queries']:,} queries, {side}: the median of {len(r[side]['runs'])} runs (CPU s: {cpus})")
    for r in rows:
        if r.get("metrics_max_difference"):
            print(f"{r['docs']:,} documents, {r['queries']:,} queries: largest metric difference from ours: {r['metrics_max_difference']}")
    figure(rows, out / "scale.png")
    print(f"figure: {out / 'scale.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*", type=Path, help="folders written by make_scale_corpus.py")
    ap.add_argument("--out", type=Path, required=True, help="where scale.json and scale.png go (results there are kept and skipped)")
    ap.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="the sides to run, in this order, per corpus")
    ap.add_argument("--again", action="store_true", help="measure again what scale.json holds already")
    ap.add_argument("--anserini-jar", help="Anserini's fat jar (without it the Lucene side is skipped)")
    ap.add_argument("--heap", default="auto", help="the JVM's -Xmx for the Lucene side (default: 256 MB + 1 KB per document)")
    ap.add_argument("--table", action="store_true", help="only print the table of what scale.json holds")
    ap.add_argument("--repeat", type=int, default=1, help="run each side this many times, interleaved, and keep the run of median CPU time")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "scale.json"
    rows: dict[str, dict] = {f"{r['docs']}/{r['queries']}": r for r in (json.loads(store.read_text()) if store.is_file() else [])}
    sides = [s for s in args.sides if s != "anserini" or args.anserini_jar]
    if args.anserini_jar and not args.table:
        args.classes = args.out / "anserini-classes"
        subprocess.run(["javac", "-d", str(args.classes), "-cp", args.anserini_jar, str(HERE / "AnseriniSide.java")], check=True)
    import sourcebias

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(sourcebias.__file__).parent)], check=True)  # bytecode as installed
    for folder in [] if args.table else args.corpora:
        docs, queries = shape(folder)
        row = rows.setdefault(f"{docs}/{queries}", {"docs": docs, "queries": queries})
        todo = [s for s in sides if args.again or s not in row]
        measured: dict[str, list[dict]] = {side: [] for side in todo}
        with tempfile.TemporaryDirectory(dir=args.out) as tmp:
            for _ in range(args.repeat):  # interleaved: each repeat runs every side once, in order
                for side in todo:
                    m = run_side(side, folder, Path(tmp), args)
                    m.update(commit=commit(), when=time.strftime("%Y-%m-%d %H:%M"))
                    m.pop("stdout", None)
                    measured[side].append(m)
                    row[side] = median_run(measured[side])
                    print(
                        f"{docs:>9,} docs {queries:>5,} queries {side:>13}: {m['wall_s']:8.1f} s wall {m['cpu_s']:8.1f} s CPU {m['tree_peak_mb']:7,.0f} MB "
                        f"(load {m['load']:.1f} -> {m['load_after']:.1f}) {m['phases']}",
                        flush=True,
                    )
                    store.write_text(json.dumps(sorted(rows.values(), key=lambda r: (r["queries"], r["docs"])), indent=1))
            if len(todo) == len(sides) and "ours" in sides:
                row["metrics_max_difference"] = compare_metrics(Path(tmp), sides)
        store.write_text(json.dumps(sorted(rows.values(), key=lambda r: (r["queries"], r["docs"])), indent=1))
    report(sorted(rows.values(), key=lambda r: (r["queries"], r["docs"])), args.out)


if __name__ == "__main__":
    main()
