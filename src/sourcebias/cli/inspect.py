"""``sourcebias inspect``: a dataset's layout, sources and splits, validated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console


def inspect(
    dataset_dir: Annotated[Path, typer.Argument(help="Dataset folder.", show_default=False, metavar="DATASET_DIR")],
    split: Annotated[str | None, typer.Option(help="Check only this split's qrels (default: every split).")] = None,
    human_source: Annotated[str, typer.Option(help="Name of the human-written (original) source.")] = "human",
    allow_unknown_files: Annotated[bool, typer.Option(help="Go on (with a note) when the corpus folder holds a file that is not a source.")] = False,
) -> None:
    """Validate a dataset and show its layout, sources, splits and sizes.

    Every corpus file is read and checked (twins against their originals), and every split's qrels
    against the documents and queries; "valid" is printed only if all of it is.
    """
    from sourcebias.data import detect_layout, load_dataset
    from sourcebias.data.dataset import resolve_dataset

    unknown = "note" if allow_unknown_files else "error"
    layout = detect_layout(resolve_dataset(dataset_dir)[0], human_source, unknown_files=unknown)
    console.print(f"[bold]{Path(dataset_dir).resolve().name}[/bold]: {layout.layout} layout")
    for s, p in layout.source_files.items():
        console.print(f"  source [cyan]{s}[/cyan]: {p}")
    for note in layout.notes:
        console.print(f"  [yellow]Note:[/yellow] {note}")
    splits = [split] if split is not None else layout.splits()
    console.print(f"  splits: {', '.join(layout.splits()) or 'none'}")
    if not splits:
        ds = load_dataset(dataset_dir, split=None, human_source=human_source, unknown_files=unknown)
        for s, n in ds.corpus.source_counts().items():
            console.print(f"  {s}: {n:,} documents")
        console.print(f"  {len(ds.queries):,} queries")
    for i, sp in enumerate(splits):
        ds = load_dataset(dataset_dir, split=sp, human_source=human_source, unknown_files=unknown)
        d = ds.describe()
        if i == 0:
            for s, info in d["sources"].items():
                console.print(f"  {s}: {info['documents']:,} documents")
            console.print(f"  {len(ds.queries):,} queries")
        console.print(f"  {sp}: {d['queries_in_split']} queries judged, {d['queries_evaluated']} with a relevant document, {d['judgements']:,} judgements")
        for note in ds.report.notes():
            console.print(f"  [yellow]Note:[/yellow] {note}")
    console.print("[green]valid[/green]")


def register(app: typer.Typer) -> None:
    app.command()(inspect)
