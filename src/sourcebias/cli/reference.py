"""Reference pages written from the registries and the command-line app, so the docs cannot drift.

The documentation site (``mkdocs.yml``, ``docs/hooks.py``) replaces a marker
``<!-- reference: NAME -->`` in a page with :func:`reference_markdown` ``(NAME)``. The same text
is what ``sourcebias`` itself knows: the typer app's commands and options, the measure and
statistic registries, the retrieval kinds and their typed options, the detector kinds and their
options, the dense presets.
ir_measures writes its measure pages from its registry the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

# A Markdown code span (`...`, ``...``): its text is shown verbatim, backslashes included.
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _escape_text(text: str) -> str:
    """Text outside code spans: a pipe would end the cell, brackets would read as a link."""
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _cell(text: Any) -> str:
    """A Markdown table cell: one line; pipes and brackets escaped outside code spans only.

    Inside a code span a backslash is shown as typed (an escaped metavar read ``text`` backslash
    ``|title+text``), and Python-Markdown's tables do not split a row at a pipe inside a code
    span, so code is left as it is.
    """
    text = " ".join(str(text if text is not None else "").split())
    out, end = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_escape_text(text[end : span.start()]), span.group(0)]
        end = span.end()
    return "".join([*out, _escape_text(text[end:])])


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _strip_markup(text: str) -> str:
    """Help text without rich markup escapes (``\\[default: ...]``)."""
    return (text or "").replace("\\[", "[")


def _option_rows(cmd: Any, path: tuple[str, ...]) -> list[list[str]]:
    """The command's arguments and options as (option, what) rows: exactly its ``--help`` records."""
    ctx = cmd.make_context(" ".join(path), [], resilient_parsing=True)
    rows = []
    for param in cmd.params:
        record = param.get_help_record(ctx)
        if record is not None and param.name != "help":
            rows.append([f"`{record[0]}`", _strip_markup(record[1])])
    return rows


def cli_reference() -> str:
    """Every ``sourcebias`` command with its help text and options, from the typer app itself.

    Returns:
        Markdown: one section per command (sub-commands nested), each with its usage line,
        description and a table of its arguments and options.
    """
    import typer

    from sourcebias.cli.main import app
    from sourcebias.cli.options import describe_measures

    describe_measures()  # --metric lists the measure registry, as --help shows it
    root = typer.main.get_command(app)
    out: list[str] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name in sorted(subs):
                walk(subs[name], (*path, name))
            return
        title = " ".join(("sourcebias", *path))
        out.append(f"## `{title}`\n")
        help_text = _strip_markup(cmd.help or "").strip()
        if help_text:
            out.append(help_text.replace("\n\n  ", "\n\n    ") + "\n")
        rows = _option_rows(cmd, path)
        if rows:
            out.append(_table(["argument / option", "what"], rows) + "\n")

    walk(root, ())
    return "\n".join(out)


def measures_reference() -> str:
    """The measure registry: name, aliases, what it needs, description (``--metric`` names)."""
    from sourcebias.evaluation.measures import measure_kinds

    rows = []
    for name, kind in measure_kinds().items():
        needs = "relevance labels (per target source)" if kind.scope == "target" else "no labels (per source)"
        trec = getattr(kind, "trec_family", None)
        rows.append([f"`{name}@k`", ", ".join(f"`{a}`" for a in kind.aliases), needs, (f"trec_eval `{trec}`; " if trec else "") + kind.description])
    return _table(["measure", "aliases", "needs", "what"], rows)


def statistics_reference() -> str:
    """The statistic registry (``--statistics`` names) with each record's displayed columns."""
    from sourcebias.evaluation.stats import statistic_kinds

    rows = []
    for name, stat in statistic_kinds().items():
        columns = ", ".join(c.header for c in stat.record.columns)
        scope = "per measure" if stat.per_measure else "per retriever and LLM source"
        rows.append([f"`{name}`", ", ".join(f"`{a}`" for a in stat.aliases), scope, stat.description, columns])
    return _table(["statistic", "aliases", "rows", "what", "columns"], rows)


