"""``evaluate --max-queries N``: a seeded sample of the queries, recorded, and the very values the
full evaluation gives those queries.

Checked against the full evaluation of the same command (every query): each measure's per-query
values at the sampled queries are equal, so the sample's means are the means of the full run's
values at those queries, computed here with NumPy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample
from sourcebias.evaluation import load_result
from sourcebias.evaluation.plan import EvaluationPlan

ARGS = ["evaluate", "nq-utd", "-r", "bm25", "--k", "1", "3", "--metric", "NDCG", "Share", "--statistics", "none", "--no-sole"]


def _run(args, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    assert info.value.code == 0, out.err
    return out.out


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "full"
    with pytest.raises(SystemExit):
        main([*ARGS, "-o", str(out)])
    return load_result(out)


def test_the_sample_is_seeded_recorded_and_scored_as_in_the_full_run(full, tmp_path, capsys):
    out = tmp_path / "sample"
    printed = _run([*ARGS, "--max-queries", "10", "--seed", "4", "-o", str(out)], capsys)
    flat = " ".join(printed.split())
    assert "a seeded sample of 10 of 80 queries evaluated" in flat
    assert "evaluated on a seeded sample of 10 of the 80 queries the split can evaluate (max-queries 10, seed 4" in flat
    sampled = load_result(out)
    expected = seeded_sample(full.query_ids, 10, 4)
    assert sampled.query_ids == expected
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["max_queries"] == 10 and manifest["parameters"]["query_sample"] == expected
    assert "max-queries 10" in (out / "summary.md").read_text()  # the report says so in the folder too
    # the full run was made with seed 0, the sample with seed 4: the seed also breaks ties, so compare
    # with a full run of seed 4 restricted to the sample
    full4 = tmp_path / "full4"
    _run([*ARGS, "--seed", "4", "-o", str(full4)], capsys)
    whole = load_result(full4)
    at = [whole.query_ids.index(q) for q in expected]
    llm = next(s for s in whole.sources if s != whole.human_source)
    for target, metric in (("all", "NDCG@1"), ("all", "NDCG@3"), (llm, "Share@3"), (whole.human_source, "NDCG@3")):
        mine, theirs = sampled.values("bm25", "mixed", target, metric), whole.values("bm25", "mixed", target, metric)[at]
        np.testing.assert_array_equal(mine, theirs)
        assert sampled.mean("bm25", "mixed", target, metric) == pytest.approx(float(np.nanmean(theirs)))


def test_a_run_file_counts_the_queries_the_sample_left_out_on_their_own(full, tmp_path, capsys):
    """Queries of a run file left out by the sample are not "not in the split": counted apart, no note."""
    run_file = tmp_path / "bm25.trec"
    full.runs[next(k for k in full.runs if k.setting == "mixed")].write_trec(run_file)
    out = tmp_path / "sample"
    printed = " ".join(
        _run(["evaluate", "nq-utd", "--run", f"mine={run_file}", "--k", "1", "--statistics", "none", "--max-queries", "5", "-o", str(out)], capsys).split()
    )
    info = next(i for k, i in load_result(out).run_info.items() if k.retriever == "mine")
    assert info["queries_in_run"] == 80 and info["queries_not_evaluated"] == 0 and info["queries_not_sampled"] == 75
    assert "queries of the run are not evaluated" not in printed


def test_a_sample_below_one_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(ConfigError, match="--max-queries must be at least 1, got 0"):
        EvaluationPlan(max_queries=0).check()
    with pytest.raises(SystemExit) as info:
        main([*ARGS, "--max-queries", "0", "-o", str(tmp_path / "x")])
    assert info.value.code == 2 and "--max-queries" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_without_a_sample_the_result_reads_as_before(full):
    assert "max_queries" not in full.parameters and "query_sample" not in full.parameters and len(full.query_ids) == 80
