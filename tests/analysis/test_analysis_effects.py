"""Effect sizes and tests of sourcebias.analysis.effects against hand-worked values and statsmodels.

The hand-worked values are written out from the textbook formulas in each test; exact p-values
of the rank tests come from enumerating their permutation distributions with itertools.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from sourcebias.analysis import effects
from sourcebias.core.errors import ConfigError

A = [2.0, 4.0, 6.0, 8.0]  # mean 5, sum of squares 20
B = [1.0, 3.0, 5.0]  # mean 3, sum of squares 8


def test_describe_hand_values():
    d = effects.describe([4.0, 1.0, 3.0, 2.0, 10.0])
    assert d["n"] == 5
    assert d["mean"] == pytest.approx(4.0)
    # SS = 0 + 9 + 1 + 4 + 36 = 50, var = 50 / 4
    assert d["std"] == pytest.approx(math.sqrt(12.5))
    assert d["median"] == 3.0
    # linear interpolation: sorted 1 2 3 4 10, q1 at index 1 -> 2, q3 at index 3 -> 4
    assert (d["q1"], d["q3"], d["min"], d["max"]) == (2.0, 4.0, 1.0, 10.0)
    rows = effects.describe_groups({"human": A, "llm": B})
    assert [r["source"] for r in rows] == ["human", "llm"]
    assert rows[1]["mean"] == pytest.approx(3.0) and rows[1]["std"] == pytest.approx(2.0)


def test_independent_effect_sizes_by_hand():
    # pooled variance = (20 + 8) / (4 + 3 - 2) = 5.6
    d = 2.0 / math.sqrt(5.6)
    assert effects.pooled_std(A, B) == pytest.approx(math.sqrt(5.6))
    assert effects.cohens_d(A, B) == pytest.approx(d)
    assert effects.cohens_d(B, A) == pytest.approx(-d)
    # df = 5: J = Gamma(2.5) / (sqrt(2.5) Gamma(2)) = (3/4) sqrt(pi) / sqrt(2.5)
    j_exact = 0.75 * math.sqrt(math.pi) / math.sqrt(2.5)
    assert effects.hedges_correction(5) == pytest.approx(j_exact, rel=1e-12)
    assert effects.hedges_g(A, B) == pytest.approx(j_exact * d)
    assert effects.hedges_g(A, B, correction="approx") == pytest.approx((1 - 3 / 19) * d)
    # exact and approximate J agree closely for large df
    assert effects.hedges_correction(50) == pytest.approx(effects.hedges_correction(50, "approx"), abs=1e-4)
    with pytest.raises(ConfigError):
        effects.hedges_correction(5, "other")  # type: ignore[arg-type]


def test_hedges_g_approx_matches_statsmodels():
    from statsmodels.stats.meta_analysis import effectsize_smd

    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 2.0, 17), rng.normal(0.0, 1.5, 11)
    g_sm, _ = effectsize_smd(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size)
    assert effects.hedges_g(a, b, correction="approx") == pytest.approx(float(g_sm), rel=1e-12)


def test_compare_independent_tests_by_hand_and_statsmodels():
    from statsmodels.stats.weightstats import ttest_ind as sm_ttest_ind

    r = effects.compare_independent(A, B, names=("llm", "human"))
    # Welch: se^2 = (20/3)/4 + 4/3 = 3; t = 2 / sqrt(3); Welch-Satterthwaite df
    va, vb = (20 / 3) / 4, 4 / 3
    t = 2 / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    assert r["welch_t"] == pytest.approx(t)
    assert r["welch_df"] == pytest.approx(df)
    assert r["welch_p"] == pytest.approx(2 * stats.t.sf(t, df))
    t_sm, p_sm, df_sm = sm_ttest_ind(np.array(A), np.array(B), usevar="unequal")
    assert (r["welch_t"], r["welch_p"], r["welch_df"]) == pytest.approx((t_sm, p_sm, df_sm))
    # Mann-Whitney U of sample a: pairs with a > b: 2>1; 4>1,3; 6>1,3,5; 8>1,3,5 -> 9
    assert r["mannwhitney_u"] == 9
    assert r["common_language"] == pytest.approx(9 / 12)
    # exact null: every choice of 4 ranks out of 7 for sample a is equally likely; U = R_a - 10
    us = [sum(c) - 10 for c in itertools.combinations(range(1, 8), 4)]
    p_exact = min(1.0, 2 * min(np.mean([u >= 9 for u in us]), np.mean([u <= 9 for u in us])))
    assert r["mannwhitney_p"] == pytest.approx(p_exact)
    assert r["group_a"] == "llm" and r["n_a"] == 4 and r["mean_difference"] == pytest.approx(2.0)


def test_compare_paired_by_hand():
    a = [5.0, 7.0, 9.0, 12.0, 15.0]
    b = [4.0, 9.0, 6.0, 8.0, 10.0]  # differences 1, -2, 3, 4, 5
    r = effects.compare_paired(a, b)
    # mean 2.2, SS = 1.44 + 17.64 + 0.64 + 3.24 + 7.84 = 30.8, var 7.7
    dz = 2.2 / math.sqrt(7.7)
    assert r["d_z"] == pytest.approx(dz)
    j4 = math.gamma(2) / (math.sqrt(2) * math.gamma(1.5))
    assert r["g_z"] == pytest.approx(j4 * dz)
    assert r["paired_t"] == pytest.approx(dz * math.sqrt(5))
    assert r["paired_p"] == pytest.approx(2 * stats.t.sf(dz * math.sqrt(5), 4))
    # Wilcoxon: ranks of |d| are 1..5; W- = 2 (the -2); W = min(W+, W-) = 2.
    assert r["wilcoxon_w"] == 2
    # exact null: all 2^5 sign patterns; W+ = sum of ranks given a + sign
    wplus = [sum(rk for rk, s in zip(range(1, 6), signs) if s) for signs in itertools.product([0, 1], repeat=5)]
    p_exact = np.mean([min(w, 15 - w) <= 2 for w in wplus])
    assert p_exact == pytest.approx(6 / 32)
    assert r["wilcoxon_p"] == pytest.approx(p_exact)
    assert r["share_a_greater"] == pytest.approx(0.8)


def test_paired_matches_statsmodels():
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(7)
    a = rng.normal(0, 1, 40)
    b = a - 0.3 + rng.normal(0, 0.5, 40)
    r = effects.compare_paired(a, b)
    t_sm, p_sm, _ = DescrStatsW(a - b).ttest_mean(0)
    assert (r["paired_t"], r["paired_p"]) == pytest.approx((t_sm, p_sm))


def test_degenerate_and_bad_input():
    assert math.isnan(effects.cohens_d([1, 1], [1, 1, 1]))
    assert effects.cohens_d([2, 2], [1, 1, 1]) == math.inf
    r = effects.compare_paired([2, 3, 4], [1, 2, 3])  # every pair +1: the t-test is undefined, never p = 0
    assert math.isnan(r["paired_p"]) and math.isnan(r["paired_t"]) and r["d_z"] == math.inf
    assert "undefined" in r["paired_note"] and "same amount" in r["paired_note"]
    assert r["wilcoxon_p"] == pytest.approx(2 / 2**3)  # exact: all 3 signs positive, two-sided
    same = effects.compare_paired([1, 2, 3], [1, 2, 3])
    assert math.isnan(same["paired_p"]) and math.isnan(same["wilcoxon_p"]) and "every pair is equal" in same["paired_note"]
    with pytest.raises(ConfigError, match="NaN"):
        effects.describe([1.0, float("nan")])
    with pytest.raises(ConfigError, match="same length"):
        effects.compare_paired([1, 2, 3], [1, 2])


def test_compare_independent_constant_groups_are_undefined_not_p_zero():
    """Two constant groups: the standard error of Welch's t is 0, so t is ±inf (different
    constants) or 0/0 (equal ones); the test is undefined and says so, never p = 0 or 1. A
    constant group beside a varying one still has a Welch test: checked against SciPy."""
    r = effects.compare_independent([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert math.isnan(r["welch_p"]) and math.isnan(r["welch_t"]) and math.isnan(r["welch_df"])
    assert r["welch_note"].startswith("undefined") and "constant" in r["welch_note"]
    # Mann-Whitney is defined here: U = 0 (no a exceeds a b)
    assert r["mannwhitney_u"] == 0 and 0 < r["mannwhitney_p"] < 1 and "mannwhitney_note" not in r
    same = effects.compare_independent([3.0, 3.0], [3.0, 3.0, 3.0])
    assert math.isnan(same["welch_p"]) and "equal" in same["welch_note"]
    assert math.isnan(same["mannwhitney_p"]) and same["mannwhitney_note"].startswith("undefined")
    # one constant group: se^2 = 0 + var(b)/3 = 1/3, t = (1 - 3) / sqrt(1/3), df = n_b - 1 = 2
    mixed = effects.compare_independent([1.0, 1.0, 1.0], [2.0, 3.0, 4.0])
    t = -2 / math.sqrt(1 / 3)
    assert mixed["welch_t"] == pytest.approx(t) and mixed["welch_df"] == pytest.approx(2.0)
    assert mixed["welch_p"] == pytest.approx(2 * stats.t.sf(abs(t), 2)) and "welch_note" not in mixed
