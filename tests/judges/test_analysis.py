"""The judge's analyses on hand-made grade and pair tables, against hand-worked values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sourcebias.judges.analysis import agreement, analyse, disclosure_effect, pairwise_rows, parse_counts, twin_bias
from sourcebias.judges.grading import GRADE_COLUMNS, PAIR_COLUMNS

NAN = float("nan")


def grades_table(rows):
    """Rows of (mode, query, doc, source, label, assessor grade, judge grade, expected)."""
    out = []
    for mode, q, d, s, label, a, g, e in rows:
        out.append(
            {
                "mode": mode,
                "query_id": q,
                "doc_id": d,
                "source": s,
                "label": label,
                "origin": "qrels",
                "assessor_grade": a,
                "grade": g,
                "expected": e,
                "grade_mass": NAN if math.isnan(e) else 1.0,
                "expected_note": "" if not math.isnan(e) else ("unparsed" if math.isnan(g) else "no log-probabilities"),
                "finish_reason": "stop",
                "answer": "",
            }
        )
    return pd.DataFrame(out, columns=list(GRADE_COLUMNS))


GRADES = grades_table(
    [
        # query a: twin pairs d1 (2 vs 3: +1) and d2 (1 vs 1: 0); query b: d3 (0 vs 2: +2), d4 (human unparseable: pair left out)
        ("grade", "a", "d1", "human", "", 2, 2, 2.2),
        ("grade", "a", "d1", "llm", "", 2, 3, 2.9),
        ("grade", "a", "d2", "human", "", 1, 1, 1.0),
        ("grade", "a", "d2", "llm", "", 1, 1, 1.5),
        ("grade", "b", "d3", "human", "", 0, 0, 0.1),
        ("grade", "b", "d3", "llm", "", 0, 2, 1.6),
        ("grade", "b", "d4", "human", "", 1, NAN, NAN),
        ("grade", "b", "d4", "llm", "", 1, 1, 1.0),
    ]
)


def test_twin_bias_hand_worked():
    rows = {r["quantity"]: r for r in twin_bias(GRADES, "human", ["llm"])}
    g = rows["grade"]
    assert g["estimate"] == pytest.approx((1 + 0 + 2) / 3)  # d4 left out: its original is unparseable
    assert (g["items"], g["queries"], g["missing"]) == (3, 2, 1)
    e = rows["expected grade"]
    assert e["estimate"] == pytest.approx(((2.9 - 2.2) + (1.5 - 1.0) + (1.6 - 0.1)) / 3)


def test_agreement_and_parse_counts():
    """Issue 38, point 9c: assessors grading 0-2 and a judge grading 0-3 are compared binarised at
    grade > 0 (the protocol's relevance), never as if their grades were one scale."""
    a = {r["source"]: r for r in agreement(GRADES, ["human", "llm"])}
    # human: assessor (2, 1, 0) vs judge (2, 1, 0): binarised (1, 1, 0) both: kappa 1
    assert a["human"]["kappa_binary"] == pytest.approx(1.0) and a["human"]["items"] == 3
    # llm: binarised assessor (1, 1, 0, 1) vs judge (1, 1, 1, 1): po = 3/4 = pe (the judge says 1 always): kappa 0 by
    # construction, whatever the assessors say: refused, with the assessors' shares (0.25 not relevant, 0.75 relevant)
    assert math.isnan(a["llm"]["kappa_binary"])
    assert "binary κ not computed: the judge gives every one of the 4 items the label relevant" in a["llm"]["note"]
    assert "the other side's shares: not relevant 0.25, relevant 0.75" in a["llm"]["note"]
    assert math.isnan(a["llm"]["kappa"]) and math.isnan(a["llm"]["kappa_quadratic"])
    assert "different scales" in a["llm"]["note"] and a["llm"]["scales"] == "assessors 0–2, judge 0–3"
    (p,) = parse_counts(GRADES, pd.DataFrame(columns=list(PAIR_COLUMNS)))
    assert (p["mode"], p["answers"], p["unparseable"]) == ("grade", 8, 1)


def test_agreement_on_one_scale_gives_graded_kappa():
    # the assessors' top grade is 3 (the judge's scale): graded kappa as well
    g = GRADES.copy()
    g.loc[(g["doc_id"] == "d1"), "assessor_grade"] = 3
    a = {r["source"]: r for r in agreement(g, ["human", "llm"])}
    # llm: assessor (3, 1, 0, 1) vs judge (3, 1, 2, 1): po = 3/4; marginals (1,2,0,1) and (0,2,1,1) of 4: pe = (0 + 4 + 0 + 1) / 16
    assert a["llm"]["kappa"] == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16))
    assert a["llm"]["note"].startswith("binary κ not computed: the judge gives")  # binarised, the judge says relevant always
    assert a["llm"]["scales"] == "assessors 0–3, judge 0–3"


