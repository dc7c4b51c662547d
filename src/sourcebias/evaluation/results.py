"""Results of the source-bias protocol: per-query values, means, Relative Δ — the data model.

An :class:`EvaluationResult` is what :func:`~sourcebias.evaluation.protocol.evaluate` returns and
what an ``evaluate`` output folder holds. This module is what a result *is* and what can be asked
of it (values, means, Relative Δ, tidy rows); its files are :mod:`.result_io`'s (written by
:meth:`EvaluationResult.save`, the one write path, and read back by :meth:`EvaluationResult.load`
or :func:`load_result` into an equal object), the ranx and ir_measures exports :mod:`.export`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.moved import moved
from sourcebias.evaluation.keys import ALL, FORMAT_VERSION, METRIC_COLUMNS, MIXED, PER_QUERY_COLUMNS, RELATIVE_DELTA, Key, RunKey, slug
from sourcebias.evaluation.measures import Measure, parse_measure
from sourcebias.retrieval.run import Run

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; annotations are never evaluated

    from sourcebias.data.dataset import Dataset
    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.export import RanxExport
    from sourcebias.evaluation.result_io import WriteOptions


def relative_delta(human: float, llm: float) -> float:
    """Relative Δ in percent: ``(human - llm) / ((human + llm) / 2) * 100``.

    Dai et al., KDD 2024, §3.1 (and Cocktail, Findings of ACL 2024, §4). Positive: human-written
    documents ranked higher; negative: LLM-generated ones (source bias).

    Args:
        human: The measure's mean for the human target.
        llm: The measure's mean for the LLM target, on the same ranking.

    Returns:
        Relative Δ in percent; NaN when both are 0 (undefined).
    """
    denom = (human + llm) / 2.0
    if denom == 0 or math.isnan(denom):
        return float("nan")
    return (human - llm) / denom * 100.0


@dataclass(eq=False)
class EvaluationResult:
    """Everything the protocol measured, for one dataset and several retrievers (or runs).

    ``per_query[Key(retriever, setting, target, measure)]`` is a vector over :attr:`query_ids`.
    ``runs[RunKey(retriever, setting)]`` are the rankings. The statistics (tests, CIs) are
    computed from it by :mod:`sourcebias.evaluation.stats`, not stored in it.
    """

    dataset: dict[str, Any]
    human_source: str
    sources: list[str]
    measures: list[Measure]
    query_ids: list[str]
    parameters: dict[str, Any] = field(default_factory=dict)
    per_query: dict[Key, np.ndarray] = field(default_factory=dict)
    retrievers: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[RunKey, Run] = field(default_factory=dict)
    timings: dict[RunKey, dict[str, float]] = field(default_factory=dict)
    run_info: dict[RunKey, dict[str, Any]] = field(default_factory=dict)

    # -- lookups ----------------------------------------------------------------------------
    @property
    def other_sources(self) -> list[str]:
        """The sources other than the human one (the LLM twins)."""
        return [s for s in self.sources if s != self.human_source]

    @property
    def retriever_names(self) -> list[str]:
        """The retrievers' (and given runs') names, in order."""
        return list(self.retrievers)

    @property
    def target_measures(self) -> list[Measure]:
        """The measures that need relevance labels (NDCG, MAP, ...), in order."""
        return [m for m in self.measures if m.scope == "target"]

    @property
    def settings(self) -> list[str]:
        """The corpus settings evaluated (``mixed``, then each sole source), in order."""
        return list(dict.fromkeys(k.setting for k in self.per_query))

    def values(self, retriever: str, corpus: str, target: str, metric: str | Measure) -> np.ndarray:
        """The per-query values of one measure, aligned with :attr:`query_ids`.

        Args:
            retriever: A retriever's (or run's) name.
            corpus: The corpus setting (``mixed``, or a source's name for its sole corpus).
            target: The target (a source, or ``all``) or, for a source measure, the source.
            metric: The measure, e.g. ``"NDCG@3"`` (any spelling :func:`~sourcebias.evaluation.measures.parse_measure` reads).

        Returns:
            One value per query (NaN where undefined).

        Raises:
            ConfigError: No such values; the error names what the result holds.
        """
        key = Key(retriever, corpus, target, str(parse_measure(metric)))
        try:
            return self.per_query[key]
        except KeyError:
            raise ConfigError(self._missing(key)) from None

    def _missing(self, key: Key) -> str:
        have = {f: sorted({getattr(k, f) for k in self.per_query}) for f in Key._fields}
        for f, v in zip(Key._fields, key):
            if v not in have[f]:
                return f"no {f} '{v}' in this result; {f}s: {', '.join(have[f])}"
        return f"no values for {tuple(key)} in this result"

    def mean(self, retriever: str, corpus: str, target: str, metric: str | Measure) -> float:
        """The mean of one measure over the queries where it is defined.

        Args:
            retriever: A retriever's (or run's) name.
            corpus: The corpus setting (``mixed``, or a source's name).
            target: The target (a source, or ``all``) or, for a source measure, the source.
            metric: The measure, e.g. ``"NDCG@3"``.

        Returns:
            The mean (a fraction 0-1), NaN when no query has a value.

        Raises:
            ConfigError: No such values.
        """
        v = self.values(retriever, corpus, target, metric)
        v = v[~np.isnan(v)]
        return float(v.mean()) if len(v) else float("nan")

    def relative_delta(self, retriever: str, metric: str | Measure, other: str | None = None) -> float:
        """Relative Δ (percent) of a measure on the mixed corpus, human target vs ``other``.

        Args:
            retriever: A retriever's (or run's) name.
            metric: A measure with labels, e.g. ``"NDCG@3"``.
            other: The LLM source (may be left out when there is one).

        Returns:
            :func:`relative_delta` of the two targets' means.

        Raises:
            ConfigError: Several LLM sources and no ``other``, or no such values.
        """
        other = other or self._single_other()
        return relative_delta(self.mean(retriever, MIXED, self.human_source, metric), self.mean(retriever, MIXED, other, metric))

    def relative_delta_target(self, other: str) -> str:
        """The ``target`` label of Relative Δ rows.

        Args:
            other: The LLM source.

        Returns:
            ``relative_delta`` with one LLM source, ``relative_delta:<source>`` with several.
        """
        return RELATIVE_DELTA if len(self.other_sources) == 1 else f"{RELATIVE_DELTA}:{other}"

    def _single_other(self) -> str:
        others = self.other_sources
        if len(others) != 1:
            raise ConfigError(f"several LLM sources ({', '.join(others)}): name the one to compare with")
        return others[0]

    @property
    def has_mixed(self) -> bool:
        """Whether the result holds the mixed corpus setting."""
        return any(k.setting == MIXED for k in self.per_query)

    def __repr__(self) -> str:
        name = self.dataset.get("name", "?")
        split = self.dataset.get("split", "?")

        def n(count: int, noun: str, plural: str = "") -> str:
            return f"{count} {noun if count == 1 else plural or noun + 's'}"

        return (
            f"EvaluationResult({name} {split}: {n(len(self.retrievers), 'retriever')} x {n(len(self.settings), 'setting')}, "
            f"{n(len(self.query_ids), 'query', 'queries')}, {n(len(self.measures), 'measure')})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvaluationResult):
            return NotImplemented
        simple = ("dataset", "human_source", "sources", "measures", "query_ids", "parameters", "retrievers", "timings", "run_info")
        if any(getattr(self, f) != getattr(other, f) for f in simple):
            return False
        if list(self.per_query) != list(other.per_query):
            return False
        if any(not np.array_equal(a, other.per_query[k], equal_nan=True) for k, a in self.per_query.items()):
            return False
        return self.runs.keys() == other.runs.keys() and all(r == other.runs[k] for k, r in self.runs.items())

    __hash__ = None  # type: ignore[assignment]  # unhashable (it defines __eq__); typeshed types object.__hash__ as a method

    # -- tidy tables ------------------------------------------------------------------------
    def metric_rows(self) -> Iterator[dict[str, Any]]:
        """Rows of ``metrics.csv``, one per ``(retriever, corpus, target, metric)``.

        Yields:
            ``{"retriever", "corpus", "target", "metric", "value"}``: means (fractions 0-1), Share@k
            (fractions), then Relative Δ (percent) of every measure with labels.
        """
        for k in self.per_query:
            yield {"retriever": k.retriever, "corpus": k.setting, "target": k.target, "metric": k.measure, "value": self.mean(*k)}
        if self.human_source not in self.sources:
            return
        for retriever in self.retrievers:
            for other in self.other_sources:
                for m in self.target_measures:
                    if Key(retriever, MIXED, self.human_source, str(m)) not in self.per_query or Key(retriever, MIXED, other, str(m)) not in self.per_query:
                        continue
                    yield {
                        "retriever": retriever,
                        "corpus": MIXED,
                        "target": self.relative_delta_target(other),
                        "metric": str(m),
                        "value": self.relative_delta(retriever, m, other),
                    }

    def per_query_rows(self) -> Iterator[dict[str, Any]]:
        """Rows of the per-query values, one per ``(retriever, corpus, target, query, metric)``.

        Yields:
            ``{"retriever", "corpus", "target", "query_id", "metric", "value"}``.
        """
        for k, values in self.per_query.items():
            for q, v in zip(self.query_ids, values.tolist()):
                yield {"retriever": k.retriever, "corpus": k.setting, "target": k.target, "query_id": q, "metric": k.measure, "value": v}

    def to_pandas(self, per_query: bool = False) -> pd.DataFrame:
        """The metrics (or per-query values) as a pandas DataFrame (needs pandas).

        Args:
            per_query: The per-query values instead of the means.

        Returns:
            A frame with the columns of ``metrics.csv`` (or of the per-query file).
        """
        import pandas as pd

        rows = self.per_query_rows() if per_query else self.metric_rows()
        return pd.DataFrame(list(rows), columns=list(PER_QUERY_COLUMNS if per_query else METRIC_COLUMNS))

    # -- ranx and ir_measures (the ecosystem extra; see .export) ----------------------------
    def to_ranx(self, dataset: Dataset | None = None) -> RanxExport:
        """The runs and masked judgements as ranx objects (the ``ecosystem`` extra).

        Args:
            dataset: The loaded :class:`~sourcebias.data.Dataset` that was evaluated (its judgements
                after the orphan rule); by default it is loaded again from ``self.dataset`` and checked
                to hold the same judgements.

        Returns:
            A :class:`~sourcebias.evaluation.export.RanxExport`: ``runs[(retriever, setting)]``
            (``ranx.Run``, tie-resolved scores) and ``qrels[target]`` (masked ``ranx.Qrels``).
        """
        from sourcebias.evaluation.export import to_ranx

        return to_ranx(self, self._judgements(dataset), all_target=ALL)

    def to_ir_measures(self, retriever: str, setting: str, target: str) -> list[Any]:
        """Per-query values of the target measures as ir_measures records.

        Args:
            retriever: A retriever's (or run's) name.
            setting: The corpus setting.
            target: The target.

        Returns:
            ``ir_measures.Metric(query_id, measure, value)`` records, one per query and measure.
        """
        from sourcebias.evaluation.export import ir_measures_metrics

        return ir_measures_metrics(self, retriever, setting, target)

    def to_ir_measures_frame(self) -> pd.DataFrame:
        """Per-query values of the target measures as a DataFrame.

        Returns:
            Columns ``retriever, corpus, target, query_id, measure, value`` (``measure`` as
            ir_measures names it).
        """
        from sourcebias.evaluation.export import ir_measures_frame

        return ir_measures_frame(self)

    def dataset_options(self) -> tuple[DatasetOptions, str]:
        """How the evaluated dataset was loaded.

        Returns:
            ``(options, note)``: a :class:`~sourcebias.data.options.DatasetOptions` with this result's
            sources, and a note when the result predates that record (defaults were assumed; see
            :func:`~sourcebias.data.options.recorded_options`), else ``""``.
        """
        from sourcebias.data.options import recorded_options

        return recorded_options(self.dataset, self.parameters, sources=self.sources)

    def load_dataset(self, path: str | Path | None = None) -> Dataset:
        """The evaluated dataset, loaded again with the options it was evaluated with.

        Args:
            path: Where it is now (default: the recorded path, else its registered name, e.g.
                ``nq-utd``; for an ``irds:`` dataset, its id with the recorded twins).

        Returns:
            The :class:`~sourcebias.data.Dataset`; a result that predates the record of its
            loading options says so in ``dataset.report`` (its notes).

        Raises:
            ConfigError: The result records no path and none is given.
        """
        from sourcebias.data.dataset import load_dataset

        options, note = self.dataset_options()
        ds = self.dataset
        where: str | Path | None = path if path is not None else ds.get("path")
        if path is None and ds.get("registered") and not Path(str(where)).exists():
            where = ds["registered"]
        if path is None and ds.get("layout") == "irds":
            where = ds["sources"][self.human_source]["file"]
        if where is None:
            raise ConfigError("the result records no path of its dataset: give load_dataset(path=...) the dataset's folder")
        dataset = load_dataset(where, options)
        if note:
            dataset.report.notes_extra.append(note)
        return dataset

    def _judgements(self, dataset: Any) -> Any:
        if dataset is None:
            dataset = self.load_dataset()
        got, want = dataset.qrels.n_judgements, self.dataset.get("judgements")
        if want is not None and got != want:
            hint = f" ({self.dataset_options()[1]})" if self.dataset_options()[1] else ""
            raise ConfigError(
                f"the dataset holds {got} judgements, the evaluated one held {want}: pass "
                f"the dataset that was evaluated (same split, sources, orphan rule){hint}"
            )
        return dataset.qrels

    # -- the artifact (written and read by .result_io) --------------------------------------
    def save(
        self,
        out: str | Path | Any,
        *,
        overwrite: bool = False,
        nested: bool = False,
        render: Callable[[EvaluationResult, Path], Any] | None = None,
        **options: Unpack[WriteOptions],
    ) -> Path:
        """Write the result as an output folder that :meth:`load` reads back: the one write path of a result.

        The folder is claimed before anything is written (refused if it holds another run's results,
        unless ``overwrite``), filled in a staging folder (the result's files, ``render``'s files, and
        a manifest listing every file with its checksum) and moved into place whole.

        Args:
            out: A path (claimed here), or an :class:`~sourcebias.core.artifacts.OutputFolder`
                claimed before any work.
            overwrite: Replace the results of an earlier run at ``out``.
            nested: ``out`` is a folder inside an output folder claimed earlier (e.g. the
                before/after evaluation of ``cdc fit``): written in place with its own manifest, not
                claimed.
            render: Adds files (e.g. the summary tables of :mod:`sourcebias.study.outputs`) to the folder
                before the manifest, so that they are listed in it.
            **options: See :class:`~sourcebias.evaluation.artifact.WriteOptions` (``write_runs``,
                ``format="parquet"``, ``timings``, ``command``, ``manifest_extra``).

        Returns:
            The folder's path.

        Raises:
            OutputError: ``out`` cannot be written (see
                :meth:`~sourcebias.core.artifacts.OutputFolder.claim`).
            ConfigError: An unknown ``format``.
            TypeError: An unknown keyword.
        """
        from sourcebias.evaluation.artifact import save_folder

        return save_folder(self, out, overwrite=overwrite, nested=nested, render=render, **options)

    @classmethod
    def load(cls, folder: str | Path, *, dataset: Any = None, runs: bool = True) -> EvaluationResult:
        """Read a result written by :meth:`save` (an ``evaluate`` output folder): the one loader.

        Runs are read over a corpus of document keys only (no texts), built from ``runs/docnos.tsv``;
        pass ``dataset`` to bind them to its corpus instead, with texts.

        Args:
            folder: The output folder.
            dataset: A loaded :class:`~sourcebias.data.Dataset` to bind the runs to.
            runs: Read the runs too.

        Returns:
            The result.

        Raises:
            OutputError: ``folder`` is no sourcebias output folder.
            DataError: A file is missing or malformed (named, with the line), or of an unsupported
                format version.
        """
        from sourcebias.evaluation.result_io import read_result

        result: EvaluationResult = read_result(cls, folder, dataset=dataset, runs=runs)
        return result


def load_result(folder: str | Path, **kwargs: Any) -> EvaluationResult:
    """Load an ``evaluate`` output folder (see :meth:`EvaluationResult.load`).

    Args:
        folder: The output folder.
        **kwargs: ``dataset`` and ``runs``, as :meth:`EvaluationResult.load` takes them.

    Returns:
        The result.
    """
    return EvaluationResult.load(folder, **kwargs)


__all__ = [
    "ALL",
    "FORMAT_VERSION",
    "METRIC_COLUMNS",
    "MIXED",
    "PER_QUERY_COLUMNS",
    "RELATIVE_DELTA",
    "EvaluationResult",
    "Key",
    "RunKey",
    "load_result",
    "relative_delta",
    "slug",
]

_MOVED = {"read_metrics_csv": "sourcebias.evaluation.result_io"}
__getattr__ = moved(__name__, _MOVED)
