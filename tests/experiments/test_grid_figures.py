"""What the grid's and the simulation's tables and figures print: spreads across seeds that show
exactly what is there, axes that show the size of a change, seeds' points that do not hide each
other, no -0.0, no "1 figures"."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sourcebias.experiments.grid_report import SpreadColumn, _coinciding, _points, fixed
from sourcebias.report.axes import value_limits


def spread_row(values, key="all"):
    """A seed_summary row of hand-made values (mean, sample SD, min, max by numpy here)."""
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    return {
        "n_seeds": len(v),
        f"{key}_mean": float(v.mean()),
        f"{key}_sd": 0.0 if len(v) > 1 and v.min() == v.max() else sd,
        f"{key}_min": float(v.min()),
        f"{key}_max": float(v.max()),
    }


@pytest.mark.parametrize(
    ("values", "kind", "digits", "text"),
    [
        ([0.705, 0.705, 0.705], "pct", 1, "70.5 ± 0"),  # the same under every seed: no brackets
        ([0.70, 0.72], "pct", 1, "71.0 ± 1.4 [70.0, 72.0]"),
        ([0.7051, 0.7054, 0.7052], "pct", 1, "70.52 ± 0.02 [70.51, 70.54]"),  # differ beyond 1 decimal: 2 decimals, never [70.5, 70.5]
        ([0.024, 0.030, 0.027], "delta", 3, "0.027 ± 0.003 [0.024, 0.030]"),
        ([-0.04, -0.04], "delta", 1, "0.0 ± 0"),  # rounds to zero: 0.0, not -0.0
        ([0.705], "pct", 1, "70.5"),  # one seed: no spread was measured
    ],
)
def test_a_spread_shows_brackets_only_where_the_seeds_differ(values, kind, digits, text):
    assert SpreadColumn("all_mean", "all", kind, digits).text(spread_row(values)) == text


def test_a_spread_of_one_defined_value_is_that_value():
    row = {"n_seeds": 2, "all_mean": 0.5, "all_sd": float("nan"), "all_min": 0.5, "all_max": 0.5}  # the other seed undefined
    assert SpreadColumn("all_mean", "all", "pct").text(row) == "50.0"


def test_fixed_never_prints_minus_zero():
    assert fixed(-0.04, 1) == "0.0" and fixed(-0.0, 2) == "0.00" and fixed(-0.06, 1) == "-0.1" and fixed(0.04, 1) == "0.0"


# -- axes ---------------------------------------------------------------------------------------------
def test_a_near_constant_series_gets_an_axis_of_at_least_a_tenth_of_its_values():
    lo, hi = value_limits([13.83, 13.84, 13.86])
    assert hi - lo >= 0.10 * 13.86 and lo < 13.83 and hi > 13.86
    assert (13.86 - 13.83) / (hi - lo) < 0.025  # the change fills under 2.5% of the axis, not all of it


def test_a_series_that_moves_keeps_its_own_range():
    lo, hi = value_limits([71.1, 79.4])  # spans more than 10% of 79.4 already
    span = 79.4 - 71.1
    assert lo == pytest.approx(71.1 - 0.05 * span) and hi == pytest.approx(79.4 + 0.05 * span)


def test_a_flat_zero_series_spans_one_point_and_the_window_stays_in_the_percent_range():
    lo, hi = value_limits([0.0, 0.0])
    assert lo == pytest.approx(-0.05) and hi == pytest.approx(1.05)  # [0, 1] with a 5% margin
    lo, hi = value_limits([99.6, 99.9])
    assert hi == pytest.approx(100 + 0.05 * 9.99) and lo == pytest.approx(100 - 9.99 - 0.05 * 9.99)  # shifted below 100, not cut
    assert value_limits([float("nan")]) == (0.0, 100.0)


def test_the_simulation_curves_take_the_honest_axes(tmp_path):
    from sourcebias.simulate.report import curve_panels, plot_curves
    from sourcebias.simulate.result import SimulationResult

    rows = [
        {
            "retriever": "bm25",
            "round": r,
            "share_generated": 0.01 * r,
            "ndsr_generated": 0.02 * r,
            "ndcg": 0.79 - 0.01 * r,
            "silenced_share": math.nan if r == 0 else 0.01 * r,
            "self_bleu": 0.1383 + 0.0001 * r,
        }
        for r in range(4)
    ]
    result = SimulationResult("t", {"k": 10}, rows)
    panels = {title: limits for title, _, limits in curve_panels(result)}
    lo, hi = panels["self-BLEU@10 of the top k (%)"]
    assert hi - lo >= 0.10 * 13.86 and lo < 13.83 and hi > 13.86
    lo, hi = panels["generated text, Share@10 (%)"]  # 0 to 3 points: spans at least 1 point, from 0
    assert lo == pytest.approx(-0.15) and hi == pytest.approx(3.15)
    assert plot_curves(result, tmp_path / "curves.png").stat().st_size > 0


# -- seeds' points that coincide ------------------------------------------------------------------------
def seeds_cells():
    rows = [("tfidf", s, 5.95, 0.618) for s in (42, 100, 2026)] + [("bm25", 42, 16.4, 0.705), ("bm25", 100, 13.5, 0.705), ("bm25", 2026, 16.4, 0.705)]
    return pd.DataFrame([{"retriever": r, "llm_source": "llm", "seed": s, "rel_delta": x, "all": y, "status": "ok"} for r, s, x, y in rows])


def test_seeds_with_the_same_point_are_labelled_with_their_count():
    part = seeds_cells()
    labels = _points(part["rel_delta"].to_numpy(), part["all"].to_numpy() * 100, part, several=False)
    assert [t for _, _, t in labels] == ["tfidf (3 seeds) ×3", "bm25 (3 seeds) ×2"]  # bm25's seeds 42 and 2026 coincide; 100 alone
    assert _coinciding([5.95, 5.95, 5.95, 13.5, float("nan"), float("nan")]) == [(5.95, 3)]


def test_figure_one_of_several_seeds_states_the_count_rule(tmp_path, monkeypatch):
    import matplotlib.figure

    from sourcebias.experiments.grid_report import figure_accuracy_vs_bias

    cells = seeds_cells().assign(
        dataset="d", measure="NDCG@3", rel_delta_ci_low=lambda t: t["rel_delta"] - 5, rel_delta_ci_high=lambda t: t["rel_delta"] + 5, ci_level=0.95
    )
    titles: list[str] = []
    real = matplotlib.figure.Figure.legend
    monkeypatch.setattr(matplotlib.figure.Figure, "legend", lambda self, *a, **k: titles.append(k.get("title", "")) or real(self, *a, **k))
    figure_accuracy_vs_bias(cells, tmp_path / "f.png")
    assert "×n: n seeds with the same accuracy and Relative Δ, drawn as one marker" in titles[0]


def test_one_figure_is_not_one_figures():
    from sourcebias.analysis.result import AnalysisResult

    assert repr(AnalysisResult("length", {"name": "d"}, figures={"a": Path("a.png")})).endswith("; 1 figure)")
    assert repr(AnalysisResult("length", {"name": "d"}, figures={"a": Path("a.png"), "b": Path("b.png")})).endswith("; 2 figures)")
