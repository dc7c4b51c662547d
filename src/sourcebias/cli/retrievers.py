"""``sourcebias retrievers``: what ``--retriever`` accepts."""

from __future__ import annotations

import typer

from sourcebias.cli.common import console


def retrievers(presets: bool = typer.Option(False, "--presets", help="List the dense presets: checkpoint, pooling, prefixes, offline status.")) -> None:
    """List the first stages and stages that --retriever accepts, their options, and which work offline."""
    from rich.table import Table

    if presets:
        _print_presets()
        return

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
    console.print("Dense presets with their pooling and prefixes: sourcebias retrievers --presets")


def _print_presets() -> None:
    from rich.table import Table

    from sourcebias.retrieval.dense import preset_listing

    table = Table(title="Dense presets (--retriever PRESET; PRESET:path=DIR for a local copy)", show_lines=False)
    for col in ("preset", "checkpoint", "score", "pooling", "query prefix", "document prefix", "offline"):
        table.add_column(col, overflow="fold")
    for row in preset_listing():
        model = row["model"] + (f" + {row['query_model']} (queries)" if row["query_model"] else "")
        offline = "[green]ready[/green]" if row["offline"] else f"[dim]no: {row['preset']}:path=DIR[/dim]"
        table.add_row(
            row["preset"],
            model,
            row["score"],
            row["pooling"],
            repr(row["query_prefix"]) if row["query_prefix"] else "",
            repr(row["doc_prefix"]) if row["doc_prefix"] else "",
            offline,
        )
    console.print(table)
    console.print("Not here yet: `hf download CHECKPOINT --local-dir DIR` on a machine with network, copy DIR here, then --retriever PRESET:path=DIR.")


def register(app: typer.Typer) -> None:
    app.command()(retrievers)
