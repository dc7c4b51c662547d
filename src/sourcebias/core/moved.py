"""Deprecations, in one place: old import paths of names that moved, and old forms of a setting,
kept for one release with a :class:`SourceBiasDeprecationWarning` (the changelog names the release
that removes each).

A module whose names moved keeps a table ``_MOVED`` (old name -> the module that holds it now;
``"*"`` for every other public name) and sets ``__getattr__ = moved(__name__, _MOVED)``: Python
calls a module's ``__getattr__`` only for a name the module does not define (PEP 562), so the
shim costs nothing to code that uses the new paths, and the import happens on first use, so a shim
in a lower layer never imports a higher one while it loads.

An old form of a setting (``--backend openai --base-url URL``, ``raidar:M,base_url=URL``) is read
as the new one with :func:`deprecated`, which warns once per call site. The command line prints each
such warning as one line (``sourcebias.cli.main``); Python code sees a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

#: the release that removes what is deprecated now
REMOVED_IN = "0.4.0"


class SourceBiasDeprecationWarning(DeprecationWarning):
    """An old name or form that still works in this release and is removed in :data:`REMOVED_IN`."""


def deprecated(old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warn that ``old`` (a name, a form of a setting) is deprecated in favour of ``new``.

    Args:
        old: What the caller used, as they wrote it.
        new: What to write instead.
        stacklevel: As :func:`warnings.warn`'s, counted from the caller of this function.
    """
    _warn(f"{old} is deprecated: use {new} (the old form goes in {REMOVED_IN})", stacklevel + 1)


def _warn(message: str, stacklevel: int) -> None:
    warnings.warn(message, SourceBiasDeprecationWarning, stacklevel=stacklevel + 1)


def moved(old: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that finds a moved name in its new module, with a warning.

    Args:
        old: The old module's name (``__name__``).
        table: Old name -> the module that holds it now; ``"*"`` for any other public name.

    Returns:
        The ``__getattr__`` function.
    """

    def __getattr__(name: str) -> Any:
        target = table.get(name) or (table.get("*") if not name.startswith("_") else None)
        if target is None or not hasattr(module := import_module(target), name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        _warn(f"{old}.{name} moved to {target}.{name} (the old path goes in {REMOVED_IN})", 2)
        return getattr(module, name)

    return __getattr__
