"""Paired tests of human vs LLM target per query: mean difference, Student's paired t-test, a
seeded sign-flip randomization test, and the exact sign test beside them.

The t-test is *undefined* when every query moves by the same amount (zero variance of the
differences: t = d / 0); it is then reported as undefined (NaN p and the reason), never as
p = 0, and the exact sign test (``scipy.stats.binomtest`` over the non-zero differences, p = 1/2)
says what the data do support. With every difference 0 there is nothing to test: p = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.clustered.signflip import sign_flip_sums
from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, known, paired_values, register_statistic
from sourcebias.evaluation.stats.resampling import sign_test_p, t_test_p

NO_DIFFERENCE = "no query differs (every difference is 0)"
CONSTANT = "undefined: every query differs by the same amount (zero variance, t = d/0); see the sign test"
TOO_FEW = "undefined: fewer than 2 queries"


def paired_randomization_test(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of ``mean(a - b) != 0`` under random swaps within each pair (a sign flip of
    each difference), seeded; exact when 2^n is at most ``n_resamples``.

    The test of ``scipy.stats.permutation_test((a, b), mean difference, permutation_type="samples")``
    with SciPy's p-value, drawn vectorised: the null distribution of the sum is ``Σd - 2·F·d`` for
    the 0/1 swap patterns ``F``, drawn as random bits and summed eight
    pairs at a time through a table of the 256 partial sums of each eight
    (:func:`sourcebias.clustered.signflip.sign_flip_sums`; 5 ms a test of 324 queries, where SciPy
    permutes each pair's two values with ``Generator.permuted``: 0.5 s). The
    patterns, and so the p-values, differ from SciPy's by Monte-Carlo error only
    (``tests/evaluation/test_randomization_vectorised.py`` checks both). The p-value is SciPy's:
    ``min(1, 2·min(P(T* <= T), P(T* >= T)))`` with ``P = count / 2^n`` when exact and
    ``(1 + count) / (1 + R)`` over R random patterns (never 0: the observed pattern counts). Null
    sums within 100 machine epsilons of ``Σ|d|`` of the observed sum count as ties (SciPy's
    tolerance is relative to the observed value; rounding in the sums scales with ``Σ|d|``).

    Args:
        a: Per-query values of one system or target.
        b: The other's, aligned with ``a``.
        n_resamples: Random sign patterns (R); all 2^n patterns when that is no more.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        The two-sided p-value; 1 with fewer than two pairs or when no pair differs.

    Raises:
        ValueError: When ``a`` and ``b`` differ in length.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if len(a) < 2 or np.allclose(a, b):
        return 1.0  # exact: with one pair, both sign assignments are as extreme as the observed one
    d = a - b
    sums, exact = sign_flip_sums(d, n_resamples=n_resamples, seed=seed)
    observed = float(d.sum())  # the pattern that swaps nothing, computed as in the null
    gamma = 100 * np.finfo(float).eps * float(np.abs(d).sum())
    extra = 0 if exact else 1
    below = int(np.count_nonzero(sums <= observed + gamma)) + extra
    above = int(np.count_nonzero(sums >= observed - gamma)) + extra
    return float(min(1.0, 2 * min(below, above) / (len(sums) + extra)))


def one_sample_t_test(d: Sequence[float]) -> tuple[float, str]:
    """``(p, note)`` of the two-sided one-sample t-test of ``mean(d) = 0`` (``scipy.stats.ttest_1samp``'s
    p: :func:`~sourcebias.evaluation.stats.resampling.t_test_p`): NaN with the reason when it is
    undefined; ``note`` is empty when the test was computed."""
    d = np.asarray(d, dtype=float)
    if len(d) and np.allclose(d, 0):
        return 1.0, NO_DIFFERENCE
    if len(d) < 2:
        return float("nan"), TOO_FEW
    if np.allclose(d, d[0]):
        return float("nan"), CONSTANT
    return t_test_p(d), ""


def undefined_caption(notes: Sequence[str], constant: str) -> str:
    """The caption's sentences on rows whose t-test is undefined, one per reason, each naming its
    own: ``constant`` (how the statistic says "zero variance") for :data:`CONSTANT`, "fewer than 2
    queries" for :data:`TOO_FEW` ("" when every t-test was computed)."""
    constant_rows, too_few = sum(1 for n in notes if n == CONSTANT), sum(1 for n in notes if n == TOO_FEW)
    text = ""
    if constant_rows:
        text += f" The t-test is undefined in {constant_rows} row(s) (–): {constant}; read the sign test there."
    if too_few:
        text += f" The t-test is undefined in {too_few} row(s) (–): fewer than 2 queries."
    return text


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """p of Student's paired t-test (``scipy.stats.ttest_rel``); NaN when undefined (fewer than
    two queries, or every query moving by the same non-zero amount), 1 when no query differs."""
    return one_sample_t_test(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))[0]


