"""Read the code blocks of the documentation pages, and run them as a reader would.

The rules (also in docs/contributing.md, "Docs are tested"):

* A page's blocks run in order, in one fresh working folder per page, so a later block sees the
  files an earlier one wrote.
* ```` ```bash ```` runs with ``bash -euo pipefail``; ```` ```python ```` runs as a script with the
  suite's interpreter. Both find ``sourcebias`` on ``PATH`` and the built-in datasets by name.
* A ```` ```python ```` or ```` ```toml ```` block whose first line is ``# NAME.py`` /
  ``# NAME.toml`` is a *file*: it is written to the working folder (a Python file is compiled, a
  TOML file parsed), and later blocks use it.
* ```` ```text ```` blocks show output. One right after a run block, marked
  ``<!-- docs-test: output -->``, must equal what that block printed (line by line, trailing
  spaces ignored).
* A marker line right before a block changes how it is checked, always with a reason:
  ``<!-- docs-test: parse-only (REASON) -->`` parses each ``sourcebias`` command of a bash block
  with the real command-line app (every option and value must exist and convert; nothing runs)
  or compiles a Python block; ``<!-- docs-test: skip (REASON) -->`` leaves it out (installing
  from the network, starting a cluster on other machines). Counts of each kind are reported by
  tests/project/test_docs.py.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
README = REPO_ROOT / "README.md"
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[A-Za-z0-9_+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
MARKER = re.compile(r"<!-- docs-test: (?P<mode>skip|parse-only|output)(?: \((?P<reason>[^)]*)\))? -->\s*$")
RUN_LANGS = {"bash", "python"}
OUTPUT_LANGS = {"text", "console", ""}


@dataclass
class Block:
    """One fenced block of a page: where it is, its language, text and how it is checked."""

    page: str
    line: int
    lang: str
    body: str
    mode: str  # run | file | parse-only | skip | output | shown
    reason: str = ""

    @property
    def where(self) -> str:
        """``page.md:LINE`` for messages."""
        return f"{self.page}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """``NAME.py`` / ``NAME.toml`` when the block's first line names a file."""
        first = self.body.splitlines()[0] if self.body.strip() else ""
        m = re.fullmatch(r"#\s*([\w.-]+\.(?:py|toml))\s*", first)
        return m.group(1) if m else None


def _mode(lang: str, marker: re.Match | None, body: str) -> tuple[str, str]:
    if marker is not None:
        return marker.group("mode"), marker.group("reason") or ""
    probe = Block("", 0, lang, body, "")
    if lang in ("python", "toml") and probe.file_name:
        return "file", ""
    if lang in RUN_LANGS:
        return "run", ""
    return "shown", ""


def page_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, in order."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(DOCS).as_posix() if path.is_relative_to(DOCS) else path.name
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        lang = m.group("lang").lower()
        body = "\n".join(line[len(m.group("indent")) :] for line in m.group("body").splitlines())
        mode, reason = _mode(lang, marker, body)
        out.append(Block(rel, text.count("\n", 0, m.start()) + 1, lang, body, mode, reason))
    return out


def pages() -> list[Path]:
    """Every Markdown page of the site, and the README (its quick start runs like a page's)."""
    return [*sorted(DOCS.rglob("*.md")), README]


def shell_commands(body: str) -> list[list[str]]:
    """The commands of a bash block, continuation lines joined, comments and env assignments
    left out of each command's words."""
    joined = re.sub(r"\\\n\s*", " ", body)
    commands = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        for part in re.split(r"\s*(?:&&|;|\|)\s*", line):
            words = shlex.split(part)
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                words = words[1:]
            if words:
                commands.append(words)
    return commands
