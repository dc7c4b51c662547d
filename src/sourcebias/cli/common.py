"""What every command shares: the consoles, failing with one message, and --k/--metric lists."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    """Print one error line and exit (status 2: the user's to fix)."""
    err_console.print(f"[bold red]Error:[/bold red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _is_int(tok: str) -> bool:
    return tok.isdigit()


def _is_measure(tok: str) -> bool:
    from sourcebias.evaluation.measures import is_measure_name

    return not tok.startswith("-") and is_measure_name(tok)


# Options that take several values after one flag (``--k 1 3 5``); click wants ``--k 1 --k 3``, so
# the argument list is rewritten before parsing. Each entry says which further tokens belong to it
# (the measure names come from the measure registry).
GREEDY = {"--k": _is_int, "--metric": _is_measure, "--alpha": lambda tok: not tok.startswith("-") and _is_float(tok)}


def _is_float(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def expand_greedy_options(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        out.append(tok)
        accepts = GREEDY.get(tok)
        if accepts is not None and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 2
            while i < len(argv) and accepts(argv[i]):
                out += [tok, argv[i]]
                i += 1
            continue
        i += 1
    return out
