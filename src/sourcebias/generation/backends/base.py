"""Moved to :mod:`sourcebias.llmcalls.backends.base` (the old path is kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.llmcalls.backends.base"}
__getattr__ = moved(__name__, _MOVED)
