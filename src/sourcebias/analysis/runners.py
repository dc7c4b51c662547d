"""Deprecated: the runners of ``sourcebias analyze`` live in their analyses' modules
(:mod:`.quality`, :mod:`.spectrum`, :mod:`.perplexity`, :mod:`.artifacts`, :mod:`.direction`) and
what they share in :mod:`.common`. The old names still import from here, with a warning, for one
release."""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import Any

#: old name -> the module that holds it now (and its new name, when it changed)
MOVED = {
    "twin_pairs": ("sourcebias.analysis.common", "twin_pairs"),
    "dense_model": ("sourcebias.analysis.common", "dense_model"),
    "lm_values": ("sourcebias.analysis.perplexity", "lm_values"),
    "finite_mean": ("sourcebias.analysis.common", "finite_mean"),
    "quality": ("sourcebias.analysis.quality", "quality"),
    "spectrum": ("sourcebias.analysis.spectrum", "spectrum"),
    "perplexity": ("sourcebias.analysis.perplexity", "perplexity"),
    "lucene_idf": ("sourcebias.analysis.artifacts", "lucene_idf"),
    "artifacts": ("sourcebias.analysis.artifacts", "artifacts"),
    "direction": ("sourcebias.analysis.direction", "direction"),
}


def __getattr__(name: str) -> Any:
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new = MOVED[name]
    warnings.warn(f"sourcebias.analysis.runners.{name} is deprecated; import it from {module}", DeprecationWarning, stacklevel=2)
    return getattr(import_module(module), new)
