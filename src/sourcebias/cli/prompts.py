"""``sourcebias prompts``: the prompts the LLM stages send (registered names, and what each asks)."""

from __future__ import annotations

from typing import Annotated

import typer

from sourcebias.cli.common import console

Spec = Annotated[
    str | None, typer.Argument(metavar="[NAME|FILE]", help="Print this prompt's file (a registered name or a prompt file, checked).", show_default=False)
]


def prompts(spec: Spec = None) -> None:
    """List the prompts the LLM stages take by name (--prompt NAME, prompt=NAME): the files sourcebias ships and those plug-ins register, with the
    answer each asks for and its parser. With NAME or FILE: print that prompt's file."""
    from rich.table import Table

    from sourcebias.llmcalls.prompts import load_prompt, prompt_kinds, taken_by

    if spec is not None:
        prompt = load_prompt(spec)
        typer.echo(f"# {prompt.name}: {prompt.where()} (sha256 {prompt.digest()[:12]}); taken by {'; '.join(taken_by(prompt))}")
        typer.echo(prompt.text, nl=not prompt.text.endswith("\n"))
        return
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
    for col in ("prompt", "answer", "read by", "taken by"):
        table.add_column(col, overflow="fold", style="cyan" if col == "prompt" else None, no_wrap=col != "taken by")
    for name, p in prompt_kinds().items():
        table.add_row(name, p.answer, p.parser or f"{p.probabilities} probabilities", "; ".join(taken_by(p)))
    console.print(table)
    console.print(
        "`sourcebias prompts NAME` prints one. A prompt file (.toml) works wherever a name does (its format: the LLM judges guide, 'Your own prompt')."
    )


def register(app: typer.Typer) -> None:
    app.command()(prompts)
