"""Seeded paired significance tests on per-query values (SciPy does the statistics).

The question the protocol asks per measure is whether the human target and an LLM target
differ on the *same* ranking of the mixed corpus, so the tests are paired by query:

* a randomization (sign-flip permutation) test of the mean difference, via
  ``scipy.stats.permutation_test(permutation_type="samples")`` with an explicit seed;
* Student's paired t-test, ``scipy.stats.ttest_rel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from sourcebias.evaluation.results import MIXED, EvaluationResult, Key


def paired_randomization_test(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of ``mean(a - b) != 0`` under random swaps within each pair."""
    from scipy import stats

    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if len(a) == 0 or np.allclose(a, b):
        return 1.0

    def stat(x, y, axis):
        return np.mean(x - y, axis=axis)

    res = stats.permutation_test(
        (a, b), stat, permutation_type="samples", vectorized=True, n_resamples=n_resamples, alternative="two-sided", random_state=np.random.default_rng(seed)
    )
    return float(res.pvalue)


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import stats

    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    d = a - b
    if len(d) < 2 or np.allclose(d, 0):
        return 1.0
    if np.allclose(d, d[0]):
        return 0.0  # every query moves by the same non-zero amount: t is unbounded
    return float(stats.ttest_rel(a, b).pvalue)


def source_bias_tests(result: EvaluationResult, *, n_resamples: int = 10_000, seed: int = 0) -> Iterator[dict[str, Any]]:
    """For each retriever, LLM source and measure on the mixed corpus: the mean per-query
    difference (human - LLM target) and both p-values."""
    for retriever in result.retrievers:
        for other in result.other_sources:
            for m in result.target_measures:
                key_h = Key(retriever, MIXED, result.human_source, str(m))
                key_o = Key(retriever, MIXED, other, str(m))
                if key_h not in result.per_query or key_o not in result.per_query:
                    continue
                a, b = result.per_query[key_h], result.per_query[key_o]
                yield {
                    "retriever": retriever,
                    "human": result.human_source,
                    "other": other,
                    "metric": str(m),
                    "mean_difference": float(np.mean(a - b)),
                    "p_randomization": paired_randomization_test(a, b, n_resamples=n_resamples, seed=seed),
                    "p_ttest": paired_t_test(a, b),
                    "queries": len(a),
                    "n_resamples": n_resamples,
                    "seed": seed,
                }
