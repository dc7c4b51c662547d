"""The statistics of a grid cell (and of any evaluation), by their function names.

Each statistic lives in one file of :mod:`sourcebias.evaluation.stats` and is registered there
(``--statistics`` names in brackets):

* **Relative Δ with a confidence interval** [``relative_delta_ci``]: a seeded paired bootstrap
  over queries, BCa; when resamples are undefined (both means 0) the percentile interval over the
  finite ones, named so and counted (:func:`bootstrap_relative_delta`).
* **Paired tests** [``paired_tests``]: t-test (undefined, NaN with its reason, when every query
  moves by the same amount), exact sign test, seeded randomization test.
* **Twin preference** [``twin_preference``]: LLM copy ranked above its original; significance
  from a query-clustered sign-flip test (exact up to 20 queries, else seeded), a cluster
  bootstrap CI over queries, and the pair sign test beside them (it assumes independent pairs);
  unpaired pairs (a copy absent from the corpus) left out and counted (:func:`twin_preference`).
* **ΔNDSR@k** [``delta_ndsr``]: label-free, unpaired documents removed under the ``drop`` orphan
  policy (:func:`delta_ndsr`).
* **Multiple testing**: Holm, Benjamini–Hochberg or Bonferroni (:func:`adjust_pvalues`).
"""

from __future__ import annotations

from typing import Any

from sourcebias.evaluation.stats import StatContext, compute_statistics
from sourcebias.evaluation.stats.delta_ndsr import delta_ndsr
from sourcebias.evaluation.stats.multiple import CORRECTIONS, adjust_pvalues
from sourcebias.evaluation.stats.relative_delta_ci import bootstrap_relative_delta, relative_delta_values
from sourcebias.evaluation.stats.twin_preference import twin_preference

__all__ = ["CORRECTIONS", "adjust_pvalues", "bootstrap_relative_delta", "cell_statistics", "delta_ndsr", "relative_delta_values", "twin_preference"]


def cell_statistics(
    result: Any,
    qrels: Any,
    *,
    measure: str = "NDCG@3",
    ndsr_k: int = 10,
    bootstrap_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    significance_resamples: int | None = None,
    statistics: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per retriever and LLM source of ``result`` with every chosen statistic of
    ``measure`` (p-values uncorrected: a grid corrects across all its cells). The randomization
    test uses ``significance_resamples`` (default: the result's own setting, else 10,000)."""
    from sourcebias.evaluation.measures import parse_measure

    if significance_resamples is None:
        significance_resamples = int(((result.parameters or {}).get("significance") or {}).get("n_resamples") or 10_000)
    ctx = StatContext(
        qrels=qrels,
        measures=[str(parse_measure(measure))],
        ndsr_k=ndsr_k,
        bootstrap_resamples=bootstrap_resamples,
        confidence=confidence,
        seed=seed,
        significance_resamples=significance_resamples,
        correction="none",
    )
    return compute_statistics(result, ctx, statistics, correct=False).rows()
