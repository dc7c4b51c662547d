"""Benchmark: what each of ``evaluate``'s speed tricks saves, in CPU time and wall time.

Three tricks were measured (issue 32; the table is in docs/concepts/design.md): the helper process
that computed the statistics and drew the figure while BM25 ranked, the garbage-collector
``Freezer`` and ``paused`` blocks (both removed: they saved less than 10% of the CPU time; measured
with this script at commit 3087b1f, which still had them), and NLTK's Porter module imported under
stand-in packages in ``sys.modules`` (``retrieval/analyzer.py``), the one left to switch off. Each
variant runs
``sourcebias evaluate DATA --retriever bm25`` in a fresh process with the trick switched off by
patching it before the command starts (nothing else changes), interleaved with the others so all
see the same machine load; a trick is worth keeping only where it saves at least 10% of the CPU
time of the run with every trick on.

    python benchmarks/bench_speed_tricks.py DATA [--split dev] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

#: variant -> Python run before the CLI (switching tricks off)
OFF = {
    "porter_shells": (
        "import sourcebias.retrieval.analyzer as lx\n"
        "def _plain():\n"
        "    from nltk.stem.porter import PorterStemmer\n"
        "    return PorterStemmer\n"
        "lx._porter_stemmer_class = _plain\n"
    ),
}
VARIANTS = {"all tricks on": [], **{f"{k} off": [k] for k in OFF}, **({"all off": list(OFF)} if len(OFF) > 1 else {})}
RUN = "import sys; from sourcebias.cli.main import app; sys.argv = ['sourcebias', *sys.argv[1:]]; app()\n"


def timed(code: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system, the child and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    times: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for name, off in VARIANTS.items():  # interleaved: every variant sees the same load
                env = {**os.environ, "SOURCEBIAS_CACHE": tempfile.mkdtemp(dir=tmp)}  # cold, as a first run
                cli = ["evaluate", args.dataset, "--retriever", "bm25", "--split", args.split, "--output", f"{tmp}/out", "--overwrite"]
                times[name].append(timed("".join(OFF[k] for k in off) + RUN, cli, env))
                print(f"run {i + 1} {name}: {times[name][-1][0]:.2f} s wall, {times[name][-1][1]:.2f} s CPU", flush=True)
    base_w = statistics.median(w for w, _ in times["all tricks on"])
    base_c = statistics.median(c for _, c in times["all tricks on"])
    print(f"\nmedian of {args.repeat}; {len(os.sched_getaffinity(0))} usable CPUs; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| variant | wall s | CPU s | wall saved by the trick | CPU saved by the trick |")
    print("|---|---|---|---|---|")
    for name, runs in times.items():
        w, c = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"| {name} | {w:.2f} | {c:.2f} | {(w - base_w) / w:+.1%} | {(c - base_c) / c:+.1%} |")


if __name__ == "__main__":
    main()
