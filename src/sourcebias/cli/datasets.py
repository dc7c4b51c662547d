"""``sourcebias datasets`` (the datasets known by name) and ``sourcebias download NAME``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console


def datasets() -> None:
    """List the datasets known by name: the built-in one (NQ-UTD, ships with sourcebias) and the other
    Cocktail datasets (`sourcebias download NAME`), with licence, citation and where they are."""
    from rich.markup import escape
    from rich.table import Table

    from sourcebias.data.registry import listing

    table = Table(box=None, show_header=True, pad_edge=False, padding=(0, 2, 1, 0))
    for col in ("name", "kind", "about"):
        table.add_column(col, overflow="fold", no_wrap=col != "about")
    works: dict[str, int] = {}  # a citation shared by several datasets is printed once, below, and referred to by number
    for row in listing():
        work, sep, more = row["citation"].partition("; and ")
        ref = escape(f"[{works.setdefault(work, len(works) + 1)}]") + (f"; and {escape(more)}" if sep else "")
        about = (
            f"{escape(row['description'])}\n[dim]where:[/dim] {escape(row['where'])}\n[dim]licence:[/dim] "
            f"{escape(row['licence'])}\n[dim]cite:[/dim] {ref}\n[dim]checksums:[/dim] {escape(row['checksums'])}"
        )
        table.add_row(f"[cyan]{escape(row['name'])}[/cyan]", row["kind"], about)
    console.print(table, highlight=False)
    for work, number in works.items():
        console.print(escape(f"[{number}] {work}"), highlight=False)
    console.print("Use a name where a dataset folder goes: sourcebias evaluate nq-utd -r bm25. A folder of the same name in the current folder wins.")


def download(
    name: Annotated[str, typer.Argument(help="A dataset listed by `sourcebias datasets` as 'download'.", show_default=False, metavar="NAME")],
    to: Annotated[
        Path | None,
        typer.Option("--to", metavar="DIR", help="Put it in DIR/NAME (default: the dataset cache, $SOURCEBIAS_DATASETS or ~/.cache/sourcebias/datasets)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds without data before the download is abandoned (rerun to resume).", min=1)] = 30.0,
) -> None:
    """Download a Cocktail dataset from its public home (Hugging Face), resuming an interrupted
    download, verify it against its published checksum, unpack it and check that it reads as a dataset."""
    from sourcebias.data.download import download_dataset

    info = download_dataset(name, to, timeout=timeout, emit=lambda text: console.print(f"[dim]{text}[/dim]", highlight=False))
    if info.get("already"):
        console.print(f"{info['name']} was downloaded before ({info.get('downloaded', 'date not recorded')}); checked again, nothing fetched.", highlight=False)
    for a in info["archives"]:
        checked = ", ".join(x.upper() for x in a["verified"]) or "nothing"
        unknown = ", ".join(x.upper() for x in a["unverified"])
        console.print(
            f"{a['file']}: verified {checked}" + (f"; {unknown} not published, not verified ({a['checksums_from']})" if unknown else ""), highlight=False
        )
    console.print(
        f"{info['name']} ({info['layout']} layout; sources {', '.join(info['sources'])}; "
        f"splits {', '.join(info['splits'])}) is in [bold]{info['folder']}[/bold]"
    )
    console.print(f"Evaluate it: sourcebias evaluate {info['folder'] if to is not None else info['name']} --split {info['splits'][0]}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(datasets)
    app.command()(download)
