"""The statistics and the figure computed by a helper process (:mod:`sourcebias.reporting.report_process`)
are those of the evaluating process, value for value and byte for byte; a helper that fails leaves
them to the evaluating process; a helper that is sent nothing ends; where a helper would not pay
none is started."""

from __future__ import annotations

import math
import os
import signal
import threading

import pytest

from sourcebias.data import load_dataset
from sourcebias.evaluation import evaluate, measure_grid
from sourcebias.evaluation.stats import StatContext, compute_statistics
from sourcebias.reporting import report_process
from sourcebias.reporting.evaluation_figure import FIGURE_FILE, figure_data, plot_source_bias
from sourcebias.reporting.report import EVALUATE_STATISTICS
from sourcebias.retrieval import build_retriever


@pytest.fixture
def dataset(cocktail_dir):
    return load_dataset(cocktail_dir)


@pytest.fixture
def result(dataset):
    return evaluate(dataset, [build_retriever("bm25"), build_retriever("tfidf")], measures=measure_grid(["NDCG", "MAP"], [1, 3]))


def _same_rows(a: list[dict], b: list[dict]) -> bool:
    """Equal rows, a NaN equal to a NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.keys() != y.keys():
            return False
        for k in x:
            u, v = x[k], y[k]
            if not (u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v))):
                return False
    return True


def test_the_helpers_statistics_are_the_evaluating_processs(result, dataset):
    ctx = StatContext(qrels=dataset.qrels, measures=["NDCG@1", "NDCG@3"], bootstrap_resamples=500, significance_resamples=2000, seed=3)
    names = list(EVALUATE_STATISTICS)
    here = compute_statistics(result, ctx, names)
    helper = report_process.ReportProcess(len(dataset.corpus))
    try:
        there = helper.statistics(result, ctx, names)
    finally:
        helper.close()
    assert [s.name for s in there.statistics] == [s.name for s in here.statistics]
    assert there.records.keys() == here.records.keys() and sum(map(len, here.records.values())) > 4
    assert _same_rows(there.rows(), here.rows())
    assert _same_rows(there.rows(False), here.rows(False))
    # the helper was sent the runs over the corpus's keys, without texts
    thin = report_process.keys_only(result)
    run = next(iter(thin.runs.values()))
    assert not run.corpus.has_texts and run.corpus.doc_ids == next(iter(result.runs.values())).corpus.doc_ids


def test_the_helper_draws_the_file_the_evaluating_process_draws(result, tmp_path):
    data = figure_data(result)
    assert data is not None and [p["retriever"] for p in data["panels"]] == ["bm25", "tfidf"]
    m = result.target_measures[0]
    assert data["panels"][0]["values"][result.human_source][0] == pytest.approx(100 * result.mean("bm25", "mixed", result.human_source, m))
    assert data["cutoffs"] == ["NDCG@1", "NDCG@3"]
    helper = report_process.ReportProcess(len(result.query_ids))
    try:
        helper.submit_figure(data, tmp_path / "helper" / FIGURE_FILE)
        drawn = helper.wait_figure()
    finally:
        helper.close()
    here = plot_source_bias(result, tmp_path / "here" / FIGURE_FILE)
    assert drawn.read_bytes() == here.read_bytes()
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("retrievers", [["bm25"], ["bm25", "tfidf"], ["bm25", "tfidf", "bm25:k1=0.9"]])
def test_the_figure_title_fits_its_figure(dataset, retrievers):
    """The title is whole on the figure for one, two and three panels (it was cut at both ends with one)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from sourcebias.reporting.evaluation_figure import source_bias_figure

    res = evaluate(dataset, [build_retriever(r) for r in retrievers], measures=measure_grid(["NDCG"], [1, 3, 5, 10]))
    fig = source_bias_figure(figure_data(res))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, whole = fig._suptitle.get_window_extent(canvas.get_renderer()), fig.bbox
    assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and box.y1 <= whole.y1


