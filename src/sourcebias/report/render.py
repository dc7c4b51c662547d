"""The one renderer of a :class:`~sourcebias.report.model.Report`: every cell's text and
colour is decided once (:func:`table_cells`, from the columns the statistics declare), and each
format only writes it down — Markdown, LaTeX (booktabs), the terminal (rich), CSV, and a
self-contained HTML page (figures embedded, no external CSS, JavaScript or fonts).

Colours: a Relative Δ or ΔNDSR below 0 (LLM-generated ranked higher) is red/vermillion, above 0
(human-written ranked higher) blue/teal; an undefined value (–) is not coloured.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.report.model import Frame, Report, Table

_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    ">": r"\textgreater{}",
    "<": r"\textless{}",
    "|": r"\textbar{}",
    "Δ": r"$\Delta$",
    "−": "--",
    "×": r"$\times$",
    "·": r"$\cdot$",
    "α": r"$\alpha$",
    "β": r"$\beta$",
    "±": r"$\pm$",
}


def latex_escape(value: Any) -> str:
    """Text safe in a LaTeX table cell: special characters escaped (``>`` would print as ¡ in
    the default font encoding), the Greek letters and signs our names use in math mode."""
    return "".join(_LATEX.get(ch, ch) for ch in str(value))


@dataclass
class RowView:
    """A row as shown: cell texts and signs (-1 LLM higher, +1 human higher, 0 none), or, for a
    cell without results, ``status`` (its first cell's text is kept)."""

    texts: list[str]
    signs: list[int]
    status: str | None = None


def table_cells(table: Table) -> list[RowView]:
    out = []
    for row in table.rows:
        if table.status_rows and row.get("status", "ok") != "ok":
            first = table.columns[0].text(row)
            err = row.get("error") or ""
            out.append(RowView([first], [0], f"{row['status']}: {err}" if isinstance(err, str) and err else str(row["status"])))
            continue
        out.append(RowView([c.text(row) for c in table.columns], [c.sign(row) for c in table.columns]))
    return out


def _numeric(table: Table) -> list[bool]:
    return [c.kind != "text" for c in table.columns]


# -- Markdown ----------------------------------------------------------------------------------
def to_markdown(report: Report) -> str:
    """The report as Markdown: its title and notes, then every table under the title the terminal
    shows it under (:func:`shown_tables`), with its caption, then the further sections."""
    lines = [f"# {report.title}", ""]
    lines += [f"> **Note:** {n}" for n in report.notes] + ([""] if report.notes else [])
    for title, body in shown_tables(report):
        heading = [] if title == report.title else [f"## {title}", ""]
        lines += heading + (_markdown_table(body) if isinstance(body, Table) else ["```", body, "```", ""])
    return "\n".join(lines).rstrip() + "\n"


def _markdown_table(t: Table) -> list[str]:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = [
        "| " + " | ".join(c.header for c in t.columns) + " |",
        "|" + "|".join("---:" if n else "---" for n in _numeric(t)) + "|",
    ]
    for r in table_cells(t):
        cells = r.texts + [esc(r.status)] + [""] * (len(t.columns) - 2) if r.status else r.texts
        lines.append("| " + " | ".join(esc(c) for c in cells) + " |")
    return lines + ([""] + [t.caption] if t.caption else []) + [""]


# -- LaTeX (booktabs) --------------------------------------------------------------------------
def to_latex(report: Report) -> str:
    out = [f"% {latex_escape(report.title)}; needs \\usepackage{{booktabs,xcolor}}"]
    out += [f"% Note: {n}" for n in report.notes]
    for t in report.tables:
        out += _latex_table(t, report.notes)
    return "\n".join(out) + "\n"


def _latex_table(t: Table, notes: list[str]) -> list[str]:
    align = "".join("r" if n else "l" for n in _numeric(t))
    out = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(latex_escape(c.header) for c in t.columns) + r" \\",
        r"\midrule",
    ]
    for r in table_cells(t):
        if r.status:
            out.append(f"{latex_escape(r.texts[0])} & \\multicolumn{{{len(t.columns) - 1}}}{{l}}{{{latex_escape(r.status)}}} \\\\")
            continue
        cells = []
        for text, sign in zip(r.texts, r.signs):
            s = latex_escape(text).replace("*", "$^*$")
            cells.append(f"\\textcolor{{{'red' if sign < 0 else 'teal'}}}{{{s}}}" if sign else s)
        out.append(" & ".join(cells) + r" \\")
    caption = " ".join([t.title + "."] + ([t.caption] if t.caption else []) + notes)
    return out + [r"\bottomrule", r"\end{tabular}", r"\caption{" + latex_escape(caption) + "}", r"\end{table}"]


