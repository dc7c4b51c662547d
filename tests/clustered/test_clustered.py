"""The query-clustered estimators against values computed independently: coverage over simulated
studies whose truth is known, the shared refusal rule, the balanced orders worked by hand, the
collinearity named, and the known-truth Tally's bookkeeping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.clustered import get_estimator, interval_refusal
from sourcebias.clustered.design import cyclic_orders, order_balance, rotation_offsets
from sourcebias.clustered.ols import clustered_ols, collinear_terms
from sourcebias.clustered.tally import Tally
from sourcebias.core.errors import ConfigError


def clustered_differences(rng: np.random.Generator, queries: int, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Grade-like differences: each item's d = Bernoulli(p_q) − Bernoulli(1/2) + Bernoulli(1/2), with
    p_q uniform in truth ± 0.15 per query (independent of the query's size), so E[d] = truth."""
    sizes = rng.integers(1, 12, size=queries)
    p = np.clip(truth + rng.uniform(-0.15, 0.15, size=queries), 0, 1)
    values = np.concatenate([(rng.random(m) < p[q]).astype(float) - (rng.random(m) < 0.5) + (rng.random(m) < 0.5) for q, m in enumerate(sizes)])
    return values, np.repeat(np.arange(queries), sizes)


def test_mean_difference_covers_a_known_truth_in_most_studies():
    """300 simulated studies of 20 queries, truth 0.3 exactly (E[bump] = p_q around 0.3, the two
    noise terms cancel in expectation): the CR1 t interval covers it in at least 90%."""
    rng = np.random.default_rng(2026)
    md = get_estimator("mean_difference")
    covered = [md.estimate(*clustered_differences(rng, 20, 0.3)) for _ in range(300)]
    rate = np.mean([e.low <= 0.3 <= e.high for e in covered])
    assert rate >= 0.90, rate


def test_clustered_proportion_covers_a_known_rate():
    rng = np.random.default_rng(7)
    cp = get_estimator("clustered_proportion")
    hits = 0
    for _ in range(300):
        sizes = rng.integers(2, 10, size=25)
        p = np.clip(0.3 + rng.uniform(-0.2, 0.2, size=25), 0, 1)  # mean 0.3, symmetric: the pooled rate's truth is 0.3
        y = np.concatenate([rng.random(m) < p[q] for q, m in enumerate(sizes)]).astype(float)
        e = cp.estimate(y, np.repeat(np.arange(25), sizes))
        hits += e.low <= 0.3 <= e.high
    assert hits / 300 >= 0.90


@pytest.mark.parametrize("queries", [1, 2, 3, 4])
def test_every_estimator_refuses_one_to_four_queries_with_the_same_reason(queries):
    for name in ("mean_difference", "clustered_proportion"):
        est = get_estimator(name)
        e = est.estimate(**est.example(queries, 0))
        assert e.refused == interval_refusal(queries, 0.95) and math.isnan(e.low) and math.isnan(e.p) and math.isfinite(e.estimate)
    ps = get_estimator("position_source")
    fit = ps.estimate(**ps.example(queries, 0))
    assert fit["interval_refused"] == interval_refusal(queries, 0.95) and all(c["ci"] is None and c["p"] is None for c in fit["coefficients"].values())


def test_the_refusal_rule_is_the_audits():
    # C(2n - 1, n) distinct resamples against 2 / (1 - level) for the two tails: at 95% 40 are needed
    assert [math.comb(2 * n - 1, n) for n in (3, 4, 5)] == [10, 35, 126]
    assert interval_refusal(4, 0.95) != "" and interval_refusal(5, 0.95) == ""
    assert interval_refusal(4, 0.90) == "" and interval_refusal(5, 0.99) != ""  # 20 needed at 90%, 200 at 99%
    from sourcebias.audit.correction import interval_refusal as audit_rule

    assert audit_rule is interval_refusal


