"""The ``sourcebias`` command line: one module per command, assembled here.

Every user-caused error (a bad file, a bad option, a missing model, a misused output folder) ends
with one clear message and exit status 2, not a traceback; Ctrl-C ends with a message and status
130 (finished work is kept where the job is resumable).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from sourcebias.cli import evaluate as _evaluate
from sourcebias.cli import generate as _generate
from sourcebias.cli import inspect as _inspect
from sourcebias.cli import retrievers as _retrievers
from sourcebias.cli.common import err_console, expand_greedy_options
from sourcebias.core.errors import SourceBiasError

app = typer.Typer(
    name="sourcebias",
    help=(
        "Measure, explain and mitigate source bias: retrievers that rank LLM-written copies of "
        "documents above the human originals.\n\n"
        "Start with:  sourcebias evaluate DATASET_DIR --retriever bm25"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        from sourcebias import __version__

        typer.echo(f"sourcebias {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)] = False) -> None:
    """Measure, explain and mitigate source bias."""


for _module in (_evaluate, _inspect, _retrievers, _generate):
    _module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``sourcebias`` command."""
    import click

    # The CLI draws its own progress bars; Hugging Face's tqdm bars (weights loading,
    # downloads) would interleave with them. Read by huggingface_hub and transformers at import.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = expand_greedy_options(list(sys.argv[1:] if argv is None else argv))
    try:
        code = app(args=args, prog_name="sourcebias", standalone_mode=False)
    except SourceBiasError as exc:
        err_console.print(f"[bold red]Error:[/bold red] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except click.exceptions.Abort:  # what click makes of Ctrl-C (KeyboardInterrupt)
        _interrupted()
    except KeyboardInterrupt:
        _interrupted()
    except click.exceptions.ClickException as exc:  # usage errors: bad option values, unknown options
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted() -> None:
    err_console.print("[yellow]Interrupted.[/yellow] Finished work is kept; rerun the same command to resume where the job is resumable.")
    sys.exit(130)
