"""The judge figure names every source whole: labels wrap long names, never cut them."""

from __future__ import annotations

import pandas as pd
import pytest

from sourcebias.judges.figure import _effects, _grades, _protocol, plot_judge
from sourcebias.judges.result import JudgeResult

pytest.importorskip("matplotlib")

SOURCES = ["human", "llama-2-7b-chat-tmp0.2", "llama-2-7b-chat-tmp1.0"]


def _result() -> JudgeResult:
    grades = pd.DataFrame(
        {"mode": ["grade"] * 6, "source": [s for s in SOURCES for _ in range(2)], "grade": [0, 2, 1, 3, 2, None], "query_id": ["q1", "q2"] * 3}
    )
    twin = [
        {"quantity": "grade", "llm_source": s, "estimate": e, "low": e - 0.2, "high": e + 0.2, "missing": m}
        for s, e, m in ((SOURCES[1], 0.3, 0), (SOURCES[2], 0.1, 1))
    ]
    protocol = {
        "rows": [
            {"run": "bm25", "llm_source": s, "qrels": q, "rel_delta": d, "low": d - 5, "high": d + 5, "queries": 30, "measure": "NDCG@10"}
            for s, d in ((SOURCES[1], -10.0), (SOURCES[2], 20.0))
            for q in ("assessors", "judge-human")
        ]
    }
    return JudgeResult(
        judge={"identity": {"model": "m"}},
        settings={"confidence": 0.95},
        dataset={"name": "d", "queries": 2, "sources": SOURCES},
        analyses={"twin_bias": twin},
        grades=grades,
        pairs=pd.DataFrame(),
        protocol=protocol,
    )


def _labels(axis) -> list[str]:
    return [t.get_text().replace("\n", "") for t in axis.get_ticklabels()]


def test_two_sources_that_share_a_prefix_keep_their_own_columns_and_full_names():
    from matplotlib.figure import Figure

    result = _result()
    ax_grades, ax_effects, ax_protocol = Figure().subplots(1, 3)
    _grades(ax_grades, result)
    _effects(ax_effects, result)
    _protocol(ax_protocol, result)
    # line breaks fall after a hyphen or a space, so the joined lines are the names whole
    assert _labels(ax_grades.xaxis) == ["human0 unparseable", "llama-2-7b-chat-tmp0.20 unparseable", "llama-2-7b-chat-tmp1.01 unparseable"]
    assert _labels(ax_effects.yaxis) == ["grade(llama-2-7b-chat-tmp0.2; 0 left out)", "grade(llama-2-7b-chat-tmp1.0; 1 left out)"]
    # two LLM sources, two columns (cut to 12 characters they were one: "llama-2-7b-c")
    assert _labels(ax_protocol.xaxis) == ["bm25llama-2-7b-chat-tmp0.2", "bm25llama-2-7b-chat-tmp1.0"]
    # the points (not the error bars' caps): each source's Relative Δ at its own column, one per qrels
    points = sorted((round(float(line.get_xdata()[0]), 2), float(line.get_ydata()[0])) for line in ax_protocol.lines if line.get_marker() in ("o", "s"))
    assert points == [(-0.2, -10.0), (0.2, -10.0), (0.8, 20.0), (1.2, 20.0)]


def test_the_figure_is_drawn(tmp_path):
    path = plot_judge(_result(), tmp_path / "judge.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
