"""The one report model and its renderers, below every layer that prints.

:class:`~sourcebias.report.model.Report` (tables of typed columns, captions, notes, figures) is what
an evaluation, a grid, an analysis, an audit, a power analysis and a simulation show;
:mod:`.render` writes it to the terminal, Markdown, LaTeX, CSV and a self-contained HTML page;
:mod:`.tables` builds the reports of an evaluation result and of a grid's cells; :mod:`.axes` holds
the figures' shared axis rules. The jobs that write those folders sit above: the evaluation job and
its folder in :mod:`sourcebias.study`, the grid report in :mod:`sourcebias.experiments.grid_report`.
"""

from sourcebias.report.model import Report, Table
from sourcebias.report.render import to_csv, to_html, to_latex, to_markdown, to_rich
from sourcebias.report.tables import EVALUATE_STATISTICS, cells_report, latex_table, markdown_table, result_report, rich_table, summary_table

__all__ = [
    "EVALUATE_STATISTICS",
    "Report",
    "Table",
    "cells_report",
    "latex_table",
    "markdown_table",
    "result_report",
    "rich_table",
    "summary_table",
    "to_csv",
    "to_html",
    "to_latex",
    "to_markdown",
    "to_rich",
]