def test_disclosure_effect_hand_worked():
    g = grades_table(
        [
            ("disclosure", "a", "d1", "human", "human", 2, 1, NAN),
            ("disclosure", "a", "d1", "human", "ai", 2, 2, NAN),
            ("disclosure", "a", "d1", "llm", "human", 2, 2, NAN),
            ("disclosure", "a", "d1", "llm", "ai", 2, 2, NAN),
            ("disclosure", "b", "d2", "human", "human", 1, 3, NAN),
            ("disclosure", "b", "d2", "human", "ai", 1, 1, NAN),
        ]
    )
    rows = {r["llm_source"]: r for r in disclosure_effect(g, ["human", "llm"])}
    assert rows["all"]["estimate"] == pytest.approx((1 + 0 - 2) / 3)
    assert rows["copies of human"]["estimate"] == pytest.approx((1 - 2) / 2)
    assert rows["copies of llm"]["estimate"] == 0


def test_pairwise_rows_hand_worked():
    rows = []
    # d1: LLM copy picked in both orders; d2: the first passage both times; d3: unparseable once (left out)
    for d, hf, lf in (("d1", "B", "A"), ("d2", "A", "A"), ("d3", "", "A")):
        for order, pick in (("human_first", hf), ("llm_first", lf)):
            first, second = ("human", "llm") if order == "human_first" else ("llm", "human")
            picked = "" if not pick else (first if pick == "A" else second)
            rows.append(
                {
                    "query_id": "q" + d,
                    "doc_id": d,
                    "llm_source": "llm",
                    "order": order,
                    "origin": "qrels",
                    "pick": pick,
                    "picked": picked,
                    "finish_reason": "stop",
                    "answer": pick,
                }
            )
    out = {r["quantity"]: r for r in pairwise_rows(pd.DataFrame(rows, columns=list(PAIR_COLUMNS)))}
    src, pos = out["pairwise: LLM copy preferred"], out["pairwise: first passage preferred"]
    assert src["estimate"] == pytest.approx((0.5 + 0) / 2) and src["missing"] == 1 and src["items"] == 2
    assert pos["estimate"] == pytest.approx((0 + 0.5) / 2)
    assert src["consistent"] == pytest.approx(0.5)


def test_analyse_collects_every_section():
    out = analyse(GRADES, pd.DataFrame(columns=list(PAIR_COLUMNS)), "human", ["human", "llm"])
    assert set(out) == {"twin_bias", "disclosure", "pairwise", "parse", "agreement", "grades"}
    by_source = {r["source"]: r for r in out["grades"]}
    assert (by_source["llm"]["grade_1"], by_source["llm"]["grade_2"], by_source["llm"]["grade_3"]) == (2, 1, 1)
    assert by_source["human"]["graded"] == 3 and by_source["human"]["mean"] == pytest.approx(1.0)


def test_the_parse_table_says_0_when_every_graded_answer_has_an_expected_grade():
    """A count of 0 reads as 0, not as "–" (not applicable); pairwise answers have no grade to expect."""
    from sourcebias.judges.report import _no_expected

    full = GRADES[GRADES["query_id"] == "a"]  # every answer of query a has an expected grade
    (p,) = parse_counts(full, pd.DataFrame(columns=list(PAIR_COLUMNS)))
    assert p["no_expected_grade"] == {} and _no_expected(p) == "0"
    (q,) = parse_counts(GRADES, pd.DataFrame(columns=list(PAIR_COLUMNS)))
    assert _no_expected(q) == "unparsed: 1"  # d4's human copy: no grade, so no expected grade
    assert _no_expected({"mode": "pairwise", "no_expected_grade": {}}) == "– (no grade asked)"
