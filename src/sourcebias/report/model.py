"""One report model for a single evaluation, a grid, an analysis, an audit or a power analysis
(ranx's ``Report`` is the model: https://amenra.github.io/ranx/report/).

Tables of typed columns, captions written by whoever computed the numbers (the statistics of
:mod:`sourcebias.evaluation.stats`, an analysis, an audit), notes a reader must see (left-out
judgements, undefined tests), figures. It sits below every layer that prints, so each renders its
tables through :mod:`sourcebias.report.render` (terminal, Markdown, LaTeX, CSV, a self-contained HTML
page), which computes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.evaluation.stats import Column


@dataclass
class Table:
    """Rows (dicts of raw values) and the columns that show them.

    A row whose ``status`` is not ``ok`` is shown as its status and error, without numbers.

    Attributes:
        key: The table's key (``source_bias``, ``statistics``, ``dataset:<name>``); file names use it.
        title: Its heading.
        columns: The displayed columns, in order.
        rows: One dict of raw values per row.
        caption: Text printed under the table (method, level, what was left out).
        status_rows: Show a row whose status is not ``ok`` as its status and error.
        identity: How many leading columns name a row (repeated in each part of a table split to
            fit the terminal); ``None``: its leading text and integer columns.
    """

    key: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    caption: str = ""
    status_rows: bool = True  # a row with a status other than ok is shown as status and error
    identity: int | None = None


@dataclass
class Report:
    """What a reader sees: tables, notes, figures, and (for the HTML page) further sections.

    The one report every command renders (terminal, Markdown, LaTeX, CSV, HTML; :mod:`.render`).

    Attributes:
        title: The report's title.
        tables: The tables, in order.
        notes: Lines a reader must see (what was left out, undefined tests).
        figures: Figure name -> file.
        sections: Further ``(heading, table or preformatted text)`` sections of the HTML page.
        data: Name -> pandas DataFrame, written as CSV.
    """

    title: str
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    sections: list[tuple[str, Table | str]] = field(default_factory=list)  # (heading, a table or preformatted text)
    data: dict[str, Any] = field(default_factory=dict)  # name -> pandas DataFrame, for CSV

    def table(self, key: str) -> Table:
        """The table of a key.

        Args:
            key: A table's :attr:`Table.key`.

        Returns:
            The first table of that key.

        Raises:
            StopIteration: No table has that key.
        """
        return next(t for t in self.tables if t.key == key)
