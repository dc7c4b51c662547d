"""`sourcebias simulate`: a 3-round loop on nq-utd with the offline SmolLM2 writing (in process and
through the package's OpenAI-compatible server, as `sourcebias serve` runs it), checked against
values computed here independently: the rankings of a plain BM25 re-index of each round's
corpus, Share@10 and NDCG@10 counted by hand from the saved runs, silenced documents and
self-BLEU on hand-made cases; resumption after a lost round; configuration errors with lines."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from sourcebias.core.errors import DataError, OutputError

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROUNDS = 3


def config_text(dataset: Path, *, generator: str = 'model = "smollm2"\nthreads = 1', extra: str = "", name: str = "t") -> str:
    return f"""
[simulation]
name = "{name}"
rounds = {ROUNDS}
queries_per_round = 2
k = 10
depth = 30
seed = 7
eval_queries = 12

[dataset]
path = "{dataset}"
split = "test"

[[retrievers]]
spec = "bm25"

[generator]
{generator}
write = "answer"
context = 2
max_new_tokens = 40
temperature = 0
{extra}
"""


def write_config(tmp_path: Path, text: str, name: str = "loop.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def trec(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, docno, _rank, _score, _tag = line.split()
        out.setdefault(q, []).append(docno)
    return out


@pytest.fixture(scope="module")
def local_run(nq_utd, tmp_path_factory):
    from sourcebias.simulate import load_simulation_config, run_simulation

    tmp = tmp_path_factory.mktemp("sim")
    cfg = load_simulation_config(write_config(tmp, config_text(nq_utd)))
    events: list[tuple[str, dict]] = []
    result, root = run_simulation(cfg, tmp / "out", on_event=lambda k, r: events.append((k, r)))
    return cfg, result, root, events


def round_corpus(nq_utd: Path, root: Path, r: int):
    """The corpus after round r, rebuilt here from the human file and the rounds' documents."""
    from sourcebias.data import load_dataset
    from sourcebias.data.corpus import Corpus, Document

    ds = load_dataset(nq_utd, split="test", sources=["human"])
    docs = list(ds.corpus)
    for i in range(1, r + 1):
        for line in (root / "loops" / "bm25" / f"round-{i:03d}" / "documents.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["metadata"]["added"]:
                docs.append(Document(rec["_id"], f"smollm2-round{i}", rec["title"], rec["text"]))
    return ds, Corpus.from_documents(docs)


def test_each_round_equals_a_plain_bm25_reindex_and_hand_counted_measures(local_run, nq_utd):
    from sourcebias.retrieval import build_retriever

    _cfg, result, root, _ = local_run
    rows = result.rounds("bm25")
    assert [r["round"] for r in rows] == list(range(ROUNDS + 1))
    qids = json.loads((root / "loops" / "bm25" / "round-000" / "metrics.json").read_text())["top_human"].keys()
    for r in range(ROUNDS + 1):
        ds, corpus = round_corpus(nq_utd, root, r)
        saved = trec(root / "loops" / "bm25" / f"round-{r:03d}" / "run.trec")
        fresh = build_retriever("bm25").retrieve(corpus, {q: ds.queries[q] for q in qids}, 30, seed=7)
        assert {q: [f"{s}/{d}" for d, s in fresh.keys(q)] for q in qids} == saved  # the segmented index equals a re-index
        row = rows[r]
        assert row["documents"] == len(corpus)
        # Share@10 of generated text, counted by hand; NDCG@10 on the human judgements by hand
        share = np.mean([sum(1 for d in saved[q][:10] if not d.startswith("human/")) / len(saved[q][:10]) for q in qids])
        assert row["share_generated"] == pytest.approx(share, abs=1e-12)
        assert row["ndcg"] == pytest.approx(np.mean([hand_ndcg(saved[q], ds.qrels, q) for q in qids]), abs=1e-9)


def hand_ndcg(ranking: list[str], qrels, q: str, k: int = 10) -> float:
    rel = {f"human/{d}": g for d, g in qrels[q].items() if g > 0}
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def test_documents_carry_their_provenance_and_new_sources(local_run):
    _cfg, result, root, _ = local_run
    for r in range(1, ROUNDS + 1):
        folder = root / "loops" / "bm25" / f"round-{r:03d}"
        records = [json.loads(x) for x in (folder / "documents.jsonl").read_text().splitlines()]
        assert len(records) == 2  # two queries per round
        before = trec(root / "loops" / "bm25" / f"round-{r - 1:03d}" / "run.trec")
        for rec in records:
            m = rec["metadata"]
            assert m["round"] == r and m["retriever"] == "bm25" and m["model"] == "smollm2"
            assert m["added"] == (m["rewrite_status"] == "ok")
            # written from the top 2 of the previous round's ranking of its query
            assert [f"{f['source']}/{f['doc_id']}" for f in m["from"]] == before[m["query_id"]][:2]
        shares = {s["source"] for s in result.sources if s["round"] == r}
        assert {f"smollm2-round{i}" for i in range(1, r + 1) if any(x["round"] == i and x["added"] for x in result.rounds("bm25"))} <= shares | set()


def test_a_lost_round_is_run_again_and_the_rest_reused(local_run, nq_utd, tmp_path):
    import shutil

    from sourcebias.simulate import run_simulation

    cfg, result, root, _ = local_run
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "loops" / "bm25" / f"round-{ROUNDS:03d}")  # killed in the last round
    events: list[tuple[str, dict]] = []
    again, _ = run_simulation(cfg, copy, on_event=lambda k, r: events.append((k, r)))
    assert [r["round"] for k, r in events if k == "cached"] == list(range(ROUNDS))
    assert [r["round"] for k, r in events if k == "ok"] == [ROUNDS]
    strip = lambda rows: json.dumps([{k: v for k, v in r.items() if k != "seconds"} for r in rows])  # noqa: E731 - NaN equal to NaN
    assert strip(again.rows) == strip(result.rows)

    def docs(folder: Path) -> list[dict]:
        lines = (folder / "loops" / "bm25" / f"round-{ROUNDS:03d}" / "documents.jsonl").read_text().splitlines()
        return [{**d, "metadata": {k: v for k, v in d["metadata"].items() if k != "seconds"}} for d in map(json.loads, lines)]

    assert docs(copy) == docs(root)  # the same documents written again (timings aside)


