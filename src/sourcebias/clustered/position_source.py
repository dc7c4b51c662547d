"""A listwise re-ranker's position and source effects: the answered position of each shown passage
regressed on its shown position and its source, standard errors clustered by query
(:func:`~sourcebias.clustered.ols.clustered_ols`).

Positions are fractions of their window (0 = shown first / answered first). The ``position``
slope is 1 when the model copies the order it was shown and 0 when position does not matter; a
source's coefficient is how much lower (negative: nearer the top) its passages end than
``reference`` passages shown at the same position. The fit conditions on shown position
linearly: a source coefficient is free of a linear position effect whatever the design, and of
any position effect when every passage is shown at every position equally often (the input
orders of :func:`~sourcebias.clustered.design.cyclic_orders` with as many orders as the window).

**Only what the model said.** The fit sees the passages of answers that were complete rankings:
an answer that needed a repair (identifiers appended, dropped or repeated) or held no identifier
is left out with all its passages and counted (``left_out``), because the repair rule, not the
model, placed them (appending the missing passages in shown order would make a position slope of
1 out of answers that say nothing).

**Refusals:** no row left (every answer repaired): no fit, with the count; too few queries
(:func:`~sourcebias.clustered.base.interval_refusal`): coefficients without interval or p; an
exact fit (every complete answer the shown order, say): coefficients without interval or p
(:data:`~sourcebias.clustered.ols.EXACT_FIT`); a design whose source is collinear with position
or constant: no fit, with what is collinear.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.clustered.base import Estimator, finite_or_none, register_estimator
from sourcebias.clustered.ols import METHOD, clustered_ols


class PositionSourceFit(Estimator):
    """Answered position on shown position and source, clustered by query (module docstring)."""

    name = "position_source"
    description = "answered position on shown position and source, OLS with query-clustered CR1 standard errors, on complete answers only"
    refusals = (
        "every answer repaired or without an identifier: no fit, the count said",
        "too few queries (interval_refusal): coefficients without interval or p",
        "an exact fit (every residual zero up to rounding): coefficients without interval or p",
        "source collinear with position, or no variation: no fit, the terms named",
    )

    def estimate(
        self,
        query: Sequence[Any],
        shown: Sequence[float],
        answered: Sequence[float],
        source: Sequence[str],
        reference: str,
        *,
        kept: Sequence[bool] | None = None,
        level: float = 0.95,
    ) -> dict[str, Any]:
        """The fit as a JSON-ready dict (what a stage's ``run.info`` holds).

        Args:
            query: Each row's query.
            shown: Its shown position (fraction of the window).
            answered: Its answered position (fraction of the window).
            source: Its passage's source.
            reference: The source the others are compared with.
            kept: Per row, whether its answer was a complete ranking (None: every row).
            level: The intervals' coverage.

        Returns:
            ``method``, ``reference_source``, ``level``, ``rows`` (fitted), ``queries``,
            ``left_out_rows``; then ``coefficients`` (``{name: {estimate, ci, p}}``, ``ci`` and
            ``p`` None when refused, with ``interval_refused``) or ``refused`` (the reason).
        """
        q = np.asarray(query, dtype=object)
        keep = np.ones(len(q), dtype=bool) if kept is None else np.asarray(kept, dtype=bool)
        x, y = np.asarray(shown, dtype=float)[keep], np.asarray(answered, dtype=float)[keep]
        src, q = np.asarray(source, dtype=object)[keep], q[keep]
        out: dict[str, Any] = {"method": f"answered position on shown position and source: {METHOD}", "reference_source": reference, "level": level}
        out.update(rows=int(keep.sum()), queries=len(set(q.tolist())), left_out_rows=int((~keep).sum()))
        if not keep.any():
            out["refused"] = (
                f"nothing to fit: all {len(keep):,} rows come from answers that were repaired or held no identifier" if len(keep) else "nothing to fit: no row"
            )
            return out
        others = sorted(set(src.tolist()) - {reference})
        names = ["intercept", "position", *[f"source:{s}" for s in others]]
        design = np.column_stack([np.ones(len(y)), x, *[(src == s).astype(float) for s in others]])
        fit = clustered_ols(y, design, names, q, level=level)
        if fit.refused:
            out["refused"] = fit.refused
            return out
        if fit.interval_refused:
            out["interval_refused"] = fit.interval_refused
        out["coefficients"] = {
            n: {"estimate": e.estimate, "ci": [finite_or_none(e.low), finite_or_none(e.high)] if e.has_interval else None, "p": finite_or_none(e.p)}
            for n, e in fit.terms.items()
            if n != "intercept"
        }
        return out

    def example(self, queries: int, seed: int) -> dict[str, Any]:
        """Two-passage windows in both orders: keep the first shown first with probability
        0.7 + 0.15·(s_first − s_second): position slope 0.4, source −0.3 (see
        :mod:`sourcebias.retrieval.rerankers.simulated_bias`)."""
        rng = np.random.default_rng(seed)
        rows: dict[str, list[Any]] = {"query": [], "shown": [], "answered": [], "source": []}
        for i in range(queries):
            for first in (0, 1):  # which of the pair is shown first (0: the human passage)
                s = (first, 1 - first)
                keep_first = rng.random() < 0.7 + 0.15 * (s[0] - s[1])
                for pos in (0, 1):
                    rows["query"].append(f"q{i}")
                    rows["shown"].append(float(pos))
                    rows["answered"].append(float(pos if keep_first else 1 - pos))
                    rows["source"].append("llm" if s[pos] else "human")
        return {**rows, "reference": "human"}


register_estimator(PositionSourceFit())
