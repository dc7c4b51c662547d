"""Moved to :mod:`sourcebias.llmcalls.backends.openai` (the old path is kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.llmcalls.backends.openai"}
__getattr__ = moved(__name__, _MOVED)
