"""Multiple testing: Holm, Benjamini–Hochberg or Bonferroni across a report's tests
(``statsmodels.stats.multitest.multipletests``); the method is named wherever p-values are shown."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

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
    with _no_full_collection():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


@contextlib.contextmanager
def _no_full_collection() -> Iterator[None]:
    """Skip the ``gc.collect()`` that statsmodels' Holm branch runs on every call (statsmodels
    0.14 and 0.15): a full garbage collection, about a second in a process that holds torch models
    and paid by every evaluation; the p-values do not depend on it. ``gc.collect`` is put back
    afterwards (a collection another thread asks for meanwhile is skipped too, which is harmless)."""
    import gc

    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
