"""Extensions from outside the package: modules that register retrievers, stages, measures,
statistics, detectors or analyses.

Modules are found in the entry-point group ``sourcebias.plugins`` (how an installed package adds
kinds: ``[project.entry-points."sourcebias.plugins"] mine = "my_package.my_module"``), in the
environment variable ``SOURCEBIAS_PLUGINS`` (comma-separated module names, for a quick script or
notebook), and in the group of one kind of plug-in (``sourcebias.detectors``,
``sourcebias.analyses``), which that kind's registry loads. Each group is imported once, on the
first lookup of a kind; importing a module runs its registrations. A plugin that fails to import
is reported, with the reason, and not retried.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from importlib import import_module
from typing import Any

GROUP = "sourcebias.plugins"
ENV = "SOURCEBIAS_PLUGINS"
_loaded: set[str] = set()
_registries: set[tuple[str, ...]] = set()  # the built-in modules of each registry, once imported
_entry_points: list[Any] = []  # every installed entry point, read once (each read scans every installed package)


def load_plugins(group: str = GROUP) -> list[str]:
    """Import every plugin module of ``group`` (once per process; the default group also takes
    ``$SOURCEBIAS_PLUGINS``); returns their names."""
    if group in _loaded:
        return []
    _loaded.add(group)
    names: list[str] = []
    if not _entry_points:
        from importlib.metadata import entry_points

        _entry_points.append(entry_points())
    targets = [(ep.name, ep.value) for ep in _entry_points[0].select(group=group)]
    if group == GROUP:
        targets += [(m.strip(), m.strip()) for m in os.environ.get(ENV, "").split(",") if m.strip()]
    for name, target in targets:
        module = target.split(":", 1)[0]
        try:
            import_module(module)
            names.append(module)
        except Exception as exc:  # a broken plugin must not break sourcebias itself
            warnings.warn(f"sourcebias plugin '{name}' ({target}) failed to load: {type(exc).__name__}: {exc}", stacklevel=2)
    return names


def load_builtins(modules: Sequence[str], *groups: str) -> None:
    """A registry's first lookup: import its built-in modules, then the plugins of ``groups`` (each
    registry once per process; the built-ins first, so a plugin can extend them)."""
    key = tuple(modules)
    if key in _registries:
        return
    _registries.add(key)
    for name in modules:
        import_module(name)
    for group in groups:
        load_plugins(group)
