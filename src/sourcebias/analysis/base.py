"""What an analysis is, and the registry of analyses (``sourcebias analyze NAME``).

An analysis is one :class:`Analysis` subclass and one :func:`register_analysis` line, in the
module that computes it, the shape of the measures' and statistics' registries: it declares its
options (:class:`Param`: what ``sourcebias analyze NAME`` takes, with their help), runs on a
loaded dataset (:meth:`Analysis.run`, returning an
:class:`~sourcebias.analysis.result.AnalysisResult`), draws its figures (:meth:`Analysis.draw`)
and says what a reader sees of the result: its tables (:class:`AnalysisTable`: typed
:class:`~sourcebias.evaluation.stats.Column` s, rows, a caption) and notes, which the command line
renders through the one report every command prints. ``cli/analyze.py`` builds one subcommand per
registered analysis, so a new analysis needs no edit anywhere else.

Where analyses come from: the built-in modules of :data:`BUILTIN_MODULES`, the plugin modules of
:mod:`sourcebias.core.plugins` (``$SOURCEBIAS_PLUGINS``, entry points of ``sourcebias.plugins``)
and the entry points of the group :data:`GROUP` (``sourcebias.analyses``: how an installed
package adds an analysis), all imported on the first lookup.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from sourcebias.analysis.result import AnalysisResult
    from sourcebias.evaluation.stats import Column

#: the entry-point group of third-party analysis modules
GROUP = "sourcebias.analyses"
#: modules of this package that register analyses (imported on the first lookup), in the order
#: of ``sourcebias analyze --help``
BUILTIN_MODULES = (
    "sourcebias.analysis.quality",
    "sourcebias.analysis.spectrum",
    "sourcebias.analysis.perplexity",
    "sourcebias.analysis.artifacts",
    "sourcebias.analysis.direction",
    "sourcebias.analysis.length",
    "sourcebias.analysis.decompose",
    "sourcebias.analysis.directions_compare",
)


@dataclass(frozen=True)
class Param:
    """An option of an analysis: its type and default, and how the command line shows it.

    Attributes:
        type: The Python type (``str``, ``int | None``, ``list[str] | None``, ``Path | None``...).
        default: The default value.
        help: One line of help.
        flags: The option's names, when not ``--name-with-dashes`` (e.g. ``("--source", "-s")``).
        metavar: What the value is called in the help.
        min, max: Bounds of a number.
    """

    type: Any
    default: Any
    help: str
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    min: float | None = None
    max: float | None = None


@dataclass
class AnalysisTable:
    """A table a reader sees: typed columns (:class:`~sourcebias.evaluation.stats.Column`), one dict
    of raw values per row, a caption (the shape of :class:`sourcebias.report.model.Table`)."""

    key: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    caption: str = ""


# -- the options most analyses share ---------------------------------------------------------------
ENCODER = Param(str, "minilm", "Encoder: minilm, st:NAME_OR_PATH or a preset.")
SOURCES = Param(list[str] | None, None, "LLM sources to compare with the human one (repeat); default all.", flags=("--source", "-s"), metavar="SOURCE")
SEED = Param(int, 0, "Seed of random pairs, samples and permutations.")
SPLIT = Param(str | None, None, "Qrels split (needed by direction's score gaps; optional elsewhere).")
FIELD = Param(
    str,
    "text",
    "Which field of a document is measured: its text (the papers' code) or title and text joined (what a retriever sees).",
    metavar="text|title+text",
)
LM = "lm:NAME (causal, e.g. lm:smollm2), mlm:NAME (masked) or mlm:from-retriever:RETRIEVER"


class Analysis(ABC):
    """An analysis of ``sourcebias analyze``. Subclass it, set the class attributes, implement
    :meth:`run` and :meth:`tables`, and register an instance with :func:`register_analysis`."""

    #: the subcommand (letters, digits and ``-``)
    name: ClassVar[str] = ""
    #: the subcommand's help: what it computes, after which paper
    help: ClassVar[str] = ""
    #: its options, in the order of ``--help`` (the dataset, ``-o`` and the shared options aside)
    params: ClassVar[Mapping[str, Param]] = {}
    #: whether it runs a model: then it takes the model options --device, --batch-size, --cache-dir
    model: ClassVar[bool] = True

    @abstractmethod
    def run(self, dataset: Any, params: Mapping[str, Any], options: Mapping[str, Any]) -> AnalysisResult:
        """The :class:`~sourcebias.analysis.result.AnalysisResult` of ``dataset``.

        Args:
            dataset: The loaded dataset (split ``params["split"]`` when the analysis has one).
            params: A value for each of :attr:`params`.
            options: The model options (``device``, ``batch_size``, ``cache_dir``; empty without
                :attr:`model`).
        """

    @abstractmethod
    def tables(self, result: Any) -> list[AnalysisTable]:
        """The tables a reader sees of ``result`` (printed by the command)."""

    def notes(self, result: Any) -> list[str]:
        """Lines a reader must see (what was left out, what is undefined); none by default."""
        return []

    def draw(self, result: Any, out: Path) -> dict[str, Path]:
        """Draw the figures of ``result`` into the folder ``out``; name -> file. None by default."""
        return {}

    def defaults(self) -> dict[str, Any]:
        """Every option at its default."""
        return {k: p.default for k, p in self.params.items()}


@dataclass
class _Registry:
    analyses: dict[str, Analysis] = field(default_factory=dict)
    loaded: bool = False


_REGISTRY = _Registry()


def register_analysis(analysis: Analysis) -> Analysis:
    """Make ``analysis`` a subcommand of ``sourcebias analyze`` (and known to :func:`get_analysis`).

    Args:
        analysis: The analysis (an instance).

    Returns:
        ``analysis``.

    Raises:
        ValueError: Its name is empty or not made of letters, digits and ``-``; or another analysis
            of that name is registered.
    """
    key = analysis.name
    if not key or not key.replace("-", "").isalnum() or key != key.lower():
        raise ValueError(f"an analysis needs a lower-case name of letters, digits and -, got {analysis.name!r}")
    known = _REGISTRY.analyses.get(key)
    if known is not None and type(known) is not type(analysis):
        raise ValueError(f"analysis '{key}' is registered twice ({type(known).__module__} and {type(analysis).__module__})")
    _REGISTRY.analyses[key] = analysis
    return analysis


def _load() -> None:
    if _REGISTRY.loaded:
        return
    _REGISTRY.loaded = True
    from sourcebias.core.plugins import load_plugins

    for name in BUILTIN_MODULES:
        import_module(name)
    load_plugins()
    load_plugins(GROUP)


def analysis_kinds() -> dict[str, Analysis]:
    """Every registered analysis, built-in and plugins (loaded first): the built-in ones in the
    order of :data:`BUILTIN_MODULES` (whatever order their modules were imported in), then the
    others in registration order."""
    _load()

    def rank(a: Analysis) -> int:
        module = type(a).__module__
        return BUILTIN_MODULES.index(module) if module in BUILTIN_MODULES else len(BUILTIN_MODULES)

    return {a.name: a for a in sorted(_REGISTRY.analyses.values(), key=rank)}  # sorted() is stable: plugins keep their order


def get_analysis(name: str) -> Analysis:
    """The registered analysis ``name``.

    Raises:
        KeyError: none of that name (the known ones are listed).
    """
    known = analysis_kinds()
    if name not in known:
        raise KeyError(f"unknown analysis '{name}'; known: {', '.join(known)}")
    return known[name]


def column(key: str, header: str, kind: str = "num", digits: int = 1) -> Column:
    """A :class:`~sourcebias.evaluation.stats.Column` (imported here, when a table is made, so that
    importing an analysis, and the command line, does not import the evaluation package)."""
    from sourcebias.evaluation.stats.base import Column

    return Column(key, header, kind, digits)


def sig(key: str, header: str) -> Column:
    """A column of 4 significant digits (how ``sourcebias analyze`` prints its numbers)."""
    return column(key, header, "sig", 4)


def psig(key: str, header: str) -> Column:
    """A p-value column of 4 significant digits, ``< 1e-300`` on underflow."""
    return column(key, header, "psig", 4)


def text(key: str, header: str) -> Column:
    """A text column."""
    return column(key, header, "text")


def integer(key: str, header: str) -> Column:
    """A count column."""
    return column(key, header, "int")


def llm_rows(result: Any, keys: Sequence[str]) -> list[dict[str, Any]]:
    """One row per LLM source of ``result.summary["sources"]``: ``source`` and the entries ``keys``."""
    return [{"source": src, **{k: e.get(k) for k in keys}} for src, e in result.summary["sources"].items()]
