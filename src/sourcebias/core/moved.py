"""Old import paths of names that moved, kept for one release with a ``DeprecationWarning``.

A module whose names moved keeps a table ``_MOVED`` (old name -> the module that holds it now;
``"*"`` for every other public name) and sets ``__getattr__ = moved(__name__, _MOVED)``: Python
calls a module's ``__getattr__`` only for a name the module does not define (PEP 562), so the
shim costs nothing to code that uses the new paths, and the import happens on first use, so a shim
in a lower layer never imports a higher one while it loads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


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
        warnings.warn(f"{old}.{name} moved to {target}.{name}; the old path goes in the next release", DeprecationWarning, stacklevel=2)
        return getattr(module, name)

    return __getattr__
