"""Judged originals without a copy in every source (the orphan rule), skipped originals, ids
with whitespace, empty rankings on reload, duplicate run names: each number is checked against
a hand-worked value or against the same data with the judgements removed by hand."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset
from sourcebias.data.corpus import Corpus, unpaired_positions
from sourcebias.evaluation import evaluate, load_result, parse_measure
from sourcebias.retrieval.registry import build_retriever
from sourcebias.retrieval.run import Run


def _docs(ids, prefix=""):
    return [{"_id": d, "title": "", "text": f"{prefix}document {d} text"} for d in ids]


def _orphan_dataset(tmp_path: Path) -> Path:
    """d1 with both copies, d2 human only; q1 judges d1, q2 judges d2 (the issue's example)."""
    root = tmp_path / "orph"
    write_jsonl(root / "corpus" / "human.jsonl", _docs(["d1", "d2", "d3"]))
    write_jsonl(root / "corpus" / "llm.jsonl", _docs(["d1", "d3"], "rewritten "))
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "document d1"}, {"_id": "q2", "text": "document d2"}])
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d1", 1), ("q2", "d2", 1)])
    return root


def _llm_first_run(ds) -> Run:
    """Per query, the judged document's copies on top, its LLM copy first (where it has one),
    then every other document (scores strictly decreasing)."""
    c = ds.corpus
    top = {"q1": [("d1", "llm"), ("d1", "human")], "q2": [("d2", "llm"), ("d2", "human")]}
    positions, scores = {}, {}
    for q, keys in top.items():
        head = [c.position(d, s) for d, s in keys if c.position(d, s) is not None]
        rest = [i for i in range(len(c)) if i not in head]
        positions[q] = np.asarray(head + rest, dtype=np.int64)
        scores[q] = np.arange(len(c), 0, -1, dtype=np.float64)
    return Run(c, "llm-first", positions, scores)


def test_orphan_gives_no_free_credit(tmp_path):
    root = _orphan_dataset(tmp_path)
    m = [parse_measure("NDCG@1")]
    keep = load_dataset(root, orphans="keep")
    drop = load_dataset(root)
    # hand-worked: keep -> q1 human 0, llm 1; q2 (d2 has no twin, so human/d2 is the first
    # document judged) human 1, llm 0 -> means 0.5 / 0.5 -> Relative Δ 0
    r_keep = evaluate(keep, runs=[_llm_first_run(keep)], measures=m)
    assert r_keep.relative_delta("llm-first", "NDCG@1") == pytest.approx(0.0)
    # drop -> only q1 is evaluated: human 0, llm 1 -> (0 - 1) / 0.5 * 100 = -200
    r_drop = evaluate(drop, runs=[_llm_first_run(drop)], measures=m)
    assert r_drop.query_ids == ["q1"]
    assert r_drop.relative_delta("llm-first", "NDCG@1") == pytest.approx(-200.0)
    assert drop.orphans == {"policy": "drop", "missing_copies": {"llm": 1}, "judged_originals_left_out": 1, "judgements_left_out": 1, "queries_left_out": 1}
    assert r_drop.parameters["orphans"] == "drop" and r_keep.parameters["orphans"] == "keep"
    assert r_drop.dataset["orphans"]["judged_originals_left_out"] == 1
    assert keep.orphans["judged_originals_without_copy"] == 1
    # the documents stay in the corpus, unjudged
    assert drop.corpus.position("d2", "human") is not None
    assert any("left out the judgements of 1 judged originals" in n for n in drop.report.notes())
    assert any("--orphans keep" in n for n in keep.report.notes())


def test_orphan_counts_reach_result_json_and_manifest(tmp_path):
    from sourcebias.study.outputs import write_evaluation

    root = _orphan_dataset(tmp_path)
    ds = load_dataset(root)
    out = write_evaluation(evaluate(ds, runs=[_llm_first_run(ds)], measures=[parse_measure("NDCG@1")]), tmp_path / "out")
    body = json.loads((out / "result.json").read_text())
    assert body["dataset"]["orphans"]["missing_copies"] == {"llm": 1}
    manifest = json.loads((out / "manifest.json").read_text())
    assert "orphans" in json.dumps(manifest["inputs"]["dataset"])


def test_unknown_orphan_policy_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="orphans must be"):
        load_dataset(_orphan_dataset(tmp_path), orphans="ignore")


