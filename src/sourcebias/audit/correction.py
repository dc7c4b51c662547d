"""Misclassification correction of a detector-labelled share, and its joint bootstrap.

A detector labels each document LLM or human with sensitivity ``Se`` (P(labelled LLM | LLM)) and
specificity ``Sp`` (P(labelled human | human)). If the errors do not depend on where a document is
ranked (given its true source), the expected share of documents *labelled* LLM among the top k is
``p̂ = Se·p + (1 − Sp)(1 − p)`` for the true share ``p`` — also for a rank-weighted share such as
NDSR, since the weights do not depend on the label. Solving for ``p`` gives the Rogan–Gladen
estimator (Rogan & Gladen, "Estimating prevalence from the results of a screening test",
Am. J. Epidemiol. 107(1):71–76, 1978)::

    p = (p̂ + Sp − 1) / (Se + Sp − 1)

It is **undefined** when ``Se + Sp − 1 ≤ 0`` (a detector no better than chance carries no
information about ``p``), and it can leave [0, 1] by sampling error; then it is clipped, and the
clipping is reported (:data:`CLIPPED`).

**Joint bootstrap.** ``Se`` and ``Sp`` are estimates from a finite calibration set, so the
corrected share's uncertainty has two parts: the run's queries and the calibration pairs. Each
resample draws the queries (with replacement, from the run's queries) *and*, independently, the
calibration twin pairs (with replacement, whole pairs: both copies of a document together),
re-estimates ``Se``, ``Sp`` and ``p̂`` and corrects. The interval is the percentile interval over
the resamples whose correction is defined (the undefined ones are counted and reported); corrected
resamples outside [0, 1] are clipped (and counted), as the point estimate is. The resampling is a
few lines of NumPy (``numpy.random.default_rng(seed)``). With a human reference set (documents of
the audited corpus known to be human), Sp is estimated on its documents, which are resampled too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.clustered.base import interval_refusal
from sourcebias.core.errors import ConfigError

CLIPPED = "clipped"
UNDEFINED = "undefined"
METHOD = (
    "percentile bootstrap over the resamples whose correction is defined; queries and "
    "calibration pairs resampled jointly (independently of each other, with replacement)"
)


def rogan_gladen(p_hat: Any, se: Any, sp: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rogan–Gladen (1978): ``p = (p̂ + Sp − 1) / (Se + Sp − 1)``, elementwise.

    Returns ``(p, clipped, undefined)``: ``p`` clipped to [0, 1] (NaN where undefined),
    ``clipped`` where the raw value left [0, 1], ``undefined`` where ``Se + Sp − 1 ≤ 0`` (or an
    input is not finite)."""
    p_hat, se, sp = (np.asarray(x, dtype=np.float64) for x in (p_hat, se, sp))
    j = se + sp - 1.0
    undefined = ~(np.isfinite(p_hat) & np.isfinite(j) & (j > 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(undefined, np.nan, (p_hat + sp - 1.0) / np.where(undefined, 1.0, j))
    clipped = ~undefined & ((raw < 0) | (raw > 1))
    return np.clip(raw, 0.0, 1.0), clipped, undefined


def correct(p_hat: float, se: float, sp: float) -> dict[str, Any]:
    """The corrected share of one estimate: ``value`` (None when undefined), ``raw`` (before
    clipping), ``flag`` (``""``, :data:`CLIPPED` or :data:`UNDEFINED`) and ``note`` (why)."""
    p, clipped, undefined = rogan_gladen(p_hat, se, sp)
    j = se + sp - 1.0
    if bool(undefined):
        why = (
            f"Se + Sp − 1 = {j:.3f} ≤ 0: the detector is no better than chance, the share cannot be corrected"
            if math.isfinite(j)
            else "Se or Sp is not defined (no calibration pairs)"
        )
        return {"value": None, "raw": None, "flag": UNDEFINED, "note": why}
    raw = (p_hat + sp - 1.0) / j
    if bool(clipped):
        return {
            "value": float(p),
            "raw": float(raw),
            "flag": CLIPPED,
            "note": f"the corrected share of LLM text before clipping, {raw:.4f}, is outside [0, "
            "1] (sampling error, or Se/Sp that do not hold for these documents); clipped",
        }
    return {"value": float(p), "raw": float(raw), "flag": "", "note": ""}


@dataclass(frozen=True)
class Calibration:
    """Per held-out twin pair: ``human_flagged`` (1 if the human copy was labelled LLM),
    ``llm_copies`` (LLM copies of the pair) and ``llm_flagged`` (how many of them were labelled
    LLM). ``Se = Σ llm_flagged / Σ llm_copies``; ``Sp = 1 − mean(human_flagged)``."""

    human_flagged: np.ndarray
    llm_copies: np.ndarray
    llm_flagged: np.ndarray
    reference_flagged: np.ndarray | None = None  # in-domain documents known to be human: Sp from these instead

    def __post_init__(self) -> None:
        if not (len(self.human_flagged) == len(self.llm_copies) == len(self.llm_flagged)):
            raise ConfigError("calibration arrays differ in length")
        if len(self.human_flagged) == 0:
            raise ConfigError("no calibration pairs: sensitivity and specificity cannot be estimated")
        if self.reference_flagged is not None and len(self.reference_flagged) == 0:
            raise ConfigError("the human reference set is empty: specificity cannot be estimated from it")

    @property
    def pairs(self) -> int:
        return len(self.human_flagged)

    def se_sp(self, idx: np.ndarray | None = None, ref_idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(Se, Sp)`` of the pairs ``idx`` (rows of an index matrix give one estimate each;
        ``None``: all pairs); with a human reference set, Sp from its documents ``ref_idx``."""
        if idx is None:
            idx = np.arange(self.pairs)
        copies = self.llm_copies[idx].sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(copies > 0, self.llm_flagged[idx].sum(axis=-1) / np.maximum(copies, 1), np.nan)
        if self.reference_flagged is not None:
            ref = self.reference_flagged[np.arange(len(self.reference_flagged)) if ref_idx is None else ref_idx]
            return se, 1.0 - ref.mean(axis=-1)
        sp = 1.0 - self.human_flagged[idx].mean(axis=-1)
        return se, sp


def _percentile(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    if len(finite) < 2:
        return None, None
    a = (1.0 - level) / 2.0
    lo, hi = np.percentile(finite, [100 * a, 100 * (1 - a)])
    return float(lo), float(hi)


def joint_bootstrap(
    per_query: dict[str, np.ndarray],
    calibration: Calibration,
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    transforms: dict[str, tuple[float, float]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Percentile CIs of the naive and the corrected estimate of each quantity in ``per_query``
    (name -> per-query share of documents labelled LLM; NaN queries are left out).

    The same resampled queries and calibration pairs serve every quantity (one joint draw per
    resample). ``transforms[name] = (a, b)`` reports ``a + b·share`` instead of the share (ΔNDSR
    = 1 − 2·NDSR_LLM: ``(1, -2)``). Returns per name: ``naive_ci`` (queries resampled only: the
    naive estimate does not use the calibration), ``corrected_ci``, ``undefined_resamples``,
    ``clipped_resamples``; with too few queries for an interval (:func:`interval_refusal`) no CI
    and ``no_interval``, the reason."""
    if resamples < 2:
        raise ConfigError(f"resamples must be at least 2, got {resamples}")
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    names = list(per_query)
    values = {n: np.asarray(v, dtype=np.float64) for n, v in per_query.items()}
    ok = np.all([np.isfinite(v) for v in values.values()], axis=0) if names else np.zeros(0, bool)
    q = int(ok.sum())
    if q == 0:
        raise ConfigError("no query with a non-empty ranking to resample")
    refused = interval_refusal(q, level)
    if refused:
        none = {"naive_ci": (None, None), "corrected_ci": (None, None), "undefined_resamples": 0, "clipped_resamples": 0, "no_interval": refused}
        return {n: dict(none) for n in names}
    q_idx = rng.integers(0, q, size=(resamples, q))
    p_idx = rng.integers(0, calibration.pairs, size=(resamples, calibration.pairs))
    ref = calibration.reference_flagged
    r_idx = None if ref is None else rng.integers(0, len(ref), size=(resamples, len(ref)))  # drawn after the pairs: runs without a reference set are unchanged
    se_b, sp_b = calibration.se_sp(p_idx, r_idx)
    out: dict[str, dict[str, Any]] = {}
    for n in names:
        a, b = (transforms or {}).get(n, (0.0, 1.0))
        p_hat_b = values[n][ok][q_idx].mean(axis=1)
        corrected_b, clipped, undefined = rogan_gladen(p_hat_b, se_b, sp_b)
        out[n] = {
            "naive_ci": _percentile(a + b * p_hat_b, level),
            "corrected_ci": _percentile(a + b * corrected_b, level),
            "undefined_resamples": int(undefined.sum()),
            "clipped_resamples": int(clipped.sum()),
        }
    return out
