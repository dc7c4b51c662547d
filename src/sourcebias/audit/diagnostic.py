"""Does the calibration hold on the audited documents? A goodness-of-fit check, and a location
adaptation of the calibration to the audited domain.

**The model.** The correction (Rogan–Gladen) assumes that the detector's scores of human and of
LLM text are distributed on the audited documents as on the calibration twins. Then the audited
documents' scores follow the mixture ``M(x) = (1 − π) F_H(x) + π F_L(x)`` of the calibration's
human and LLM score distributions (empirical CDFs) at the audited share π of LLM text.

**Transfer check** (:func:`transfer_check`). π̂ is the Rogan–Gladen share of the audited
documents flagged LLM (Se, Sp from the calibration); the statistic is the Kolmogorov–Smirnov
distance ``D = sup_x |F_audited(x) − M̂(x)|``. Its null distribution comes from a parametric
bootstrap that treats the calibration's empirical distributions as the truth: each resample
draws a fresh calibration (human and LLM scores, with replacement) and a fresh audited sample of
the same size from the mixture at π̂, re-estimates π̂ and computes D; ``p = (1 + #{D* ≥ D}) /
(B + 1)``. A small p says the audited scores are not a mixture of the calibration's components
at any share the data support: the detector's Se and Sp do not transfer, and a corrected figure
built on them may be far off (its interval cannot show that). Such a figure is marked
unreliable. The check has little power where the two components overlap much (a shift of both
then looks like a change of share), which the simulation study in the README quantifies.

**Location adaptation** (:func:`fit_shift`): the audited domain may shift every score by a
constant δ (a small LM finds news more predictable than biomedical abstracts, whatever wrote
them). (π, δ) are fitted jointly by minimising the KS distance between the audited scores and
``(1 − π) F_H(x − δ) + π F_L(x − δ)`` over a grid (mixture-proportion estimation with the
components' shapes anchored on the calibration and their location on the audited documents);
the audited scores are then shifted by −δ. The check's bootstrap refits δ in every resample.

Why by hand: the reference distribution is a mixture of two empirical CDFs with an estimated
share (and shift), which SciPy's KS tests (one known CDF, or two samples) do not take; the
statistic is exact at the pooled jump points, where both step functions change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

METHOD = ("Kolmogorov–Smirnov distance between the audited documents' scores and the calibration's mixture (1 − π̂)·F_human + π̂·F_LLM at the Rogan–Gladen share π̂; "
          "p-value from a parametric bootstrap (fresh calibration and audited samples from that mixture, π̂ re-estimated each time)")  # fmt: skip
SHIFT_GRID = 61
SHARE_GRID = 51


def ecdf(sorted_values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The empirical CDF of ``sorted_values`` at ``x`` (right-continuous)."""
    return np.searchsorted(sorted_values, x, side="right") / max(len(sorted_values), 1)


def ks_mixture(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, share: float, shift: float = 0.0) -> float:
    """``sup_x |F_audited(x) − ((1 − share) F_human(x − shift) + share F_llm(x − shift))|`` for
    sorted arrays, evaluated at every jump point of either side (exact for step functions)."""
    grid = np.concatenate([audited, human + shift, llm + shift])
    model = (1.0 - share) * ecdf(human, grid - shift) + share * ecdf(llm, grid - shift)
    return float(np.max(np.abs(ecdf(audited, grid) - model)))


def rg_share(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, threshold: float) -> float:
    """The Rogan–Gladen share of ``audited`` flagged (≥ threshold), clipped to [0, 1]; 0.5 when
    Se + Sp − 1 ≤ 0 (the check then still compares shapes)."""
    se, sp = float(np.mean(llm >= threshold)), float(np.mean(human < threshold))
    j = se + sp - 1.0
    if j <= 0:
        return 0.5
    return float(np.clip((np.mean(audited >= threshold) + sp - 1.0) / j, 0.0, 1.0))


