"""Experiment grids: resumable cells, failures recorded, changed cells rerun, Ray, shared stores."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import ConfigError, DataError, OutputError
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import plan_cells, run_grid


def write_config(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.fixture
def grid_cfg(tmp_path, cocktail_dir):
    return write_config(
        tmp_path / "grid.toml",
        f"""
        [grid]
        name = "tiny"
        measures = ["NDCG", "Share"]
        cutoffs = [1, 3]
        significance_resamples = 200

        [[datasets]]
        path = "{cocktail_dir}"

        [[retrievers]]
        spec = "bm25"
        [[retrievers]]
        spec = "tfidf"
        [[retrievers]]
        spec = "bm25:k1=0.9"
        name = "bm25-k1"
        """,
    )


def events(log):
    return lambda kind, rec: log.append((kind, rec["cell"]))


def test_cells_are_evaluate_folders_and_reruns_reuse_them(grid_cfg, tmp_path, cocktail_dir):
    cfg = load_grid_config(grid_cfg)
    out = tmp_path / "out"
    log: list = []
    first = run_grid(cfg, out, on_event=events(log))
    assert first.counts() == {"ok": 3} and [k for k, _ in log].count("ok") == 3
    # each cell is an evaluate artifact equal to running the same retriever directly
    cell = sb.load_result(out / "cells" / "tiny" / "bm25")
    direct = sb.evaluate(sb.load_dataset(cocktail_dir), [sb.build_retriever("bm25")], measures=sb.measure_grid(["NDCG", "Share"], [1, 3]))
    assert cell.per_query.keys() == direct.per_query.keys()
    assert all(np.array_equal(v, direct.per_query[k], equal_nan=True) for k, v in cell.per_query.items())
    assert cell.runs == direct.runs
    stamp = (out / "cells" / "tiny" / "bm25" / "manifest.json").stat().st_mtime_ns
    log.clear()
    again = run_grid(cfg, out, on_event=events(log))
    assert [k for k, _ in log] == ["cached"] * 3 and again.counts() == {"ok": 3}
    assert (out / "cells" / "tiny" / "bm25" / "manifest.json").stat().st_mtime_ns == stamp


def test_a_changed_cell_reruns_and_removed_cells_go(grid_cfg, tmp_path):
    out = tmp_path / "out"
    run_grid(load_grid_config(grid_cfg), out)
    text = grid_cfg.read_text().replace('spec = "bm25:k1=0.9"', 'spec = "bm25:k1=0.8"').replace('[[retrievers]]\nspec = "tfidf"\n', "")
    grid_cfg.write_text(text)
    log: list = []
    run_grid(load_grid_config(grid_cfg), out, on_event=events(log))
    assert ("cached", "tiny/bm25") in log and ("ok", "tiny/bm25-k1") in log
    assert not (out / "cells" / "tiny" / "tfidf").exists()  # no results of another configuration
    state = json.loads((out / "grid.json").read_text())
    assert set(state["cells"]) == {"tiny/bm25", "tiny/bm25-k1"}
    assert sb.load_result(out / "cells" / "tiny" / "bm25-k1").retrievers["bm25-k1"]["k1"] == 0.8


def test_changed_data_reruns_the_cells(grid_cfg, tmp_path, cocktail_dir):
    out = tmp_path / "out"
    run_grid(load_grid_config(grid_cfg), out)
    with (cocktail_dir / "corpus" / "llm.jsonl").open("a") as fh:
        fh.write('{"_id": "d1", "text": "duplicate"}\n'.replace("d1", "d2x"))  # a new twin: invalid
    log: list = []
    res = run_grid(load_grid_config(grid_cfg), out, on_event=events(log))
    assert [k for k, _ in log if k != "start"] == ["failed"] * 3  # the twin has no original: every cell fails
    rec = res.records["tiny/bm25"]
    assert "has no original" in rec["error"] and "Traceback" in rec["traceback"]


def test_a_failing_cell_is_recorded_and_the_others_go_on(tmp_path, cocktail_dir):
    cfg = load_grid_config(
        write_config(
            tmp_path / "g.toml",
            f"""
            [grid]
            name = "f"
            measures = ["NDCG"]
            cutoffs = [1]
            [[datasets]]
            path = "{cocktail_dir}"
            [[retrievers]]
            spec = "bm25"
            [[runs]]
            name = "broken"
            dataset = "tiny"
            path = "{tmp_path / "broken.trec"}"
            """,
        )
    )
    (tmp_path / "broken.trec").write_text("q1 Q0 human/nope 1 1.0 x\n")
    res = run_grid(cfg, tmp_path / "out")
    assert res.records["tiny/bm25"]["status"] == "ok"
    assert res.records["tiny/broken"]["status"] == "failed" and "broken.trec:1: document 'human/nope'" in res.records["tiny/broken"]["error"]
    assert not (tmp_path / "out" / "cells" / "tiny" / "broken").exists()


def test_an_external_run_cell_equals_the_own_run_when_rankings_are_the_same(tmp_path, cocktail_dir):
    """A run written by another tool (here: the rows of sourcebias' own BM25 run, re-written by
    hand) evaluates in a grid cell to the same metrics as the bm25 cell."""
    first = tmp_path / "first"
    run_grid(
        load_grid_config(
            write_config(
                tmp_path / "a.toml",
                f'[grid]\nname = "x"\nmeasures = ["NDCG", "MAP"]\ncutoffs = [1, 3]\nsole = false\n[[datasets]]\npath = "{cocktail_dir}"\n[[retrievers]]\nspec = "bm25"\n',
            )
        ),
        first,
    )
    own = first / "cells" / "tiny" / "bm25" / "runs" / "bm25.mixed.trec"
    ext = tmp_path / "other-tool.trec"
    ext.write_text(
        "".join(f"{q} Q0 {d.split('/')[1]}::{d.split('/')[0]} {r} {s} other\n" for q, _, d, r, s, _ in (line.split() for line in own.read_text().splitlines()))
    )
    cfg = load_grid_config(
        write_config(
            tmp_path / "b.toml",
            f"""
            [grid]
            name = "x"
            measures = ["NDCG", "MAP"]
            cutoffs = [1, 3]
            sole = false
            [[datasets]]
            path = "{cocktail_dir}"
            [[retrievers]]
            spec = "bm25"
            [[runs]]
            name = "other"
            dataset = "tiny"
            path = "{ext}"
            docno_pattern = "{{doc_id}}::{{source}}"
            """,
        )
    )
    res = run_grid(cfg, first)
    assert res.records["tiny/other"]["status"] == "ok"
    mine = sb.load_result(first / "cells" / "tiny" / "bm25")
    other = sb.load_result(first / "cells" / "tiny" / "other")
    for m in ("NDCG@1", "NDCG@3", "MAP@3"):
        for t in ("human", "llm", "all"):
            assert other.mean("other", "mixed", t, m) == mine.mean("bm25", "mixed", t, m)


def test_config_errors_name_the_place(tmp_path, cocktail_dir):
    bad = write_config(tmp_path / "bad.toml", '[grid]\nname = "x"\n[[datasets]]\npath = "d"\n[[retrievers]]\nspecs = "bm25"\n')
    with pytest.raises(DataError, match=r"bad.toml:6: retrievers\[1\]: unknown key\(s\) specs \(did you mean spec\?\)"):
        load_grid_config(bad)
    syntax = write_config(tmp_path / "syntax.toml", "[grid]\nname = \n")
    with pytest.raises(DataError, match=r"syntax.toml:2: not valid TOML"):
        load_grid_config(syntax)
    unknown = write_config(tmp_path / "u.toml", f'[[datasets]]\npath = "{cocktail_dir}"\n[[retrievers]]\nspec = "bm99"\n')
    with pytest.raises(ConfigError, match="retriever 'bm99': unknown retriever 'bm99'"):
        run_grid(load_grid_config(unknown), tmp_path / "o")
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())  # refused before any work
    wrong = write_config(tmp_path / "w.toml", f'[[datasets]]\npath = "{cocktail_dir}"\nname = "tiny"\n[[retrievers]]\nspec = "bm25"\ndatasets = ["nq"]\n')
    with pytest.raises(DataError, match=r"w.toml:6: retrievers\[1\].datasets: 'nq' is not a dataset of this grid \(tiny\)"):
        load_grid_config(wrong)


def test_a_retriever_limited_to_some_datasets(tmp_path, cocktail_dir):
    cfg = write_config(
        tmp_path / "g.toml",
        f"""
        [[datasets]]
        path = "{cocktail_dir}"
        name = "a"
        [[datasets]]
        path = "{cocktail_dir}"
        name = "b"
        [[retrievers]]
        spec = "bm25"
        [[retrievers]]
        spec = "tfidf"
        datasets = ["b"]
        """,
    )
    cells = [(c.dataset.name, c.system.name) for c in plan_cells(load_grid_config(cfg))]
    assert cells == [("a", "bm25"), ("b", "bm25"), ("b", "tfidf")]


def test_the_grid_folder_contract(grid_cfg, tmp_path):
    cfg = load_grid_config(grid_cfg)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not a sourcebias grid folder"):
        run_grid(cfg, foreign)
    out = tmp_path / "out"
    run_grid(cfg, out)
    other = load_grid_config(write_config(tmp_path / "other.toml", grid_cfg.read_text().replace('name = "tiny"', 'name = "other"')))
    with pytest.raises(OutputError, match="holds the grid 'tiny', not 'other'"):
        run_grid(other, out)
    assert run_grid(other, out, overwrite=True).counts() == {"ok": 3}


KILL_SCRIPT = """
import sys
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import run_grid
run_grid(load_grid_config(sys.argv[1]), sys.argv[2], on_event=lambda k, r: print(k, r["cell"], flush=True))
"""


def test_killed_mid_grid_the_rerun_finishes_the_rest(tmp_path, nq_utd):
    cfg_path = write_config(
        tmp_path / "grid.toml",
        f"""
        [grid]
        name = "kill"
        measures = ["NDCG"]
        cutoffs = [1, 3]
        significance_resamples = 20000
        [[datasets]]
        path = "{nq_utd}"
        [[retrievers]]
        spec = "bm25"
        [[retrievers]]
        spec = "tfidf"
        [[retrievers]]
        spec = "bm25:k1=0.9,b=0.4"
        name = "bm25-tuned"
        """,
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(cfg_path), str(out)], stdout=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stdout:
        seen.append(line.split())
        if seen[-1][0] == "ok":  # the first cell is written: kill -9 while the second runs
            time.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    done = [c for k, c in seen if k == "ok"]
    assert done == ["nq-utd/bm25"]
    stamp = (out / "cells" / "nq-utd" / "bm25" / "manifest.json").stat().st_mtime_ns
    log: list = []
    res = run_grid(load_grid_config(cfg_path), out, on_event=events(log))
    assert ("cached", "nq-utd/bm25") in log and ("ok", "nq-utd/tfidf") in log and ("ok", "nq-utd/bm25-tuned") in log
    assert (out / "cells" / "nq-utd" / "bm25" / "manifest.json").stat().st_mtime_ns == stamp
    assert res.counts() == {"ok": 3} and not list((out / "cells" / "nq-utd").glob(".*staging*"))


STORE_WRITER = """
import sys, hashlib
import numpy as np
from sourcebias.models.embedding_store import Embedder