# -- terminal (rich) ---------------------------------------------------------------------------
#: what a column costs besides its text in a rich table with the default box: padding 2, a rule 1
_COLUMN_EDGE = 3
#: the narrowest a text column is folded to when even its longest word does not fit
_FOLD = 4


def display_title(report: Report, t: Table) -> str:
    """The title a table is shown under, in the terminal and in Markdown alike: the report's own
    title for its main table, ``report: table`` for a grid's per-dataset tables."""
    if t.key == "source_bias" or t.title == report.title:
        return report.title
    return f"{report.title}: {t.title}" if t.key.startswith("dataset:") else t.title


def shown_tables(report: Report) -> list[tuple[str, Table | str]]:
    """Every table of the report with the title it is shown under, then its further sections
    (heading, table or preformatted text): what the terminal and ``summary.md`` both show."""
    return [(display_title(report, t), t) for t in report.tables] + list(report.sections)


def to_rich(report: Report):
    """A ``rich`` renderable: each table with its caption, the further sections, then the
    notes. A table is laid out for the console's width when printed (:class:`FittedTable`): no
    number or header word is ever cut; a table too wide is split into several that repeat the
    identity columns."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    for title, body in shown_tables(report):
        parts += [FittedTable(body, title)] if isinstance(body, Table) else [Text(title, style="italic"), Text(body)]
    parts += [Text(f"Note: {n}", style="yellow") for n in report.notes]
    return Group(*parts)


def _width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _longest_word(text: str) -> int:
    return max((_width(w) for w in text.split()), default=0)


def _edges(n: int) -> int:
    """The cells a table of ``n`` columns takes besides its columns' text."""
    return _COLUMN_EDGE * n + 1


def identity_columns(table: Table) -> int:
    """How many leading columns name a row (repeated in every part of a split table): the
    table's own :attr:`~sourcebias.report.model.Table.identity`, else its leading text and
    integer columns (names, rounds, seeds), at most all but one."""
    if table.identity is not None:
        return max(1, min(table.identity, len(table.columns)))
    n = next((i for i, c in enumerate(table.columns) if c.kind not in ("text", "int")), len(table.columns))
    return min(n, max(1, len(table.columns) - 1))


@dataclass
class ColumnWidths:
    """Per column: ``least`` (a number's whole text, a text's longest word: nothing below it
    but a fold), ``natural`` (the widest cell and the whole header on one line) and whether it
    may wrap (text) or never (numbers)."""

    least: list[int]
    natural: list[int]
    wraps: list[bool]
    words: list[int]  # the longest word of a column's cells and header


def column_widths(table: Table, views: list[RowView]) -> ColumnWidths:
    cells = [r.texts for r in views if not r.status]
    least, natural, wraps, words = [], [], [], []
    for i, c in enumerate(table.columns):
        texts = [row[i] for row in cells]
        widest = max([_width(x) for x in texts] + [1])
        words.append(max([_longest_word(x) for x in texts] + [_longest_word(c.header), 1]))
        text = c.kind == "text"
        least.append(words[-1] if text else max(widest, _longest_word(c.header)))
        natural.append(max(widest, _width(c.header), least[-1]))
        wraps.append(text)
    status = [r.status for r in views if r.status]
    if status and len(least) > 1:  # a row without results shows its status in the second column: its words whole
        least[1] = max([least[1]] + [_longest_word(x) for x in status])
        natural[1] = max([natural[1]] + [_width(x) for x in status])
    return ColumnWidths(least, natural, wraps, words)


def _shrink(widths: list[int], floors: list[int], over: int) -> list[int]:
    """``widths`` less ``over`` cells in all, taken from the widest first, none below its floor."""
    out = list(widths)
    while over > 0:
        room = [(w - f, i) for i, (w, f) in enumerate(zip(out, floors)) if w > f]
        if not room:
            break
        _, i = max(room)
        widest = sorted((out[j] for _, j in room), reverse=True)
        step = max(1, min(over, out[i] - floors[i], out[i] - (widest[1] if len(widest) > 1 else floors[i])))
        out[i] -= step
        over -= step
    return out


