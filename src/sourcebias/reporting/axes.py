"""Moved to :mod:`sourcebias.report.axes` (deprecated path, kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.report.axes"}
__getattr__ = moved(__name__, _MOVED)
