"""Moved to :mod:`sourcebias.report` (deprecated path, kept for one release).

The model (``Report``, ``Table``) is :mod:`sourcebias.report.model`, the tables of a result and a
grid :mod:`sourcebias.report.tables`; the old names import from here with a ``DeprecationWarning``.
"""

from sourcebias.core.moved import moved

_MOVED = {"Report": "sourcebias.report.model", "Table": "sourcebias.report.model", "*": "sourcebias.report.tables"}
__getattr__ = moved(__name__, _MOVED)
