"""A grid on a real Ray cluster: a head and a worker node started with ``ray start`` (separate
processes on loopback, sharing this machine's filesystem), ``sourcebias bench --ray ADDRESS`` as
the driver; the worker node is killed mid-grid and the grid still finishes, equal to in-process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from ray_helpers import RAY, LoopbackCluster

import sourcebias as sb
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import plan_cells, run_grid

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def started_cluster():
    """One head and one worker node for the module (starting them takes about 10 s)."""
    pytest.importorskip("ray")
    if RAY is None:
        pytest.skip("the `ray` command is not installed beside this Python")
    cluster = LoopbackCluster()
    try:
        cluster.start_node("head", "--head", f"--port={cluster.port}", "--include-dashboard=false")
        cluster.start_node("worker", f"--address={cluster.address}")
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def loopback_cluster(started_cluster):
    """The module's cluster with both nodes up: a worker node killed by an earlier test is
    started again (a new node, with a new id)."""
    if not started_cluster.alive("worker"):
        started_cluster.start_node("worker", f"--address={started_cluster.address}")
    assert started_cluster.alive("head")
    return started_cluster


SIMULATION = """
[simulation]
name = "{name}"
rounds = 1
queries_per_round = 1
k = 10
depth = 20
seed = 3
eval_queries = 8
[dataset]
path = "{data}"
[[retrievers]]
spec = "bm25"
[[retrievers]]
spec = "tfidf"
[generator]
model = "smollm2"
write = "answer"
context = 2
max_new_tokens = 24
temperature = 0
threads = 1
"""


def test_a_simulation_on_a_ray_start_cluster_equals_the_in_process_one(loopback_cluster, tmp_path, nq_utd):
    """Each retriever's loop is one task; the folder is shared storage (this machine's disk)."""
    from sourcebias.simulate import load_simulation_config, run_simulation

    cluster = loopback_cluster
    on_ray = tmp_path / "ray.toml"
    on_ray.write_text(textwrap.dedent(SIMULATION.format(name="on-ray", data=nq_utd)), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "sourcebias", "simulate", str(on_ray), "-o", str(tmp_path / "ray-out"), "--ray", cluster.address],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    here = tmp_path / "here.toml"
    here.write_text(textwrap.dedent(SIMULATION.format(name="here", data=nq_utd)), encoding="utf-8")
    local, _ = run_simulation(load_simulation_config(here), tmp_path / "here-out")
    from sourcebias.simulate import load_simulation

    remote = load_simulation(tmp_path / "ray-out")
    strip = lambda rows: json.dumps([{k: v for k, v in r.items() if k != "seconds"} for r in rows])  # noqa: E731
    assert strip(remote.rows) == strip(local.rows)

    def texts(root: Path, name: str) -> list[str]:
        return [json.loads(x)["text"] for x in (root / "loops" / name / "round-001" / "documents.jsonl").read_text().splitlines()]

    for name in ("bm25", "tfidf"):
        assert texts(tmp_path / "ray-out", name) == texts(tmp_path / "here-out", name)
    assert json.loads((tmp_path / "ray-out" / "simulation.json").read_text())["ray"] == cluster.address


GRID = """
[grid]
name = "cluster"
measures = ["NDCG", "Share"]
cutoffs = [1, 3]
significance_resamples = 2000
[[datasets]]
path = "{data}"
[[retrievers]]
spec = "bm25"
[[retrievers]]
spec = "tfidf"
[[retrievers]]
spec = "bm25:k1=0.9,b=0.4"
name = "bm25-a"
[[retrievers]]
spec = "bm25:k1=1.5,b=0.9"
name = "bm25-b"
[[retrievers]]
spec = "bm25:k1=0.6,b=0.6"
name = "bm25-c"
[[retrievers]]
spec = "bm25:k1=1.0,b=0.5"
name = "bm25-d"
[[retrievers]]
spec = "bm25:k1=2.0,b=0.3"
name = "bm25-e"
[[retrievers]]
spec = "tfidf:sublinear_tf=true"
name = "tfidf-s"
[[retrievers]]
spec = "bm25:k1=0.8,b=0.8"
name = "bm25-f"
[[retrievers]]
spec = "bm25:k1=1.6,b=0.5"
name = "bm25-g"
[[retrievers]]
spec = "bm25:k1=1.1,b=0.7"
name = "bm25-h"
[[retrievers]]
spec = "bm25:k1=1.3,b=0.35"
name = "bm25-i"
"""  # 12 cells: under a loaded CPU the worker node still gets a second one before the grid ends (8 were too few once BM25 cells got faster)


def _state(out: Path) -> dict:
    try:
        return json.loads((out / "grid.json").read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return {}


def test_a_grid_on_a_ray_start_cluster_survives_losing_its_worker_node(loopback_cluster, tmp_path, nq_utd):
    cluster = loopback_cluster
    cfg_path = tmp_path / "grid.toml"
    cfg_path.write_text(textwrap.dedent(GRID.format(data=nq_utd)), encoding="utf-8")
    out = tmp_path / "out"
    bench = subprocess.Popen(
        [sys.executable, "-m", "sourcebias", "bench", str(cfg_path), "-o", str(out), "--ray", cluster.address, "--no-report"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # kill the worker node (raylet, its workers) as soon as a cell it ran is written
    worker_node = cluster.node_id("worker")
    on_worker: dict = {}
    deadline = time.time() + 240
    while not on_worker and bench.poll() is None and time.time() < deadline:
        on_worker = {k: r for k, r in _state(out).items() if r.get("status") == "ok" and r.get("node") == worker_node}
        time.sleep(0.1)
    assert on_worker, "no cell ran on the worker node"
    in_flight: list = []  # wait until the worker node has begun its next cell, then kill it
    while not in_flight and bench.poll() is None and time.time() < deadline:
        pids = {p.pid for p in cluster.processes("worker")}
        in_flight = [f.parent.name + "/" + f.name[1:].split(".staging-")[0] for f in out.glob("cells/*/.*.staging-*") if int(f.name.rsplit("-", 1)[1]) in pids]
        time.sleep(0.02)
    assert in_flight, "the worker node took no second cell"
    cluster.kill("worker")
    killed_at = time.time()
    before = _state(out)
    log, _ = bench.communicate(timeout=300)
    finished_at = time.time()
    assert bench.returncode == 0, log
    assert not cluster.alive("worker") and cluster.alive("head")

    after = _state(out)
    cells = plan_cells(load_grid_config(cfg_path))
    assert set(after) == {c.key for c in cells} and all(r["status"] == "ok" for r in after.values()), after
    # a cell finished before the kill is neither lost nor run again: same record, same folder
    for key, rec in before.items():
        assert after[key] == rec, key
    assert len(before) < len(cells), "the grid had finished before the kill"
    late = {k for k in in_flight if after[k]["node"] == worker_node and after[k]["finished"] <= killed_at}  # see below
    assert all(r["node"] == cluster.node_id("head") for k, r in after.items() if k not in before and k not in late)  # the rest ran on the head
    assert all(r["started"] < killed_at for r in before.values())
    # the cell in flight on the worker ran again on the head after the kill, unless it finished on the worker in the
    # moment between being seen in flight and the kill (its record then says so: finished there, before the kill,
    # and it was not run a second time); a fresh-clone check saw that race once in two runs
    for key in in_flight:
        rec = after[key]
        rerun = rec["started"] > killed_at and rec["node"] == cluster.node_id("head")
        beat_the_kill = rec["node"] == worker_node and rec["finished"] <= killed_at
        assert rerun or beat_the_kill, (key, rec, killed_at)
    assert not list(out.glob("cells/*/.*staging*")) and not list(out.glob("cells/*/.*old*"))

    # the same numbers as the same grid in this process
    here = run_grid(load_grid_config(cfg_path), tmp_path / "here")
    assert here.counts() == {"ok": len(cells)}
    for cell in cells:
        a, b = sb.load_result(cell.folder(tmp_path / "here")), sb.load_result(cell.folder(out))
        assert a.per_query.keys() == b.per_query.keys()
        assert all(np.array_equal(v, b.per_query[k], equal_nan=True) for k, v in a.per_query.items()), cell.key
        assert a.runs == b.runs
    print(
        f"\n{len(before)} cells finished before the kill ({len(on_worker)} on the worker node); {in_flight} in flight on it, killed; {len(cells) - len(before)} finished after on the head, {finished_at - killed_at:.1f} s after the kill"
    )
