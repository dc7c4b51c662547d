"""ir_datasets both ways, offline.

* ``irds:beir/nfcorpus/dev`` — a real ir_datasets id, read through ir_datasets' own BEIR code from
  a ``source.zip`` the test places in a temporary ``IR_DATASETS_HOME`` (built from the human side
  of ../shared/data/nfcorpus), with the LLM twins from the folder: it must equal loading the
  folder itself. Run in a subprocess because ir_datasets fixes its BEIR paths when imported.
* A small custom ir_datasets dataset backed by local files, for the validation rules.
* A dataset that is not there stops with its id and how to fetch it, without waiting.
* ``sourcebias.irds.register(DIR)``: ``ir_datasets.load``, ``ranx.Qrels.from_ir_datasets`` and
  ``pt.get_dataset("irds:...")`` on our folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ir_datasets = pytest.importorskip("ir_datasets")

from conftest import write_jsonl  # noqa: E402
from irds_helpers import placed_nfcorpus  # noqa: E402

from sourcebias.core.errors import ConfigError, DataError  # noqa: E402
from sourcebias.data import load_dataset  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def run_py(code: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)


def test_real_irds_id_equals_the_folder(nfcorpus, tmp_path):
    home = placed_nfcorpus(nfcorpus, tmp_path / "irds-home")
    code = """
import json, sys
from sourcebias.data import load_dataset
folder = sys.argv[1]
ds = load_dataset("irds:beir/nfcorpus/dev", twins=folder, split="dev")
ref = load_dataset(folder, split="dev")
print(json.dumps({
    "sources": list(ds.sources), "layout": ds.layout, "name": ds.name,
    "same_corpus": ds.corpus.doc_ids == ref.corpus.doc_ids and ds.corpus.source_list() == ref.corpus.source_list()
        and ds.corpus.texts == ref.corpus.texts and ds.corpus.titles == ref.corpus.titles,
    "same_qrels": {q: dict(v) for q, v in ds.qrels.items()} == {q: dict(v) for q, v in ref.qrels.items()},
    "same_query_texts": all(ds.queries[q] == ref.queries[q] for q in ds.evaluation_queries()),
    "queries": ds.evaluation_queries() == ref.evaluation_queries(),
    "orphans": ds.orphans, "human_file": ds.describe()["sources"]["human"]["file"],
}))
"""
    out = run_py(code, home, str(nfcorpus))
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["sources"] == ["human", "llama-2-7b-chat-tmp0.2"] and r["layout"] == "irds" and r["name"] == "beir/nfcorpus/dev"
    assert r["same_corpus"] and r["same_qrels"] and r["same_query_texts"] and r["queries"]
    assert r["orphans"]["policy"] == "drop" and r["human_file"] == "irds:beir/nfcorpus/dev"


def test_cli_evaluates_an_irds_dataset_with_twins(nfcorpus, tmp_path):
    home = placed_nfcorpus(nfcorpus, tmp_path / "irds-home")
    code = "import sys; from sourcebias.cli.main import main; sys.exit(main(sys.argv[1:]))"
    common = ["--split", "dev", "--k", "10", "--metric", "NDCG", "--no-sole", "--no-runs", "--depth", "100"]
    a = run_py(code, home, "evaluate", "irds:beir/nfcorpus/dev", "--twins", str(nfcorpus), *common, "-o", str(tmp_path / "irds"))
    b = run_py(code, home, "evaluate", str(nfcorpus), *common, "-o", str(tmp_path / "folder"))
    assert a.returncode == 0, a.stdout[-2000:] + a.stderr[-2000:]
    assert b.returncode == 0, b.stderr[-2000:]
    ra, rb = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("irds", "folder"))
    ma, mb = ((tmp_path / d / "metrics.csv").read_text() for d in ("irds", "folder"))
    assert ma == mb and "NDCG@10" in ma
    assert ra["dataset"]["layout"] == "irds" and rb["dataset"]["layout"] == "cocktail"


def test_missing_dataset_stops_with_its_id_and_how_to_fetch_it(tmp_path):
    code = """
