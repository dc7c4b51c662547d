"""The citation estimators against values computed independently: closed-form Wilson and
design-effect arithmetic, a 2x2 table's log odds ratio and its sandwich variance by hand, a
Newton–Raphson logit written here, and a hand-worked twin table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from sourcebias.citations.estimate import clustered_rate, logit_effects, prune_constant_levels, rate_table, twin_differences
from sourcebias.clustered import interval_refusal
from sourcebias.clustered.clustered_proportion import design_effect

Z95 = norm.ppf(0.975)


def wilson(x: float, n: float, z: float = Z95) -> tuple[float, float]:
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def passages(rows):
    """rows: (query_id, order, doc_id, source, rank, position, cited)."""
    return pd.DataFrame(rows, columns=["query_id", "order", "doc_id", "source", "rank", "position", "cited"])


def df_factor(queries: int) -> float:
    """Korn & Graubard's degrees-of-freedom adjustment of the effective sample size: (z / t_{G-1})^2."""
    return (Z95 / student_t.ppf(0.975, queries - 1)) ** 2


def test_rate_one_row_per_query_has_design_effect_n_over_n_minus_1():
    # one row per query: the ratio variance is p(1-p)/(n-1), so deff = n/(n-1) and n_eff = n - 1
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0])
    assert design_effect(y.astype(float), np.arange(10)) == pytest.approx(10 / 9)
    r = clustered_rate(y, np.arange(10))
    assert r["rate"] == pytest.approx(0.3) and r["note"] == "" and r["refused"] == ""
    n_eff = 9.0 * df_factor(10)
    assert (r["low"], r["high"]) == pytest.approx(wilson(0.3 * n_eff, n_eff))


def test_rate_duplicated_rows_halve_the_effective_sample():
    # every query's two rows agree: by hand, var = G/(G-1) * sum((y_g - p m_g)^2) / n^2
    y_q = np.array([1, 1, 0, 0, 0, 1, 0, 0])  # 8 queries, p = 3/8
    y, g = np.repeat(y_q, 2), np.repeat(np.arange(8), 2)
    p, n = 3 / 8, 16
    var = 8 / 7 * np.sum((2 * y_q - 2 * p) ** 2) / n**2
    deff = var / (p * (1 - p) / n)
    assert design_effect(y.astype(float), g) == pytest.approx(deff)
    assert deff == pytest.approx(2 * 8 / 7)
    r = clustered_rate(y, g)
    n_eff = n / deff * df_factor(8)
    assert (r["low"], r["high"]) == pytest.approx(wilson(p * n_eff, n_eff))


def test_rate_at_zero_uses_the_effective_number_of_queries_and_says_so():
    """Issue 38, point 6: a rate of 0 or 1 fell back to Wilson on n (as if every passage were its
    own query) under a caption that says clustered; now the interval is on the effective number of
    queries (sum m)^2 / sum m^2, the most clustered case, named in the row."""
    sizes = [1, 2, 3, 2, 4, 4]  # 6 queries, 16 rows, all uncited
    rows = [(f"q{q}", 0, f"d{q}{i}", "human", 1, 1, 0) for q, m in enumerate(sizes) for i in range(m)]
    (row,) = rate_table(passages(rows), ["source"])
    g_eff = sum(sizes) ** 2 / sum(m * m for m in sizes)
    assert row["rate"] == 0.0 and (row["low"], row["high"]) == pytest.approx(wilson(0, g_eff * df_factor(6)))
    assert "effective number of queries" in row["note"] and row["high"] > wilson(0, 16)[1]


def test_rate_on_one_query_has_no_interval():
    """A rate of 0.8 over one query got the note "rate 0 or 1" and Wilson on n: now it is refused
    by the rule every clustered interval follows."""
    rows = [("q1", 0, f"d{i}", "human", 1, 1, int(i < 4)) for i in range(5)]
    (row,) = rate_table(passages(rows), ["source"])
    assert row["rate"] == pytest.approx(0.8) and row["low"] is None and row["note"] == ""
    assert row["refused"] == interval_refusal(1, 0.95)


def two_by_two(a: int, n_h: int, b: int, n_l: int) -> pd.DataFrame:
    """a of n_h human passages cited, b of n_l LLM ones; each row its own query, all at rank 1."""
    rows = [(f"h{i}", 0, f"d{i}", "human", 1, 1, int(i < a)) for i in range(n_h)]
    rows += [(f"l{i}", 0, f"e{i}", "llm", 1, 1, int(i < b)) for i in range(n_l)]
    return passages(rows)


