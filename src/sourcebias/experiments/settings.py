"""Every setting of an experiment grid, declared once.

A :class:`Setting` names a key of the grid file's ``[grid]`` table (or of a ``[[retrievers]]``
entry), its type, default, bounds or choices, whether it enters a cell's hash (it decides the
cell's results, not only the report's statistics), whether the report's statistics take it
(:class:`~sourcebias.evaluation.stats.StatContext`), its help text, and the ``evaluate`` option
of the same setting. From these declarations come:

* the checks of :func:`~sourcebias.experiments.config.load_grid_config` (:meth:`Setting.problem`:
  type, bounds, choices; errors name the file and the line of the key, before any cell runs);
* the fields and defaults of :class:`~sourcebias.experiments.config.GridConfig`;
* what a cell's hash covers (:meth:`GridConfig.settings`, the ``hashed`` settings) and the
  statistics' context of the report (the ``context`` settings);
* the ``evaluate`` command's options of the same settings (:func:`option_kwargs`: the same
  bounds and help), so that a grid obeys exactly the bounds the command obeys;
* the reference table of the documentation (:func:`settings_markdown`).

A new setting is one more :class:`Setting` in :data:`GRID_SETTINGS` (and, where a cell or a
statistic reads it, the line that reads it).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from sourcebias.core.moved import moved

CORRECTIONS = ("holm", "fdr_bh", "bonferroni", "none")
MEASURES = ("NDCG", "MAP", "Recall", "P", "Share")  # evaluation.measures.DEFAULT_MEASURES (kept import-light here)
CUTOFFS = (1, 3, 5, 10)  # evaluation.measures.DEFAULT_CUTOFFS


@dataclass(frozen=True)
class Setting:
    """One setting: its key, TOML type, default, bounds, and where it counts.

    ``type`` is ``int``, ``float``, ``bool``, ``str`` or ``list`` (then ``item`` is the type of
    its values, ``min``/``max`` bound each value, and ``distinct`` forbids repeats); a float
    setting also takes an integer. ``default`` None means the loader fills it (``name``: the
    file's stem). ``hashed``: in the cell hash. ``context``: a field of the report's
    :class:`~sourcebias.evaluation.stats.StatContext`. ``option``: the ``evaluate`` option of the
    same setting, if any.
    """

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    item: builtins.type | None = None  # (``type`` is the field above in this class body)
    distinct: bool = False
    hashed: bool = False
    context: bool = False
    option: str | None = None

    def initial(self) -> Any:
        """A fresh copy of the default (a list default is never shared between configurations).

        Returns:
            The default, a new list when it is a sequence.
        """
        return list(self.default) if isinstance(self.default, (list, tuple)) else self.default

    def bounds(self) -> str:
        """The bounds or choices as a reader sees them (``≥ 100``, ``0.5 – 0.999``, ``holm, fdr_bh``).

        Returns:
            The text (``""`` when the setting has neither).
        """
        if self.choices:
            return ", ".join(self.choices)
        if self.min is not None and self.max is not None:
            return f"{_num(self.min)} – {_num(self.max)}"
        if self.min is not None:
            return f"≥ {_num(self.min)}"
        return f"≤ {_num(self.max)}" if self.max is not None else ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this setting (type, bounds, choices).

        Args:
            value: The value as read from the TOML file.

        Returns:
            The problem, worded for an error message, or None when the value is fine.
        """
        if self.type is list:
            return self._list_problem(value)
        if not _is(value, self.type):
            return f"expected {_type_name(self.type)}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"'{value}' is not one of {', '.join(self.choices)}"
        if not self._within(value):
            return f"must be {self.bounds()}{self._as_option()}, got {value!r}"
        return None

    def _list_problem(self, value: Any) -> str | None:
        items = _plural(self.item or str)
        if not isinstance(value, list) or not value:
            return f"expected a non-empty list of {items}, got {value!r}"
        wrong = [v for v in value if not _is(v, self.item or str)]
        if wrong:
            return f"expected {items}, got {', '.join(map(repr, wrong))}"
        out = [v for v in value if not self._within(v)]
        if out:
            return f"every value must be {self.bounds()}{self._as_option()}, got {', '.join(map(repr, out))}"
        repeated = sorted({v for v in value if value.count(v) > 1}, key=str)
        if self.distinct and repeated:
            return f"{self.name.rstrip('s')}(s) {', '.join(map(str, repeated))} given more than once; the {self.name} must be distinct"
        return None

    def _within(self, v: Any) -> bool:
        if isinstance(v, (str, bool)):
            return True
        return (self.min is None or v >= self.min) and (self.max is None or v <= self.max)

    def _as_option(self) -> str:
        return f" (as evaluate's {self.option})" if self.option else ""

    def convert(self, value: Any) -> Any:
        """The checked TOML value as the configuration holds it (a float setting as a float).

        Args:
            value: A value :meth:`problem` accepted.

        Returns:
            The value to store.
        """
        return float(value) if self.type is float else value


def _is(value: Any, typ: type) -> bool:
    if isinstance(value, bool):
        return typ is bool
    return isinstance(value, (int, float)) if typ is float else isinstance(value, typ)


def _type_name(typ: type) -> str:
    return "float (a number)" if typ is float else "bool (true or false)" if typ is bool else typ.__name__


def _plural(typ: type) -> str:
    return {int: "integers", float: "numbers", str: "strings", bool: "true or false values"}.get(typ, typ.__name__)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


#: the ``[grid]`` table's settings, in the order of the documentation
GRID_SETTINGS: tuple[Setting, ...] = (
    Setting("name", str, None, "The grid's name; a grid folder holds the cells of one grid (default: the file's name without .toml)."),
    Setting(
        "measures",
        list,
        MEASURES,
        "Measures, as evaluate's --metric: NDCG, MAP, Recall, P (need labels), Share, NDSR (label-free).",
        item=str,
        hashed=True,
        option="--metric",
    ),
    Setting("cutoffs", list, CUTOFFS, "Cut-offs k of every measure.", min=1, item=int, distinct=True, hashed=True, option="--k"),
    Setting("depth", int, 1000, "Documents kept per query in each ranking (at least the largest cut-off).", min=1, hashed=True, option="--depth"),
    Setting("seed", int, 0, "Seed of the tie rule, the randomization tests and the bootstrap.", hashed=True, option="--seed"),
    Setting(
        "seeds",
        list,
        (0,),
        "Instead of seed (seed = N is seeds = [N]): run every cell once per seed (each "
        "cell's own seed in its hash); the report gives the mean and spread across seeds.",
        item=int,
        distinct=True,
    ),
    Setting("sole", bool, True, "Also rank each source alone (human-only, LLM-only settings).", hashed=True, option="--sole/--no-sole"),
    Setting("significance_resamples", int, 10_000, "Resamples of the paired randomization test.", min=100, hashed=True, context=True, option="--resamples"),
    Setting("bootstrap_resamples", int, 2_000, "Resamples of the bootstrap CI of Relative Δ.", min=100, context=True, option="--bootstrap-resamples"),
    Setting("confidence", float, 0.95, "Level of the bootstrap CI of Relative Δ.", min=0.5, max=0.999, context=True, option="--confidence"),
    Setting(
        "correction",
        str,
        "holm",
        "Multiple-testing correction of the randomization tests across the report's tests (in a grid of several seeds: per seed).",
        choices=CORRECTIONS,
        option="--correction",
    ),
    Setting(
        "primary", str, "NDCG@3", "The report's measure, any spelling (ndcg@3): one of measures x cutoffs with labels (default: NDCG@3, else the first such)."
    ),
    Setting(
        "orphans",
        str,
        "drop",
        "A judged original without a copy in every source: drop its judgements (compared fairly) or keep them (the earlier rule).",
        choices=("drop", "keep"),
        hashed=True,
        context=True,
        option="--orphans",
    ),
    Setting("ndsr_k", int, 10, "Cut-off of ΔNDSR@k.", min=1, context=True, option="--ndsr-k"),
    Setting("cache_dir", str, None, "Embedding store, relative to the file (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias)."),
)

#: the settings of a ``[[retrievers]]`` entry that Ray reads (the others are ``spec``, ``name``, ``datasets``)
RETRIEVER_SETTINGS: tuple[Setting, ...] = (
    Setting("gpus", float, 0.0, "Ray: GPUs a cell of this retriever asks for.", min=0),
    Setting("cpus", float, 1.0, "Ray: CPUs a cell of this retriever asks for.", min=0),
    Setting("encode_workers", int, 0, "Ray: encode each dataset's corpus with this many tasks first (0 or 1: the cell encodes it).", min=0),
)


def setting(name: str) -> Setting:
    """The declaration of a ``[grid]`` setting by its key.

    Args:
        name: the key, e.g. ``"bootstrap_resamples"``.

    Returns:
        Its :class:`Setting`.

    Raises:
        KeyError: no such setting.
    """
    for s in GRID_SETTINGS:
        if s.name == name:
            return s
    raise KeyError(name)


def option_kwargs(name: str) -> dict[str, Any]:
    """Keyword arguments of ``typer.Option`` for the command-line option of a grid setting.

    Its help, and ``min``/``max`` for a number, so that the option and the grid obey the same bounds.

    Example: ``bootstrap_resamples: Annotated[int, typer.Option(**option_kwargs("bootstrap_resamples"))] = setting("bootstrap_resamples").default``.
    A setting with choices gets a ``metavar`` (``holm|fdr_bh|...``); check the value with
    :meth:`Setting.problem`.

    Args:
        name: the setting's key in ``[grid]``.

    Returns:
        ``{"help": ..., "min": ..., "max": ..., "metavar": ...}`` (the keys that apply).

    Raises:
        KeyError: no such setting.
    """
    s = setting(name)
    out: dict[str, Any] = {"help": s.help}
    if s.type in (int, float):
        out.update({k: v for k, v in (("min", s.min), ("max", s.max)) if v is not None})
    if s.choices:
        out["metavar"] = "|".join(s.choices)
    return out


def _default_text(s: Setting) -> str:
    if isinstance(s.default, bool):
        return str(s.default).lower()
    if isinstance(s.default, (list, tuple)):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in s.default) + "]"
    return f'"{s.default}"' if isinstance(s.default, str) else _num(s.default)


def settings_markdown(settings: tuple[Setting, ...] = GRID_SETTINGS) -> str:
    """A Markdown reference table of the settings (the README's and the documentation's).

    Args:
        settings: the declarations to list (default: every ``[grid]`` setting).

    Returns:
        The table: key, type, default, bounds or choices, whether it enters the cell hash, the
        ``evaluate`` option of the same setting, and what it does; one row per setting.
    """
    lines = ["| key | type | default | bounds | in cell hash | evaluate option | what it does |", "|---|---|---|---|---|---|---|"]
    for s in settings:
        typ = f"list of {s.item.__name__}" if s.type is list and s.item else s.type.__name__
        cells = [
            f"`{s.name}`",
            typ,
            f"`{_default_text(s)}`" if s.default is not None else "see text",
            s.bounds() or "–",
            "yes" if s.hashed else "no",
            f"`{s.option}`" if s.option else "–",
            s.help.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_MOVED = {"key_line": "sourcebias.core.tomlfile", "unknown_keys": "sourcebias.core.tomlfile"}  # one TOML checker, in core
__getattr__ = moved(__name__, _MOVED)
