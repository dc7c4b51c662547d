"""The figure drawn by a helper process (:mod:`sourcebias.reporting.figure_process`) is the file the
evaluating process draws, byte for byte; a helper that fails leaves the figure to the evaluating
process; a helper that is sent nothing ends; where a helper would not pay none is started."""

from __future__ import annotations

import pytest

from sourcebias.data import load_dataset
from sourcebias.evaluation import evaluate, measure_grid
from sourcebias.reporting import figure_process
from sourcebias.reporting.evaluation_figure import FIGURE_FILE, figure_data, plot_source_bias
from sourcebias.retrieval import build_retriever


@pytest.fixture
def result(cocktail_dir):
    ds = load_dataset(cocktail_dir)
    return evaluate(ds, [build_retriever("bm25"), build_retriever("tfidf")], measures=measure_grid(["NDCG", "MAP"], [1, 3]))


def test_the_helper_draws_the_file_the_evaluating_process_draws(result, tmp_path):
    data = figure_data(result)
    assert data is not None and [p["retriever"] for p in data["panels"]] == ["bm25", "tfidf"]
    # the values are the result's means in percent, and its Relative Δ, per retriever and cut-off
    m = result.target_measures[0]
    assert data["panels"][0]["values"][result.human_source][0] == pytest.approx(100 * result.mean("bm25", "mixed", result.human_source, m))
    assert data["cutoffs"] == ["NDCG@1", "NDCG@3"]
    helper = figure_process.FigureProcess()
    try:
        helper.submit(data, tmp_path / "helper" / FIGURE_FILE)
        drawn = helper.wait()
    finally:
        helper.close()
    here = plot_source_bias(result, tmp_path / "here" / FIGURE_FILE)
    assert drawn.read_bytes() == here.read_bytes()
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_draws_through_the_helper_above_its_threshold(cocktail_dir, tmp_path, monkeypatch):
    """With the threshold at 0 documents the evaluation of the tiny dataset starts a helper, which
    draws the figure listed in the manifest: the same file as one drawn in process."""
    import json

    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.plan import EvaluationPlan
    from sourcebias.reporting.evaluation_job import run_evaluation_job

    started = []
    real_init = figure_process.FigureProcess.__init__

    def spy(self):
        real_init(self)
        started.append(self)

    monkeypatch.setattr(figure_process, "MIN_DOCUMENTS", 0)
    monkeypatch.setattr(figure_process, "usable_cpus", lambda: 2)
    monkeypatch.setattr(figure_process.FigureProcess, "__init__", spy)
    plan = EvaluationPlan(retrievers=("bm25",), measures=("NDCG",), cutoffs=(1, 3))
    job = run_evaluation_job(cocktail_dir, DatasetOptions(), plan, tmp_path / "out")
    assert len(started) == 1 and started[0]._proc.returncode == 0
    figure = job.path / FIGURE_FILE
    assert "figures/source_bias.png" in json.loads((job.path / "manifest.json").read_text())["outputs"]["files"]
    assert figure.read_bytes() == plot_source_bias(job.result, tmp_path / "here.png").read_bytes()


def test_a_helper_that_fails_leaves_the_figure_to_the_evaluating_process(result, tmp_path):
    from sourcebias.reporting.outputs import write_figure

    helper = figure_process.FigureProcess()
    helper._proc.kill()  # as if it had died before its work came
    helper._proc.wait()
    helper.submit(figure_data(result), tmp_path / FIGURE_FILE)
    try:
        written = write_figure(result, tmp_path, helper)
    finally:
        helper.close()
    assert written == {"figure": tmp_path / FIGURE_FILE}
    assert written["figure"].read_bytes() == plot_source_bias(result, tmp_path / "here.png").read_bytes()


def test_a_helper_sent_nothing_ends_when_closed():
    helper = figure_process.FigureProcess()
    helper.close()
    assert helper._proc.returncode is not None
    helper.close()  # twice is harmless


def test_no_helper_where_it_would_not_pay(monkeypatch):
    assert figure_process.start(figure_process.MIN_DOCUMENTS - 1) is None
    monkeypatch.setattr(figure_process, "usable_cpus", lambda: 1)
    assert figure_process.start(10 * figure_process.MIN_DOCUMENTS) is None
    monkeypatch.setattr(figure_process, "usable_cpus", lambda: 2)
    helper = figure_process.start(10 * figure_process.MIN_DOCUMENTS)
    assert helper is not None
    helper.close()