def _identity_widths(cw: ColumnWidths, ident: list[int], others: list[int], available: int) -> list[int]:
    """The identity columns' widths: natural where they fit; else at most half the width (so a
    part holds several other columns), or what every other column beside them leaves, whichever
    is more, and never less than what the widest other column leaves; text ones wrapped between
    words first, then folded, widest first (numbers keep their width)."""
    edges = _edges(len(ident))
    if others:
        one = available - edges - max(cw.least[i] for i in others) - _COLUMN_EDGE
        every = available - edges - sum(cw.least[i] + _COLUMN_EDGE for i in others)
        room = max(every, min(one, available // 2 - edges))
    else:
        room = available - edges
    widths = [cw.natural[i] for i in ident]
    for floors in ([cw.least[i] if cw.wraps[i] else cw.natural[i] for i in ident], [min(_FOLD, cw.least[i]) if cw.wraps[i] else cw.least[i] for i in ident]):
        widths = _shrink(widths, floors, sum(widths) - room)
    return widths


def fitted_layout(table: Table, available: int, views: list[RowView] | None = None) -> list[tuple[list[int], list[int]]]:
    """How a table is laid out in ``available`` cells: per part (a table too wide is split), the
    column indices (the identity columns first, in every part) and their widths. A number's
    column is never narrower than its widest cell; a text column wraps between words before it
    folds; the parts are as few as the widths allow."""
    views = table_cells(table) if views is None else views
    cw = column_widths(table, views)
    n_id = identity_columns(table)
    ident, others = list(range(n_id)), list(range(n_id, len(table.columns)))
    id_widths = _identity_widths(cw, ident, others, available)
    base = sum(id_widths) + _edges(n_id)
    groups: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in others:
        cost = cw.least[i] + _COLUMN_EDGE
        if current and used + cost > available:
            groups.append(current)
            current, used = [], base
        current.append(i)
        used += cost
    groups = [*groups, current] if current else groups or [[]]
    parts = []
    for g in groups:
        # a column wider than what the identity columns leave (a very narrow terminal): a text folds, a
        # number cell wraps between its numbers ("+0.4 [+0.3," / "+0.5]"), never inside one
        left = max(_FOLD, available - base - _COLUMN_EDGE)
        least = [min(cw.least[i], max(left, _FOLD if cw.wraps[i] else cw.words[i])) for i in g]
        widths = _widen(id_widths + least, [cw.natural[i] for i in ident + g], available - _edges(n_id + len(g)), first=n_id)
        parts.append((ident + g, widths))
    return parts


class FittedTable:
    """A :class:`~sourcebias.report.model.Table` for the terminal, laid out when printed for
    the console's width (:func:`fitted_layout`): each number column as wide as its widest cell,
    each text column as wide as its longest word at least (headers wrap between words), widened
    to the whole text where room is left, and split into stacked tables that repeat the
    identity columns when the columns do not fit side by side."""

    def __init__(self, table: Table, title: str):
        self.table, self.title = table, title

    def __rich_console__(self, console: Any, options: Any):
        from rich.text import Text

        views = table_cells(self.table)
        parts = fitted_layout(self.table, options.max_width, views)
        for k, (group, widths) in enumerate(parts):
            title = self.title + (f" ({k + 1} of {len(parts)})" if len(parts) > 1 else "")
            if _width(title) > sum(widths) + _edges(len(group)):  # a title wider than its table reads better on its own lines than folded inside it
                yield Text(title, style="italic")
                title = ""
            yield self._part(views, group, widths, title)
        if self.table.caption:  # the caption spans the console, not the (possibly narrow) last part of a split table
            yield Text(self.table.caption)

    def _part(self, views: list[RowView], group: list[int], widths: list[int], title: str):
        from rich.table import Table as RichTable
        from rich.text import Text

        t = self.table
        rt = RichTable(title=title or None)
        for i, w in zip(group, widths):
            rt.add_column(t.columns[i].header, justify="right" if t.columns[i].kind != "text" else "left", width=w, overflow="fold")
        for r in views:
            if r.status and len(group) > 1:
                rt.add_row(Text(r.texts[0]), Text(r.status, style="red"), *[""] * (len(group) - 2))
                continue
            if r.status:
                rt.add_row(Text(f"{r.texts[0]}: {r.status}", style="red"))
                continue
            rt.add_row(*[Text(r.texts[i], style="red" if r.signs[i] < 0 else "green" if r.signs[i] > 0 else "") for i in group])
        return rt


def _widen(widths: list[int], natural: list[int], budget: int, first: int = 0) -> list[int]:
    """Column widths from ``widths`` towards ``natural`` (whole texts and headers on one line)
    within ``budget`` cells: the columns from ``first`` on, left to right, then the ones before."""
    out = list(widths)
    spare = budget - sum(out)
    for i in list(range(first, len(out))) + list(range(first)):
        extra = min(max(spare, 0), max(natural[i] - out[i], 0))
        out[i] += extra
        spare -= extra
    return out


# -- CSV ---------------------------------------------------------------------------------------
def to_csv(report: Report, folder: str | Path) -> dict[str, Path]:
    """Each data table of the report (a :class:`~sourcebias.report.model.Frame` or a pandas
    DataFrame) as ``<name>.csv`` (every field, unformatted)."""
    from sourcebias.core.atomic import atomic_open

    out = {}
    for name, frame in report.data.items():
        path = Path(folder) / f"{name}.csv"
        with atomic_open(path, "w", newline="") as fh:
            if isinstance(frame, Frame):
                frame.write_csv(fh)
            else:
                frame.to_csv(fh, index=False, lineterminator="\n")
        out[name] = path
    return out


# -- HTML --------------------------------------------------------------------------------------
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:70em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:0.6em 0;font-size:0.92em}
th,td{border-bottom:1px solid #ddd;padding:0.25em 0.7em}
th.num,td.num{text-align:right}th.text,td.text{text-align:left}
thead th{border-bottom:2px solid #444}
td.neg{color:#b33c00;font-weight:600}td.pos{color:#005a8c;font-weight:600}
td.failed{color:#a00}
p.note{background:#fff6e0;border-left:4px solid #e0a000;padding:0.4em 0.8em}
caption{caption-side:bottom;text-align:left;font-size:0.85em;color:#555;padding-top:0.4em;max-width:60em}
figure{margin:1em 0}img{max-width:min(100%,44em);height:auto}figcaption{font-size:0.85em;color:#555}
pre{background:#f6f6f6;padding:0.8em;overflow-x:auto;font-size:0.85em}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}figure,table{page-break-inside:avoid}}
"""


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def _html_table(t: Table) -> str:
    e = html.escape
    kinds = ["num" if n else "text" for n in _numeric(t)]
    parts = [
        f"<table><caption>{e(t.caption)}</caption><thead><tr>"
        + "".join(f"<th class='{k}'>{e(c.header)}</th>" for c, k in zip(t.columns, kinds))
        + "</tr></thead><tbody>"
    ]
    for r in table_cells(t):
        if r.status:
            parts.append(f"<tr><td class='text'>{e(r.texts[0])}</td><td class='failed text' colspan='{len(t.columns) - 1}'>{e(r.status)}</td></tr>")
            continue
        cells = "".join(f"<td class='{k}{' neg' if s < 0 else ' pos' if s > 0 else ''}'>{e(x)}</td>" for x, s, k in zip(r.texts, r.signs, kinds))
        parts.append(f"<tr>{cells}</tr>")
    return "".join(parts) + "</tbody></table>"


def to_html(report: Report) -> str:
    e = html.escape
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>",
    ]
    parts += [f"<p class='note'>{e(n)}</p>" for n in report.notes]
    for t in report.tables:
        parts.append(f"<h2>{e(t.title)}</h2>{_html_table(t)}")
    if report.figures:
        parts.append("<h2>Figures</h2>")
        parts += [f"<figure>{_img(path, name)}<figcaption>{e(name)}</figcaption></figure>" for name, path in report.figures.items()]
    for heading, body in report.sections:
        parts.append(f"<h2>{e(heading)}</h2>" + (_html_table(body) if isinstance(body, Table) else f"<pre>{e(body)}</pre>"))
    parts.append("</body></html>")
    return "\n".join(parts)
