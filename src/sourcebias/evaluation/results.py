"""Results of the source-bias protocol: per-query values, means, Relative Δ, tidy tables."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.evaluation.measures import Measure
from sourcebias.retrieval.run import Run

MIXED = "mixed"
ALL = "all"
RELATIVE_DELTA = "relative_delta"
METRIC_COLUMNS = ("retriever", "corpus", "target", "metric", "value")
PER_QUERY_COLUMNS = ("retriever", "corpus", "target", "query_id", "metric", "value")


def relative_delta(human: float, llm: float) -> float:
    """Relative Δ in percent: ``(human - llm) / ((human + llm) / 2) * 100``.

    Positive: human-written documents ranked higher; negative: LLM-generated ones (source
    bias). Undefined (NaN) when both are 0.
    """
    denom = (human + llm) / 2.0
    if denom == 0 or math.isnan(denom):
        return float("nan")
    return (human - llm) / denom * 100.0


@dataclass
class EvaluationResult:
    """Everything the protocol measured, for one dataset and several retrievers.

    ``per_query[(retriever, corpus, target, metric)]`` is a vector over :attr:`query_ids`.
    ``corpus`` is ``"mixed"`` or a source name (a sole corpus); ``target`` is a source name or
    ``"all"``; ``metric`` is a measure (``"NDCG@1"``) or ``"Share@k"`` (then ``target`` is the
    source whose share it is).
    """

    dataset: dict[str, Any]
    human_source: str
    sources: list[str]
    measures: list[Measure]
    share_cutoffs: list[int]
    query_ids: list[str]
    parameters: dict[str, Any] = field(default_factory=dict)
    per_query: dict[tuple[str, str, str, str], np.ndarray] = field(default_factory=dict)
    retrievers: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    run_info: dict[str, dict[str, Any]] = field(default_factory=dict)

    # -- lookups ----------------------------------------------------------------------------
    @property
    def other_sources(self) -> list[str]:
        return [s for s in self.sources if s != self.human_source]

    @property
    def retriever_names(self) -> list[str]:
        return list(self.retrievers)

    def values(self, retriever: str, corpus: str, target: str, metric: str | Measure) -> np.ndarray:
        return self.per_query[(retriever, corpus, target, str(metric))]

    def mean(self, retriever: str, corpus: str, target: str, metric: str | Measure) -> float:
        v = self.values(retriever, corpus, target, metric)
        v = v[~np.isnan(v)]
        return float(v.mean()) if len(v) else float("nan")

    def relative_delta(self, retriever: str, metric: str | Measure, other: str | None = None) -> float:
        """Relative Δ (percent) of a measure on the mixed corpus, human target vs ``other``."""
        other = other or self._single_other()
        return relative_delta(self.mean(retriever, MIXED, self.human_source, metric), self.mean(retriever, MIXED, other, metric))

    def relative_delta_target(self, other: str) -> str:
        """The ``target`` label of Relative Δ rows: ``relative_delta`` with one LLM source,
        ``relative_delta:<source>`` with several."""
        return RELATIVE_DELTA if len(self.other_sources) == 1 else f"{RELATIVE_DELTA}:{other}"

    def _single_other(self) -> str:
        others = self.other_sources
        if len(others) != 1:
            raise ValueError(f"several LLM sources ({', '.join(others)}): name the one to compare with")
        return others[0]

    @property
    def has_mixed(self) -> bool:
        return any(k[1] == MIXED for k in self.per_query)

    # -- tidy tables ------------------------------------------------------------------------
    def metric_rows(self) -> Iterator[dict[str, Any]]:
        """Rows of ``metrics.csv``: means (fractions 0-1), Share@k (fractions) and Relative Δ
        (percent), one row per ``(retriever, corpus, target, metric)``."""
        for (retriever, corpus, target, metric) in self.per_query:
            yield {"retriever": retriever, "corpus": corpus, "target": target, "metric": metric, "value": self.mean(retriever, corpus, target, metric)}
        if self.human_source not in self.sources:
            return
        for retriever in self.retrievers:
            if (retriever, MIXED, self.human_source, str(self.measures[0])) not in self.per_query:
                continue
            for other in self.other_sources:
                for m in self.measures:
                    yield {
                        "retriever": retriever,
                        "corpus": MIXED,
                        "target": self.relative_delta_target(other),
                        "metric": str(m),
                        "value": self.relative_delta(retriever, m, other),
                    }

    def per_query_rows(self) -> Iterator[dict[str, Any]]:
        for (retriever, corpus, target, metric), values in self.per_query.items():
            for q, v in zip(self.query_ids, values.tolist()):
                yield {"retriever": retriever, "corpus": corpus, "target": target, "query_id": q, "metric": metric, "value": v}

    def to_pandas(self, per_query: bool = False):
        """The metrics (or per-query values) as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        rows = self.per_query_rows() if per_query else self.metric_rows()
        return pd.DataFrame(list(rows), columns=list(PER_QUERY_COLUMNS if per_query else METRIC_COLUMNS))

    def write_metrics_csv(self, path: str | Path) -> None:
        _write_csv(path, METRIC_COLUMNS, self.metric_rows())

    def write_per_query_csv(self, path: str | Path) -> None:
        _write_csv(path, PER_QUERY_COLUMNS, self.per_query_rows())


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(round(v, 10))
    return v


def _write_csv(path: str | Path, columns: tuple[str, ...], rows) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt(r[c]) for c in columns])


def read_metrics_csv(path: str | Path) -> list[dict[str, Any]]:
    """Read a ``metrics.csv`` back (values as floats)."""
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return [{**r, "value": float(r["value"])} for r in csv.DictReader(fh)]
