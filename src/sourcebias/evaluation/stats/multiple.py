"""Multiple testing: Holm, Benjamini–Hochberg or Bonferroni across a report's tests; the method is
named wherever p-values are shown.

The adjusted p-values are ``statsmodels.stats.multitest.multipletests``' (``holm``, ``fdr_bh``,
``bonferroni``), written out here: each is a sort and a running maximum or minimum, and importing
statsmodels' module costs 1.4 s of CPU and 240 MB in a fresh process (it imports pandas and
``scipy.stats``), more than half of ``evaluate -r bm25`` on 10,000 documents
(``benchmarks/bench_bm25_scale.py``). ``tests/evaluation/test_scipy_free_statistics.py`` checks
them equal to statsmodels' on random and tied p-values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sourcebias.core.errors import ConfigError

CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "none"}


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values across tests (NaN kept as NaN, not counted as a test)."""
    if method not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, got '{method}'")
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    if method == "none" or not ok.any():
        out[ok] = p[ok]
        return out
    out[ok] = _adjusted(p[ok], method)
    return out


def _adjusted(p: np.ndarray, method: str) -> np.ndarray:
    """``multipletests(p, method=method)[1]`` for finite ``p``: Holm's step-down maximum of
    ``(m - i) p_(i)``, Benjamini–Hochberg's step-up minimum of ``m p_(i) / (i + 1)`` (i from 0),
    Bonferroni's ``m p``; capped at 1."""
    m = len(p)
    if method == "bonferroni":
        return np.minimum(p * m, 1.0)
    order = np.argsort(p)
    ranked = p[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(ranked * np.arange(m, 0, -1))
    else:  # fdr_bh
        adjusted = np.minimum.accumulate((ranked / (np.arange(1, m + 1) / float(m)))[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out