def retrievers_reference() -> str:
    """The retrieval kinds (first stages and stages) with their typed options."""
    from sourcebias.retrieval.specs import kinds

    out = []
    for role, title in (("first", "First stages: `--retriever KIND[:ARGS]`"), ("stage", "Stages: `FIRST>>KIND[:ARGS]`")):
        out.append(f"### {title}\n")
        presets = [k for k in kinds(role).values() if k.models]
        if presets:
            out.append("Dense presets (" + ", ".join(f"`{k.kind}`" for k in presets) + ") take the options of `st:` below; see the presets table.\n")
        for kind in kinds(role).values():
            if kind.models:
                continue
            out.append(f"#### `{kind.usage()}`\n\n{kind.help}\n")
            if kind.offline:
                out.append(f"Offline: {kind.offline}.\n")
            if kind.params:
                rows = [[f"`{k}`", p.type.__name__, "" if p.default is None else f"`{p.default}`", p.option or "", p.help] for k, p in kind.params.items()]
                out.append(_table(["option", "type", "default", "command-wide fallback", "what"], rows) + "\n")
    return "\n".join(out)


def detectors_reference() -> str:
    """The detector registry (``--detector KIND:...`` of ``detect`` and ``audit``) with each kind's options."""
    from sourcebias.detect.base import detector_kinds

    out = []
    for kind in detector_kinds().values():
        out.append(f"### `{kind.usage}`\n\n{kind.description} ({kind.reference}); higher: more likely LLM-written.\n")
        if kind.options:
            out.append(_table(["option", "what"], [[f"`{k}`", v] for k, v in kind.options.items()]) + "\n")
    return "\n".join(out)


def prompts_reference() -> str:
    """The prompt registry (``--prompt NAME``, ``prompt=NAME`` of the LLM stages): what each asks and where it comes from."""
    from sourcebias.llmcalls.prompts import prompt_kinds, taken_by

    out = []
    for name, p in prompt_kinds().items():
        reading = f"parser `{p.parser}`" if p.parser else f"choices {', '.join(f'`{c}`' for c in p.choices)}"
        probabilities = f"; probabilities: `{p.probabilities}`" if p.probabilities != "none" else ""
        out.append(
            f"### `{name}`\n\n{_escape_text(p.description)}.\n\nAnswer: `{p.answer}` ({reading}{probabilities}). "
            f"Taken by: {'; '.join(f'`{t}`' for t in taken_by(p))}.\n\nFrom: {_escape_text(p.reference)}.\n"
        )
    return "\n".join(out)


def presets_reference() -> str:
    """The dense presets: checkpoint, score, pooling, prefixes."""
    from sourcebias.retrieval.dense import preset_listing

    rows = []
    for row in preset_listing():
        model = row["model"] + (f" + {row['query_model']} (queries)" if row["query_model"] else "")
        rows.append(
            [
                f"`{row['preset']}`",
                model,
                row["score"],
                row["pooling"],
                repr(row["query_prefix"]) if row["query_prefix"] else "",
                repr(row["doc_prefix"]) if row["doc_prefix"] else "",
            ]
        )
    return _table(["preset", "checkpoint", "score", "pooling", "query prefix", "document prefix"], rows)


def grid_settings_reference() -> str:
    """The ``[grid]`` settings of a grid file, from their one declaration (``experiments.settings``)."""
    from sourcebias.experiments.settings import settings_markdown

    return settings_markdown()


REFERENCES: dict[str, Callable[[], str]] = {
    "grid-settings": grid_settings_reference,
    "cli": cli_reference,
    "measures": measures_reference,
    "statistics": statistics_reference,
    "retrievers": retrievers_reference,
    "detectors": detectors_reference,
    "presets": presets_reference,
    "prompts": prompts_reference,
}


def reference_markdown(name: str) -> str:
    """The generated reference named ``name`` (one of :data:`REFERENCES`).

    Args:
        name: ``cli``, ``measures``, ``statistics``, ``retrievers``, ``detectors``, ``presets`` (and any
            registered later).

    Returns:
        The Markdown text.

    Raises:
        KeyError: for an unknown name, listing the known ones.
    """
    try:
        make = REFERENCES[name]
    except KeyError:
        raise KeyError(f"unknown reference '{name}'; known: {', '.join(REFERENCES)}") from None
    return make()