class Enc:
    name = "det"
    batch_size = 4
    def fingerprint(self, role): return "det-v1"
    def encode_documents(self, texts):
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:8].astype(np.float32) for t in texts])
    encode_queries = encode_documents

lo, hi = int(sys.argv[2]), int(sys.argv[3])
Embedder(Enc(), cache_dir=sys.argv[1], shard_size=5, flush_seconds=0.0).embed([f"text {i}" for i in range(lo, hi)])
"""


def test_the_embedding_store_is_safe_under_concurrent_writers(tmp_path):
    """Two processes encode overlapping texts into one store at the same time; every vector read
    back is the encoder's, no shard is corrupt, and nothing is missing."""
    import hashlib

    from sourcebias.models.embedding_store import EmbeddingStore, text_key

    procs = [subprocess.Popen([sys.executable, "-c", STORE_WRITER, str(tmp_path), lo, hi]) for lo, hi in (("0", "300"), ("150", "450"))]
    assert [p.wait(120) for p in procs] == [0, 0]
    store = EmbeddingStore(tmp_path, "det-v1")
    keys = [text_key(f"text {i}", "document") for i in range(450)]
    assert store.missing(keys) == []
    got = store.get(keys)
    expected = np.stack([np.frombuffer(hashlib.sha256(f"text {i}".encode()).digest(), dtype=np.uint8)[:8].astype(np.float32) for i in range(450)])
    np.testing.assert_array_equal(got, expected)
    assert not list((tmp_path / "embeddings" / "det-v1").glob(".*tmp*"))  # no temporary files left