def fit_shift(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, *, span: float | None = None) -> tuple[float, float, float]:
    """``(shift, share, D)``: the location shift δ and share π minimising the KS distance of
    :func:`ks_mixture` (at the audited points) over a grid: δ in ±``span`` (default: the larger of
    1.5 × the calibration's interquartile range and 1.2 × the distance between the audited and
    the calibration medians; 61 steps), π in steps of 0.02. Arrays sorted."""
    pooled = np.concatenate([human, llm])
    q1, q3 = np.percentile(pooled, [25, 75])
    if span is None:
        span = max(1.5 * (q3 - q1), 1.2 * abs(np.median(audited) - np.median(pooled)), 1e-9)
    shifts = np.linspace(-span, span, SHIFT_GRID)
    shares = np.linspace(0.0, 1.0, SHARE_GRID)[:, None]
    n = len(audited)
    hi, lo = np.arange(1, n + 1) / n, np.arange(0, n) / n
    best = (np.inf, 0.0, 0.5)
    for d in shifts:
        fh, fl = ecdf(human, audited - d), ecdf(llm, audited - d)
        model = fh + shares * (fl - fh)
        dist = np.maximum(np.abs(hi - model), np.abs(lo - model)).max(axis=1)
        k = int(np.argmin(dist))
        if dist[k] < best[0]:
            best = (float(dist[k]), float(d), float(shares[k, 0]))
    return best[1], best[2], best[0]


@dataclass(frozen=True)
class TransferCheck:
    """The outcome of :func:`transfer_check` (see the module docs)."""

    statistic: float
    p_value: float
    share: float
    shift: float
    alpha: float
    resamples: int
    audited: int
    calibration_human: int
    calibration_llm: int
    adapted: bool

    @property
    def passed(self) -> bool:
        return self.p_value >= self.alpha

    def reason(self) -> str:
        """Why the corrected figures are unreliable (empty when the check passes)."""
        if self.passed:
            return ""
        return (f"transfer check failed: the {self.audited:,} audited documents' scores do not fit the calibration's mixture of human and LLM scores at the estimated share "
                f"{self.share:.3f} (KS D = {self.statistic:.3f}, bootstrap p = {self.p_value:.3g} < {self.alpha}); the detector's Se and Sp on the calibration twins "
                "likely do not hold for these documents, so the corrected Share@k and ΔNDSR@k may be far off whatever their intervals say")  # fmt: skip

    def describe(self) -> dict[str, Any]:
        return {"passed": self.passed, "statistic": self.statistic, "p_value": self.p_value, "alpha": self.alpha, "share": self.share, "shift": self.shift, "adapted": self.adapted,
                "resamples": self.resamples, "audited_documents": self.audited, "calibration_human": self.calibration_human, "calibration_llm": self.calibration_llm,
                "method": METHOD + ("; the shift δ refitted in every resample" if self.adapted else ""), "reason": self.reason()}  # fmt: skip


def transfer_check(audited: Any, human: Any, llm: Any, threshold: float, *, adapted: bool = False, shift: float = 0.0, alpha: float = 0.05, resamples: int = 200, seed: int = 0) -> TransferCheck:
    """Test the audited scores against the calibration's mixture (module docs). ``audited``:
    the scores of the audited documents (already shifted by −δ when ``adapted``); ``human``,
    ``llm``: the calibration's scores; ``adapted``: δ was fitted on ``audited`` (refitted in
    every resample; ``shift``: that δ, recorded)."""
    a, h, l = (np.sort(np.asarray(x, dtype=np.float64)) for x in (audited, human, llm))
    a, h, l = a[np.isfinite(a)], h[np.isfinite(h)], l[np.isfinite(l)]
    if min(len(a), len(h), len(l)) < 5:
        raise ConfigError(f"the transfer check needs at least 5 audited, 5 human and 5 LLM calibration scores, got {len(a)}, {len(h)}, {len(l)}")
    if not 0 < alpha < 1 or resamples < 20:
        raise ConfigError(f"the transfer check needs 0 < alpha < 1 and at least 20 resamples, got {alpha}, {resamples}")
    share = rg_share(a, h, l, threshold)
    stat = ks_mixture(a, h, l, share)
    rng = np.random.default_rng(seed)
    null = np.empty(resamples)
    for b in range(resamples):
        hb, lb = np.sort(rng.choice(h, len(h))), np.sort(rng.choice(l, len(l)))
        ab = np.sort(np.where(rng.random(len(a)) < share, rng.choice(l, len(a)), rng.choice(h, len(a))))
        if adapted:
            d, _, _ = fit_shift(ab, hb, lb)
            ab = np.sort(ab - d)
        null[b] = ks_mixture(ab, hb, lb, rg_share(ab, hb, lb, threshold))
    p = float((1 + np.sum(null >= stat - 1e-12)) / (resamples + 1))
    return TransferCheck(stat, p, share, float(shift), alpha, resamples, len(a), len(h), len(l), adapted)
