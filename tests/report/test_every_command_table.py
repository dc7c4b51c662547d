"""Every command's tables at 80 and at 200 columns lose no figure, and ``summary.md`` is what the
terminal shows (issue 38, point 12). Each command runs on real data (nq-utd, or the small
datasets of the tests) with its LLM served by the simulated server where it has one; its tables are
read back from what it printed (tests/report/shown.py) and their figures compared with the
result's own values, formatted here."""

from __future__ import annotations

import pytest
from shown import check_terminal, numbers, same_everywhere

from sourcebias.cli import common
from sourcebias.llmcalls.simulated import SimulatedServer


@pytest.fixture
def at_80(monkeypatch):
    """The commands' console as a pipe or CI log has it: 80 columns."""
    monkeypatch.setattr(common.console, "width", 80)


def run_cli(args, capsys):
    from sourcebias.cli.main import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    assert info.value.code in (0, None), out.err
    return out.out


def close(printed: list[float | None], *values, digits: int = 3):
    """The numbers of a printed cell are the values rounded as printed (None: printed –)."""
    assert len(printed) == len(values), (printed, values)
    for p, v in zip(printed, values):
        assert (p is None) == (v is None) and (p is None or p == pytest.approx(v, abs=0.6 * 10**-digits)), (printed, values)


def test_judge_tables_at_80_columns(nq_utd, tmp_path, capsys, at_80):
    """The issue's case: at 80 columns the judge's p column was cut to "2.", its counts to "17",
    "left out" dropped and the protocol table's run column given no width."""
    from sourcebias.data import load_dataset
    from sourcebias.judges import load_judge
    from sourcebias.judges.known_truth import BiasedJudge
    from sourcebias.judges.report import judge_report

    ds = load_dataset(nq_utd)
    with SimulatedServer(BiasedJudge.from_corpus(ds.corpus, ds.human_source, delta=0.4)) as url:
        args = [
            "judge",
            nq_utd,
            "--judge",
            f"openai:sim@{url}",
            "--max-queries",
            12,
            "--mode",
            "grade",
            "--mode",
            "pairwise",
            "-r",
            "bm25",
            "--cache-dir",
            tmp_path / "c",
        ]
        printed = run_cli([*args, "-o", tmp_path / "j"], capsys)
    result = load_judge(tmp_path / "j")
    report = judge_report(result)
    read = check_terminal(report, 80, printed)  # what the command printed
    same_everywhere(report, (tmp_path / "j" / "summary.md").read_text())
    twin = read[report.tables[0].title]
    for row, est, p, n, left in zip(result.rows("twin_bias"), twin["estimate [CI]"], twin["p"], twin["items / queries"], twin["left out"]):
        close(numbers(est), row["estimate"], row["low"], row["high"])
        assert numbers(p)[0] == pytest.approx(row["p"], rel=5e-3)
        assert numbers(n) == [row["items"], row["queries"]] and numbers(left) == [row["missing"]]
    protocol = read[next(t.title for t in report.tables if t.key == "judge:protocol")]
    assert protocol["run"] == ["bm25"] * len(result.protocol["rows"])
    for row, rd in zip(result.protocol["rows"], protocol["Rel Δ [CI]"]):
        close(numbers(rd), row["rel_delta"], row["low"], row["high"], digits=1)


def test_cite_tables_at_80_columns(nq_utd, tmp_path, capsys, at_80):
    """The issue's case: the source-effect table's "odds ratio" column came out empty."""
    from sourcebias.citations import load_citations
    from sourcebias.citations.report import citation_report
    from sourcebias.citations.simulated import responder_for
    from sourcebias.data import load_dataset

    ds = load_dataset(nq_utd)
    with SimulatedServer(responder_for(ds.corpus, ds.human_source, (0.6, 0.0, -0.4, -0.8), 1.0)) as url:
        args = ["cite", nq_utd, "--generator", f"openai:sim@{url}", "-r", "bm25", "-k", 4, "--orders", 2, "--max-queries", 20, "--cache-dir", tmp_path / "c"]
        printed = run_cli([*args, "-o", tmp_path / "cite"], capsys)
    result = load_citations(tmp_path / "cite")
    report = citation_report(result)
    read = check_terminal(report, 80, printed)
    same_everywhere(report, (tmp_path / "cite" / "summary.md").read_text())
    source = read[next(t.title for t in report.tables if t.key == "effects:source")]
    rows = [r for r in result.effects if r["term"] == "source"]
    for row, est, odds in zip(rows, source["estimate [CI]"], source["odds ratio"]):
        if row["estimate"] is not None:
            close(numbers(est), row["estimate"], row["low"], row["high"])
        close(numbers(odds), row.get("odds_ratio"), digits=2)
    assert any(numbers(x)[0] is not None for x in source["odds ratio"])  # not an empty column