def test_unpaired_positions():
    c = Corpus(["a", "b", "a", "c"], ["human", "human", "llm", "llm"], [""] * 4, ["x"] * 4)
    assert unpaired_positions(c).tolist() == [False, True, False, True]
    assert not unpaired_positions(c.subset(["human"])).any()


def _copy_nq_utd(src: Path, dst: Path, *, drop_twins: set[str], drop_judgements: set[str]) -> Path:
    shutil.copytree(src, dst)
    llm = next(p for p in (dst / "corpus").iterdir() if p.name != "human.jsonl")
    lines = [ln for ln in llm.read_text(encoding="utf-8").splitlines() if json.loads(ln)["_id"] not in drop_twins]
    llm.write_text("\n".join(lines) + "\n", encoding="utf-8")
    qrels = dst / "qrels" / "test.tsv"
    rows = qrels.read_text(encoding="utf-8").splitlines()
    qrels.write_text("\n".join([rows[0]] + [r for r in rows[1:] if r.split("\t")[1] not in drop_judgements]) + "\n", encoding="utf-8")
    return dst


def test_missing_twins_equal_removed_judgements_on_nq_utd(nq_utd, tmp_path):
    """20 judged originals' twins removed: the orphan rule must give exactly the figures of the
    same copy with those originals' judgements removed by hand."""
    rows = [r.split("\t") for r in (nq_utd / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    judged = sorted({d for _, d, g in rows if int(g) > 0})
    gone = set(random.Random(7).sample(judged, 20))
    a = load_dataset(_copy_nq_utd(nq_utd, tmp_path / "a", drop_twins=gone, drop_judgements=set()))
    b = load_dataset(_copy_nq_utd(nq_utd, tmp_path / "b", drop_twins=gone, drop_judgements=gone))
    assert a.orphans["judged_originals_left_out"] == 20
    assert a.orphans["missing_copies"] == {"llama-2-7b-chat-tmp0.2": 20}
    assert a.orphans["judgements_left_out"] == sum(1 for _, d, _ in rows if d in gone)
    assert b.orphans["judged_originals_left_out"] == 0
    measures = [parse_measure(m) for m in ("NDCG@1", "NDCG@3", "NDCG@5", "MAP@10")]
    ra, rb = (evaluate(ds, [build_retriever("bm25")], measures=measures, sole=False) for ds in (a, b))
    assert ra.query_ids == rb.query_ids
    assert ra.per_query.keys() == rb.per_query.keys()
    for k, v in ra.per_query.items():
        np.testing.assert_array_equal(v, rb.per_query[k], err_msg=str(k))
    for m in measures:
        assert ra.relative_delta("bm25", m) == rb.relative_delta("bm25", m)


def test_skipped_original_takes_its_twin_and_judgements(tmp_path):
    root = tmp_path / "skip"
    human = _docs(["d1", "d2", "d3"])
    human[1]["text"] = "  "
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", _docs(["d1", "d2", "d3"], "rewritten "))
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "one"}, {"_id": "q2", "text": "two"}])
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d3", 1)])
    ds = load_dataset(root, empty_text="skip")
    assert ds.corpus.position("d2", "llm") is None and ds.corpus.position("d2", "human") is None
    assert dict(ds.qrels["q2"]) == {"d3": 1}
    assert ds.report.skipped["documents with empty text"] == 1
    assert ds.report.skipped["twins of originals skipped for empty text"] == 1
    assert ds.report.skipped["judgements of originals skipped for empty text"] == 1
    assert ds.orphans["judged_originals_left_out"] == 0
    # the same numbers as a dataset that never had d2
    clean = tmp_path / "clean"
    write_jsonl(clean / "corpus" / "human.jsonl", [human[0], human[2]])
    write_jsonl(clean / "corpus" / "llm.jsonl", _docs(["d1", "d3"], "rewritten "))
    write_jsonl(clean / "queries.jsonl", [{"_id": "q1", "text": "one"}, {"_id": "q2", "text": "two"}])
    write_qrels(clean / "qrels" / "test.tsv", [("q1", "d1", 1), ("q2", "d3", 1)])
    m = [parse_measure("NDCG@3")]
    r1 = evaluate(ds, [build_retriever("bm25")], measures=m, sole=False)
    r2 = evaluate(load_dataset(clean), [build_retriever("bm25")], measures=m, sole=False)
    for k, v in r1.per_query.items():
        np.testing.assert_array_equal(v, r2.per_query[k])


