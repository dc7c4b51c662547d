"""One report model for a single evaluation, a grid, an analysis, an audit or a power analysis
(ranx's ``Report`` is the model: https://amenra.github.io/ranx/report/).

Tables of typed columns, captions written by whoever computed the numbers (the statistics of
:mod:`sourcebias.evaluation.stats`, an analysis, an audit), notes a reader must see (left-out
judgements, undefined tests), figures. It sits below every layer that prints, so each renders its
tables through :mod:`sourcebias.report.render` (terminal, Markdown, LaTeX, CSV, a self-contained HTML
page), which computes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

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
class Frame:
    """A data table of a report (every field, unformatted, for CSV), without pandas: its column
    names and one dict per row. ``to_pandas()`` gives it as a DataFrame.

    Attributes:
        columns: The column names, in order.
        rows: One dict of raw values per row (a missing field is an empty cell).
    """

    columns: list[str]
    rows: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """The rows with every column (``None`` where a row lacks one)."""
        return [{c: r.get(c) for c in self.columns} for r in self.rows]

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    def write_csv(self, fh: IO[str]) -> None:
        """Write the table as CSV, cells as pandas writes them: a float as its ``repr``, ``None`` and NaN as an empty cell."""
        import csv

        w = csv.writer(fh, lineterminator="\n")
        w.writerow(self.columns)
        w.writerows([_cell(r.get(c)) for c in self.columns] for r in self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records())


def _cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return repr(v) if isinstance(v, float) else v


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
        data: Name -> a :class:`Frame` (or a pandas DataFrame), written as CSV.
    """

    title: str
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    sections: list[tuple[str, Table | str]] = field(default_factory=list)  # (heading, a table or preformatted text)
    data: dict[str, Any] = field(default_factory=dict)  # name -> Frame or pandas DataFrame, for CSV

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
