"""Deprecated facade (kept for one release): each statistic lives in its own module of :mod:`sourcebias.evaluation.stats`.

The names it re-exported import from here with a ``DeprecationWarning``; ``cell_statistics`` (no
caller) is gone: :func:`sourcebias.evaluation.stats.compute_statistics` computes any statistic
of a result.
"""

from sourcebias.core.moved import moved

_MOVED = {
    "CORRECTIONS": "sourcebias.evaluation.stats.multiple",
    "adjust_pvalues": "sourcebias.evaluation.stats.multiple",
    "bootstrap_relative_delta": "sourcebias.evaluation.stats.relative_delta_ci",
    "relative_delta_values": "sourcebias.evaluation.stats.relative_delta_ci",
    "delta_ndsr": "sourcebias.evaluation.stats.delta_ndsr",
    "twin_preference": "sourcebias.evaluation.stats.twin_preference",
}
__getattr__ = moved(__name__, _MOVED)