def test_skipped_twin_makes_an_orphan(tmp_path):
    root = tmp_path / "skiptwin"
    llm = _docs(["d1", "d2"], "rewritten ")
    llm[1]["text"] = ""
    write_jsonl(root / "corpus" / "human.jsonl", _docs(["d1", "d2"]))
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "one"}])
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d1", 1), ("q1", "d2", 1)])
    ds = load_dataset(root, empty_text="skip")
    assert dict(ds.qrels["q1"]) == {"d1": 1}
    assert ds.orphans["missing_copies"] == {"llm": 1}


@pytest.mark.parametrize("field, what", [("corpus", "document"), ("queries", "query")])
def test_ids_with_whitespace_are_refused_with_file_and_line(tmp_path, field, what):
    root = tmp_path / "ws"
    human = _docs(["d1", "d2"])
    queries = [{"_id": "q1", "text": "one"}, {"_id": "q2", "text": "two"}]
    if field == "corpus":
        human[1]["_id"] = "d 2"
    else:
        queries[1]["_id"] = "q\t2"
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "queries.jsonl", queries)
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d1", 1)])
    with pytest.raises(DataError, match=f"{what} id .* contains whitespace") as exc:
        load_dataset(root)
    assert ":2" in str(exc.value)


def test_empty_ranking_survives_reload(tmp_path, cocktail_dir):
    from sourcebias.study.outputs import write_evaluation

    ds = load_dataset(cocktail_dir)
    c = ds.corpus
    pos = np.asarray([c.position("d1", "llm"), c.position("d1", "human")], dtype=np.int64)
    run = Run(c, "partial", {"q1": pos}, {"q1": np.asarray([2.0, 1.0])})  # q2 retrieved nothing
    result = evaluate(ds, runs=[run], measures=[parse_measure("NDCG@3")])
    stored = result.runs[next(iter(result.runs))]
    assert len(stored.positions["q2"]) == 0
    loaded = load_result(write_evaluation(result, tmp_path / "out"))
    assert loaded == result
    assert loaded.runs[next(iter(loaded.runs))].query_ids == stored.query_ids


def test_two_runs_with_one_name_are_refused(cocktail_dir):
    ds = load_dataset(cocktail_dir)
    c = ds.corpus
    run = Run(c, "same", {"q1": np.asarray([0], dtype=np.int64)}, {"q1": np.asarray([1.0])})
    other = Run(c, "same", {"q1": np.asarray([1], dtype=np.int64)}, {"q1": np.asarray([1.0])})
    with pytest.raises(ConfigError, match="same name"):
        evaluate(ds, runs=[run, other], measures=[parse_measure("NDCG@3")])
    assert math.isfinite(evaluate(ds, runs=[run], measures=[parse_measure("NDCG@3")]).mean("same", "mixed", "all", "NDCG@3"))


@pytest.mark.parametrize("policy", ["drop", "keep"])
def test_the_grid_orphan_setting_reaches_its_cells(tmp_path, policy):
    from sourcebias.experiments.config import load_grid_config
    from sourcebias.experiments.grid import run_grid

    root = _orphan_dataset(tmp_path)
    cfg = tmp_path / "g.toml"
    cfg.write_text(
        f'[grid]\nname = "o"\nmeasures = ["NDCG"]\ncutoffs = [1]\nsole = false\norphans = "{policy}"\n[[datasets]]\npath = "{root.as_posix()}"\n[[retrievers]]\nspec = "bm25"\n'
    )
    run_grid(load_grid_config(cfg), tmp_path / "out")
    result = load_result(tmp_path / "out" / "cells" / "orph" / "bm25")
    assert result.parameters["orphans"] == policy
    assert result.query_ids == (["q1"] if policy == "drop" else ["q1", "q2"])


def test_a_run_that_retrieved_nothing_reloads(tmp_path, cocktail_dir):
    from sourcebias.study.outputs import write_evaluation

    ds = load_dataset(cocktail_dir)
    empty = Run(ds.corpus, "nothing", {"q1": np.zeros(0, dtype=np.int64)}, {"q1": np.zeros(0)})
    result = evaluate(ds, runs=[empty], measures=[parse_measure("NDCG@3")])
    loaded = load_result(write_evaluation(result, tmp_path / "out"))
    assert loaded == result
    assert loaded.mean("nothing", "mixed", "all", "NDCG@3") == 0.0
