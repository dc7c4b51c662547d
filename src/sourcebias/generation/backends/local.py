"""Moved to :mod:`sourcebias.llmcalls.backends.local` (the old path is kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.llmcalls.backends.local"}
__getattr__ = moved(__name__, _MOVED)
