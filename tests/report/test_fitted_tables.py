"""Tables in a terminal of any width: no number is cut, no column is dropped, headers wrap between
words, a table too wide is split into parts that repeat the identity columns; ``summary.md``
shows what the terminal shows (issue 38, point 12). Each table is read back from the printed text
(tests/report/shown.py) and compared with the cells the renderer decided and with the values."""

from __future__ import annotations

import pytest
from shown import check_markdown, check_terminal, numbers, render, same_everywhere, terminal_parts

from sourcebias.evaluation.stats import Column
from sourcebias.report.model import Report, Table
from sourcebias.report.render import fitted_layout

SPEC = "bm25>>rankgpt:openai:qwen2.5-coder-1.5b@http://127.0.0.1:8088/v1,depth=10,window=10"


def judge_like() -> Report:
    """The judge's twin-bias table as the issue found it at 80 columns: p cut to "2.", counts to
    "17" (of 177), "left out" dropped: every figure written as text beside two long names."""
    cols = [Column("q", "quantity", "text"), Column("s", "LLM source", "text"), Column("e", "estimate [CI]", "cell"), Column("p", "p", "cell")]
    cols += [Column("n", "items / queries", "cell"), Column("m", "left out", "cell")]
    rows = [
        {"q": "grade", "s": "llama-2-7b-chat-tmp0.2", "e": "+0.425 [+0.360, +0.490]", "p": "2.00e-04", "n": "177 / 80", "m": "1,023"},
        {"q": "expected grade", "s": "llama-2-7b-chat-tmp0.2", "e": "-0.389 [-0.449, -0.329]", "p": "0.0312", "n": "1,177 / 80", "m": "0"},
    ]
    return Report(
        "LLM relevance judge", [Table("judge:twin_bias", "Twin bias of the judge", cols, rows, "Query-clustered CIs.")], notes=["grade: 9 unparseable"]
    )


def wide_identity() -> Report:
    """evaluate's table when a retriever is a stage spec with a server URL (97 characters)."""
    cols = [Column("r", "retriever", "text"), Column("m", "metric", "text")] + [
        Column(k, k, "num", 1) for k in ("all", "human", "LLM", "Rel Δ", "human only", "LLM only")
    ]
    rows = [
        {"r": SPEC, "m": m, **{k: v + i for i, k in enumerate(("all", "human", "LLM", "Rel Δ", "human only", "LLM only"))}}
        for m, v in (("NDCG@1", 66.25), ("NDCG@10", -1.55))
    ]
    return Report("Source bias on nq-utd (test)", [Table("source_bias", "Source bias", cols, rows, "Percent.")])


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
def test_no_figure_is_lost_at_any_width(width):
    for report in (judge_like(), wide_identity()):
        read = check_terminal(report, width)
        check_markdown(report)
        table = report.tables[0]
        for c in table.columns:  # every number as written, in row order
            if c.kind != "text":
                assert read[next(iter(read))][c.header] == [c.text(r) for r in table.rows]


def test_the_issues_cases_at_80_columns():
    read = check_terminal(judge_like(), 80)["Twin bias of the judge"]
    assert read["p"] == ["2.00e-04", "0.0312"] and read["items / queries"] == ["177 / 80", "1,177 / 80"] and read["left out"] == ["1,023", "0"]
    assert [numbers(c) for c in read["estimate [CI]"]] == [[0.425, 0.360, 0.490], [-0.389, -0.449, -0.329]]
    parts = terminal_parts(render(judge_like(), 80))
    assert len(parts) == 2 and all(p.headers[:2] == ["quantity", "LLM source"] for p in parts)  # split, the names repeated
    read = check_terminal(wide_identity(), 80)["Source bias on nq-utd (test)"]
    assert read["metric"] == ["NDCG@1", "NDCG@10"] and read["Rel Δ"] == ["69.2", "1.4"] and read["LLM only"] == ["71.2", "3.5"]
    layout = fitted_layout(wide_identity().tables[0], 80)
    assert all(widths[1] >= len("NDCG@10") for _, widths in layout)  # the metric column is never squeezed to "NDC"


def test_a_wide_terminal_keeps_one_table():
    parts = terminal_parts(render(judge_like(), 200))
    assert len(parts) == 1 and parts[0].headers == ["quantity", "LLM source", "estimate [CI]", "p", "items / queries", "left out"]


def test_status_rows_and_a_table_of_text_only():
    cols = [
        Column("dataset", "dataset", "text"),
        Column("retriever", "retriever", "text"),
        Column("status", "status", "text"),
        Column("error", "error", "text"),
    ]
    rows = [{"dataset": "nq-utd", "retriever": SPEC, "status": "failed", "error": "HTTP 404: the model 'qwen' does not exist; this server serves 'sim'"}]
    failed = Table("failed", "Cells without results", cols, rows, status_rows=False)
    report = Report("grid", [failed], sections=[("Configuration", "[grid]\nname = 'x'")])
    for width in (60, 80, 200):
        check_terminal(report, width)
    check_markdown(report)
    status = Table(
        "cells",
        "cells",
        [Column("retriever", "retriever", "text"), Column("v", "value", "num", 2)],
        [{"retriever": "bm25", "v": 0.5}, {"retriever": "x", "status": "failed", "error": "boom"}],
    )
    same_everywhere(Report("r", [status]), widths=(20, 80))
