"""Benchmark: one corpus encoded by Ray tasks on a ``ray start`` cluster with one and with two
worker nodes (on loopback, one CPU each), against one process encoding it alone.

Why: where one machine is too slow, the shards of a corpus's encode run as Ray tasks
(``encode_workers`` of a grid retriever, :mod:`sourcebias.experiments.encode`). On the 2-core
development machine two nodes share two cores with everything else running, so the speed-up
here says what the split costs and whether it scales, not what a real cluster gives. Each run
encodes into a fresh store; the store is checked against the single-process one (same vectors).
The nodes are started and stopped as in ``tests/ray_helpers.py`` (by process group, never
``ray stop``). Prints wall times, texts/s, the ratio to one process, and the load average.

    python benchmarks/bench_ray_encode.py --corpus /tmp/scale/s4000 [--spec minilm] [--workers 1 2]
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ray_helpers import LoopbackCluster  # the tests' loopback cluster

DRIVER = """
import json, sys, time
from pathlib import Path
import ray
from sourcebias.experiments.config import DatasetEntry, RetrieverEntry
from sourcebias.experiments.encode import encode_tasks
ray.init(address=sys.argv[1], log_to_driver=False)
t = time.perf_counter()
refs = encode_tasks(ray, RetrieverEntry(sys.argv[2], "r", encode_workers=int(sys.argv[5])), DatasetEntry(Path(sys.argv[3]), "d"), {}, sys.argv[4])
parts = ray.get(refs)
print(json.dumps({"wall_s": time.perf_counter() - t, "parts": parts}))
"""


def on_cluster(spec: str, corpus: Path, workers: int, cache: Path) -> dict:
    cluster = LoopbackCluster()
    try:
        cluster.start_node("head", "--head", f"--port={cluster.port}", "--include-dashboard=false")
        for i in range(workers - 1):  # the head is the first worker (one CPU)
            cluster.start_node(f"worker{i}", f"--address={cluster.address}")
        out = subprocess.run(
            [sys.executable, "-c", DRIVER, cluster.address, spec, str(corpus), str(cache), str(workers)],
            env=cluster.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
        return json.loads(next(x for x in reversed(out.stdout.splitlines()) if x.startswith('{"wall_s"')))  # Ray may print after it
    finally:
        cluster.stop()


def alone(spec: str, corpus: Path, cache: Path):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import build_retriever

    texts = load_dataset(corpus, split=None).corpus.retrieval_texts()
    embedder = build_retriever(spec, cache_dir=cache).embedder
    embedder.embed(["warm-up"], "query")
    t = time.perf_counter()
    vectors = embedder.embed(texts, "document")
    return time.perf_counter() - t, len(set(texts)), vectors, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--spec", default="minilm")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy as np

    from sourcebias.retrieval import build_retriever

    with tempfile.TemporaryDirectory() as tmp:
        wall, n, single, texts = alone(a.spec, a.corpus, Path(tmp) / "alone")
        print(f"one process      {n:,} texts  {wall:7.1f} s  {n / wall:7.1f} texts/s  load {os.getloadavg()[0]:.1f}", flush=True)
        for w in a.workers:
            cache = Path(tmp) / f"ray{w}"
            res = on_cluster(a.spec, a.corpus, w, cache)
            got = build_retriever(a.spec, cache_dir=cache).embedder
            same = np.allclose(got.embed(texts, "document"), single, atol=1e-5) and got.stats["encoded"] == 0
            print(
                f"ray, {w} node(s)   {n:,} texts  {res['wall_s']:7.1f} s  {n / res['wall_s']:7.1f} texts/s  "
                f"{wall / res['wall_s']:.2f}x one process  store equal: {same}  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