def test_logit_two_by_two_matches_the_hand_odds_ratio_and_sandwich():
    a, n_h, b, n_l = 6, 20, 12, 20
    rows, _ = logit_effects(two_by_two(a, n_h, b, n_l), "human")
    (row,) = [r for r in rows if r["term"] == "source"]
    p_h, p_l = a / n_h, b / n_l
    log_or = math.log(p_l / (1 - p_l)) - math.log(p_h / (1 - p_h))
    # saturated logit: the sandwich equals the model variance 1/(n p (1-p)) per cell; statsmodels'
    # cluster covariance multiplies it by G/(G-1) * (N-1)/(N-K) (K = 2 parameters)
    n, g = n_h + n_l, n_h + n_l
    var = (1 / (n_l * p_l * (1 - p_l)) + 1 / (n_h * p_h * (1 - p_h))) * g / (g - 1) * (n - 1) / (n - 2)
    assert row["estimate"] == pytest.approx(log_or)
    assert row["se"] == pytest.approx(math.sqrt(var))
    assert row["odds_ratio"] == pytest.approx((p_l / (1 - p_l)) / (p_h / (1 - p_h)))
    assert row["ame"] == pytest.approx(p_l - p_h)  # saturated: the marginal effect is the difference of shares
    assert row["status"] == "ok"


def newton_logit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    b = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ b))
        step = np.linalg.solve(x.T @ (x * (p * (1 - p))[:, None]), x.T @ (y - p))
        b += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return b


def test_logit_with_rank_and_position_effects_matches_a_newton_fit():
    rng = np.random.default_rng(3)
    rows = []
    for q in range(40):
        for order in range(2):
            perm = rng.permutation(3) + 1
            for rank in (1, 2, 3):
                source = "llm" if (q + rank) % 2 else "human"
                pos = int(perm[rank - 1])
                p = 1 / (1 + math.exp(-(0.3 - 0.5 * pos + 0.8 * (source == "llm"))))
                rows.append((f"q{q}", order, f"d{rank}", source, rank, pos, int(rng.random() < p)))
    frame = passages(rows)
    x = np.column_stack(
        [np.ones(len(frame)), frame["source"] == "llm", frame["rank"] == 2, frame["rank"] == 3, frame["position"] == 2, frame["position"] == 3]
    ).astype(float)
    expected = newton_logit(x, frame["cited"].to_numpy(float))
    result, notes = logit_effects(frame, "human")
    got = {(r["term"], r["level"]): r["estimate"] for r in result}
    assert got == pytest.approx(
        {("source", "llm"): expected[1], ("rank", 2): expected[2], ("rank", 3): expected[3], ("position", 2): expected[4], ("position", 3): expected[5]}
    )
    assert not any("coincide" in n for n in notes)


def test_logit_separation_is_undefined_not_infinite():
    frame = two_by_two(5, 20, 20, 20)  # every LLM passage cited
    rows, _ = logit_effects(frame, "human")
    (row,) = rows
    assert row["status"] == "undefined" and row["estimate"] is None
    assert "perfect separation" in row["note"]


def test_constant_rank_level_is_left_out_and_counted():
    frame = passages([(f"q{i}", 0, "d", "human" if i % 2 else "llm", r, r, int(r == 1 and i % 3 == 0)) for i in range(30) for r in (1, 2)])
    kept, dropped = prune_constant_levels(frame, ["rank"])
    assert set(kept["rank"]) == {1}
    assert dropped == ["rank 2: 30 rows, all uncited"]


def balanced_pairs(values: dict[str, list[tuple[int, int]]]) -> pd.DataFrame:
    """One twin pair per query, shown in both orders of a 2-passage context (balanced: each copy at
    each position once); ``values[q]`` = [(cited llm, cited human) in order 0, in order 1]."""
    rows = []
    for q, per_order in values.items():
        for order, (cl, ch) in enumerate(per_order):
            llm_pos, human_pos = (1, 2) if order == 0 else (2, 1)
            rows += [(q, order, "d", "llm", 1, llm_pos, cl), (q, order, "d", "human", 2, human_pos, ch)]
    return passages(rows)


