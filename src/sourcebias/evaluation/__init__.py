"""The source-bias evaluation protocol.

Per-target measures, Relative Δ, source shares, tests; results as reloadable artifacts.
"""

from sourcebias.evaluation.measures import (
    DEFAULT_CUTOFFS,
    DEFAULT_MEASURES,
    Measure,
    MeasureKind,
    SourceMeasureKind,
    TrecMeasureKind,
    measure_grid,
    measure_kinds,
    parse_measure,
    register_measure,
)
from sourcebias.evaluation.protocol import evaluate, score_run, target_qrels
from sourcebias.evaluation.result_io import read_metrics_csv
from sourcebias.evaluation.results import ALL, MIXED, RELATIVE_DELTA, EvaluationResult, Key, RunKey, load_result, relative_delta

__all__ = [
    "ALL",
    "DEFAULT_CUTOFFS",
    "DEFAULT_MEASURES",
    "MIXED",
    "RELATIVE_DELTA",
    "EvaluationResult",
    "Key",
    "Measure",
    "MeasureKind",
    "RunKey",
    "SourceMeasureKind",
    "TrecMeasureKind",
    "evaluate",
    "load_result",
    "measure_grid",
    "measure_kinds",
    "parse_measure",
    "read_metrics_csv",
    "register_measure",
    "relative_delta",
    "score_run",
    "target_qrels",
]
