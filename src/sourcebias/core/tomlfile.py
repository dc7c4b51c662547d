"""Reading a configuration TOML file with errors that name the file and line (grids, simulations)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from sourcebias.core.errors import DataError


def read_toml(path: str | Path, what: str = "configuration") -> tuple[Path, str, dict[str, Any]]:
    """``(path, text, table)`` of a TOML file; a missing file or a syntax error is a
    :class:`DataError` naming the file, the line and the column."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib

    path = Path(path)
    if not path.is_file():
        raise DataError(path, f"{what} not found")
    text = path.read_text(encoding="utf-8")
    try:
        return path, text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)  # Python < 3.14 puts the place in the text
        line = getattr(exc, "lineno", None) or (int(m.group(1)) if m else None)
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", f" (column {m.group(2)})" if m else "", msg)
        raise DataError(path, f"not valid TOML: {msg}", line) from None
