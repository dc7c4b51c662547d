"""Does the calibration hold on the audited documents? A goodness-of-fit check (the transfer check).

**The model.** The correction (Rogan–Gladen) assumes that the detector's scores of human and of
LLM text are distributed on the audited documents as on the calibration documents. Then every
quantity the detector computes per document — its score and, for the built-in detector, each
of its features — follows on the audited documents the mixture ``(1 − π) F_H + π F_L`` of the
calibration's human and LLM distributions at the audited share π of LLM text.

**The check** (:func:`transfer_check`). π̂ is the Rogan–Gladen share of the audited documents
flagged LLM (Se, Sp from the calibration). For each dimension (the score; each feature) two
statistics compare the audited values with the mixture at π̂: the Kolmogorov–Smirnov distance
``sup_x |F_audited(x) − M̂(x)|`` (location and shape) and the absolute log ratio of the audited
variance to the mixture's, ``(1 − π)σ²_H + πσ²_L + π(1 − π)(μ_L − μ_H)²`` (spread: a detector
whose human and LLM components overlap more on the audited domain gives a narrower or wider
distribution that a re-weighted mixture cannot mimic). The null distribution comes from a
parametric bootstrap that takes the calibration documents as the truth: each resample draws a
fresh calibration (human and LLM documents, with replacement, every dimension of a document
together) and a fresh audited sample of the same size from the mixture at π̂, re-estimates π̂
and recomputes every statistic. The statistics are combined by their smallest bootstrap
p-value, itself calibrated by the same resamples (the min-p method of Westfall & Young, 1993), so
that looking at several statistics does not inflate the false-alarm rate. A small p says the
audited documents are not a mixture of the calibration's components at any share the data
support: Se and Sp do not transfer, and the corrected figures are marked unreliable.

What it cannot see: a change that a mixture at another share reproduces in every dimension
checked (with one score and strongly overlapping components, a shift of both components looks
like a change of share). The README's simulation study gives its false-alarm and miss rates.

Why by hand: the reference distribution is a mixture of empirical distributions at an
estimated share, which SciPy's goodness-of-fit tests (one known CDF, or two samples) do not
take; the KS statistic is exact at the pooled jump points, where both step functions change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

METHOD = (
    "per dimension (score, features), the Kolmogorov–Smirnov distance and the absolute log variance ratio between the audited documents and the "
    "calibration's mixture "
    "(1 − π̂)·F_human + π̂·F_LLM at the Rogan–Gladen share π̂; combined by the smallest p-value (min-p), p-values from a parametric bootstrap "
    "(fresh calibration and audited samples from that mixture, π̂ re-estimated each time)"
)
SCORE = "score"


def ecdf(sorted_values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The empirical CDF of ``sorted_values`` at ``x`` (right-continuous)."""
    return np.searchsorted(sorted_values, x, side="right") / max(len(sorted_values), 1)


def ks_mixture(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, share: float) -> float:
    """``sup_x |F_audited(x) − ((1 − share) F_human(x) + share F_llm(x))|`` for sorted arrays,
    evaluated at every jump point of either side (exact for step functions)."""
    grid = np.concatenate([audited, human, llm])
    model = (1.0 - share) * ecdf(human, grid) + share * ecdf(llm, grid)
    return float(np.max(np.abs(ecdf(audited, grid) - model)))


def log_variance_ratio(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, share: float) -> float:
    """``|log(var(audited) / var(mixture))|``, the mixture's variance
    ``(1 − π)σ²_H + πσ²_L + π(1 − π)(μ_L − μ_H)²`` (population variances)."""
    mix = (1 - share) * np.var(human) + share * np.var(llm) + share * (1 - share) * (np.mean(llm) - np.mean(human)) ** 2
    va = np.var(audited)
    if mix <= 0 or va <= 0:
        return 0.0 if mix == va else float("inf")
    return float(abs(np.log(va / mix)))


def rg_share(audited: np.ndarray, human: np.ndarray, llm: np.ndarray, threshold: float) -> float:
    """The Rogan–Gladen share of ``audited`` flagged (≥ threshold), clipped to [0, 1]; 0.5 when
    Se + Sp − 1 ≤ 0 (the check then still compares the distributions)."""
    se, sp = float(np.mean(llm >= threshold)), float(np.mean(human < threshold))
    j = se + sp - 1.0
    if j <= 0:
        return 0.5
    return float(np.clip((np.mean(audited >= threshold) + sp - 1.0) / j, 0.0, 1.0))


def statistics(
    audited: Mapping[str, np.ndarray], human: Mapping[str, np.ndarray], llm: Mapping[str, np.ndarray], threshold: float
) -> tuple[float, dict[str, float]]:
    """``(π̂, {"ks:DIM" / "var:DIM": value})`` for the dimensions of ``audited`` (π̂ from the
    ``score`` dimension)."""
    share = rg_share(audited[SCORE], human[SCORE], llm[SCORE], threshold)
    out = {}
    for d in audited:
        a, h, g = np.sort(audited[d]), np.sort(human[d]), np.sort(llm[d])
        out[f"ks:{d}"] = ks_mixture(a, h, g, share)
        out[f"var:{d}"] = log_variance_ratio(a, h, g, share)
    return share, out


