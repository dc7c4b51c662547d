"""Moved to :mod:`sourcebias.report.tables` (deprecated path, kept for one release).

``latex_escape`` is :mod:`sourcebias.report.render`'s; the old names import from here with a
``DeprecationWarning``.
"""

from sourcebias.core.moved import moved

_MOVED = {"latex_escape": "sourcebias.report.render", "*": "sourcebias.report.tables"}
__getattr__ = moved(__name__, _MOVED)
