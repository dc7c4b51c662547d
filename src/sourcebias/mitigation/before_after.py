"""Before/after evaluation of a mitigation: on which data, the evaluation itself and its table.

A fit (CDC's β̂₂, a projection direction) judged on the data it was fitted on flatters itself,
so the evaluation is on other data by default: :func:`evaluation_target` resolves it from the
calibration data and the user's choices, refuses an evaluation on the calibration data unless
it is asked for (``in_sample=True``), and labels it (``"held-out split"``, ``"other dataset"``
or ``"in-sample"``); the label goes into the table's title, the manifest and the fit.
:func:`evaluate_before_after` runs the protocol for the system before and after (ties and tests
seeded), :func:`before_after_table` gives the table, and :func:`before_after_report` the one
report the command line prints and writes into the evaluation's ``summary.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError

#: the split of another dataset evaluated when none is named (as ``sourcebias evaluate``)
OTHER_DATASET_SPLIT = "test"
#: the split of the calibration dataset evaluated when none is named
HELD_OUT_SPLIT = "dev"


@dataclass(frozen=True)
class EvaluationTarget:
    """Where a before/after evaluation runs, and how it relates to the calibration data."""

    dataset: Path
    split: str
    label: str  # "held-out split", "other dataset" or "in-sample"

    @property
    def in_sample(self) -> bool:
        return self.label == "in-sample"

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": str(self.dataset), "split": self.split, "label": self.label, "in_sample": self.in_sample}


def _same_folder(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def evaluation_target(
    calibration: str | Path, split: str, *, eval_dataset: str | Path | None = None, eval_split: str | None = None, in_sample: bool = False
) -> EvaluationTarget:
    """The evaluation data of a fit calibrated on ``calibration`` (a dataset folder), ``split``.

    * ``in_sample``: the calibration data itself, labelled ``in-sample`` (``eval_dataset`` /
      ``eval_split`` must then be absent or name it);
    * ``eval_dataset`` (another folder): its ``eval_split`` (default ``test``), ``other dataset``;
    * otherwise the calibration dataset's ``eval_split`` (default ``dev``), ``held-out split``.

    Evaluating on the calibration split without ``in_sample`` is refused with a
    :class:`ConfigError` that says what to give instead.
    """
    if in_sample:
        if (eval_dataset is not None and not _same_folder(eval_dataset, calibration)) or (eval_split is not None and eval_split != split):
            raise ConfigError(
                f"--in-sample evaluates on the calibration data ({calibration}, split {split}); leave out --eval-dataset and --eval-split, or drop --in-sample"
            )
        return EvaluationTarget(Path(calibration), split, "in-sample")
    if eval_dataset is not None and not _same_folder(eval_dataset, calibration):
        return EvaluationTarget(Path(eval_dataset), eval_split or OTHER_DATASET_SPLIT, "other dataset")
    target_split = eval_split or HELD_OUT_SPLIT
    if target_split == split:
        raise ConfigError(
            f"the before/after evaluation would run on the calibration data ({calibration}, split {split}), where the fit flatters itself: "
            f"name another split (--eval-split SPLIT) or dataset (--eval-dataset DIR), or pass --in-sample to evaluate on the calibration data "
            f"anyway (labelled in-sample), or --no-eval"
        )
    return EvaluationTarget(Path(calibration), target_split, "held-out split")


def evaluate_before_after(dataset: Any, systems: Sequence[Any], *, seed: int = 0, measures: Sequence[Any] | None = None) -> Any:
    """The evaluation protocol for the systems before and after a mitigation (NDCG, MAP and
    Share at 1, 3, 5 and 10 by default), ties seeded with ``seed``; the paired tests are the
    ``paired_tests`` statistic of its report (:func:`sourcebias.report.tables.result_report`)."""
    from sourcebias.evaluation import evaluate
    from sourcebias.evaluation.measures import measure_grid

    measures = list(measures) if measures is not None else measure_grid(["NDCG", "MAP", "Share"], [1, 3, 5, 10])
    return evaluate(dataset, list(systems), measures=measures, seed=seed)


def before_after_table(result: Any, names: Sequence[str], measure: str) -> Any:
    """Per system: ``measure`` (percent) on all targets, the human and the (first) LLM target in
    the mixed corpus, Relative Δ (percent; > 0: human-written ranked higher), and on the
    human-only corpus. A value the result does not hold is NaN."""
    import pandas as pd

    from sourcebias.evaluation.results import ALL, MIXED, Key

    human = result.human_source
    other = result.other_sources[0] if result.other_sources else None

    rows = []
    for n in names:
        cells = {
            "all": (n, MIXED, ALL, measure),
            "human": (n, MIXED, human, measure),
            "LLM": (n, MIXED, other, measure),
            "human only": (n, human, human, measure),
        }
        row: dict[str, Any] = {"system": n}
        for col, key in cells.items():
            row[col] = result.mean(*key) * 100 if key[2] is not None and Key(*key) in result.per_query else float("nan")
        row["Rel Δ"] = result.relative_delta(n, measure, other) if other else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=["system", "all", "human", "LLM", "Rel Δ", "human only"])


def before_after_report(result: Any, names: Sequence[str], measure: str, label: str) -> Any:
    """The report of a before/after evaluation: the before/after table first (:func:`before_after_table`),
    then the evaluation's own report with the paired tests
    (:func:`~sourcebias.report.tables.result_report`), printed and written alike."""
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table
    from sourcebias.report.tables import result_report

    frame = before_after_table(result, names, measure)
    kinds = {"system": "text", "Rel Δ": "delta"}
    cols = [Column(c, c, kinds.get(c, "num"), 1) for c in frame.columns]
    title = f"{result.dataset.get('name')} ({result.dataset.get('split')}, {label}), {measure}"
    table = Table("before_after", title, cols, frame.to_dict("records"), "percent; Rel Δ > 0: human-written ranked higher, < 0: LLM-generated ranked higher")
    report = result_report(result, statistics=("paired_tests",))
    report.tables.insert(0, table)
    return report


def projection_target(calibration: Sequence[str | Path], target: str | Path, split: str) -> EvaluationTarget:
    """The evaluation data of a projection fitted on the ``calibration`` datasets' documents:
    ``target`` (``split``), refused when it is one of them (the direction must come from other
    data; a projection is fitted on every document of a dataset, whatever the split)."""
    if any(_same_folder(c, target) for c in calibration):
        raise ConfigError(f"the target {target} is among the calibration datasets: leave it out (the direction must come from other data)")
    return EvaluationTarget(Path(target), split, "other dataset")


def check_distinct_corpora(calibration: Sequence[Any], target: Any) -> None:
    """Refuse a target whose human corpus is the same (same ids and texts) as a calibration
    dataset's — a copy of a calibration dataset in another folder."""
    import hashlib

    def digest(ds: Any) -> str:
        c = ds.corpus
        h = hashlib.sha256()
        for i in sorted(c.positions_of_source(ds.human_source).tolist(), key=lambda i: c.doc_ids[i]):
            h.update(f"{c.doc_ids[i]}\t{c.texts[i]}\n".encode())
        return h.hexdigest()

    mine = digest(target)
    for ds in calibration:
        if digest(ds) == mine:
            raise ConfigError(
                f"the target {target.name} has the same human corpus as the calibration "
                f"dataset {ds.name}: leave it out (the direction must come from other data)"
            )