def test_the_folder_is_an_artifact_and_refuses_another_simulation(local_run, nq_utd, tmp_path):
    from sourcebias.core.artifacts import load_artifact
    from sourcebias.simulate import SimulationResult, load_simulation_config, run_simulation

    _cfg, result, root, _ = local_run
    loaded = load_artifact(root)
    assert isinstance(loaded, SimulationResult) and json.dumps(loaded.rows) == json.dumps(result.rows)
    for name in ("simulation.csv", "sources.csv", "report.md", "report.html", "curves.png"):
        assert (root / name).is_file()
    other = load_simulation_config(write_config(tmp_path, config_text(nq_utd, name="other")))
    with pytest.raises(OutputError, match="holds the simulation 't'"):
        run_simulation(other, root)
    assert not (root.parent / f".{root.name}.lock").exists()  # a refused claim leaves no lock file
    changed = load_simulation_config(write_config(tmp_path, config_text(nq_utd).replace("temperature = 0", "temperature = 0.7"), "changed.toml"))
    with pytest.raises(OutputError, match="made with other settings"):  # before any generation
        run_simulation(changed, root)
    assert json.dumps(SimulationResult.load(root).rows) == json.dumps(result.rows)  # nothing was touched


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_through_the_openai_compatible_server_every_round_equals_the_local_model(local_run, nq_utd, tmp_path):
    from sourcebias.llmcalls.backends import LocalBackend
    from sourcebias.llmcalls.server import make_server
    from sourcebias.simulate import load_simulation_config, run_simulation

    _cfg, result, root, _ = local_run
    server = make_server(LocalBackend("smollm2", threads=1), port=free_port(), model_names=["smollm2"], quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        text = config_text(nq_utd, generator=f'model = "openai:smollm2@{server.url}"')
        served, out = run_simulation(load_simulation_config(write_config(tmp_path, text)), tmp_path / "served")
    finally:
        server.shutdown()

    def read(folder: Path, r: int) -> list[dict]:
        return [json.loads(x) for x in (folder / "loops" / "bm25" / f"round-{r:03d}" / "documents.jsonl").read_text().splitlines()]

    for r in range(1, ROUNDS + 1):
        assert [d["text"] for d in read(out, r)] == [d["text"] for d in read(root, r)]  # greedy: the same answers over HTTP
        assert all(d["metadata"]["model"] == "smollm2" for d in read(out, r))
    strip = lambda rows: json.dumps([{k: v for k, v in r.items() if k != "seconds"} for r in rows])  # noqa: E731
    assert strip(served.rows) == strip(result.rows)


def test_silenced_counts_only_documents_gone_for_good():
    from sourcebias.simulate.metrics import silenced_counts

    rounds = [
        {"q1": ["a", "b", "c"], "q2": ["x"]},
        {"q1": ["a"], "q2": []},  # b, c, x out ...
        {"q1": ["a", "b"], "q2": []},  # ... b back
        {"q1": ["b"], "q2": ["x"]},  # a out, x back
    ]
    got = [c["silenced"] for c in silenced_counts(rounds)]
    # round 1: c is never back (b returns at 2, x at 3) -> 1; round 2: c -> 1; round 3: a, c -> 2
    assert got == [0, 1, 1, 2]
    assert all(c["baseline_human"] == 4 for c in silenced_counts(rounds))


def test_self_bleu_equals_sacrebleu_sentence_scores():
    from sacrebleu.metrics import BLEU

    from sourcebias.simulate.metrics import self_bleu

    texts = ["the cat sat on the mat", "the cat sat on a mat today", "dogs bark at night", ""]
    b = BLEU(effective_order=True)
    kept = texts[:3]
    expected = np.mean([b.sentence_score(t, [u for j, u in enumerate(kept) if j != i]).score for i, t in enumerate(kept)]) / 100
    assert self_bleu(texts) == pytest.approx(expected)
    assert self_bleu(["same words here", "same words here"]) == pytest.approx(1.0)
    assert math.isnan(self_bleu(["only one", ""]))


@pytest.mark.parametrize(
    ("patch", "message", "line"),
    [
        (('write = "answer"', 'write = "summary"'), "'summary' is not one of answer, rewrite", "write"),
        (("depth = 30", "depth = 5"), "must be at least k", "depth"),
        (("seed = 7", "seed = 7\nspeed = 1"), "unknown key(s) speed (did you mean seed?)", "speed"),
        (("temperature = 0", 'temperature = 0\n[intervention]\nkind = "detector"'), "needs detector", "kind"),
        (('spec = "bm25"', 'spec = "nosuch"'), "unknown retriever 'nosuch'", "spec"),
        (('model = "smollm2"', 'model = "openai:m"'), "a server is named openai:MODEL@http://HOST:PORT/v1", "model"),
        (('model = "smollm2"', 'model = "openai:m@http://h:1/v1"\nbase_url = "http://h:2/v1"'), "base_url goes with", "base_url"),
    ],
)
def test_configuration_errors_name_the_file_and_line(nq_utd, tmp_path, patch, message, line):
    from sourcebias.simulate import load_simulation_config

    text = config_text(nq_utd).replace(*patch)
    path = write_config(tmp_path, text)
    with pytest.raises(DataError) as err:
        load_simulation_config(path)
    assert message in str(err.value)
    expected = next(i for i, x in enumerate(text.splitlines(), start=1) if x.strip().startswith(line))
    assert err.value.line == expected and str(path) in str(err.value)


def test_the_old_server_keys_read_as_the_model_spec_with_a_warning_and_the_same_hash(nq_utd, tmp_path):
    from sourcebias.core.moved import SourceBiasDeprecationWarning
    from sourcebias.simulate import load_simulation_config

    new = load_simulation_config(write_config(tmp_path, config_text(nq_utd, generator='model = "openai:qwen@http://h:1/v1@http://h:2/v1"'), "new.toml"))
    with pytest.warns(
        SourceBiasDeprecationWarning, match='backend = "openai", base_url = .* is deprecated: use model = "openai:qwen@http://h:1/v1@http://h:2/v1"'
    ):
        old = load_simulation_config(
            write_config(
                tmp_path, config_text(nq_utd, generator='model = "qwen"\nbackend = "openai"\nbase_url = ["http://h:1/v1", "http://h:2/v1"]'), "old.toml"
            )
        )
    assert (old.generator.model, old.generator.backend, old.generator.base_url) == ("qwen", "openai", ("http://h:1/v1", "http://h:2/v1"))
    assert old.generator == new.generator and old.loop_settings() == new.loop_settings()  # finished rounds of 0.2.0 are reused


def test_fair_view_interleaves_human_and_generated_text():
    from sourcebias.data.corpus import Corpus, Document
    from sourcebias.mitigation.fair import interleave
    from sourcebias.retrieval.run import Run
    from sourcebias.simulate.config import InterventionEntry
    from sourcebias.simulate.intervene import fair_view

    docs = [Document(f"h{i}", "human", "", "x") for i in range(6)] + [Document(f"g{i}", f"gen-round{1 + i % 2}", "", "y") for i in range(4)]
    corpus = Corpus.from_documents(docs)
    order = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])  # every human document first
    run = Run(corpus, "r", {"q": order}, {"q": np.arange(10, 0, -1, dtype=np.float64)})

    class Cfg:
        k = 4
        intervention = InterventionEntry(kind="fair", fair_target="equal")

    view = fair_view(run, Cfg, "human")
    group = np.array([0] * 6 + [1] * 4)
    expected, _ = interleave(group[order], 4, "equal")
    assert view.positions["q"].tolist() == order[expected].tolist()
    top = [corpus.source_of(int(p)) for p in view.positions["q"][:4]]
    assert sum(s != "human" for s in top) == 2  # both generated rounds count as one group


