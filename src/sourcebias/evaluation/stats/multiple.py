"""Multiple testing: Holm, Benjamini–Hochberg or Bonferroni across a report's tests
(``statsmodels.stats.multitest.multipletests``); the method is named wherever p-values are shown."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sourcebias.core.errors import ConfigError

CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "none"}


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values across tests (NaN kept as NaN, not counted as a test)."""
    from statsmodels.stats.multitest import multipletests

    if method not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, got '{method}'")
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    if method == "none" or not ok.any():
        out[ok] = p[ok]
        return out
    out[ok] = _without_full_collection(multipletests, p[ok], method=method)[1]
    return out


def _without_full_collection(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the objects alive now frozen out of the garbage collector
    (``gc.freeze``): statsmodels' Holm calls ``gc.collect()``, which would otherwise walk every
    object of the process (0.1-0.3 s after a corpus was analysed) to free a few arrays."""
    import gc

    gc.freeze()
    try:
        return fn(*args, **kwargs)
    finally:
        gc.unfreeze()
