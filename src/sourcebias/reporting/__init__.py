"""Reporting: the papers' tables (terminal, Markdown, LaTeX) and output folders."""

from sourcebias.reporting.outputs import docno_table, read_trec_run, slug, write_evaluation
from sourcebias.reporting.tables import latex_table, markdown_table, rich_table, summary_table

__all__ = ["docno_table", "latex_table", "markdown_table", "read_trec_run", "rich_table", "slug", "summary_table", "write_evaluation"]