def test_the_dense_loop_index_grown_in_rounds_ranks_as_a_fresh_dense_retriever(nq_utd, tmp_path):
    """MiniLM (offline): vectors appended over two adds (through an embedding store) give the
    rankings of a DenseRetriever over the whole corpus, no store."""
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import build_retriever
    from sourcebias.simulate.indexes import DenseLoopIndex, loop_index

    ds = load_dataset(nq_utd, split="test")
    corpus = ds.corpus.take(np.arange(0, 1600, 10))  # 160 documents of both sources
    index = loop_index("minilm", "minilm", cache_dir=tmp_path / "store")
    assert isinstance(index, DenseLoopIndex)
    queries = {q: ds.queries[q] for q in ds.evaluation_queries()[:12]}
    index.add(corpus, range(0, 100))
    index.add(corpus, range(100, 130))
    run = index.rank(corpus, queries, 20, 0)  # fills the last 30 itself
    assert len(index.vectors) == len(corpus)
    fresh = build_retriever("minilm,cache=false").retrieve(corpus, queries, 20, seed=0)
    for q in queries:
        assert run.keys(q) == fresh.keys(q)
        np.testing.assert_allclose(run.scores[q], fresh.scores[q], atol=1e-5)


def test_the_dataset_may_be_a_known_dataset_name(tmp_path):
    """`path = "nq-utd"` in a simulation file is the built-in dataset, as on the command line."""
    from sourcebias.data.registry import KNOWN
    from sourcebias.simulate import load_simulation_config

    cfg = load_simulation_config(write_config(tmp_path, config_text(Path("nq-utd"))))
    assert cfg.dataset == KNOWN["nq-utd"].builtin_path()
