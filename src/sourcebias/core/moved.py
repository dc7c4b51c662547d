"""Deprecations, in one place: old import paths of names that moved, and old forms of a setting,
kept for one release with a :class:`SourceBiasDeprecationWarning` (the changelog names the release
that removes each).

A module whose names moved keeps a table ``_MOVED`` (old name -> the module that holds it now;
``"*"`` for every other public name) and sets ``__getattr__ = moved(__name__, _MOVED)``: Python
calls a module's ``__getattr__`` only for a name the module does not define (PEP 562), so the
shim costs nothing to code that uses the new paths, and the import happens on first use, so a shim
in a lower layer never imports a higher one while it loads.

A module that moved whole, or whose every name moved, is not kept as a file: :data:`MODULES` maps
its old name to its table, and :func:`install` (run when ``sourcebias`` is imported) puts a finder
on ``sys.meta_path`` that answers an import of the old name with a module whose ``__getattr__`` is
:func:`moved` over that table. A name that is gone, its value now computed by another call, is a
:class:`Replaced` entry of a table.

An old form of a setting (``--backend openai --base-url URL``, ``raidar:M,base_url=URL``) is read
as the new one with :func:`deprecated`, which warns once per call site. The command line prints each
such warning as one line (``sourcebias.cli.main``); Python code sees a ``DeprecationWarning``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
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


@dataclass(frozen=True)
class Replaced:
    """A deprecated name whose value another call now gives (a table entry of :func:`moved`).

    Attributes:
        new: What to write instead, as the warning says it (``sourcebias.detect.detector_kinds()``).
        value: Computes the old name's value.
    """

    new: str
    value: Callable[[], Any]


def moved(old: str, table: Mapping[str, str | Replaced]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that finds a moved name in its new module, with a warning.

    Args:
        old: The old module's name (``__name__``).
        table: Old name -> the module that holds it now (``"module:new_name"`` when it was
            renamed too; a :class:`Replaced` when its value is computed now); ``"*"`` for any
            other public name.

    Returns:
        The ``__getattr__`` function.
    """

    def __getattr__(name: str) -> Any:
        target = table.get(name) or (table.get("*") if not name.startswith("_") else None)
        if isinstance(target, Replaced):
            _warn(f"{old}.{name} is deprecated: use {target.new} (the old name goes in {REMOVED_IN})", 2)
            return target.value()
        module_name, _, new = (target or "").partition(":")
        if not module_name or not hasattr(module := import_module(module_name), new or name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        _warn(f"{old}.{name} moved to {module_name}.{new or name} (the old path goes in {REMOVED_IN})", 2)
        return getattr(module, new or name)

    return __getattr__


#: modules kept by name only (no file): old module -> its table (see :func:`moved`)
MODULES: dict[str, dict[str, str | Replaced]] = {
    "sourcebias.analysis.runners": {
        **dict.fromkeys(("twin_pairs", "dense_model", "finite_mean"), "sourcebias.analysis.common"),
        **{name: f"sourcebias.analysis.{name}" for name in ("quality", "spectrum", "perplexity", "artifacts", "direction")},
        "lm_values": "sourcebias.analysis.perplexity",
        "lucene_idf": "sourcebias.analysis.artifacts",
    },
    "sourcebias.evaluation.statistics": {
        "CORRECTIONS": "sourcebias.evaluation.stats.multiple",
        "adjust_pvalues": "sourcebias.evaluation.stats.multiple",
        "bootstrap_relative_delta": "sourcebias.evaluation.stats.relative_delta_ci",
        "relative_delta_values": "sourcebias.evaluation.stats.relative_delta_ci",
        "delta_ndsr": "sourcebias.evaluation.stats.delta_ndsr",
        "twin_preference": "sourcebias.evaluation.stats.twin_preference",
    },
    "sourcebias.generation.backends": {"*": "sourcebias.llmcalls.backends"},
    "sourcebias.generation.backends.base": {"*": "sourcebias.llmcalls.backends.base"},
    "sourcebias.generation.backends.local": {"*": "sourcebias.llmcalls.backends.local"},
    "sourcebias.generation.backends.openai": {"*": "sourcebias.llmcalls.backends.openai"},
    "sourcebias.generation.server": {"*": "sourcebias.llmcalls.server"},
    "sourcebias.audit.artifact": {"*": "sourcebias.audit.job"},
    "sourcebias.detect.run": {"*": "sourcebias.detect.job"},
    "sourcebias.judges.run": {"*": "sourcebias.judges.job"},
    "sourcebias.power.artifact": {"*": "sourcebias.power.job"},
    "sourcebias.simulate.run": {"*": "sourcebias.simulate.job"},
    # reporting/ (the evaluation job, its folder and figure, the grid report; shims of report/)
    "sourcebias.reporting": {
        "evaluation_manifest": "sourcebias.evaluation.artifact",
        "write_evaluation": "sourcebias.study.outputs",
        "write_summaries": "sourcebias.study.outputs",
        "EVALUATE_STATISTICS": "sourcebias.report.tables",
        "Report": "sourcebias.report.model",
        "Table": "sourcebias.report.model",
        "cells_report": "sourcebias.report.tables",
        "latex_table": "sourcebias.report.tables",
        "markdown_table": "sourcebias.report.tables",
        "result_report": "sourcebias.report.tables",
        "rich_table": "sourcebias.report.tables",
        "summary_table": "sourcebias.report.tables",
        "to_csv": "sourcebias.report.render",
        "to_html": "sourcebias.report.render",
        "to_latex": "sourcebias.report.render",
        "to_markdown": "sourcebias.report.render",
        "to_rich": "sourcebias.report.render",
    },
    "sourcebias.reporting.axes": {"*": "sourcebias.report.axes"},
    "sourcebias.reporting.evaluation_figure": {"*": "sourcebias.study.figure"},
    "sourcebias.reporting.evaluation_job": {"*": "sourcebias.study.job"},
    "sourcebias.reporting.grid_report": {"*": "sourcebias.experiments.grid_report"},
    "sourcebias.reporting.outputs": {"*": "sourcebias.study.outputs"},
    "sourcebias.reporting.palette": {"*": "sourcebias.core.palette"},
    "sourcebias.reporting.render": {"*": "sourcebias.report.render"},
    "sourcebias.reporting.report": {"Report": "sourcebias.report.model", "Table": "sourcebias.report.model", "*": "sourcebias.report.tables"},
    "sourcebias.reporting.tables": {"latex_escape": "sourcebias.report.render", "*": "sourcebias.report.tables"},
}


class _MovedModules(MetaPathFinder, Loader):
    """Answers an import of a module of :data:`MODULES` with a module that finds its names where
    they are now (with :func:`moved`'s warning)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in MODULES:
            return None
        package = any(m.startswith(fullname + ".") for m in MODULES)
        return ModuleSpec(fullname, self, is_package=package)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = ModuleType(spec.name, f"Deprecated: {spec.name} moved (the old path goes in {REMOVED_IN}).")
        module.__getattr__ = moved(spec.name, MODULES[spec.name])  # type: ignore[method-assign]  # PEP 562: a module-level __getattr__ in its __dict__
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None


def install() -> None:
    """Put the finder of :data:`MODULES` on ``sys.meta_path`` (once); ``sourcebias`` runs it on import."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
