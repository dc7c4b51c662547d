"""Reporting.

One report model (:mod:`.report`) for a single evaluation and a grid, rendered by one renderer
(:mod:`.render`) to the terminal, Markdown, LaTeX, CSV and HTML; output folders. Renders results;
the statistics are computed by :mod:`sourcebias.evaluation.stats`.
"""

from sourcebias.reporting.outputs import evaluation_manifest, write_evaluation, write_summaries
from sourcebias.reporting.render import to_csv, to_html, to_latex, to_markdown, to_rich
from sourcebias.reporting.report import EVALUATE_STATISTICS, Report, Table, cells_report, result_report
from sourcebias.reporting.tables import latex_table, markdown_table, rich_table, summary_table

__all__ = [
    "EVALUATE_STATISTICS",
    "Report",
    "Table",
    "cells_report",
    "evaluation_manifest",
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
    "write_evaluation",
    "write_summaries",
]
