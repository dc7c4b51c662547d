"""The table of a power analysis as a :class:`~sourcebias.report.model.Report`, so the one
renderer writes it for the terminal, Markdown, LaTeX, CSV and HTML like every other table.

One row per pilot (statistic, retriever, LLM source, measure) and test: first the test that marks
``*`` in ``evaluate`` (for Relative Δ and the difference: the randomization test corrected across
the family), then, where it differs, the same statistic's uncorrected test. Each cell holds the
resampling and the analytic figure, ``resampling / analytic``.
"""

from __future__ import annotations

import math
from typing import Any

from sourcebias.evaluation.stats.base import Column
from sourcebias.power.base import METHODS, STAR, UNCORRECTED
from sourcebias.power.pilot import LABELS
from sourcebias.power.result import PowerResult, format_effect

TEST_LABELS = {STAR: "marks *", UNCORRECTED: "uncorrected"}


def _figure(result: PowerResult, pilot: dict[str, Any], test: str, quantity: str, n: int | None = None) -> str:
    """``resampling / analytic`` of one quantity of one pilot's test."""
    parts = []
    for method in METHODS:
        row = _row(result, pilot, test, quantity, method, n)
        v = row["value"] if row else math.nan
        if quantity != "n_needed":
            parts.append(format_effect(pilot["statistic"], v))
        elif math.isfinite(v):
            parts.append(f"{int(v):,}")
        else:
            parts.append(f"> {result.settings['max_n']:,}" if row and str(row["note"]).startswith("more than") else "–")
    return " / ".join(parts)


def _row(result: PowerResult, pilot: dict[str, Any], test: str, quantity: str, method: str, n: int | None) -> dict[str, Any] | None:
    keys = ("statistic", "retriever", "llm_source", "measure")
    for r in result.rows:
        if (
            r["quantity"] == quantity
            and r["method"] == method
            and r.get("test", STAR) == test
            and (n is None or r["n"] == n)
            and all(r[k] == pilot[k] for k in keys)
        ):
            return r
    return None


def power_columns(result: PowerResult) -> list[Column]:
    cols = [
        Column("statistic", "statistic", "text"),
        Column("retriever", "judge" if result.pilot.get("kind") == "judge" else "retriever", "text"),
        Column("measure", "measure", "text"),
        Column("test", "test", "text"),
    ]
    cols += [Column("pilot", "pilot", "cell"), Column("p", "p", "p"), Column("effect", "effect", "cell"), Column("n_needed", "n needed", "cell")]
    return cols + [Column(f"mde_{n}", f"MDE n={n:,}", "cell") for n in result.settings["ns"]]


def power_rows(result: PowerResult) -> list[dict[str, Any]]:
    several = len({p["llm_source"] for p in result.pilots}) > 1
    rows = []
    for p in result.pilots:
        for test in (STAR, UNCORRECTED):
            effect = _row(result, p, test, "n_needed", METHODS[0], None)
            if effect is None:
                continue
            row = {
                "statistic": LABELS[p["statistic"]],
                "retriever": p["retriever"] + (f"/{p['llm_source']}" if several else ""),
                "measure": p["measure"],
                "test": "CR1 t" if p["statistic"] == "judge_twin_bias" else TEST_LABELS[test],
            }
            row |= {"pilot": format_effect(p["statistic"], p["estimate"]), "p": p["p_value"] if test == STAR else p.get("p_uncorrected", math.nan)}
            row |= {f"mde_{n}": _figure(result, p, test, "mde", n) for n in result.settings["ns"]}
            rows.append(row | {"effect": format_effect(p["statistic"], effect["effect"]), "n_needed": _figure(result, p, test, "n_needed")})
    return rows


JUDGE_CAPTION = (
    "Each cell: resampling / analytic. MDE: smallest twin bias (grade of the LLM twin − the human original's, in the pilot's direction) detected "
    "with the target power by a study of n queries; n needed: queries for the effect (the pilot's own estimate unless --effect grade=...). "
    "The power is that of the judge's CR1 t interval over queries excluding 0 (resampling: the pilot's queries drawn with their graded pairs, the "
    "effect imposed on every pair; analytic: statsmodels TTestPower on the per-query mean differences, exact when every query has as many pairs). "
    "p: the pilot's own sign-flip p, which agrees with the interval away from the 5% edge. Unparseable answers are left out of the pilot "
    "(counted in the notes). – : undefined (see power.csv notes)."
)


def caption(result: PowerResult) -> str:
    s = result.settings
    if result.pilot.get("kind") == "judge":
        return JUDGE_CAPTION + (f" α = {s['alpha']:g}." if s["alpha"] != 0.05 else "")
    family = result.pilot.get("family") or ""
    text = (
        "Each cell: resampling / analytic. MDE: smallest effect (in the pilot's direction) detected with the target power by a study of n queries; "
        "n needed: queries for the effect (the pilot's own estimate unless --effect). Relative Δ in percent, differences human − LLM, twin pref. = "
        "share of pairs with the LLM copy first (unit: a relevant pair; queries resampled as clusters with their pairs). "
        "test 'marks *': the test and correction that mark * in evaluate, the figure to plan with. Relative Δ and difference: the paired randomization "
        f"test, {family or 'corrected across the report'}, simulated for the whole family on the same resampled queries (large-sample z = |Σd|/√Σd²); "
        "its analytic figure is the normal approximation of that z-test at α/m (Bonferroni), a lower bound under Holm and Benjamini–Hochberg. "
        "test 'uncorrected': the paired t-test alone at α, which does not decide *. Twin pref. (* uncorrected in evaluate): the query-clustered "
        "sign-flip test, simulated and approximated in its large-sample form z = (|Σd| − 1)/√Σd² (d = LLM-first − human-first pairs per query). "
        "ΔNDSR (* uncorrected): the t-test over queries. p: the pilot's own p of that test (for 'marks *' the corrected p). "
        "– : undefined (see power.csv notes)."
    )
    if s["alpha"] != 0.05:
        text += f" evaluate marks * at p < 0.05; this analysis uses α = {s['alpha']:g}."
    return text


def power_report(result: PowerResult) -> Any:
    """The :class:`~sourcebias.report.model.Report` of ``result``: its table, caption and notes."""
    from sourcebias.report.model import Report, Table

    s, p = result.settings, result.pilot
    title = f"Power on {p.get('dataset')} ({p.get('split')}, pilot of {p.get('queries')} queries): α = {s['alpha']:g}, power = {s['power']:g}"
    table = Table("power", title, power_columns(result), power_rows(result), caption(result), status_rows=False)
    return Report(title, [table], notes=list(result.notes))