def _evaluate_into(folder, cocktail_dir, monkeypatch, *, helper: bool):
    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.plan import EvaluationPlan
    from sourcebias.reporting.evaluation_job import run_evaluation_job

    started = []
    real_init = report_process.ReportProcess.__init__

    def spy(self, documents):
        real_init(self, documents)
        started.append(self)

    monkeypatch.setattr(report_process, "MIN_DOCUMENTS", 0 if helper else 10**9)
    monkeypatch.setattr(report_process, "usable_cpus", lambda: 2)
    monkeypatch.setattr(report_process.ReportProcess, "__init__", spy)
    plan = EvaluationPlan(retrievers=("bm25", "tfidf"), measures=("NDCG", "MAP"), cutoffs=(1, 3), resamples=2000, bootstrap_resamples=500)
    job = run_evaluation_job(cocktail_dir, DatasetOptions(), plan, folder)
    return job, started


def test_evaluate_through_the_helper_writes_what_it_writes_without(cocktail_dir, tmp_path, monkeypatch):
    """With the threshold at 0 documents the evaluation of the tiny dataset starts a helper, which
    computes the statistics and draws the figure: the folder's statistics, summaries and figure
    equal those of the same evaluation without a helper."""
    import json

    with_helper, started = _evaluate_into(tmp_path / "with", cocktail_dir, monkeypatch, helper=True)
    assert len(started) == 1 and started[0]._proc.returncode == 0
    without, none = _evaluate_into(tmp_path / "without", cocktail_dir, monkeypatch, helper=False)
    assert none == []
    for name in ("statistics.csv", "summary.md", "summary.tex", "metrics.csv", str(FIGURE_FILE)):
        assert (with_helper.path / name).read_bytes() == (without.path / name).read_bytes(), name
    assert "figures/source_bias.png" in json.loads((with_helper.path / "manifest.json").read_text())["outputs"]["files"]


def test_a_helper_that_fails_leaves_the_work_to_the_evaluating_process(result, dataset, tmp_path):
    from sourcebias.core.errors import SourceBiasError
    from sourcebias.reporting.evaluation_job import _statistics_by
    from sourcebias.reporting.outputs import write_figure

    helper = report_process.ReportProcess(len(dataset.corpus))
    helper._proc.kill()  # as if it had died before its work came
    helper._proc.wait()
    ctx = StatContext(qrels=dataset.qrels, measures=["NDCG@1"], bootstrap_resamples=200, significance_resamples=500)
    try:
        with pytest.raises(SourceBiasError, match="could not compute the statistics"):
            helper.statistics(result, ctx, ["relative_delta_ci"])
        stats = _statistics_by(helper)(result, ctx, ["relative_delta_ci"])  # computed here instead
        helper.submit_figure(figure_data(result), tmp_path / FIGURE_FILE)
        written = write_figure(result, tmp_path, helper)
    finally:
        helper.close()
    assert _same_rows(stats.rows(), compute_statistics(result, ctx, ["relative_delta_ci"]).rows())
    assert written == {"figure": tmp_path / FIGURE_FILE}
    assert written["figure"].read_bytes() == plot_source_bias(result, tmp_path / "here.png").read_bytes()