def test_cyclic_orders_by_hand():
    assert [o.tolist() for o in cyclic_orders(3, 3)] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert rotation_offsets(20, 3) == [0, 6, 13] and rotation_offsets(6, 2) == [0, 1]  # 3 shares a divisor with 6
    assert order_balance(5, 5)["kind"] == "balanced" and order_balance(5, 3)["kind"] == "partial" and order_balance(5, 1)["kind"] == "single"
    with pytest.raises(ConfigError, match="3 cyclic orders"):
        cyclic_orders(3, 4)
    # rank and position dummies are identified under every offset set chosen (gcd with n is 1)
    for n in range(2, 9):
        for k in range(2, n + 1):
            rows = [(r, (r - o) % n) for o in rotation_offsets(n, k) for r in range(n)]  # (rank, position) of each shown passage
            x = np.column_stack(
                [np.ones(len(rows))] + [[float(r == a) for r, _ in rows] for a in range(1, n)] + [[float(p == b) for _, p in rows] for b in range(1, n)]
            )
            assert np.linalg.matrix_rank(x) == x.shape[1], (n, k)


def test_collinear_terms_are_named():
    x = np.column_stack([np.ones(6), [1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [1, 2, 3, 4, 5, 6]])
    assert collinear_terms(x, ["constant", "source llm", "rank 2", "position"]) == [["constant", "source llm", "rank 2"]]
    fit = clustered_ols(np.arange(6.0), x, ["constant", "source llm", "rank 2", "position"], [0, 0, 1, 1, 2, 2])
    assert fit.refused == "collinear: constant, source llm and rank 2 are linearly dependent"


def test_tally_bookkeeping():
    t = Tally("s", "x", 0.0)
    t.add(-1, 1, 0.5)  # covers
    t.add(0.5, 1, 0.01)  # misses, significant
    t.add(None, None, float("nan"), "too few")  # refused, no p: fine
    assert (t.studies, t.refused, t.covered, t.significant, t.p_without_interval) == (3, 1, 1, 1, 0)
    assert t.coverage == 0.5 and not t.holds()  # 50% < 90%
    t.add(None, None, 0.2, "too few")  # a p where the test was refused
    assert t.p_without_interval == 1
    none = Tally("s", "y", None)
    none.add(None, None, None, "nothing to estimate from")
    assert none.holds()
    none.add(0, 1, 0.5)  # an interval where there is no truth to cover
    assert not none.holds()


def test_an_exact_fit_carries_no_interval_and_no_p():
    """A listwise model that returns every window in the order shown (found with Qwen2.5-Coder-1.5B
    on NQ-UTD): answered = shown exactly, so by hand the position slope is 1, the source 0, every
    residual 0 and every standard error 0: an interval or a p would be rounding (the sandwich gave
    "p = 0.117" for a source coefficient of 4e-16). One answer that departs restores them."""
    ps = get_estimator("position_source")
    n, queries = 20, 8
    rows: dict[str, list] = {"query": [], "shown": [], "answered": [], "source": []}
    for q in range(queries):
        for shift in range(3):  # three rotations of the window, each answered as shown
            for pos in range(n):
                rows["query"].append(f"q{q}")
                rows["shown"].append(pos / (n - 1))
                rows["answered"].append(pos / (n - 1))
                rows["source"].append("llm" if (pos + shift + q) % 2 else "human")
    fit = ps.estimate(rows["query"], rows["shown"], rows["answered"], rows["source"], "human")
    assert fit["interval_refused"].startswith("the fit is exact (all 480 rows on it; largest residual")
    coef = fit["coefficients"]
    assert coef["position"]["estimate"] == pytest.approx(1.0, abs=1e-12)
    assert coef["source:llm"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert all(c["ci"] is None and c["p"] is None for c in coef.values())
    # one window of one query answered in another order: residuals, so intervals and p again
    first = rows["query"].index("q3")
    rows["answered"][first : first + n] = rows["answered"][first : first + n][::-1]
    fit = ps.estimate(rows["query"], rows["shown"], rows["answered"], rows["source"], "human")
    assert "interval_refused" not in fit
    assert all(c["ci"] is not None and 0 < c["p"] <= 1 for c in fit["coefficients"].values())
