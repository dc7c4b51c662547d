"""Moved to :mod:`sourcebias.report.render` (deprecated path, kept for one release).

The renderers sit below every layer that prints; the old names import from here with a
``DeprecationWarning``.
"""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.report.render"}
__getattr__ = moved(__name__, _MOVED)
