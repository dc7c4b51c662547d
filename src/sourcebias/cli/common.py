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
    _stack_option_panels_when_drawn()
    setattr(TyperOption, "display_type_rich", option_type)  # noqa: B010
    setattr(TyperArgument, "display_type_rich", argument_type)  # noqa: B010
    setattr(TyperArgument, "_usage_display_name", argument_usage)  # noqa: B010
    setattr(TyperOption, "_sourcebias_tidy", True)  # noqa: B010


def _stack_option_panels_when_drawn() -> None:
    """:func:`_stack_option_panels` at the first help page drawn, not at start-up.

    typer imports ``typer.rich_utils`` (rich's markdown, syntax and traceback modules: 0.1 s of CPU
    on the 2-core development machine, about 5% of a whole ``evaluate -r bm25`` on 10,000
    documents, ``benchmarks/bench_bm25_scale.py``) only to draw a help page or an error; replacing
    its panel function at start-up imported it on every command. Both of typer's help drawers
    (a command's, a group's) go through ``format_help``, so the replacement waits there.
    """
    from typer.core import TyperCommand, TyperGroup

    for cls in (TyperCommand, TyperGroup):
        drawn = cls.format_help

        def format_help(self, ctx, formatter, _drawn=drawn):
            _stack_option_panels()
            return _drawn(self, ctx, formatter)

        setattr(cls, "format_help", format_help)  # noqa: B010


def _stack_option_panels() -> None:
    """Each option's names and value on one line, its help indented below, nothing cut.

    typer lays options out as a six-column table; at 80 columns the columns are too narrow and rich
    cuts long option names and long words with "…" (``--remove-self-ma…``, ``bm25:k1=0.9,b=0…``).
    typer has no setting for the layout, so its panel function is replaced here: one row per
    option, names first, the help below it, long words folded rather than cut.
    """
    from typer import rich_utils

    if getattr(rich_utils, "_sourcebias_stacked", False):
        return

    def print_options_panel(*, name, params, ctx, markup_mode, console):
        from rich.console import Group
        from rich.padding import Padding
        from rich.panel import Panel
        from rich.text import Text

        rows = []
        for param in params:
            rows.append(_option_head(param, ctx))
            help_cols = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
            items = list(getattr(help_cols, "renderables", [help_cols]))
            for item in items:
                if isinstance(item, Text):
                    item.overflow = "fold"  # a long word (bm25:k1=0.9,b=0.4) folds, it is not cut
            rows.append(Padding(Text(" ").join(i for i in items if isinstance(i, Text)), (0, 0, 0, 4)))
        if rows:
            console.print(Panel(Group(*rows), border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER, title=name, title_align=rich_utils.ALIGN_OPTIONS_PANEL))

    rich_utils._print_options_panel = print_options_panel
    setattr(rich_utils, "_sourcebias_stacked", True)  # noqa: B010


def _option_head(param, ctx):
    """``--remove-self-matches / --no-remove-self-matches`` or ``* --output -o DIR``, as one folded line."""
    from rich.text import Text

    head = Text(overflow="fold")
    head.append("* " if param.required else "  ", style="bold red")
    names = [param.display_name_raw] if getattr(param, "param_type_name", "") == "argument" else list(param.opts)
    head.append(", ".join(names), style="bold cyan")
    if getattr(param, "secondary_opts", None):
        head.append(" / " + ", ".join(param.secondary_opts), style="bold magenta")
    value = param.display_type_rich(ctx=ctx)
    if value:
        head.append(f" {value}", style="bold yellow")
    bounds = param._get_number_range_help_str() if hasattr(param, "_get_number_range_help_str") else None
    if bounds:
        head.append(f" [{bounds}]", style="dim")
    return head


def reflow_help(text: str | None) -> str | None:
    """Help text whose paragraphs are one line each (the terminal wraps them), examples kept.

    A docstring's hard line breaks are kept by typer's rich help: at 80 columns they break
    sentences mid-line. A paragraph with an indented line (an example) is left as written.

    Args:
        text: The help text (a docstring, cleaned or not).

    Returns:
        The text, reflowed; ``None`` for ``None``.
    """
    import inspect

    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if any(line.startswith((" ", "\b")) for line in p.splitlines()) else " ".join(p.split()) for p in paragraphs)


def reflow_app_help(app: typer.Typer) -> None:
    """:func:`reflow_help` on the help of ``app``, of its commands and of its sub-apps."""
    app.info.help = reflow_help(app.info.help) if isinstance(app.info.help, str) else app.info.help
    for info in app.registered_commands:
        text = info.help if isinstance(info.help, str) else (info.callback.__doc__ if info.callback is not None else None)
        info.help = reflow_help(text)
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = reflow_help(group.help)
        if group.typer_instance is not None:
            reflow_app_help(group.typer_instance)