def test_twin_difference_by_hand():
    # d per (query, order): q1: +1, 0; q2: +1, +1; q3: -1, +1; q4: 0, 0; q5: +1, 0
    values = {"q1": [(1, 0), (1, 1)], "q2": [(1, 0), (1, 0)], "q3": [(0, 1), (1, 0)], "q4": [(0, 0), (1, 1)], "q5": [(1, 0), (0, 0)]}
    (row,) = twin_differences(balanced_pairs(values), "human")
    d = {q: [cl - ch for cl, ch in v] for q, v in values.items()}
    n, mean = 10, 4 / 10
    var = 5 / 4 * sum((sum(v) - len(v) * mean) ** 2 for v in d.values()) / n**2  # CR1: G/(G-1) of the sandwich
    half = student_t.ppf(0.975, 4) * math.sqrt(var)
    assert (row["pairs"], row["queries"], row["llm_only"], row["human_only"], row["unbalanced_pairs"]) == (10, 5, 5, 1, 0)
    assert row["estimate"] == pytest.approx(mean) and row["se"] == pytest.approx(math.sqrt(var))
    assert (row["low"], row["high"]) == pytest.approx((mean - half, mean + half))
    assert row["status"] == "few_queries" and row["llm_earlier"] == 5
    # the sign-flip test of the query sums (1, 2, 0, 0, 1): |T*| >= 4 only when (1, 2, 1) keep one sign: 2 of 8 patterns
    assert row["p"] == pytest.approx(2 / 8)


def test_twins_in_one_order_are_not_estimated():
    """Issue 38, point 3: with one order each copy keeps its rank's position, so the difference
    includes the position effect: not estimated (it was printed with a note)."""
    one = balanced_pairs({f"q{i}": [(1, 0)] for i in range(6)})
    (row,) = twin_differences(one, "human")
    assert row["status"] == "undefined" and row["estimate"] is None and row["unbalanced_pairs"] == 6
    assert "none in a balanced query" in row["note"]


def test_twin_difference_without_pairs_is_undefined():
    (row,) = twin_differences(passages([("q1", 0, "a", "llm", 1, 1, 1), ("q1", 0, "b", "human", 2, 2, 0)]), "human")
    assert row["status"] == "undefined" and row["estimate"] is None and row["pairs"] == 0


def test_contexts_in_two_mirror_orders_fall_back_to_rank_effects_and_say_so():
    # positions j and k+1-j together equal ranks j and k+1-j together: not identifiable apart
    rng = np.random.default_rng(0)
    rows = [
        (f"q{q}", o, f"d{r}", "llm" if (q + r) % 2 else "human", r, r if o == 0 else 5 - r, int(rng.random() < 0.5))
        for q in range(30)
        for o in (0, 1)
        for r in (1, 2, 3, 4)
    ]
    result, notes = logit_effects(passages(rows), "human")
    assert {r["term"] for r in result} == {"source", "rank"}
    assert any("collinear with the rank terms" in n and "too few shuffled orders" not in n for n in notes)


def test_a_source_collinear_with_rank_is_named_as_such():
    """Issue 38, point 9a: every LLM copy at rank 1 and every original at rank 2, shown in both
    orders: the source coincides with rank; the reason said so, not "too few shuffled orders"."""
    rng = np.random.default_rng(1)
    rows = [
        (f"q{q}", o, f"d{q}", s, r, r if o == 0 else 3 - r, int(rng.random() < 0.5)) for q in range(30) for o in (0, 1) for s, r in (("llm", 1), ("human", 2))
    ]
    result, notes = logit_effects(passages(rows), "human")
    (row,) = [r for r in result if r["term"] == "source"]
    assert row["status"] == "undefined" and "source llm" in row["note"] and "rank 2" in row["note"] and "linearly dependent" in row["note"]
    assert not any("shuffled orders" in n for n in notes)


def test_a_diverging_coefficient_is_quasi_separation_not_an_estimate():
    # quasi-complete separation: every z = 1 row cited, z = 0 rows mixed; the MLE of z's
    # coefficient is +inf and the fit stops at a large finite value: refused, not reported
    from sourcebias.citations.estimate import _fit_glm

    z = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0, 1.0])
    y = np.array([0, 1, 0, 1, 1, 1, 1, 0, 1, 1.0])
    got = _fit_glm(y, np.column_stack([np.ones(10), z]), np.arange(10), [("const", None), ("source", "z")])
    assert isinstance(got, str) and got.startswith("quasi-separation")


def test_no_fit_when_every_llm_source_is_separated():
    rows = [(f"q{i}", 0, f"h{i}", "human", 1, 1 + i % 2, int(i % 3 == 0)) for i in range(12)]
    rows += [(f"q{i}", 0, f"l{i}", "llm", 2, 2 - i % 2, 0) for i in range(12)]
    result, _ = logit_effects(passages(rows), "human")
    assert [(r["term"], r["status"]) for r in result] == [("source", "undefined")]  # no rank or position rows from a human-only fit
