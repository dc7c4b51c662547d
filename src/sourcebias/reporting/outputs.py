"""Write an evaluation to an output folder: the result's files, the summary tables, the manifest.

Layout (see :mod:`sourcebias.evaluation.results` for the result's own files)::

    OUT/manifest.json          kind, inputs (with checksums), parameters, models, versions,
                               timings, and every file written (bytes, SHA-256)
    OUT/result.json, metrics.csv, per_query.csv, significance.csv (when tests were computed)
    OUT/summary.md, summary.tex   the printed table (rendered from the result)
    OUT/runs/<retriever>.<corpus>.trec, runs/docnos.tsv

In a run of the mixed corpus a document and its twin share a ``doc_id``, so the TREC ``docno``
is ``<source>/<doc_id>``; ``docnos.tsv`` lists ``docno, doc_id, source`` for every document,
so nobody has to take the name apart. The rank column is sourcebias' final order (ties broken
by the documented rule); ``trec_eval`` re-sorts equal scores by docno, so its figures can
differ from ours exactly where scores tie.

The folder is claimed before any work (:class:`~sourcebias.core.artifacts.OutputFolder`):
misuse is refused, two writers are refused, and the folder appears complete or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import OutputFolder
from sourcebias.evaluation.artifact import evaluation_manifest, write_result
from sourcebias.evaluation.results import EvaluationResult
from sourcebias.reporting.tables import latex_table, markdown_table

__all__ = ["evaluation_manifest", "write_evaluation", "write_summaries"]


def write_summaries(result: EvaluationResult, folder: str | Path) -> dict[str, Path]:
    """``summary.md`` and ``summary.tex`` (the printed table) into ``folder``."""
    from sourcebias.core.atomic import atomic_write_text

    folder = Path(folder)
    return {
        "summary": atomic_write_text(folder / "summary.md", markdown_table(result)),
        "summary_tex": atomic_write_text(folder / "summary.tex", latex_table(result)),
    }


def write_evaluation(
    result: EvaluationResult,
    out: str | Path | OutputFolder,
    *,
    write_runs: bool = True,
    overwrite: bool = False,
    timings: dict[str, Any] | None = None,
    command: str = "evaluate",
    manifest_extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``result`` and its summary tables as an output folder; returns its path (see
    :func:`sourcebias.evaluation.artifact.write_result`)."""
    return write_result(result, out, write_runs=write_runs, overwrite=overwrite, timings=timings, command=command, manifest_extra=manifest_extra, render=write_summaries)
