"""Statistics of an evaluation result, one class per file, registered like measures.

Built in (:data:`DEFAULT_STATISTICS`, the ``--statistics`` names):

* ``means`` (:mod:`.means`): all / human / LLM target and each source alone;
* ``relative_delta_ci`` (:mod:`.relative_delta_ci`): Relative Δ with a paired bootstrap CI;
* ``paired_tests`` (:mod:`.paired_tests`): t-test, exact sign test, randomization test, corrected;
* ``twin_preference`` (:mod:`.twin_preference`): LLM copy ranked above its original, sign test;
* ``delta_ndsr`` (:mod:`.delta_ndsr`): ΔNDSR@k, label-free.

:func:`compute_statistics` runs the chosen ones on a result and corrects the p-values of the
paired tests across the result's tests (:mod:`.multiple`). Adding one is a file with a
:class:`Statistic` subclass and a :func:`register_statistic` line (see the README).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sourcebias.evaluation.stats import delta_ndsr as _delta_ndsr  # noqa: F401 - registers
from sourcebias.evaluation.stats import means as _means  # noqa: F401 - registers
from sourcebias.evaluation.stats import paired_tests as _paired  # noqa: F401 - registers
from sourcebias.evaluation.stats import relative_delta_ci as _rd  # noqa: F401 - registers
from sourcebias.evaluation.stats import twin_preference as _twin  # noqa: F401 - registers
from sourcebias.evaluation.stats.base import SIGNIFICANCE, Column, Record, StatContext, Statistic, get_statistic, register_statistic, statistic_kinds
from sourcebias.evaluation.stats.multiple import CORRECTIONS, adjust_pvalues

DEFAULT_STATISTICS = ("means", "relative_delta_ci", "paired_tests", "twin_preference", "delta_ndsr")
IDENTITY = ("retriever", "llm_source", "measure")


@dataclass
class StatisticsSet:
    """The records of several statistics on one result, joined into rows on demand."""

    statistics: list[Statistic]
    records: dict[str, list[Record]] = field(default_factory=dict)

    def chosen(self, per_measure: bool | None) -> list[Statistic]:
        """The statistics of one kind.

        Args:
            per_measure: ``True``: the statistics with one record per measure; ``False``: those with one
                record per retriever and LLM source; ``None``: every statistic.

        Returns:
            The statistics, in order.
        """
        return [s for s in self.statistics if per_measure is None or s.per_measure == per_measure]

    def rows(self, per_measure: bool | None = None) -> list[dict[str, Any]]:
        """Rows joined on (retriever, LLM source, measure).

        With ``per_measure=None``: every statistic, the per-pair ones repeated on each measure's row (the
        grid's one-measure table).

        Args:
            per_measure: ``True``: the statistics with one record per measure; ``False``: those with one
                record per retriever and LLM source; ``None``: every statistic.

        Returns:
            One dict of fields per (retriever, LLM source, measure).
        """
        stats = self.chosen(per_measure)
        if per_measure is None and not any(s.per_measure for s in stats):
            return self.rows(False)
        joined: dict[tuple[str, str, str], dict[str, Any]] = {}
        for s in stats:
            if s.per_measure or per_measure is False:
                for r in self.records.get(s.name, []):
                    joined.setdefault((r.retriever, r.llm_source, r.measure), {}).update(r.row())
        if per_measure is None:
            for s in stats:
                if s.per_measure:
                    continue
                by_pair = {(r.retriever, r.llm_source): r.row() for r in self.records.get(s.name, [])}
                for key, row in joined.items():
                    extra = {k: v for k, v in by_pair.get(key[:2], {}).items() if k not in IDENTITY}
                    row.update(extra)
        return list(joined.values())

    def columns(self, per_measure: bool | None = None) -> list[Column]:
        """The displayed columns of the chosen statistics, in order.

        Args:
            per_measure: ``True``: the statistics with one record per measure; ``False``: those with one
                record per retriever and LLM source; ``None``: every statistic.

        Returns:
            Their :class:`Column` declarations.
        """
        return [c for s in self.chosen(per_measure) for c in s.record.columns]

    def fields(self, per_measure: bool | None = None) -> list[str]:
        """Every field of the chosen statistics' records (the CSV columns), identity first.

        Args:
            per_measure: ``True``: the statistics with one record per measure; ``False``: those with one
                record per retriever and LLM source; ``None``: every statistic.

        Returns:
            Field names, without repeats.
        """
        out: list[str] = list(IDENTITY)
        for s in self.chosen(per_measure):
            out += [f for f in s.record.field_names() if f not in out]
        return out

    def captions(self, per_measure: bool | None = None) -> list[str]:
        """The captions of the chosen statistics (empty ones left out).

        Args:
            per_measure: ``True``: the statistics with one record per measure; ``False``: those with one
                record per retriever and LLM source; ``None``: every statistic.

        Returns:
            One caption per statistic that has one.
        """
        return [c for s in self.chosen(per_measure) if (c := s.caption(self.records.get(s.name, [])))]

    def notes(self) -> list[str]:
        """Lines a reader must see, from every statistic (undefined tests, left-out pairs).

        Returns:
            The notes, in the statistics' order.
        """
        return [n for s in self.statistics for n in s.notes(self.records.get(s.name, []))]


def resolve_statistics(names: Sequence[str] | None = None) -> list[Statistic]:
    """Statistics by name or alias, in the given order.

    Args:
        names: Names or aliases, case-insensitive (``None``: :data:`DEFAULT_STATISTICS`).

    Returns:
        The registered statistics, each once.

    Raises:
        ConfigError: An unknown name (the known ones are listed).
    """
    out: list[Statistic] = []
    for n in names or DEFAULT_STATISTICS:
        s = get_statistic(n)
        if s not in out:
            out.append(s)
    return out


def compute_statistics(result: Any, ctx: StatContext, names: Sequence[str] | None = None, *, correct: bool = True) -> StatisticsSet:
    """Run the chosen statistics on ``result``.

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        ctx: The qrels, measures and method settings.
        names: Statistics by name or alias (``None``: :data:`DEFAULT_STATISTICS`).
        correct: Correct the randomization tests' p-values across this result's tests with
            ``ctx.correction``.

    Returns:
        The records of every statistic.

    Raises:
        ConfigError: A statistic needs the qrels and ``ctx`` has none.
    """
    from sourcebias.core.errors import ConfigError

    stats = resolve_statistics(names)
    if any(s.needs_qrels for s in stats) and ctx.qrels is None:
        raise ConfigError(f"{', '.join(s.name for s in stats if s.needs_qrels)} need the split's qrels (pass the dataset)")
    out = StatisticsSet(stats)
    for s in stats:
        out.records[s.name] = s.compute(result, ctx)
    if correct:
        correct_tests(out.records.get("paired_tests", []), ctx.correction)
    return out


def correct_tests(records: Sequence[Any], method: str) -> None:
    """Set ``p_adjusted`` and ``correction`` of paired-test records, corrected across them.

    Args:
        records: Records with ``p_randomization`` (:class:`~sourcebias.evaluation.stats.paired_tests.PairedTestsRecord`).
        method: A multiple-testing correction of :data:`CORRECTIONS` (statsmodels' ``multipletests``).
    """
    adjusted = adjust_pvalues([r.p_randomization for r in records], method)
    for r, p in zip(records, adjusted.tolist()):
        r.p_adjusted, r.correction = p, CORRECTIONS[method]


__all__ = [
    "CORRECTIONS",
    "DEFAULT_STATISTICS",
    "SIGNIFICANCE",
    "Column",
    "Record",
    "StatContext",
    "Statistic",
    "StatisticsSet",
    "adjust_pvalues",
    "compute_statistics",
    "correct_tests",
    "get_statistic",
    "register_statistic",
    "resolve_statistics",
    "statistic_kinds",
]
