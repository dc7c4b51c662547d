"""Reporting: the jobs that write an evaluation's folder and a grid's report.

The evaluation job (:mod:`.evaluation_job`: ``sourcebias evaluate`` as a call), the folder it writes
(:mod:`.outputs`), its figure (:mod:`.evaluation_figure`) and the grid report (:mod:`.grid_report`)
sit above :mod:`sourcebias.experiments`; the table model and its renderers they use are
:mod:`sourcebias.report`, below every layer that prints. The names that moved there still import
from here for one release, with a ``DeprecationWarning``.
"""

from sourcebias.core.moved import moved
from sourcebias.reporting.outputs import evaluation_manifest, write_evaluation, write_summaries

__all__ = ["evaluation_manifest", "write_evaluation", "write_summaries"]

_MOVED = {
    "EVALUATE_STATISTICS": "sourcebias.report.tables",
    "Report": "sourcebias.report.model",
    "Table": "sourcebias.report.model",
    "cells_report": "sourcebias.report.tables",
    "latex_table": "sourcebias.report.tables",
    "markdown_table": "sourcebias.report.tables",
    "result_report": "sourcebias.report.tables",
    "rich_table": "sourcebias.report.tables",
    "summary_table": "sourcebias.report.tables",
    "to_csv": "sourcebias.report.render",
    "to_html": "sourcebias.report.render",
    "to_latex": "sourcebias.report.render",
    "to_markdown": "sourcebias.report.render",
    "to_rich": "sourcebias.report.render",
}
__getattr__ = moved(__name__, _MOVED)
