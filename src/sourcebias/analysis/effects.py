"""Descriptive statistics, effect sizes and two-sided tests for comparing two sources.

Used to compare a per-document feature (perplexity, length, median IDF, ...) between the human
originals and their LLM twins, as Huang et al. (2026) do for their "artifacts": descriptive
statistics per source, Cohen's d and Hedges' g, and two-sided tests. Two designs:

* **independent groups** (:func:`compare_independent`): the two sources as two samples —
  Cohen's d with the pooled standard deviation, Hedges' g, Welch's t-test, Mann-Whitney U;
* **paired samples** (:func:`compare_paired`): twin pairs ``(a_i, b_i)`` — d_z (the mean
  difference over the standard deviation of the differences), its Hedges-corrected g_z, the
  paired t-test and the Wilcoxon signed-rank test.

Effect sizes are written here (a few lines of arithmetic that SciPy does not offer); every test
is SciPy's. Differences are always ``a - b``: pass the LLM values first to get positive numbers
when the LLM source is higher.

Hedges' small-sample correction J(df) is exact by default,
``J(df) = Γ(df/2) / (sqrt(df/2) · Γ((df-1)/2))`` (Hedges 1981), computed with log-gamma; the
usual approximation ``1 - 3 / (4·df - 1)`` (Hedges & Olkin 1985, also statsmodels'
``effectsize_smd``) is available with ``correction="approx"``. They differ by less than 0.001
for df ≥ 10. ``df = n_a + n_b - 2`` for independent groups, ``n - 1`` for pairs.

References: Cohen (1988), *Statistical Power Analysis*, §2.2; Hedges (1981), J. Educ. Stat.
6(2):107-128; Lakens (2013), Front. Psychol. 4:863 (d_z for paired designs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from sourcebias.core.errors import ConfigError

Correction = Literal["exact", "approx"]


def _values(x: Any, what: str, *, min_n: int = 1) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1) if np.ndim(x) else np.asarray([x], dtype=float)
    if a.size < min_n:
        raise ConfigError(f"{what}: need at least {min_n} value(s), got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ConfigError(f"{what}: {int(np.sum(~np.isfinite(a)))} value(s) are NaN or infinite")
    return a


def describe(values: Any) -> dict[str, float]:
    """n, mean, standard deviation (n - 1 in the denominator; NaN for n = 1), median, first and
    third quartiles (NumPy's default linear interpolation), min and max."""
    a = _values(values, "describe")
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {
        "n": int(a.size),
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if a.size > 1 else float("nan"),
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "min": float(a.min()),
        "max": float(a.max()),
    }


def describe_finite(values: Any) -> dict[str, Any]:
    """:func:`describe` of the finite values, with ``left_out``, how many values were NaN or
    infinite and so left out (e.g. the median IDF of a document without analyzer terms, the
    perplexity of an empty text). With no finite value every statistic is NaN and ``n`` is 0."""
    a = np.asarray(values, dtype=float).reshape(-1)
    ok = np.isfinite(a)
    if not ok.any():
        nan = float("nan")
        return {"n": 0, "mean": nan, "std": nan, "median": nan, "q1": nan, "q3": nan, "min": nan, "max": nan, "left_out": int(a.size)}
    return {**describe(a[ok]), "left_out": int((~ok).sum())}


def describe_groups(groups: Mapping[str, Any], *, key: str = "source") -> list[dict[str, Any]]:
    """:func:`describe` for each group, as tidy rows ``{key: name, n, mean, std, ...}`` in the
    mapping's order."""
    return [{key: name, **describe(values)} for name, values in groups.items()]


def hedges_correction(df: float, correction: Correction = "exact") -> float:
    """Hedges' bias-correction factor J(df) (see the module docstring); 0 < J < 1."""
    if df <= 1:
        raise ConfigError(f"Hedges' correction needs df > 1, got {df}")
    if correction == "exact":
        return float(math.exp(math.lgamma(df / 2) - math.lgamma((df - 1) / 2)) / math.sqrt(df / 2))
    if correction == "approx":
        return 1.0 - 3.0 / (4.0 * df - 1.0)
    raise ConfigError(f"correction must be 'exact' or 'approx', got {correction!r}")


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return float("nan") if num == 0 else math.copysign(math.inf, num)


def pooled_std(a: Any, b: Any) -> float:
    """sqrt(((n_a - 1) s_a² + (n_b - 1) s_b²) / (n_a + n_b - 2))."""
    a = _values(a, "a", min_n=1)
    b = _values(b, "b", min_n=1)
    if a.size + b.size < 3:
        raise ConfigError("pooled standard deviation needs n_a + n_b >= 3")
    ss = ((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()
    return float(math.sqrt(ss / (a.size + b.size - 2)))


def cohens_d(a: Any, b: Any) -> float:
    """Cohen's d = (mean(a) - mean(b)) / pooled SD. NaN when both groups are constant and equal."""
    a = _values(a, "a")
    b = _values(b, "b")
    return _ratio(float(a.mean() - b.mean()), pooled_std(a, b))


def hedges_g(a: Any, b: Any, *, correction: Correction = "exact") -> float:
    """Hedges' g = J(n_a + n_b - 2) · Cohen's d."""
    a = _values(a, "a")
    b = _values(b, "b")
    return hedges_correction(a.size + b.size - 2, correction) * cohens_d(a, b)


def _paired(a: Any, b: Any) -> np.ndarray:
    a = _values(a, "a", min_n=2)
    b = _values(b, "b", min_n=2)
    if a.shape != b.shape:
        raise ConfigError(f"paired samples must have the same length, got {a.size} and {b.size}")
    return a - b


def paired_d(a: Any, b: Any) -> float:
    """d_z = mean(a - b) / SD(a - b) (SD with n - 1)."""
    d = _paired(a, b)
    return _ratio(float(d.mean()), float(d.std(ddof=1)))


def paired_g(a: Any, b: Any, *, correction: Correction = "exact") -> float:
    """g_z = J(n - 1) · d_z; NaN for fewer than 3 pairs, where J(1) is undefined (Γ(0) in the
    exact form, a factor 0 in the approximation: no bias-corrected effect size exists)."""
    d = _paired(a, b)
    if d.size < 3:
        return float("nan")
    return hedges_correction(d.size - 1, correction) * paired_d(a, b)


def compare_independent(a: Any, b: Any, *, names: tuple[str, str] = ("a", "b"), correction: Correction = "exact") -> dict[str, Any]:
    """Two independent samples: descriptive statistics, effect sizes and two-sided tests.

    Returns a flat dict: ``group_a``, ``group_b`` (the names), ``n_a``, ``mean_a``, ``std_a``,
    ``median_a`` (and ``_b``), ``mean_difference`` (a - b), ``pooled_std``, ``cohens_d``,
    ``hedges_g`` (with ``correction``), ``welch_t``, ``welch_df``, ``welch_p``
    (``scipy.stats.ttest_ind(equal_var=False)``), ``mannwhitney_u`` (U of sample a, i.e. the
    number of pairs with a > b plus half the ties), ``mannwhitney_p``
    (``scipy.stats.mannwhitneyu(alternative="two-sided")``: exact for small samples without
    ties, else normal approximation with tie and continuity correction) and
    ``common_language`` = U / (n_a n_b), the probability that a random a exceeds a random b.
    Needs at least 2 values per group. When neither group varies, Welch's test is undefined:
    ``welch_t``, ``welch_df`` and ``welch_p`` are NaN and ``welch_note`` says why (never p = 0
    for two different constants, or 1 for equal ones); when every value is equal,
    ``mannwhitney_p`` is NaN with ``mannwhitney_note``.
    """
    a = _values(a, names[0], min_n=2)
    b = _values(b, names[1], min_n=2)
    out: dict[str, Any] = {"group_a": names[0], "group_b": names[1]}
    for tag, x in (("a", a), ("b", b)):
        desc = describe(x)
        out.update({f"n_{tag}": desc["n"], f"mean_{tag}": desc["mean"], f"std_{tag}": desc["std"], f"median_{tag}": desc["median"]})
    out["mean_difference"] = float(a.mean() - b.mean())
    out["pooled_std"] = pooled_std(a, b)
    out["cohens_d"] = cohens_d(a, b)
    out["hedges_g"] = hedges_g(a, b, correction=correction)
    out["hedges_correction"] = correction
    out.update(_welch(a, b))
    out.update(_mann_whitney(a, b))
    return out


def _welch(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Welch's t-test; undefined (NaN, with ``welch_note``) when neither group varies: the
    standard error is 0, so t is 0/0 or ±inf and no p (0 or 1) would be a test's answer."""
    from scipy import stats

    if np.ptp(a) == 0 and np.ptp(b) == 0:
        what = "every value of both groups is equal" if a[0] == b[0] else f"each group is constant ({float(a[0]):g} and {float(b[0]):g})"
        note = f"undefined (NaN): {what}, so the standard error is 0; see the Mann-Whitney test"
        return {"welch_t": float("nan"), "welch_df": float("nan"), "welch_p": float("nan"), "welch_note": note}
    t = stats.ttest_ind(a, b, equal_var=False)
    return {"welch_t": float(t.statistic), "welch_df": float(t.df), "welch_p": float(t.pvalue)}


def _mann_whitney(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Mann-Whitney U of sample a, its two-sided p and the common-language effect size; the p is
    undefined (NaN, with ``mannwhitney_note``) when every value is equal (all ranks tie)."""
    from scipy import stats

    u = stats.mannwhitneyu(a, b, alternative="two-sided")
    out: dict[str, Any] = {"mannwhitney_u": float(u.statistic), "mannwhitney_p": float(u.pvalue), "common_language": float(u.statistic) / (a.size * b.size)}
    if np.ptp(np.concatenate([a, b])) == 0:
        out.update({"mannwhitney_p": float("nan"), "mannwhitney_note": "undefined (NaN): every value of both groups is equal, all ranks tie"})
    return out


def compare_paired(a: Any, b: Any, *, names: tuple[str, str] = ("a", "b"), correction: Correction = "exact") -> dict[str, Any]:
    """Paired samples (``a[i]`` and ``b[i]`` belong together, e.g. a twin and its original).

    Returns a flat dict: ``group_a``, ``group_b``, ``n`` (pairs), ``mean_a``, ``mean_b``,
    ``mean_difference``, ``std_difference``, ``median_difference`` (of a - b), ``d_z``, ``g_z``
    (with ``correction``), ``paired_t``, ``paired_df``, ``paired_p``
    (``scipy.stats.ttest_rel``), ``wilcoxon_w``, ``wilcoxon_p``
    (``scipy.stats.wilcoxon``, two-sided, zero differences dropped — Wilcoxon's original
    method; W is SciPy's two-sided statistic, min(W+, W-)), ``wilcoxon_n`` (non-zero pairs)
    and ``share_a_greater`` (share of pairs with a > b). Needs at least 2 pairs; with exactly 2,
    ``g_z`` is NaN and ``g_z_note`` says why.
    """
    from scipy import stats

    d = _paired(a, b)
    a = np.asarray(a, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    out: dict[str, Any] = {
        "group_a": names[0],
        "group_b": names[1],
        "n": int(d.size),
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "mean_difference": float(d.mean()),
        "std_difference": float(d.std(ddof=1)),
        "median_difference": float(np.median(d)),
        "d_z": paired_d(a, b),
        "g_z": paired_g(a, b, correction=correction),
        "hedges_correction": correction,
        "share_a_greater": float(np.mean(d > 0)),
    }
    if d.size < 3:
        out["g_z_note"] = f"undefined (NaN): Hedges' correction J(n - 1) needs at least 3 pairs, got {d.size}"
    if np.ptp(d) == 0:
        # every pair moves by the same amount: the differences have no variance, so t is 0/0 or
        # unbounded and the test is undefined; a p of 0 (or 1) would be a number no test gave
        what = "every pair is equal" if d[0] == 0 else f"every pair differs by the same amount ({float(d[0]):g})"
        out.update(
            {
                "paired_t": float("nan"),
                "paired_df": d.size - 1,
                "paired_p": float("nan"),
                "paired_note": f"undefined (NaN): {what}, so the differences have no variance; see the Wilcoxon test",
            }
        )
    else:
        t = stats.ttest_rel(a, b)
        out.update({"paired_t": float(t.statistic), "paired_df": int(t.df), "paired_p": float(t.pvalue)})
    nonzero = int(np.count_nonzero(d))
    out["wilcoxon_n"] = nonzero
    if nonzero == 0:
        out.update(
            {"wilcoxon_w": float("nan"), "wilcoxon_p": float("nan"), "wilcoxon_note": "undefined (NaN): every pair is equal, no non-zero difference to rank"}
        )
    else:
        w = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
        out.update({"wilcoxon_w": float(w.statistic), "wilcoxon_p": float(w.pvalue)})
    return out