def sign_test(d: Sequence[float]) -> float:
    """Exact two-sided sign test of the non-zero differences (``scipy.stats.binomtest``'s p, p = 1/2:
    :func:`~sourcebias.evaluation.stats.resampling.sign_test_p`); 1 when no difference is non-zero."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0
    return sign_test_p(int((d > 0).sum()), len(d))


def paired_tests(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Every paired test of ``a`` vs ``b`` (aligned per query, NaN pairs left out)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    d = a - b
    p_t, note = one_sample_t_test(d)
    return {
        "mean_difference": float(d.mean()) if len(d) else float("nan"),
        "p_ttest": p_t,
        "ttest_note": note,
        "p_randomization": paired_randomization_test(a, b, n_resamples=n_resamples, seed=seed),
        "randomization_resamples": n_resamples,
        "p_sign": sign_test(d),
        "n_queries": len(d),
    }


@dataclass
class PairedTestsRecord(Record):
    mean_difference: float = float("nan")
    p_ttest: float = float("nan")
    ttest_note: str = ""
    p_randomization: float = float("nan")
    randomization_resamples: int = 0
    p_sign: float = float("nan")
    p_adjusted: float = float("nan")
    correction: str = "none"
    n_queries: int = 0

    columns: ClassVar[tuple[Column, ...]] = (
        Column("mean_difference", "mean diff.", "num", 3),
        Column("p_ttest", "p (t)", "p"),
        Column("p_sign", "p (sign)", "p"),
        Column("p_randomization", "p (rand.)", "p"),
        Column("p_adjusted", "p (adj.)", "p"),
    )


class PairedTests(Statistic):
    """Per measure: human − LLM target per query on the mixed ranking; t-test, sign test,
    randomization test (``ctx.significance_resamples``, seeded); p-values of the randomization
    test corrected across the report's tests (``ctx.correction``)."""

    name = "paired_tests"
    aliases = ("tests", "significance", "paired", "difference", "ndcg_difference", "mean_difference")
    description = "paired t-test, exact sign test and randomization test of human vs LLM target"
    record = PairedTestsRecord

    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        out: list[Record] = []
        for name, llm, m, h, g in paired_values(result, ctx.measures):
            t = paired_tests(h, g, n_resamples=ctx.significance_resamples, seed=ctx.seed)
            out.append(PairedTestsRecord(name, llm, m, **t))
        return out

    def caption(self, records: Sequence[Record]) -> str:
        if not records:
            return ""
        recs = cast("list[PairedTestsRecord]", list(records))  # this statistic's own records
        n = known(r.randomization_resamples for r in recs)
        corr = known(r.correction for r in recs) or ["un"]
        text = (
            f"p (t): paired t-test; p (sign): exact sign test of the non-zero per-query differences; p (rand.): paired randomization test "
            f"({', '.join(f'{x:,}' for x in n)} resamples); p (adj.): the randomization test's p, {', '.join(corr)}-corrected across the table's tests; "
            f"* p (adj.) < 0.05."
        )
        return text + undefined_caption([r.ttest_note for r in recs], "every query differs by the same amount")

    def notes(self, records: Sequence[Record]) -> list[str]:
        recs = cast("Sequence[PairedTestsRecord]", records)  # this statistic's own records
        return [f"{r.retriever} / {r.llm_source} / {r.measure}: t-test {r.ttest_note}" for r in recs if (r.ttest_note or "").startswith("undefined")]


register_statistic(PairedTests())
