"""Benchmark: `sourcebias evaluate -r bm25` against bare bm25s + pytrec_eval as the corpus grows.

Why: Cocktail's MS MARCO has 1,084,406 passages in its mixed corpus and 6,979 queries; this
measures how the cost of the whole evaluation grows to that size, against the plain libraries
doing the same work (``benchmarks/bench_bm25_evaluate.py``'s bare script, reused here: load the
two corpora, the queries and the qrels; BM25 with Porter stemming and English stop words; index
and rank the mixed corpus and each sole corpus, top 1000; NDCG/MAP/Recall/P at 1, 3, 5, 10 for the
human, LLM and all targets; TREC runs and a metrics table written). sourcebias does more (input
checks, the tie rule, per-query values, the statistics, the figure, a manifest).

The corpora are made by ``benchmarks/make_scale_corpus.py`` (MS MARCO's shape from real
sentences), one folder per size. Each side runs cold in a fresh process under a fresh measuring
parent: wall time; CPU time (user + system of the process and its children, from
``resource.getrusage(RUSAGE_CHILDREN)``); peak resident memory, both the largest single process
(``ru_maxrss`` of the children) and the peak of the summed RSS of the process tree (psutil,
sampled every 50 ms, so that any child process counts). The load average is
printed beside every timing (the machine may be shared). Prints a table with the ratios ours /
bare, the fitted log-log slope of time against size, the statistics' share of our wall time
(``statistics_s`` of the manifest), writes ``scale.json`` and a log-log figure.

    python benchmarks/make_scale_corpus.py /tmp/scale/s100000 --docs 100000      # once per size
    python benchmarks/bench_bm25_scale.py /tmp/scale/s10000 /tmp/scale/s100000 ... --out /tmp/scale/bench
    python benchmarks/bench_bm25_scale.py --out /tmp/scale/all --merge /tmp/scale/b*/scale.json   # sizes run apart
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bm25_evaluate import RAW  # the bare libraries' script, shared

# The measuring parent: runs the command, samples the process tree's RSS, reports rusage.
MEASURE = r"""
import json, os, resource, subprocess, sys, time, psutil
cmd = json.loads(sys.argv[1])
t = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
err = p.stderr.read().decode(errors="replace")[-2000:]
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024, "tree_peak_mb": tree_peak / 2**20, "stderr": err}))
"""


def measure(cmd: list[str], env: dict[str, str]) -> dict:
    """One cold run of ``cmd`` under a fresh measuring parent, with the load average before it."""
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(cmd)], env=env, check=True, capture_output=True, text=True).stdout
    res = json.loads(out)
    if res["rc"] != 0:
        raise SystemExit(f"{cmd[:4]} failed (exit {res['rc']}):\n{res['stderr']}")
    res["load"] = load
    return res


def docs_of(folder: Path) -> int:
    with (folder / "corpus" / "human.jsonl").open("rb") as fh:
        return 2 * sum(1 for _ in fh)


def one_size(folder: Path, tmp: Path, sides: tuple[str, ...] = ("ours", "bare")) -> dict:
    """Ours then the bare libraries on one corpus, each cold (``sides``: only one of them, to run
    the two sides of a size side by side; ``--merge`` joins them)."""
    env = {**os.environ, "SOURCEBIAS_CACHE": tempfile.mkdtemp(dir=tmp)}
    row: dict = {"docs": docs_of(folder)}
    if "ours" in sides:
        out = tmp / f"ours-{folder.name}"
        ours_cmd = [sys.executable, "-m", "sourcebias", "evaluate", str(folder), "-r", "bm25", "--split", "test", "--output", str(out), "--overwrite"]
        row["ours"] = measure(ours_cmd, env)
        timings = json.loads((out / "manifest.json").read_text())["timings_s"]
        row["ours"]["statistics_s"], row["ours"]["timings"] = timings.get("statistics_s"), timings  # where the time went, by step
    if "bare" in sides:
        row["bare"] = measure([sys.executable, "-c", RAW, str(folder), "test", str(tmp / f"bare-{folder.name}")], env)
    return row


def slope(rows: list[dict], side: str, key: str) -> float:
    x = np.log([r["docs"] for r in rows])
    y = np.log([r[side][key] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def figure(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = [r["docs"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((axes[0], "cpu_s", "CPU time (s)"), (axes[1], "tree_peak_mb", "peak memory, process tree (MB)")):
        for side, style in (("ours", "o-"), ("bare", "s--")):
            name = "sourcebias evaluate -r bm25" if side == "ours" else "bare bm25s + pytrec_eval"
            if len(rows) > 1:
                name += f" (slope {slope(rows, side, key):.2f})"
            ax.plot(docs, [r[side][key] for r in rows], style, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("documents in the mixed corpus")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("BM25 evaluation against corpus size (6,979 queries; mixed + two sole corpora)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(rows: list[dict]) -> str:
    head = "| documents | ours wall s | bare wall s | ours CPU s | bare CPU s | CPU ratio | ours peak MB (tree / one process) | bare peak MB | memory ratio | statistics share | load |"
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        o, b = r["ours"], r["bare"]
        share = f"{o['statistics_s'] / o['wall_s']:.1%}" if o.get("statistics_s") is not None else "n/a"
        lines.append(
            f"| {r['docs']:,} | {o['wall_s']:.1f} | {b['wall_s']:.1f} | {o['cpu_s']:.1f} | {b['cpu_s']:.1f} | {o['cpu_s'] / b['cpu_s']:.2f} "
            f"| {o['tree_peak_mb']:,.0f} / {o['max_rss_mb']:,.0f} | {b['tree_peak_mb']:,.0f} | {o['tree_peak_mb'] / b['tree_peak_mb']:.2f} | {share} "
            f"| {o['load']:.1f} / {b['load']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*", type=Path, help="folders written by make_scale_corpus.py, smallest first")
    ap.add_argument("--out", type=Path, required=True, help="where scale.json and scale.png go (results of earlier sizes there are kept)")
    ap.add_argument("--side", nargs="+", choices=("ours", "bare"), default=["ours", "bare"], help="measure only one side (default both, ours first)")
    ap.add_argument("--merge", nargs="*", type=Path, default=[], help="scale.json files of other runs (e.g. sizes run side by side) to add")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "scale.json"
    done: dict[int, dict] = {}
    for f in [store, *args.merge]:
        for r in json.loads(f.read_text()) if f.is_file() else []:
            done.setdefault(r["docs"], {}).update(r)  # the sides of one size may come from two files
    import sourcebias

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(sourcebias.__file__).parent)], check=True)
    for folder in args.corpora:
        with tempfile.TemporaryDirectory() as tmp:
            r = one_size(folder, Path(tmp), tuple(args.side))
        done.setdefault(r["docs"], {}).update(r)
        for side in args.side:
            m = r[side]
            print(
                f"{r['docs']:>9,} docs, {side}: {m['wall_s']:.1f} s wall, {m['cpu_s']:.1f} s CPU, {m['tree_peak_mb']:,.0f} MB (load {m['load']:.1f})",
                flush=True,
            )
        store.write_text(json.dumps(sorted(done.values(), key=lambda r: r["docs"]), indent=1))
    store.write_text(json.dumps(sorted(done.values(), key=lambda r: r["docs"]), indent=1))  # merged
    rows = sorted((r for r in done.values() if "ours" in r and "bare" in r), key=lambda r: r["docs"])
    print()
    print(table(rows))
    if len(rows) > 1:
        print(f"\nslope of log CPU time against log size: ours {slope(rows, 'ours', 'cpu_s'):.2f}, bare {slope(rows, 'bare', 'cpu_s'):.2f}")
        print(f"slope of log wall time against log size: ours {slope(rows, 'ours', 'wall_s'):.2f}, bare {slope(rows, 'bare', 'wall_s'):.2f}")
    if rows:
        figure(rows, args.out / "scale.png")
        print(f"figure: {args.out / 'scale.png'}")


if __name__ == "__main__":
    main()