def test_with_only_bench_counts_the_cells_it_dealt_with(grid_cfg, tmp_path, capsys):
    """Three cells finished earlier; `bench --only tiny/bm25` reuses one cell and runs none."""
    from sourcebias.cli.main import main

    out = tmp_path / "out"
    run_grid(load_grid_config(grid_cfg), out)
    with pytest.raises(SystemExit) as info:
        main(["bench", str(grid_cfg), "-o", str(out), "--only", "tiny/bm25", "--no-report"])
    text = capsys.readouterr().out
    assert info.value.code in (0, None), text
    assert "1 cells: 0 run, 1 reused, 0 failed" in text
    res = run_grid(load_grid_config(grid_cfg), out, only=["tiny/tfidf"])
    assert list(res.records) == ["tiny/tfidf"] and res.counts() == {"ok": 1}
    assert set(json.loads((out / "grid.json").read_text())["cells"]) == {"tiny/bm25", "tiny/tfidf", "tiny/bm25-k1"}


def test_a_cell_that_turns_ok_keeps_no_old_error(tmp_path, cocktail_dir):
    """A run cell finishes (hash H), then fails on a changed file, then its file is restored:
    its folder still holds H, so it is reused as ok, without the failure's error."""
    run = tmp_path / "ext.trec"
    good = "q1 Q0 human/d1 1 2.0 x\nq2 Q0 llm/d2 1 1.0 x\n"
    cfg = load_grid_config(
        write_config(
            tmp_path / "g.toml",
            f'[grid]\nname = "e"\nmeasures = ["NDCG"]\ncutoffs = [1]\n[[datasets]]\npath = "{cocktail_dir}"\n[[runs]]\nname = "ext"\ndataset = "tiny"\npath = "{run}"\n',
        )
    )
    run.write_text(good)
    assert run_grid(cfg, tmp_path / "out").records["tiny/ext"]["status"] == "ok"
    run.write_text("q1 Q0 human/nope 1 2.0 x\n")
    failed = run_grid(cfg, tmp_path / "out").records["tiny/ext"]
    assert failed["status"] == "failed" and "human/nope" in failed["error"]
    run.write_text(good)
    rec = run_grid(cfg, tmp_path / "out").records["tiny/ext"]
    assert rec["status"] == "ok" and rec["reused"] and "error" not in rec and "traceback" not in rec
    assert json.loads((tmp_path / "out" / "grid.json").read_text())["cells"]["tiny/ext"] == rec


