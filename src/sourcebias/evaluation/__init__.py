"""The source-bias evaluation protocol: per-target metrics, Relative Δ, source shares, tests."""

from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES, Measure, measure_grid, parse_measure
from sourcebias.evaluation.protocol import evaluate, score_run, source_shares, target_qrels
from sourcebias.evaluation.results import ALL, MIXED, RELATIVE_DELTA, EvaluationResult, read_metrics_csv, relative_delta
from sourcebias.evaluation.significance import paired_randomization_test, paired_t_test, source_bias_tests

__all__ = [
    "ALL",
    "DEFAULT_CUTOFFS",
    "DEFAULT_MEASURES",
    "MIXED",
    "RELATIVE_DELTA",
    "EvaluationResult",
    "Measure",
    "evaluate",
    "measure_grid",
    "paired_randomization_test",
    "paired_t_test",
    "parse_measure",
    "read_metrics_csv",
    "relative_delta",
    "score_run",
    "source_bias_tests",
    "source_shares",
    "target_qrels",
]
