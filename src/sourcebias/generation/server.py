"""Moved to :mod:`sourcebias.llmcalls.server` (the old path is kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.llmcalls.server"}
__getattr__ = moved(__name__, _MOVED)