def test_an_error_of_a_statistic_is_raised_by_the_evaluating_process(result, dataset):
    """A statistic that fails in the helper fails again here, with its own error."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.reporting.evaluation_job import _statistics_by

    helper = report_process.ReportProcess(len(dataset.corpus))
    try:
        with pytest.raises(ConfigError, match="need the split's qrels"):
            _statistics_by(helper)(result, StatContext(qrels=None), ["twin_preference"])
    finally:
        helper.close()


def test_a_helper_sent_nothing_ends_when_closed():
    helper = report_process.ReportProcess(10)
    helper.close()
    assert helper._proc.returncode is not None
    helper.close()  # twice is harmless


def test_no_helper_where_it_would_not_pay(monkeypatch):
    assert report_process.start(report_process.MIN_DOCUMENTS - 1) is None
    monkeypatch.setattr(report_process, "usable_cpus", lambda: 1)
    assert report_process.start(10 * report_process.MIN_DOCUMENTS) is None
    monkeypatch.setattr(report_process, "usable_cpus", lambda: 2)
    helper = report_process.start(10 * report_process.MIN_DOCUMENTS)
    assert helper is not None and helper.takes_statistics
    helper.close()
    big = report_process.start(report_process.MAX_STATISTICS_DOCUMENTS + 1)
    assert big is not None and not big.takes_statistics  # the figure only
    big.close()


# -- a helper that hangs: stopped with SIGSTOP, never answering ---------------------------------------
def _finishes(call, seconds: float = 120.0):
    """``call()``'s value, run in a thread that must end within ``seconds`` (a liveness bound
    against a wait that never ends, not a timing of the work: it takes a few seconds)."""
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(value=call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "still waiting on a stopped helper"
    return out["value"]


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP") or report_process.cpu_seconds(os.getpid()) is None, reason="needs SIGSTOP and /proc")
def test_a_stopped_helper_does_not_block_the_statistics(result, dataset, monkeypatch):
    """A helper stopped before it answers: after STALL_SECONDS without progress (its CPU time
    unchanged) it is ended and the statistics are computed here, equal to the in-process ones,
    and the helper records why."""
    from sourcebias.reporting.evaluation_job import _statistics_by

    monkeypatch.setattr(report_process, "STALL_SECONDS", 1.0)
    ctx = StatContext(qrels=dataset.qrels, measures=["NDCG@1", "NDCG@3"], bootstrap_resamples=200, significance_resamples=500)
    helper = report_process.ReportProcess(len(dataset.corpus))
    os.kill(helper._proc.pid, signal.SIGSTOP)
    try:
        stats = _finishes(lambda: _statistics_by(helper)(result, ctx, list(EVALUATE_STATISTICS)))
    finally:
        helper.close()
    assert _same_rows(stats.rows(), compute_statistics(result, ctx, list(EVALUATE_STATISTICS)).rows())
    assert helper.fallbacks["statistics"] == "the report process made no progress for 1 s (stopped or hung)"
    assert helper._proc.returncode == -signal.SIGKILL  # ended: a stopped process needs no cooperation
    assert helper.describe() == {"statistics": "evaluating process: the report process made no progress for 1 s (stopped or hung)"}


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP") or report_process.cpu_seconds(os.getpid()) is None, reason="needs SIGSTOP and /proc")
def test_evaluate_with_a_stopped_helper_finishes_and_says_so(cocktail_dir, tmp_path, monkeypatch):
    """The whole command: its helper is stopped as soon as it starts; the evaluation still ends,
    writes the same statistics, summaries and figure as without a helper, prints a note and
    records in the manifest where the statistics and the figure were made and why."""
    import json

    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.plan import EvaluationPlan
    from sourcebias.reporting.evaluation_job import run_evaluation_job

    real_init = report_process.ReportProcess.__init__

    def stopped(self, documents):
        real_init(self, documents)
        os.kill(self._proc.pid, signal.SIGSTOP)

    monkeypatch.setattr(report_process, "STALL_SECONDS", 1.0)
    monkeypatch.setattr(report_process, "MIN_DOCUMENTS", 0)
    monkeypatch.setattr(report_process, "usable_cpus", lambda: 2)
    monkeypatch.setattr(report_process.ReportProcess, "__init__", stopped)
    plan = EvaluationPlan(retrievers=("bm25", "tfidf"), measures=("NDCG", "MAP"), cutoffs=(1, 3), resamples=2000, bootstrap_resamples=500)
    notes: list = []
    job = _finishes(lambda: run_evaluation_job(cocktail_dir, DatasetOptions(), plan, tmp_path / "stopped", emit=lambda kind, text: notes.append((kind, text))))
    without, _ = _evaluate_into(tmp_path / "without", cocktail_dir, monkeypatch, helper=False)
    for name in ("statistics.csv", "summary.md", "summary.tex", "metrics.csv", str(FIGURE_FILE)):
        assert (job.path / name).read_bytes() == (without.path / name).read_bytes(), name
    why = "the report process made no progress for 1 s (stopped or hung)"
    manifest = json.loads((job.path / "manifest.json").read_text())
    assert manifest["report_process"] == {"statistics": f"evaluating process: {why}", "figure": f"evaluating process: {why}"}
    assert ("note", f"the statistics were made in the evaluating process, not by the report process: {why}") in notes
    assert ("note", f"the figure was made in the evaluating process, not by the report process: {why}") in notes


def test_a_helper_that_answers_is_named_in_the_manifest(cocktail_dir, tmp_path, monkeypatch):
    import json

    job, started = _evaluate_into(tmp_path / "with", cocktail_dir, monkeypatch, helper=True)
    assert len(started) == 1 and started[0].fallbacks == {}
    assert json.loads((job.path / "manifest.json").read_text())["report_process"] == {"statistics": "report process", "figure": "report process"}