@dataclass(frozen=True)
class TransferCheck:
    """The outcome of :func:`transfer_check` (see the module docs)."""

    p_value: float
    share: float
    observed: dict[str, float]
    p_values: dict[str, float]
    alpha: float
    resamples: int
    audited: int
    calibration_human: int
    calibration_llm: int
    dimensions: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.p_value >= self.alpha

    @property
    def statistic(self) -> float:
        """The score's KS distance (the headline statistic)."""
        return self.observed[f"ks:{SCORE}"]

    def worst(self) -> str:
        return min(self.p_values, key=lambda k: self.p_values[k])

    def reason(self) -> str:
        """Why the corrected figures are unreliable (empty when the check passes)."""
        if self.passed:
            return ""
        w = self.worst()
        what = {"ks": "distribution (KS distance", "var": "spread (|log variance ratio|"}[w.split(":")[0]]
        return (
            f"transfer check failed: the {self.audited:,} audited documents do not fit the calibration's mixture of human and LLM documents at the "
            f"estimated share {self.share:.3f} "
            f"(min-p over {len(self.p_values)} statistics p = {self.p_value:.3g} < {self.alpha}; worst: the {what} of {w.split(':', 1)[1]} = "
            f"{self.observed[w]:.3f}, p = {self.p_values[w]:.3g}); "
            "the detector's Se and Sp on the calibration documents likely do not hold for these documents, so the corrected Share@k and ΔNDSR@k "
            "may be far off whatever their intervals say"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "statistic": self.statistic,
            "share": self.share,
            "observed": self.observed,
            "p_values": self.p_values,
            "dimensions": self.dimensions,
            "resamples": self.resamples,
            "audited_documents": self.audited,
            "calibration_human": self.calibration_human,
            "calibration_llm": self.calibration_llm,
            "method": METHOD,
            "reason": self.reason(),
        }


def _as_dims(x: Any) -> dict[str, np.ndarray]:
    if isinstance(x, Mapping):
        return {k: np.asarray(v, dtype=np.float64) for k, v in x.items()}
    return {SCORE: np.asarray(x, dtype=np.float64)}


def _checked(audited: Any, human: Any, llm: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    a, h, g = _as_dims(audited), _as_dims(human), _as_dims(llm)
    if SCORE not in a or set(a) != set(h) or set(a) != set(g):
        raise ConfigError(
            f"the transfer check needs the same dimensions (with '{SCORE}') for the audited "
            f"and the calibration documents, got {sorted(a)}, {sorted(h)}, {sorted(g)}"
        )

    def keep(d: dict[str, np.ndarray]) -> np.ndarray:
        return np.all([np.isfinite(v) for v in d.values()], axis=0)

    a, h, g = ({k: v[keep(d)] for k, v in d.items()} for d in (a, h, g))
    n = (len(a[SCORE]), len(h[SCORE]), len(g[SCORE]))
    if min(n) < 5:
        raise ConfigError(f"the transfer check needs at least 5 audited, 5 human and 5 LLM calibration documents, got {n[0]}, {n[1]}, {n[2]}")
    return a, h, g


def transfer_check(audited: Any, human: Any, llm: Any, threshold: float, *, alpha: float = 0.05, resamples: int = 200, seed: int = 0) -> TransferCheck:
    """Test the audited documents against the calibration's mixture (module docs).

    Args:
        audited: the audited documents' scores, or a mapping ``dimension -> values`` with a
            ``score`` dimension (one value per document; features as further dimensions).
        human: the same for the calibration's human documents.
        llm: the same for the calibration's LLM documents.
        threshold: the detector's threshold (π̂ is the Rogan–Gladen share at it).
        alpha: the level below which the check fails.
        resamples: parametric bootstrap resamples.
        seed: seed of the bootstrap.

    Returns:
        The :class:`TransferCheck` (``passed``, ``p_value``, each statistic and its p-value, the reason).

    Raises:
        ConfigError: mismatched dimensions, fewer than 5 documents on a side, bad alpha or resamples.
    """
    if not 0 < alpha < 1 or resamples < 20:
        raise ConfigError(f"the transfer check needs 0 < alpha < 1 and at least 20 resamples, got {alpha}, {resamples}")
    a, h, g = _checked(audited, human, llm)
    share, observed = statistics(a, h, g, threshold)
    names = list(observed)
    rng = np.random.default_rng(seed)
    n, nh, nl = len(a[SCORE]), len(h[SCORE]), len(g[SCORE])
    null = np.empty((resamples, len(names)))
    for b in range(resamples):
        ih, il = rng.integers(0, nh, nh), rng.integers(0, nl, nl)
        is_llm, dh, dl = rng.random(n) < share, rng.integers(0, nh, n), rng.integers(0, nl, n)
        ab = {d: np.where(is_llm, g[d][dl], h[d][dh]) for d in a}
        _, st = statistics(ab, {d: h[d][ih] for d in a}, {d: g[d][il] for d in a}, threshold)
        null[b] = [st[k] for k in names]
    obs = np.array([observed[k] for k in names])
    p_each = (1 + (null >= obs - 1e-12).sum(axis=0)) / (resamples + 1)
    # min-p: each resample's own smallest p-value among the statistics, against the others
    p_null = (1 + (null[None, :, :] >= null[:, None, :] - 1e-12).sum(axis=1)) / (resamples + 1)
    p = float((1 + (p_null.min(axis=1) <= p_each.min() + 1e-12).sum()) / (resamples + 1))
    return TransferCheck(p, share, observed, dict(zip(names, map(float, p_each))), alpha, resamples, n, nh, nl, sorted(a))
