"""Read a report back from what the terminal printed and from its ``summary.md``, to check that
no figure is lost at any width and that the two show the same thing.

The terminal's tables are rich's box tables (``┏`` … ``┗``/``└``): each column is sliced out of
every line by the positions of the box's rules, so a cell that wraps onto several lines is read
as the text of its lines. A column of numbers never wraps (the layout's rule), so its cells are
read one per line; a text column is compared as the characters of its cells in order (wrapping
only moves them to the next line). A table split to fit the width is read part by part, each
part's columns joined to the table's by header.
"""

from __future__ import annotations

import io
import itertools
import re
from dataclasses import dataclass, field

from sourcebias.report.model import Report, Table
from sourcebias.report.render import shown_tables, table_cells, to_markdown, to_rich

TOP, HEADER_END, BOTTOM = "┏", "┡", "└"
RULES = "┃│"


def squeeze(text: str) -> str:
    """``text`` without any whitespace (wrapping adds and moves it)."""
    return "".join(text.split())


def render(report: Report, width: int) -> str:
    """What the terminal prints for ``report`` at ``width`` columns (no colour codes)."""
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(to_rich(report))
    return out.getvalue()


@dataclass
class Part:
    """One box table as printed: its headers and, per column, the text of each line."""

    headers: list[str]
    lines: list[list[str]] = field(default_factory=list)  # per column, one fragment per body line

    def column(self, header: str) -> list[str]:
        return self.lines[[squeeze(h) for h in self.headers].index(squeeze(header))]


def _cuts(line: str) -> list[int]:
    return [i for i, ch in enumerate(line) if ch in "┏┳┓┃│┡╇┩┗┻┛└┴┘"]


def _cells(line: str, cuts: list[int]) -> list[str]:
    return [line[a + 1 : b].strip() for a, b in itertools.pairwise(cuts)]


def terminal_parts(text: str) -> list[Part]:
    """Every box table of a terminal print, in order."""
    parts, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if not lines[i].startswith(TOP):
            i += 1
            continue
        cuts = _cuts(lines[i])
        i += 1
        head: list[list[str]] = []
        while not lines[i].startswith(HEADER_END):
            head.append(_cells(lines[i], cuts))
            i += 1
        part = Part([" ".join(x for x in col if x) for col in zip(*head)], [[] for _ in cuts[1:]])
        i += 1
        while not lines[i].startswith(BOTTOM):
            for k, frag in enumerate(_cells(lines[i], cuts)):
                part.lines[k].append(frag)
            i += 1
        parts.append(part)
    return parts


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every ``| ... |`` table of a Markdown text: headers and rows of cell texts."""
    split = lambda ln: [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]]  # noqa: E731
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|-"):
            headers, rows = split(lines[i]), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(split(lines[i]))
                i += 1
            out.append((headers, rows))
        i += 1
    return out


def expected_rows(table: Table) -> list[list[str]]:
    """The rows as the renderer writes them (a status row: its first cell and its status)."""
    return [r.texts + [r.status] + [""] * (len(table.columns) - 2) if r.status else r.texts for r in table_cells(table)]


def _numeric(table: Table) -> list[bool]:
    return [c.kind != "text" for c in table.columns]


def check_terminal(report: Report, width: int, text: str | None = None) -> dict[str, dict[str, list[str]]]:
    """Read back what the terminal printed for ``report`` at ``width`` (``text``; default: render
    it here); assert that every table's every cell is there (a number whole on one line, a text's
    characters in order), every header, title, caption and note. Returns per table title, per
    header, the cells read (numbers: one per row)."""
    text = render(report, width) if text is None else text
    assert all(len(line) <= width for line in text.splitlines()), f"a line wider than {width}"
    parts = terminal_parts(text)
    flat = squeeze(text)
    read: dict[str, dict[str, list[str]]] = {}
    for title, body in shown_tables(report):
        assert squeeze(title) in flat or all(squeeze(w) in flat for w in title.split()), title
        if not isinstance(body, Table):
            assert squeeze(body) in flat
            continue
        read[title] = _read_table(body, parts)
        if body.caption:
            assert squeeze(body.caption) in flat, body.caption
    for note in report.notes:
        assert squeeze(f"Note: {note}") in flat, note
    assert not parts, f"{len(parts)} printed tables not matched to the report's"
    return read


def _read_table(table: Table, parts: list[Part]) -> dict[str, list[str]]:
    """Consume the printed parts of ``table`` from ``parts`` and check its cells."""
    headers = [squeeze(c.header) for c in table.columns]
    rows, numeric = expected_rows(table), _numeric(table)
    seen: dict[str, list[str]] = {}
    while parts and len(seen) < len(headers) and {squeeze(h) for h in parts[0].headers} <= set(headers):
        part = parts.pop(0)
        for h, frags in zip(part.headers, part.lines):
            seen[squeeze(h)] = frags
    assert set(seen) == set(headers), f"{table.title}: columns {sorted(set(headers) - set(seen))} not printed"
    out = {}
    for j, (h, is_num) in enumerate(zip(headers, numeric)):
        frags, cells = seen[h], [r[j] for r in rows]
        assert squeeze("".join(frags)) == squeeze("".join(cells)), f"{table.title} / {h}: printed {frags}, expected {cells}"
        if is_num:  # a number is never cut: the words of the printed lines are the cells' words
            assert [w for f in frags for w in f.split()] == [w for c in cells for w in c.split()], f"{table.title} / {h}: a number was cut: {frags}"
        out[table.columns[j].header] = _cells_of(frags, cells)
    return out


def _cells_of(frags: list[str], cells: list[str]) -> list[str]:
    """The printed cells of a column: its line fragments gathered until they spell the next
    expected cell (a wrapped cell's lines joined by a space)."""
    out, i = [], 0
    for cell in cells:
        got: list[str] = []
        while squeeze("".join(got)) != squeeze(cell):
            got.append(frags[i])
            i += 1
        out.append(" ".join(x for x in got if x))
    return out


def check_markdown(report: Report, markdown: str | None = None) -> None:
    """``summary.md`` (default: the report's Markdown) holds exactly the tables the terminal
    shows, each row's cells as the renderer writes them, with the titles, captions and notes."""
    markdown = to_markdown(report) if markdown is None else markdown
    shown = [(title, body) for title, body in shown_tables(report) if isinstance(body, Table)]
    found = markdown_tables(markdown)
    assert len(found) == len(shown), f"{len(found)} tables in summary.md, {len(shown)} shown"
    for (title, table), (headers, rows) in zip(shown, found):
        assert headers == [c.header for c in table.columns], title
        assert rows == expected_rows(table), title
        assert title == report.title or f"## {title}" in markdown
        if table.caption:
            assert table.caption in markdown
    for note in report.notes:
        assert f"> **Note:** {note}" in markdown


def same_everywhere(report: Report, markdown: str | None = None, widths=(80, 200)) -> dict[int, dict[str, dict[str, list[str]]]]:
    """The report read back at each width and from its Markdown (see the module)."""
    check_markdown(report, markdown)
    return {w: check_terminal(report, w) for w in widths}


NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?|–")


def numbers(cell: str) -> list[float | None]:
    """The numbers of a cell as printed (``+0.425 [+0.360, +0.490]`` -> three; ``–`` -> None)."""
    return [None if m == "–" else float(m.replace(",", "")) for m in NUMBER.findall(cell)]
