"""What every command shares: the consoles, failing with one message, and --k/--metric lists."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
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
GREEDY = {
    "--k": _is_int,
    "--metric": _is_measure,
    "--statistics-measure": _is_measure,
    "--statistics": lambda tok: _is_statistic(tok),
    "--alpha": lambda tok: not tok.startswith("-") and _is_float(tok),
    "--n": _is_int,  # power: study sizes
    "--effect": lambda tok: "=" in tok and not tok.startswith("-"),  # power: STAT=VALUE
}


def _is_statistic(tok: str) -> bool:
    """A statistic name (or a comma-separated list of them, or ``none``) from the registry."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.evaluation.stats.base import get_statistic

    try:
        for name in tok.split(","):
            if name.strip().lower() != "none":
                get_statistic(name)
    except ConfigError:
        return False
    return True


def _is_float(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _belongs(flag: str, tok: str) -> bool:
    """Whether a token after ``--k 1`` is another value of the flag. Cut-offs and weights: also a
    wrong value (so that the parser names it), unless it is an option or a path (the positional
    argument). Measures: known names, or anything written ``NAME@K``."""
    from pathlib import Path

    if tok.startswith("-") and not _is_float(tok):
        return False
    if GREEDY[flag](tok):
        return True
    if flag in ("--metric", "--statistics-measure"):
        return "@" in tok
    return not Path(tok).exists() and "/" not in tok


def expand_greedy_options(argv: list[str]) -> list[str]:
    """``--k 1 3 5`` -> ``--k 1 --k 3 --k 5`` (click takes one value per flag); a bare ``--ray``
    (followed by an option, a path or nothing) means ``--ray local``."""
    from pathlib import Path

    argv = list(argv)
    for i, tok in enumerate(list(argv)):
        if tok == "--ray":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or nxt.startswith("-") or Path(nxt).exists() or nxt.endswith(".toml"):
                argv.insert(i + 1, "local")
            break
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        out.append(tok)
        accepts = GREEDY.get(tok)
        if accepts is not None and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 2
            while i < len(argv) and _belongs(tok, argv[i]):
                out += [tok, argv[i]]
                i += 1
            continue
        i += 1
    return out


def tidy_typer_help() -> None:
    """Show option values the way command-line users read them.

    typer 0.29 labels values with Python types (``<list[str]>``, ``<path>``, ``<bool>`` on plain
    flags) and writes required arguments as ``{DATASET_DIR}``; users read both as literal syntax.
    typer has no setting for this, so its two display hooks are replaced here: a flag shows no
    value, an option its metavar (or its type in capitals, ``INTEGER``), an argument its name.
    """
    from typer.core import TyperArgument, TyperOption

    if getattr(TyperOption, "_sourcebias_tidy", False):
        return

    def option_type(self, ctx):
        if self.is_flag:
            return None
        if self.metavar is not None:
            return self.metavar
        label = self.bare_type() if hasattr(self, "bare_type") else "TEXT"
        label = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH"}.get(label.removeprefix("list[").removesuffix("]"), "VALUE")
        return label + ("..." if self.nargs != 1 or self.multiple else "")

    def argument_type(self, ctx):
        return None

    def argument_usage(self):
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    # setattr: replacing methods of typer's classes (a type checker refuses assigning to a method)
    setattr(TyperOption, "display_type_rich", option_type)  # noqa: B010
    setattr(TyperArgument, "display_type_rich", argument_type)  # noqa: B010
    setattr(TyperArgument, "_usage_display_name", argument_usage)  # noqa: B010
    setattr(TyperOption, "_sourcebias_tidy", True)  # noqa: B010