def test_evaluate_with_a_served_reranker_and_a_label(nq_utd, tmp_path):
    """evaluate's tables with a stage spec that holds a server URL: named by its label (the
    specification in full in the notes and result.json), or without a label by the spec less its
    URL; the metric column and every value whole at 80 columns."""
    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.plan import EvaluationPlan
    from sourcebias.evaluation.results import MIXED
    from sourcebias.study.job import run_evaluation_job

    def respond(messages, params):
        return "[2] > [1] > [3]", None

    with SimulatedServer(respond, model="qwen2.5-coder-1.5b") as url:
        spec = f"bm25>>rankgpt:openai:qwen2.5-coder-1.5b@{url},depth=10,window=10,cache=false"
        plan = EvaluationPlan(
            retrievers=(f"rg={spec}", spec), measures=("NDCG",), cutoffs=(1, 10), statistics=("relative_delta_ci", "delta_ndsr"), bootstrap_resamples=200
        )
        with pytest.raises(Exception, match="two retrievers are named 'rg'"):
            EvaluationPlan(retrievers=(f"rg={spec}", "rg=bm25")).check()
        job = run_evaluation_job(nq_utd, DatasetOptions(), plan, tmp_path / "e")
    result, report = job.result, job.report
    short = spec.replace(f"@{url}", "")
    assert list(result.retrievers) == ["rg", short] and result.retrievers["rg"]["spec"] == spec and url not in short
    assert f"rg = {spec}" in report.notes and f"{short} = {spec}" in report.notes
    reads = same_everywhere(report, (tmp_path / "e" / "summary.md").read_text())
    for width, read in reads.items():
        table = read["Source bias on nq-utd (test)"]
        assert table["metric"] == ["NDCG@1", "NDCG@10"] * 2, width
        names = [(r, m) for r in ("rg", short) for m in ("NDCG@1", "NDCG@10")]
        for (r, m), human, llm in zip(names, table["human"], table["LLM"]):  # the means, from the per-query values
            import numpy as np

            from sourcebias.evaluation.results import Key

            assert float(human) == pytest.approx(100 * np.mean(result.per_query[Key(r, MIXED, result.human_source, m)]), abs=0.06)
            assert float(llm) == pytest.approx(100 * np.mean(result.per_query[Key(r, MIXED, result.other_sources[0], m)]), abs=0.06)


def test_audit_tables_at_80_columns(tmp_path, capsys, at_80):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "audit"))
    from test_audit import score_file, tiny_dataset

    from sourcebias.audit import load_audit
    from sourcebias.audit.report import audit_report
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate, parse_measure
    from sourcebias.retrieval import build_retriever

    target, calib = tiny_dataset(tmp_path / "t", 40, "t"), tiny_dataset(tmp_path / "c", 60, "c")
    evaluate(load_dataset(target), [build_retriever("bm25")], measures=[parse_measure("NDCG@3")]).save(tmp_path / "eval")
    args = [
        "audit",
        tmp_path / "eval",
        "--scores",
        score_file(tmp_path / "t.tsv", target, 1),
        "--calibrate",
        calib,
        "--calibration-scores",
        score_file(tmp_path / "c.tsv", calib, 2),
    ]
    printed = run_cli([*args, "--k", "3", "--resamples", "200", "-o", tmp_path / "a"], capsys)
    result = load_audit(tmp_path / "a")
    report = audit_report(result)
    read = check_terminal(report, 80, printed)
    same_everywhere(report, (tmp_path / "a" / "summary.md").read_text())
    for table in report.tables:
        rows = [r for r in result.rows if r["measure"] == table.rows[0]["measure"]]
        for row, naive, corrected, true in zip(rows, read[table.title]["naive [CI]"], read[table.title]["corrected [CI]"], read[table.title]["true"]):
            close(numbers(naive), row["naive"], row["naive_low"], row["naive_high"])
            close(numbers(corrected), row["corrected"], row["corrected_low"], row["corrected_high"])
            close(numbers(true), row["true"])


def test_power_and_grid_tables_at_80_columns(tmp_path, capsys, at_80, cocktail_dir):
    from conftest import tiny_grid_toml

    from sourcebias.experiments.grid_report import grid_report
    from sourcebias.power import load_power
    from sourcebias.power.report import power_report

    run_cli(["evaluate", cocktail_dir, "-r", "bm25", "--k", "1", "3", "-o", tmp_path / "pilot"], capsys)
    printed = run_cli(["power", tmp_path / "pilot", "--n", "20", "40", "--resamples", "200", "--max-n", "2000", "-o", tmp_path / "power"], capsys)
    report = power_report(load_power(tmp_path / "power"))
    check_terminal(report, 80, printed)
    same_everywhere(report, (tmp_path / "power" / "summary.md").read_text())

    path = tiny_grid_toml(tmp_path, cocktail_dir)
    printed = run_cli(["bench", path, "-o", tmp_path / "grid"], capsys)
    import pandas as pd

    cells = pd.read_csv(tmp_path / "grid" / "report" / "cells.csv")
    report = grid_report(cells, "sourcebias grid: tiny")
    read = check_terminal(report, 80, printed)
    same_everywhere(report, (tmp_path / "grid" / "report" / "tables.md").read_text())
    table = next(iter(read.values()))
    ok = cells[cells["status"] == "ok"]
    for value, delta in zip(table["Rel Δ [CI]"], ok["rel_delta"]):
        assert numbers(value)[0] == pytest.approx(delta, abs=0.06)


def test_analyze_tables_at_80_and_200_columns(nq_utd, tmp_path, capsys, at_80):
    from sourcebias.analysis.base import get_analysis
    from sourcebias.analysis.result import AnalysisResult
    from sourcebias.report.model import Report, Table

    printed = run_cli(["analyze", "length", nq_utd, "--tokenizer", "minilm", "-o", tmp_path / "length"], capsys)
    analysis, result = get_analysis("length"), AnalysisResult.load(tmp_path / "length")
    report = Report("analyze length", [Table(t.key, t.title, t.columns, t.rows, t.caption) for t in analysis.tables(result)], notes=analysis.notes(result))
    check_terminal(report, 80, printed[printed.index("\n") + 1 :] if printed.startswith("  field") else printed)
    same_everywhere(report)
