"""MkDocs hook: reference sections written from sourcebias' own registries at build time.

A page line ``<!-- reference: NAME -->`` is replaced by
:func:`sourcebias.cli.reference.reference_markdown` ``(NAME)`` (the CLI from the typer app, the
measures, statistics, retrieval kinds, detectors and presets from their registries), so the reference pages
cannot drift from the code.
"""

from __future__ import annotations

import re

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.M)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each reference marker with the generated Markdown."""
    if "<!-- reference:" not in markdown:
        return markdown
    from sourcebias.cli.reference import reference_markdown

    return MARKER.sub(lambda m: reference_markdown(m.group(1)), markdown)
