"""The statistic registry.

A :class:`Statistic` computes typed :class:`Record` s from an
:class:`~sourcebias.evaluation.results.EvaluationResult`; each record class declares its columns
(with their formatting) and each statistic writes its caption from the records it made, so the
caption names the method, level and correction *actually used* and what was left out.

The pattern is :mod:`sourcebias.evaluation.measures`' (ir_measures'): one class per statistic,
one :func:`register_statistic` line, plugins loaded on the first lookup
(:mod:`sourcebias.core.plugins`), heavy imports (SciPy, statsmodels) inside the functions.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from sourcebias.core.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

SIGNIFICANCE = 0.05
#: Resamples per vectorised call of ``scipy.stats.bootstrap`` (its ``batch``): memory O(batch x
#: queries) instead of O(resamples x queries), and for BCa's jackknife O(batch x queries) instead of
#: O(queries^2) (1.6 GB at 6,979 queries, MS MARCO's count; 80 MB batched). The random draws and
#: so every interval are the same with any batch (scipy draws the resamples in order).
BOOTSTRAP_BATCH = 256


#: What a table shows for a p-value computed as 0: the tests compute p in float64, so a p below
#: about 1e-308 underflows to 0; the bound is shown (``< 1e-300``), never p = 0.
P_UNDERFLOW = 1e-300
#: The column of ``statistics.csv`` that names the p-values written as :data:`P_UNDERFLOW`: upper bounds, not values.
P_BOUNDS = "p_bounds"


def is_p_field(name: str) -> bool:
    """Whether a record field holds a p-value (``p_ttest``, ``twin_pref_p``, ``delta_ndsr_p_sign``; not ``twin_pref_p_method``).

    Args:
        name: A field name.

    Returns:
        True for a p-value field.
    """
    parts = name.split("_")
    return "p" in parts and not name.endswith(("_method", "_note", "_resamples"))


def with_p_bounds(row: dict[str, Any]) -> dict[str, Any]:
    """A statistics row for a file: each p-value that underflowed to 0 written as a bound.

    The bound is :data:`P_UNDERFLOW`, and :data:`P_BOUNDS` names them (``"p_ttest < 1e-300"``; empty when none).

    Args:
        row: A row of raw values (:meth:`Record.row`, or joined rows).

    Returns:
        A new row.
    """
    out = dict(row)
    bounded = [k for k, v in row.items() if is_p_field(k) and isinstance(v, float) and v == 0.0]
    for k in bounded:
        out[k] = P_UNDERFLOW
    out[P_BOUNDS] = "; ".join(f"{k} < {P_UNDERFLOW:g}" for k in bounded)
    return out


def is_missing(v: Any) -> bool:
    """Whether a cell value is missing: None, NaN or the empty string.

    Args:
        v: A record's value.

    Returns:
        True when missing.
    """
    return v is None or (isinstance(v, float) and math.isnan(v)) or v == ""


def known(values: Any) -> list[Any]:
    """The distinct values that are not missing, sorted (for captions: "2,000 resamples").

    Args:
        values: Record values.

    Returns:
        The distinct non-missing values, sorted.
    """
    return sorted({v for v in values if not is_missing(v)})


def total(values: Any) -> int:
    """The sum of the values that are not missing.

    Args:
        values: Numeric record values.

    Returns:
        Their sum, as an integer.
    """
    return int(sum(v for v in values if not is_missing(v)))


@dataclass(frozen=True)
class Column:
    """A displayed column: which record field, its header, how it is written.

    ``kind``: ``text``; ``cell`` (text already written as a number or numbers, e.g. ``281 / 277``:
    shown as it is, aligned as a number); ``pct`` (a fraction shown ×100, 1 digit); ``num`` (``digits``); ``p`` (a
    p-value: 3 significant digits, ``< 1e-300`` on underflow); ``sig`` (``digits`` significant
    digits); ``psig`` (a p-value in ``digits`` significant digits, ``< 1e-300`` on underflow); ``int``; ``delta`` (a signed value
    whose sign is coloured: < 0 LLM text ranked higher); ``delta_ci`` (``delta`` followed by the
    interval ``[low, high]`` of the fields ``low`` and ``high``). ``mark``: a p-value field; the
    cell gets ``*`` when it is below :data:`SIGNIFICANCE`.
    """

    key: str
    header: str
    kind: str = "num"
    digits: int = 1
    low: str | None = None
    high: str | None = None
    mark: str | None = None

    def text(self, row: dict[str, Any]) -> str:
        """The cell of this column for a row, as printed.

        Args:
            row: A record's row (:meth:`Record.row`).

        Returns:
            The value written as :attr:`kind` says (``–`` when missing), with ``*`` for a significant
            :attr:`mark` and the interval of a ``delta_ci`` column.
        """
        v = row.get(self.key)
        if self.kind in ("text", "cell"):
            return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        s = _number(v, self.kind, self.digits)
        if self.mark and s != "–" and _significant(row.get(self.mark)):
            s += "*"
        if self.kind == "delta_ci":
            low, high = (row.get(k) if k is not None else None for k in (self.low, self.high))
            s += f" [{_number(low, 'num', self.digits)}, {_number(high, 'num', self.digits)}]"
        return s

    def sign(self, row: dict[str, Any]) -> int:
        """The side a coloured (delta) cell shows.

        Args:
            row: A record's row.

        Returns:
            -1 / +1 for a delta cell with a finite non-zero value; 0 otherwise (NaN is never coloured as
            either side).
        """
        if self.kind not in ("delta", "delta_ci"):
            return 0
        v = row.get(self.key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v == 0:
            return 0
        return -1 if v < 0 else 1


def _significant(p: Any) -> bool:
    return isinstance(p, (int, float)) and math.isfinite(p) and p < SIGNIFICANCE


def _number(v: Any, kind: str, digits: int) -> str:
    if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
        return "–"
    v = float(v)
    if kind == "pct":
        return signed_fixed(v * 100, 1)
    if kind == "int":
        return f"{int(v):,}"
    if kind in ("p", "psig") and v == 0:
        return f"< {P_UNDERFLOW:g}"
    if kind == "p":
        return f"{v:.3g}" if v >= 1e-3 else f"{v:.2e}"
    if kind in ("sig", "psig"):
        return f"{v:.{digits}g}"
    return signed_fixed(v, digits)


def signed_fixed(v: float, digits: int) -> str:
    """``v`` with ``digits`` decimals, a value that rounds to zero written without a sign.

    Never ``-0.0``, which would claim a sign the printed digits cannot show.

    Args:
        v: The value.
        digits: Decimals.

    Returns:
        The text.
    """
    text = f"{v:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


@dataclass
class Record:
    """One row of a statistic: identity (retriever, LLM source, measure) and values.

    Subclasses add fields and declare :attr:`columns` (the displayed ones; every field goes to CSV).
    """

    retriever: str
    llm_source: str
    measure: str = ""

    columns: ClassVar[tuple[Column, ...]] = ()

    def row(self) -> dict[str, Any]:
        """The record as a row: every field by name.

        Returns:
            ``{field: value}`` (:func:`dataclasses.asdict`).
        """
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """The record's fields, in order (identity first).

        Returns:
            Their names.
        """
        return [f.name for f in fields(cls)]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Record:
        """The record back from a table row (a grid's cells table), integers as integers.

        Args:
            row: ``{field: value}`` as read back (a number may come back as a float, a missing text as NaN).

        Returns:
            The record.
        """
        values: dict[str, Any] = {}
        for f in fields(cls):
            v = row.get(f.name)
            if f.type in ("int", int) and isinstance(v, float):
                v = int(v) if math.isfinite(v) else None
            elif f.type in ("str", str) and not isinstance(v, str):
                v = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
            values[f.name] = v
        return cls(**values)


@dataclass
class StatContext:
    """What a statistic needs beyond the result.

    The split's qrels (twin preference), the measures of the per-measure statistics, and the settings of
    the methods.
    """

    qrels: Any = None
    measures: Sequence[str] = ()
    ndsr_k: int = 10
    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    significance_resamples: int = 10_000
    correction: str = "holm"
    orphans: str | None = None  # the result's orphan policy (None: read it from the result)
    extra: dict[str, Any] = field(default_factory=dict)


class Statistic(ABC):
    """A statistic of an evaluation result: one class in one file, one registration line."""

    name: str = ""
    aliases: tuple[str, ...] = ()
    description: str = ""
    per_measure: bool = True  # one record per measure (Relative Δ) or per retriever and source (ΔNDSR)
    needs_qrels: bool = False
    record: type[Record] = Record

    @abstractmethod
    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        """The records of ``result``.

        Args:
            result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
            ctx: The qrels, measures and method settings.

        Returns:
            One record per retriever, LLM source and, if :attr:`per_measure`, measure of ``ctx.measures``.
        """

    @abstractmethod
    def caption(self, records: Sequence[Record]) -> str:
        """Caption text from the records made: method and level actually used, what was left out.

        Args:
            records: This statistic's records.

        Returns:
            The caption (``""`` for no records).
        """

    def notes(self, records: Sequence[Record]) -> list[str]:
        """Lines a reader must see (undefined tests, left-out pairs); none by default.

        Args:
            records: This statistic's records.

        Returns:
            The lines.
        """
        return []


_STATS: dict[str, Statistic] = {}
_BY_ALIAS: dict[str, str] = {}


def register_statistic(stat: Statistic) -> Statistic:
    """Make ``stat`` (and its aliases, case-insensitive) known to ``--statistics`` and :func:`get_statistic`.

    Args:
        stat: The statistic (an instance).

    Returns:
        ``stat``.

    Raises:
        ValueError: Its name is not made of letters, digits, ``-`` and ``_``.
    """
    if not stat.name or not stat.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a statistic needs a name of letters, digits, - and _, got {stat.name!r}")
    _STATS[stat.name] = stat
    for a in (stat.name, *stat.aliases):
        _BY_ALIAS[a.lower()] = stat.name
    return stat


def statistic_kinds() -> dict[str, Statistic]:
    """Every registered statistic (plugins loaded first).

    Returns:
        ``{name: statistic}``.
    """
    from sourcebias.core.plugins import load_plugins

    load_plugins()
    return dict(_STATS)


def get_statistic(name: str) -> Statistic:
    """A registered statistic by name or alias, case-insensitive (plugins loaded if need be).

    Args:
        name: A name or alias (``paired_tests``, ``significance``).

    Returns:
        The statistic.

    Raises:
        ConfigError: An unknown name (the known ones are listed).
    """
    key = name.strip().lower()
    if key not in _BY_ALIAS:
        from sourcebias.core.plugins import load_plugins

        load_plugins()
    if key not in _BY_ALIAS:
        raise ConfigError(f"unknown statistic '{name}'; known: {', '.join(_STATS)}")
    return _STATS[_BY_ALIAS[key]]


def result_pairs(result: Any) -> list[tuple[str, str]]:
    """(retriever, LLM source) pairs of a result with a mixed corpus, in order.

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.

    Returns:
        The pairs (none without the mixed setting).
    """
    if not result.has_mixed:
        return []
    return [(r, s) for r in result.retriever_names for s in result.other_sources]


def paired_values(result: Any, measures: Sequence[str]) -> Iterator[tuple[str, str, str, np.ndarray, np.ndarray]]:
    """The per-query values of the human and the LLM target on the same ranking.

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult` with a mixed corpus.
        measures: Measures with labels (``"NDCG@3"``).

    Yields:
        ``(retriever, llm_source, measure, human_values, llm_values)`` for each retriever, LLM source
        and measure (combinations without values are passed over).
    """
    from sourcebias.evaluation.results import MIXED, Key

    for name, llm in result_pairs(result):
        for m in measures:
            kh, kl = Key(name, MIXED, result.human_source, m), Key(name, MIXED, llm, m)
            if kh in result.per_query and kl in result.per_query:
                yield name, llm, m, result.per_query[kh], result.per_query[kl]
