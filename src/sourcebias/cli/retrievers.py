"""``sourcebias retrievers``: what ``--retriever`` accepts."""

from __future__ import annotations

import typer

from sourcebias.cli.common import console


def retrievers() -> None:
    """List the first stages and stages that --retriever accepts, their options, and which work offline."""
    from rich.table import Table

    from sourcebias.models.hub import available_locally
    from sourcebias.retrieval.specs import kinds

    for role, title in (("first", "First stages (--retriever KIND[:ARGS])"), ("stage", "Stages (after a first stage: FIRST>>KIND[:ARGS])")):
        console.print(f"[bold]{title}[/bold]")
        table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 2))
        table.add_column("kind", style="cyan", no_wrap=True)
        table.add_column("what", overflow="fold")
        for name, spec in kinds(role).items():
            if spec.offline:
                offline = f"[green]offline: {spec.offline}[/green]"
            elif spec.models and all(available_locally(m) for m in spec.models):
                offline = "[green]offline: ready (a local copy was found)[/green]"
            elif spec.models:
                offline = f"[dim]offline: no, download {' and '.join(spec.models)} first (hf download NAME), or pass a local folder[/dim]"
            else:
                offline = "[dim]offline: local folders and models in the Hugging Face cache[/dim]"
            table.add_row(name, f"{spec.help}\n{offline}")
        console.print(table)
    console.print("Options: KIND:MODEL,key=value (e.g. st:NAME,max_length=128); a stage's own option beats the command-wide one (--max-length).")


def register(app: typer.Typer) -> None:
    app.command()(retrievers)
