"""Write an evaluation to an output folder: the result's files, the summary tables, the manifest.

Layout (see :mod:`sourcebias.evaluation.result_io` for the result's own files)::

    OUT/manifest.json          kind, inputs (with checksums), parameters, models, versions,
                               timings, and every file written (bytes, SHA-256)
    OUT/result.json, metrics.csv, per_query.csv
    OUT/summary.md, summary.tex   the printed report: the papers' table and the statistics
    OUT/statistics.csv         every field of the statistics (Relative Δ CI, tests, twin pref., ΔNDSR)
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

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sourcebias.core.artifacts import OutputFolder
from sourcebias.evaluation.artifact import evaluation_manifest
from sourcebias.evaluation.result_io import WriteOptions
from sourcebias.evaluation.results import EvaluationResult
from sourcebias.report.model import Report
from sourcebias.report.tables import result_report

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated at run time
    from typing_extensions import Unpack

__all__ = ["evaluation_manifest", "summary_renderer", "write_evaluation", "write_summaries"]


def write_summaries(result: EvaluationResult, folder: str | Path, report: Report | None = None) -> dict[str, Path]:
    """Write the summary files of ``result`` into ``folder``.

    ``summary.md`` and ``summary.tex`` (the report: the papers' table and, when ``report`` holds
    them, the statistics) and ``statistics.csv`` (every field of the statistics).

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        folder: Where to write.
        report: The report to render (default: the papers' table alone).

    Returns:
        What was written, by name (``summary``, ``summary_tex``, and the CSV files of the report).
    """
    from sourcebias.study.frame import write_summaries as write_report

    return write_report(report if report is not None else result_report(result, statistics=()), folder, csv=True)


def write_figure(result: EvaluationResult, folder: str | Path) -> dict[str, Path]:
    """Write ``figures/source_bias.png`` into ``folder``.

    See :func:`~sourcebias.study.figure.plot_source_bias`; nothing is drawn when the
    result has no mixed-corpus measure with labels. Without matplotlib (the ``analysis`` extra) the
    figure is not drawn, and ``figures/not-drawn.txt`` says so (never a silent gap).

    Args:
        result: The evaluation.
        folder: The output folder.

    Returns:
        ``{"figure": path}``, ``{"figure_note": path}`` or ``{}``.
    """
    from sourcebias.study.figure import FIGURE_FILE

    target = Path(folder) / FIGURE_FILE
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        return _figure_not_drawn(folder, "matplotlib is not installed (pip install 'sourcebias[analysis]')")
    from sourcebias.study.figure import plot_source_bias

    path = plot_source_bias(result, target)
    return {"figure": path} if path is not None else {}


def _figure_not_drawn(folder: str | Path, why: str) -> dict[str, Path]:
    """``figures/not-drawn.txt``: why the figure is missing and how to draw it from the folder."""
    from sourcebias.core.atomic import atomic_write_text
    from sourcebias.study.figure import FIGURE_FILE

    note = (
        f"{FIGURE_FILE.as_posix()} was not drawn: {why}. Draw it from this folder with "
        "sourcebias.study.figure.plot_source_bias(sourcebias.evaluation.load_result(FOLDER), "
        f"'FOLDER/{FIGURE_FILE.as_posix()}').\n"
    )
    (Path(folder) / FIGURE_FILE.parent).mkdir(parents=True, exist_ok=True)
    return {"figure_note": atomic_write_text(Path(folder) / FIGURE_FILE.parent / "not-drawn.txt", note)}


def write_evaluation(
    result: EvaluationResult,
    out: str | Path | OutputFolder,
    *,
    overwrite: bool = False,
    report: Report | None = None,
    figure: bool = True,
    **options: Unpack[WriteOptions],
) -> Path:
    """Write ``result`` and its report as an output folder, summary tables and figure included.

    This is :meth:`EvaluationResult.save <sourcebias.evaluation.results.EvaluationResult.save>` (the
    one write path) with the summaries and the figure rendered into it (:func:`summary_renderer`).

    Args:
        result: the evaluation.
        out: a path (claimed here) or an :class:`OutputFolder` claimed before any work.
        overwrite: replace the results of an earlier run at ``out``.
        report: the report rendered into ``summary.md``/``summary.tex``/``statistics.csv``, e.g.
            :func:`~sourcebias.report.tables.result_report` with the dataset's qrels; by
            default the result's own.
        figure: draw ``figures/source_bias.png`` (``False``: ``figures/not-drawn.txt`` says it
            was left out on request and how to draw it from the folder).
        **options: see :class:`~sourcebias.evaluation.result_io.WriteOptions`.

    Returns:
        The folder's path.
    """
    return result.save(out, overwrite=overwrite, render=summary_renderer(report, figure=figure), **options)


def summary_renderer(report: Report | None = None, *, figure: bool = True) -> Callable[[EvaluationResult, Path], dict[str, Path]]:
    """The ``render`` callback of :meth:`EvaluationResult.save` that writes the summaries and the figure.

    Args:
        report: The report rendered into ``summary.md``/``summary.tex``/``statistics.csv`` (by
            default the result's own papers' table).
        figure: Draw the figure (``False``: write ``figures/not-drawn.txt`` instead, which says so).

    Returns:
        ``render(result, folder)``: :func:`write_summaries` and :func:`write_figure`.
    """

    def render(res: EvaluationResult, folder: Path) -> dict[str, Path]:
        drawn = write_figure(res, folder) if figure else _figure_not_drawn(folder, "left out on request (--no-figure)")
        return write_summaries(res, folder, report) | drawn

    return render