# -- on a local Ray cluster (started once for the two tests below, the last of the module) -------------
@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_the_same_grid_on_a_local_ray_cluster_gives_identical_numbers(local_ray, grid_cfg, tmp_path):
    cfg = load_grid_config(grid_cfg)
    run_grid(cfg, tmp_path / "here")
    there = run_grid(cfg, tmp_path / "ray", ray_address="local")
    assert there.counts() == {"ok": 3}
    for cell in plan_cells(cfg):
        a = sb.load_result(cell.folder(tmp_path / "here"))
        b = sb.load_result(cell.folder(tmp_path / "ray"))
        assert a.runs == b.runs
        assert all(np.array_equal(v, b.per_query[k], equal_nan=True) for k, v in a.per_query.items())
    recs = sorted(there.records.values(), key=lambda r: r["started"])
    assert len({r["pid"] for r in recs}) >= 2  # cells ran in Ray worker processes, not here
    assert any(recs[i + 1]["started"] < recs[i]["finished"] for i in range(len(recs) - 1))  # two at once


@pytest.mark.slow
def test_on_ray_a_failing_encoding_fails_only_its_cells(local_ray, tmp_path, cocktail_dir):
    """A dense retriever whose checkpoint cannot be loaded, encoded by 2 Ray tasks first: its
    cell is recorded as failed with the encoding's error; the BM25 cell finishes."""
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    cfg = load_grid_config(
        write_config(
            tmp_path / "g.toml",
            f"""
            [grid]
            name = "r"
            measures = ["NDCG"]
            cutoffs = [1]
            [[datasets]]
            path = "{cocktail_dir}"
            [[retrievers]]
            spec = "bm25"
            [[retrievers]]
            spec = "st:{broken}"
            name = "broken"
            encode_workers = 2
            """,
        )
    )
    res = run_grid(cfg, tmp_path / "out", ray_address="local")
    assert res.records["tiny/bm25"]["status"] == "ok"
    rec = res.records["tiny/broken"]
    assert rec["status"] == "failed" and rec["error"].startswith("encoding the corpus with 2 workers failed: ")
    assert json.loads((tmp_path / "out" / "grid.json").read_text())["cells"]["tiny/broken"]["status"] == "failed"
