"""The ``sourcebias`` command line: one module per command, assembled here.

Every user-caused error (a bad file, a bad option, a missing model, a misused output folder) ends
with one clear message and exit status 2, not a traceback; Ctrl-C ends with a message and status
130 (finished work is kept where the job is resumable). SIGTERM (``kill``, a scheduler's stop) and
SIGHUP (the terminal closed) stop a command as Ctrl-C does, cleaning up the same way (an output
folder's lock and staging folder removed, a journal closed), with status 128 + the signal's number.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from sourcebias.cli import analyze as _analyze
from sourcebias.cli import bench as _bench
from sourcebias.cli import datasets as _datasets
from sourcebias.cli import evaluate as _evaluate
from sourcebias.cli import generate as _generate
from sourcebias.cli import inspect as _inspect
from sourcebias.cli import mitigate as _mitigate
from sourcebias.cli import prompts as _prompts
from sourcebias.cli import retrievers as _retrievers
from sourcebias.cli import train as _train
from sourcebias.cli.common import err_console, expand_greedy_options, reflow_app_help, tidy_typer_help
from sourcebias.cli.identity import identify_commands
from sourcebias.core.errors import SourceBiasError

tidy_typer_help()
app = typer.Typer(
    name="sourcebias",
    help=(
        "Measure, explain and mitigate source bias: retrievers that rank LLM-written copies of "
        "documents above the human originals.\n\n"
        "Start with:  sourcebias evaluate nq-utd --retriever bm25  (NQ-UTD ships with sourcebias; `sourcebias datasets` lists the others)"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        from sourcebias.core.version import __version__

        typer.echo(f"sourcebias {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)] = False) -> None:
    """Measure, explain and mitigate source bias."""


from sourcebias.cli import audit as _audit  # noqa: E402
from sourcebias.cli import cite as _cite  # noqa: E402
from sourcebias.cli import detect as _detect  # noqa: E402
from sourcebias.cli import judge as _judge  # noqa: E402
from sourcebias.cli import power as _power  # noqa: E402
from sourcebias.cli import simulate as _simulate  # noqa: E402

for _module in (_evaluate, _datasets, _analyze, _bench, _inspect, _retrievers, _generate, _mitigate, _train, _power, _audit, _detect, _simulate, _cite, _judge):
    _module.register(app)
_prompts.register(app)  # the prompts the LLM stages (cite, judge, rankgpt, llm-yesno) take by name
reflow_app_help(app)  # docstrings' line breaks are not kept mid-sentence
identify_commands(app)  # a rerun of the same command replaces its own results (sourcebias.cli.identity)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``sourcebias`` command."""
    from typer._click import exceptions as click_exceptions  # typer vendors its own click

    # The CLI draws its own progress bars; Hugging Face's tqdm bars (weights loading,
    # downloads) would interleave with them. Read by huggingface_hub and transformers at import.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = expand_greedy_options(list(sys.argv[1:] if argv is None else argv))
    if "--help" in args:
        from sourcebias.cli.options import describe_measures

        describe_measures()
    stopped_by: list[int] = []
    try:
        with _deprecations_as_lines(), _stop_signals_as_interrupt(stopped_by):
            code = app(args=args, prog_name="sourcebias", standalone_mode=False)
    except SourceBiasError as exc:
        from rich.markup import escape

        # escaped: "[grid]", "retrievers[2]" in a message are text, not rich markup (unescaped, "[grid]" vanished)
        err_console.print(f"[bold red]Error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        code = 130
    except click_exceptions.ClickException as exc:  # usage errors: bad option values, unknown options
        _usage_error(exc)
        sys.exit(exc.exit_code)
    if code == 130 and stopped_by:  # a stop signal, turned into the KeyboardInterrupt Ctrl-C raises
        import signal

        name = signal.Signals(stopped_by[0]).name
        err_console.print(f"[yellow]Stopped ({name}).[/yellow] Finished work is kept; rerun the same command to resume where the job is resumable.")
        code = 128 + stopped_by[0]
    elif code == 130:  # typer turns Ctrl-C (KeyboardInterrupt) into a silent exit 130
        err_console.print("[yellow]Interrupted.[/yellow] Finished work is kept; rerun the same command to resume where the job is resumable.")
    sys.exit(code if isinstance(code, int) else 0)


@contextlib.contextmanager
def _stop_signals_as_interrupt(stopped_by: list[int]) -> Iterator[None]:
    """While a command runs, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as
    Ctrl-C does: every ``finally`` and ``with`` of the job runs (Python's default for them is to
    end at once, leaving an output folder's lock and staging folder behind). The signals received
    are appended to ``stopped_by``. A signal the process was started ignoring (``nohup`` ignores
    SIGHUP) stays ignored; outside the main thread nothing is changed (signals are delivered there)."""
    import signal
    import threading

    wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        stopped_by.append(signum)
        raise KeyboardInterrupt

    previous = {s: signal.getsignal(s) for s in wanted}
    for s, handler in previous.items():
        if handler is signal.SIG_DFL:
            signal.signal(s, stop)
    try:
        yield
    finally:
        for s, handler in previous.items():
            if handler is signal.SIG_DFL:
                signal.signal(s, handler)


@contextlib.contextmanager
def _deprecations_as_lines() -> Iterator[None]:
    """Print each deprecation of an old name or form (:mod:`sourcebias.core.moved`) as one
    "Warning:" line on stderr while a command runs (Python shows a DeprecationWarning only to
    code run as ``__main__``); other warnings are shown as Python shows them."""
    import warnings

    from rich.markup import escape

    from sourcebias.core.moved import SourceBiasDeprecationWarning

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: str | None = None) -> None:
            if issubclass(category, SourceBiasDeprecationWarning):
                err_console.print(f"[yellow]Warning:[/yellow] {escape(str(message))}", highlight=False, soft_wrap=True)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.simplefilter("always", SourceBiasDeprecationWarning)
        warnings.showwarning = show
        yield


def _usage_error(exc: Exception) -> None:
    """Print a usage error; for a value that failed conversion, name the value (typer's message
    from pydantic does not)."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        try:
            bad = errors()[0].get("input")
        except Exception:
            bad = None
        if bad is not None:
            message += f" (got {bad!r})"
    err_console.print(f"[bold red]Error:[/bold red] {message}", highlight=False, soft_wrap=True)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        err_console.print(f"[dim]{ctx.get_usage()}\nTry '{ctx.command_path} --help' for help.[/dim]", highlight=False)