import time
from sourcebias.core.errors import ConfigError
from sourcebias.data import load_dataset
t = time.time()
try:
    load_dataset("irds:beir/scifact/test")
except ConfigError as e:
    print(round(time.time() - t, 1)); print(e)
"""
    out = run_py(code, tmp_path / "empty-home")
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, msg = out.stdout.split("\n", 1)
    assert "beir/scifact/test" in msg and "IR_DATASETS_HOME" in msg and "ir_datasets export beir/scifact/test docs" in msg
    assert float(seconds) < 60


def test_an_offline_id_prints_only_the_clean_error(tmp_path):
    """ir_datasets' own log lines and progress bars ([INFO] [starting] ..., [WARNING] Download
    failed ..., docs_iter: 0%) are held back while it looks for the dataset; only our error shows."""
    code = "import sys; from sourcebias.cli.main import main; sys.exit(main(sys.argv[1:]))"
    out = run_py(code, tmp_path / "empty-home", "evaluate", "irds:beir/scifact/test")
    assert out.returncode == 2
    assert out.stderr.startswith("Error: ir_datasets dataset 'beir/scifact/test' is not under"), out.stderr[:500]
    for noise in ("[INFO]", "[WARNING]", "docs_iter", "%|"):
        assert noise not in out.stderr + out.stdout


def test_held_output_passes_through_once_released():
    import io

    from sourcebias.data.irds import HeldOutput

    real = io.StringIO()
    held = HeldOutput(real)
    held.write("[INFO] [starting] opening zip file\n")
    assert real.getvalue() == ""
    held.release()
    held.write("after\n")
    assert real.getvalue() == "[INFO] [starting] opening zip file\nafter\n"
    dropped = HeldOutput(real := io.StringIO())
    dropped.write("[WARNING] Download failed\n")
    assert real.getvalue() == ""


@pytest.fixture
def tiny_irds(tmp_path, monkeypatch):
    """A custom ir_datasets dataset from local files in a temporary IR_DATASETS_HOME, and its twins."""
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    home = tmp_path / "home" / "sbtest"
    home.mkdir(parents=True)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    (home / "docs.tsv").write_text("d1\tred apples grow on trees\nd2\tgreen pears are sweet\nd3\tbananas are yellow\n")
    (home / "queries.tsv").write_text("q1\tapples\nq2\tpears\n")
    (home / "qrels").write_text("q1 0 d1 1\nq2 0 d2 2\nq2 0 d3 0\n")
    ds_id = f"sbtest/tiny-{tmp_path.name}"
    ir_datasets.registry.register(ds_id, ir_datasets.Dataset(TsvDocs(LocalDownload(home / "docs.tsv")), TsvQueries(LocalDownload(home / "queries.tsv")), TrecQrels(LocalDownload(home / "qrels"), {})))
    twins = tmp_path / "twins"
    write_jsonl(twins / "llm.jsonl", [{"_id": "d1", "text": "apples, red, on trees"}, {"_id": "d2", "text": "sweet green pears"}])
    return ds_id, twins


def test_custom_dataset_field_names_and_the_orphan_rule(tiny_irds):
    ds_id, twins = tiny_irds
    ds = load_dataset(f"irds:{ds_id}", twins=twins)
    assert ds.sources == ("human", "llm") and len(ds.corpus) == 5 and ds.queries == {"q1": "apples", "q2": "pears"}
    assert dict(ds.qrels["q2"]) == {"d2": 2}  # d3 has no twin: its judgement is left out (orphans="drop")
    assert ds.orphans["judged_originals_left_out"] == 1 and ds.orphans["missing_copies"] == {"llm": 1}
    kept = load_dataset(f"irds:{ds_id}", twins=twins, orphans="keep")
    assert dict(kept.qrels["q2"]) == {"d2": 2, "d3": 0} and kept.orphans["judged_originals_without_copy"] == 1
    human_only = load_dataset(f"irds:{ds_id}", twins=twins, sources=["human"])
    assert human_only.sources == ("human",)


def test_twin_without_original_is_refused_with_file_and_line(tiny_irds):
    ds_id, twins = tiny_irds
    write_jsonl(twins / "llm.jsonl", [{"_id": "d1", "text": "x"}, {"_id": "d9", "text": "no original"}])
    with pytest.raises(DataError) as info:
        load_dataset(f"irds:{ds_id}", twins=twins)
    assert "llm.jsonl:2" in str(info.value) and "'d9' has no original" in str(info.value)


def test_bad_arguments_say_what_is_wrong(tiny_irds, cocktail_dir, tmp_path):
    ds_id, twins = tiny_irds
    with pytest.raises(ConfigError, match="unknown ir_datasets id 'sbtest/nope'"):
        load_dataset("irds:sbtest/nope", twins=twins)
    with pytest.raises(ConfigError, match="unknown source"):
        load_dataset(f"irds:{ds_id}", twins=twins, sources=["gpt"])
    with pytest.raises(ConfigError, match="twins= is for irds"):
        load_dataset(cocktail_dir, twins=twins)
    with pytest.raises(DataError, match="nowhere: dataset folder not found"):
        load_dataset(f"irds:{ds_id}", twins=tmp_path / "nowhere")


def test_a_download_that_does_not_answer_is_abandoned(tmp_path, monkeypatch):
    """A dataset whose file must be downloaded from a host that never answers: one try, a short
    timeout, then the id and how to fetch it."""
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import Cache, LocalDownload, RequestsDownload

    monkeypatch.setenv("IR_DATASETS_DL_TIMEOUT", "2")
    (tmp_path / "q.tsv").write_text("q1\tx\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    ds_id = f"sbtest/far-{tmp_path.name}"
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/docs.tsv"
    docs = TsvDocs(Cache(RequestsDownload(url), tmp_path / "home" / "docs.tsv"))
    ir_datasets.registry.register(ds_id, ir_datasets.Dataset(docs, TsvQueries(LocalDownload(tmp_path / "q.tsv")), TrecQrels(LocalDownload(tmp_path / "qrels"), {})))
    t = time.time()
    try:
        with pytest.raises(ConfigError) as info:
            load_dataset(f"irds:{ds_id}")
    finally:
        silent.close()
    assert time.time() - t < 30
    assert ds_id in str(info.value) and "could not be downloaded" in str(info.value)
    assert os.environ["IR_DATASETS_DL_TIMEOUT"] == "2" and "IR_DATASETS_DL_TRIES" not in os.environ  # restored


def test_register_our_folder_as_ir_datasets(nq_utd):
    import sourcebias.irds as sb_irds

    ids = sb_irds.register(nq_utd)
    assert ids == ["cocktail/nq-utd/test"] and sb_irds.register(nq_utd) == ids
    ds = ir_datasets.load("cocktail/nq-utd/test")
    docs = list(ds.docs_iter())
    assert len(docs) == 1600 and {d.source for d in docs} == {"human", "llama-2-7b-chat-tmp0.2"}
    assert docs[0].doc_id == f"{docs[0].source}/{docs[0].original_id}"
    ours = load_dataset(nq_utd, split="test")
    qrels = list(ds.qrels_iter())
    assert len(qrels) == 2 * ours.qrels.n_judgements and len(list(ds.queries_iter())) == len(ours.evaluation_queries())


def test_register_refuses_a_taken_name(nq_utd, cocktail_dir):
    import sourcebias.irds as sb_irds

    sb_irds.register(nq_utd)
    with pytest.raises(ConfigError, match="already registered"):
        sb_irds.register(cocktail_dir, name="nq-utd")


def test_ranx_and_pyterrier_read_the_registered_folder(nq_utd):
    ranx = pytest.importorskip("ranx")
    pt = pytest.importorskip("pyterrier")
    import sourcebias.irds as sb_irds

    (ds_id,) = sb_irds.register(nq_utd)
    ours = load_dataset(nq_utd, split="test")
    q = ranx.Qrels.from_ir_datasets(ds_id).to_dict()
    q0 = ours.evaluation_queries()[0]
    assert q[q0] == {f"{s}/{d}": g for d, g in ours.qrels[q0].items() for s in ours.sources}
    p = pt.get_dataset(f"irds:{ds_id}")
    topics = p.get_topics()
    assert list(topics["qid"]) == ours.evaluation_queries()
    doc = next(iter(p.get_corpus_iter()))
    assert {"docno", "text", "source"} <= set(doc)


def test_grid_config_takes_a_twins_key(tmp_path, nq_utd):
    from sourcebias.experiments.config import load_grid_config

    cfg = tmp_path / "grid.toml"
    cfg.write_text(f'[[datasets]]\npath = "irds:beir/nfcorpus/dev"\ntwins = "{nq_utd.as_posix()}"\nsplit = "dev"\n\n[[retrievers]]\nspec = "bm25"\n')
    grid = load_grid_config(cfg)
    (entry,) = grid.datasets
    assert str(entry.path) == "irds:beir/nfcorpus/dev" and entry.twins == nq_utd.resolve() and entry.name == "beir-nfcorpus-dev"


def test_a_grid_runs_an_irds_dataset_like_its_folder(nfcorpus, tmp_path):
    """`sourcebias bench` with an `irds:` dataset: the cell hash takes the id and the twins' digests
    (no folder to read), and the cell's figures equal the same grid over the folder."""
    home = placed_nfcorpus(nfcorpus, tmp_path / "irds-home")
    head = '[grid]\nname = "g"\nmeasures = ["NDCG"]\ncutoffs = [3]\nsole = false\ndepth = 100\nsignificance_resamples = 100\nbootstrap_resamples = 200\n'
    irds = tmp_path / "irds.toml"
    irds.write_text(head + f'[[datasets]]\npath = "irds:beir/nfcorpus/dev"\nname = "nf"\ntwins = "{nfcorpus.as_posix()}"\nsplit = "dev"\n[[retrievers]]\nspec = "bm25"\n')
    folder = tmp_path / "folder.toml"
    folder.write_text(head + f'[[datasets]]\npath = "{nfcorpus.as_posix()}"\nname = "nf"\nsplit = "dev"\n[[retrievers]]\nspec = "bm25"\n')
    code = "import sys; from sourcebias.cli.main import main; sys.exit(main(sys.argv[1:]))"
    for cfg in (irds, folder):
        out = run_py(code, home, "bench", str(cfg), "-o", str(tmp_path / cfg.stem), "--no-report")
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    ma, mb = ((tmp_path / d / "cells" / "nf" / "bm25" / "metrics.csv").read_text() for d in ("irds", "folder"))
    assert ma == mb and "NDCG@3" in ma
    state = json.loads((tmp_path / "irds" / "grid.json").read_text())
    assert all(c["status"] == "ok" for c in state["cells"].values())


def test_twins_may_be_given_by_a_known_dataset_name(nfcorpus, tmp_path):
    """--twins takes a known dataset's name as well as a folder (a downloaded Cocktail dataset
    holds the twins): here the NFCorpus download is the development copy, placed with its marker."""
    from sourcebias.data.registry import MARKER

    home = placed_nfcorpus(nfcorpus, tmp_path / "irds-home")
    datasets = tmp_path / "datasets"
    (datasets / "nfcorpus").mkdir(parents=True)
    for item in nfcorpus.iterdir():
        (datasets / "nfcorpus" / item.name).symlink_to(item.resolve())
    (datasets / "nfcorpus" / MARKER).write_text("{}", encoding="utf-8")
    code = """
import sys
from sourcebias.data import load_dataset
a = load_dataset("irds:beir/nfcorpus/dev", twins="nfcorpus", split="dev")
b = load_dataset("irds:beir/nfcorpus/dev", twins=sys.argv[1], split="dev")
print(a.sources == b.sources and a.corpus.texts == b.corpus.texts, a.options.twins)
"""
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "SOURCEBIAS_DATASETS": str(datasets), "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-c", code, str(nfcorpus)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", str((datasets / "nfcorpus").resolve())]  # the name is saved as the folder it stood for
