"""One corpus encoded across a Ray cluster (a head and a worker node started with ``ray start`` on
loopback, sharing this machine's disk as a cluster shares a file system): the store the tasks fill
equals the single-machine store, and a worker node SIGKILLed mid-shard loses no finished shard,
its part running again on the other node and encoding only what is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dense_helpers import short_texts, tiny_sentence_transformer
from ray_helpers import RAY, LoopbackCluster

from sourcebias.retrieval import build_retriever

pytestmark = pytest.mark.slow

PER_SOURCE = 15_000
SHARD = 1_000

DRIVER = """
import json, sys
from pathlib import Path
import ray
from sourcebias.experiments.config import DatasetEntry, RetrieverEntry
from sourcebias.experiments.encode import encode_tasks

ray.init(address=sys.argv[1], log_to_driver=False)
spec, data, cache, parts = sys.argv[2], Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
refs = encode_tasks(ray, RetrieverEntry(spec, "tiny", encode_workers=parts), DatasetEntry(data, "d"), {}, cache)
Path(sys.argv[6]).write_text(json.dumps(ray.get(refs)))  # a file: Ray may print to stdout after it
"""


def write_corpus(root: Path) -> Path:
    """A Cocktail-layout dataset: a human and an LLM text per document, a few queries."""
    (root / "corpus").mkdir(parents=True)
    (root / "qrels").mkdir()
    human, llm = short_texts(PER_SOURCE), short_texts(PER_SOURCE, seed=5)
    for name, texts in (("human", human), ("llm", [f"{t} pi" for t in llm])):
        (root / "corpus" / f"{name}.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"alpha {i}"}) + "\n" for i in range(5)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(5)))
    return root


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    pytest.importorskip("ray")
    if RAY is None:
        pytest.skip("the `ray` command is not installed beside this Python")
    root = tmp_path_factory.mktemp("ray-encode")
    model = tiny_sentence_transformer(root / "model")
    data = write_corpus(root / "data")
    cluster = LoopbackCluster()
    try:
        cluster.start_node("head", "--head", f"--port={cluster.port}", "--include-dashboard=false")
        cluster.start_node("worker", f"--address={cluster.address}")
        yield cluster, model, data
    finally:
        cluster.stop()


def spec_of(model: Path) -> str:
    return f"st:{model},shard_size={SHARD},batch_size=100"


def start_driver(cluster: LoopbackCluster, model: Path, data: Path, cache: Path, parts: int) -> subprocess.Popen:
    spec = spec_of(model)
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, cluster.address, spec, str(data), str(cache), str(parts), str(cache) + ".json"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(driver: subprocess.Popen) -> list[dict]:
    out, err = driver.communicate(timeout=600)
    assert driver.returncode == 0, out[-2000:] + err[-3000:]
    return json.loads(Path(driver.args[-1]).read_text())


def corpus_texts(data: Path) -> list[str]:
    from sourcebias.data import load_dataset

    return load_dataset(data, split=None).corpus.retrieval_texts()


def assert_equals_single_machine(model: Path, data: Path, cache: Path, tmp_path: Path) -> None:
    """The cluster's store holds every text of the corpus, with the vectors one machine computes."""
    texts = corpus_texts(data)
    here = build_retriever(spec_of(model), cache_dir=tmp_path / "single").embedder  # one machine, its own store
    single = here.embed(texts, "document")
    assert here.stats["encoded"] == len(set(texts))
    from_cluster = build_retriever(spec_of(model), cache_dir=cache).embedder
    vectors = from_cluster.embed(texts, "document")  # in corpus order, by content key
    assert from_cluster.stats["encoded"] == 0 and from_cluster.stats["from_disk"] == len(set(texts))
    np.testing.assert_allclose(vectors, single, atol=1e-5)
    store = from_cluster.store("document")
    assert store is not None and len(store) == len(set(texts)) and not store._unreadable


def test_the_store_encoded_on_the_cluster_equals_the_single_machine_store(setup, tmp_path):
    cluster, model, data = setup
    results = finish(start_driver(cluster, model, data, tmp_path / "cache", parts=2))
    distinct = len(set(corpus_texts(data)))
    assert sorted(r["part"] for r in results) == [0, 1]
    assert sum(r["texts"] for r in results) == distinct and sum(r["encoded"] for r in results) == distinct
    assert_equals_single_machine(model, data, tmp_path / "cache", tmp_path)


def _shard_pids(folder: Path) -> dict[int, list[Path]]:
    out: dict[int, list[Path]] = {}
    for p in folder.glob("shard-*.npz"):
        out.setdefault(int(p.name.split("-")[2]), []).append(p)
    return out


def test_a_worker_node_killed_mid_shard_loses_no_finished_shard(setup, tmp_path):
    cluster, model, data = setup
    if not cluster.alive("worker"):
        cluster.start_node("worker", f"--address={cluster.address}")
    cache = tmp_path / "cache"
    store = build_retriever(spec_of(model), cache_dir=cache).embedder.store("document")
    assert store is not None
    folder = store.folder
    driver = start_driver(cluster, model, data, cache, parts=2)
    deadline = time.monotonic() + 300
    dead: set[int] = set()
    while not dead:
        assert driver.poll() is None and time.monotonic() < deadline, "no shard from the worker node before the driver ended"
        worker_pids = {p.pid for p in cluster.processes("worker")}
        dead = worker_pids & set(_shard_pids(folder)) if folder.exists() else set()
        time.sleep(0.1)
    cluster.kill("worker")  # SIGKILL every process of the node, mid-part: its next shard is in flight
    results = finish(driver)
    kept = [p for pid in dead for p in _shard_pids(folder)[pid]]
    assert kept and all(p.exists() for p in kept)  # the dead node's finished shards stay
    kept_vectors = sum(len(np.load(p)["keys"]) for p in kept)  # shards are cut by count or by time
    distinct = len(set(corpus_texts(data)))
    # the killed part ran again on the head: it read the dead node's shards and encoded only the rest
    assert sorted(r["part"] for r in results) == [0, 1]
    assert sum(r["from_disk"] for r in results) == kept_vectors
    assert sum(r["encoded"] for r in results) == distinct - kept_vectors
    assert_equals_single_machine(model, data, cache, tmp_path)
