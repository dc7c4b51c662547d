"""Benchmark: `sourcebias evaluate --retriever bm25` vs bm25s + pytrec-eval-terrier at their best.

The bm25s side is ``peer_bm25s.py`` (the mixed corpus tokenized once and sliced for the sole
corpora, runs from bm25s's sorted top-k; issue 41). Until issue 41 it was a script that tokenized
every document twice, used only the numpy backend, looped over numpy scalars and re-sorted
bm25s's sorted results: the ratios measured with it (docs/benchmarks.md) overstate our advantage.

Both sides do the same work on the same machine in the same run, each in a fresh Python
process (so both pay their imports):

* load the human and LLM corpora, the queries and the split's qrels;
* BM25 (k1=1.2, b=0.75, Lucene scoring, English stop words, Porter stemming): index and rank
  the mixed corpus and each sole corpus, top 1000 per query;
* score NDCG/MAP/Recall/P at 1, 3, 5, 10 with trec_eval for the human, LLM and all targets on
  the mixed corpus and for each sole corpus;
* write the TREC runs and a metrics table.

sourcebias additionally validates the input, applies the tie rule, writes per-query values,
the statistics (bootstrap CI, paired tests with Holm's correction, twin preference, ΔNDSR), the
figure and a manifest with SHA-256 of the inputs. The printed ratio is ours / raw (lower is
better), of wall-clock time and of CPU time (the process and its children; ``--one-cpu`` pins
both sides to one CPU).

Every run is cold: a new process, a new empty ``SOURCEBIAS_CACHE``, nothing analysed or scored
before. Python's own bytecode caches are what an installed package has (pip compiles at install):
where the environment forbids writing them (``PYTHONDONTWRITEBYTECODE``, an editable install)
sourcebias's modules are compiled once before the timed runs, as the libraries of the raw side
already are.

    python benchmarks/bench_bm25_evaluate.py [--dataset DIR] [--split dev] [--repeat 3] [--one-cpu]
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
from pathlib import Path

import script_data


def timed(cmd: list[str], env: dict[str, str], cpus: set[int] | None) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system, the child and its children) of one run."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, preexec_fn=pin)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=None, help="the nfcorpus folder (default: `sourcebias download nfcorpus`'s; see script_data.py)")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--one-cpu", action="store_true", help="pin both sides to one CPU")
    ap.add_argument(
        "--backend", choices=("numpy", "numba"), default="numpy", help="bm25s's backend (numpy: numba's compilation costs more than it saves at 324 queries)"
    )
    args = ap.parse_args()
    args.dataset = str(args.dataset or script_data.folder("nfcorpus"))  # the raw side reads the folder's files
    import sourcebias

    # bytecode as an installed package has it (see the module's description)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(sourcebias.__file__).parent)], check=True)
    cpus = {min(os.sched_getaffinity(0))} if args.one_cpu else None
    with tempfile.TemporaryDirectory() as tmp:
        ours_cmd = [
            sys.executable,
            "-m",
            "sourcebias",
            "evaluate",
            args.dataset,
            "--retriever",
            "bm25",
            "--split",
            args.split,
            "--output",
            f"{tmp}/ours",
            "--overwrite",
        ]
        raw_cmd = [sys.executable, str(Path(__file__).with_name("peer_bm25s.py")), args.dataset, args.split, f"{tmp}/raw", "--backend", args.backend]
        ours, raw = [], []
        for i in range(args.repeat):  # interleaved, so both see the same machine load
            cold = {**os.environ, "SOURCEBIAS_CACHE": tempfile.mkdtemp(dir=tmp)}  # nothing from an earlier run
            ours.append(timed(ours_cmd, cold, cpus))
            raw.append(timed(raw_cmd, cold, cpus))
            print(
                f"run {i + 1}: sourcebias {ours[-1][0]:.2f} s ({ours[-1][1]:.2f} s CPU)   raw bm25s+pytrec_eval {raw[-1][0]:.2f} s ({raw[-1][1]:.2f} s CPU)",
                flush=True,
            )
    o, r = statistics.median(w for w, _ in ours), statistics.median(w for w, _ in raw)
    oc, rc = statistics.median(c for _, c in ours), statistics.median(c for _, c in raw)
    where = f"pinned to CPU {min(cpus)}" if cpus else f"{len(os.sched_getaffinity(0))} usable CPUs"
    print(f"\nmedian over {args.repeat} ({where}): sourcebias evaluate {o:.2f} s, raw libraries {r:.2f} s")
    print(f"ratio ours / raw = {o / r:.2f}")
    # CPU time is less sensitive to other processes on a shared machine than wall-clock time
    print(f"CPU time: sourcebias {oc:.2f} s, raw {rc:.2f} s, ratio {oc / rc:.2f}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    script_data.run(main)
