"""Moved to :mod:`sourcebias.llmcalls.backends`, the one way anything reaches a model (the old path
is kept for one release, with a warning)."""

from sourcebias.core.moved import moved

_MOVED = {"*": "sourcebias.llmcalls.backends"}
__getattr__ = moved(__name__, _MOVED)
