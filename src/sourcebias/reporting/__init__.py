"""Reporting: the papers' tables (terminal, Markdown, LaTeX) and output folders. Renders results;
computes nothing."""

from sourcebias.reporting.outputs import evaluation_manifest, write_evaluation, write_summaries
from sourcebias.reporting.tables import latex_table, markdown_table, rich_table, summary_table

__all__ = ["evaluation_manifest", "latex_table", "markdown_table", "rich_table", "summary_table", "write_evaluation", "write_summaries"]
