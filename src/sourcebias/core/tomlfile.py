"""Reading and checking a configuration TOML file (grids, simulations): one reader and one checker,
whose every error names the file, the line of the key and what is wrong (a near miss gets a "did
you mean")."""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

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


# -- where a key is, and what was meant --------------------------------------------------------
_HEADER = re.compile(r"\s*\[(\[)?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def key_line(text: str, key: str, table: str | None = None, index: int = 1) -> int | None:
    """The line of ``key = ...`` in a TOML text, for error messages.

    Args:
        text: the file's text.
        key: the key (bare or quoted in the file).
        table: the table it is in (``[table]``, or the ``index``-th ``[[table]]``); None: the top
            level, where ``key`` may also be a table's header (``[grdi]``).
        index: which ``[[table]]`` entry, from 1.

    Returns:
        The line number (from 1), or None when the key is not there as a plain ``key =`` line.
    """
    here: str | None = None
    seen: dict[str, int] = {}
    key_re = re.compile(rf"""\s*(["']?){re.escape(key)}\1\s*=""")
    for i, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            here = m.group(2)
            seen[here] = seen.get(here, 0) + 1
            if table is None and here == key:
                return i
            continue
        if here == table and (table is None or seen.get(table) == index) and key_re.match(line):
            return i
    return None


def unknown_keys(table: dict[str, Any], allowed: set[str] | frozenset[str]) -> tuple[str, str] | None:
    """The keys of ``table`` not in ``allowed``, with a "did you mean" for close misspellings.

    Args:
        table: a parsed TOML table.
        allowed: its known keys.

    Returns:
        ``(the first unknown key, the problem)``, e.g. ``("primry", "unknown key(s) primry (did
        you mean primary?); allowed: ...")`` (difflib's closest match, if any is close), or None
        when every key is known.
    """
    unknown = sorted(set(table) - set(allowed))
    if not unknown:
        return None
    guesses = [f"{k} (did you mean {g[0]}?)" if (g := difflib.get_close_matches(k, allowed, n=1, cutoff=0.6)) else k for k in unknown]
    return unknown[0], f"unknown key(s) {', '.join(guesses)}; allowed: {', '.join(sorted(allowed))}"


class TomlFile:
    """A TOML file being checked: errors name the file, the line of the key and what is wrong.

    A place is given either as the table that holds the key (``table``, the ``index``-th entry of
    an array of tables, ``None`` for the top level) or, in the ``*_at`` methods, by the name the
    message uses for it (``[generator]``, ``retrievers[2]``, ``the file``).
    """

    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def fail(self, problem: str, key: str | None = None, table: str | None = None, index: int = 1) -> NoReturn:
        raise DataError(self.path, problem, key_line(self.text, key, table, index) if key else None)

    def fail_at(self, where: str, problem: str, key: str | None = None) -> NoReturn:
        m = re.match(r"\[?([a-z_]+)\]?(?:\[(\d+)\])?", where)
        table, index = (m.group(1), int(m.group(2) or 1)) if m and where != "the file" else (None, 1)
        self.fail(f"{where}: {problem}", key, table, index)

    def keys(self, table: Any, allowed: set[str] | frozenset[str], where: str, name: str | None = None, index: int = 1) -> dict[str, Any]:
        """``table`` after checking that it is a table of known keys (a near miss gets a "did you mean")."""
        if not isinstance(table, dict):
            self.fail(f"{where}: expected a table, got {table!r}", name, None, index)
        unknown = unknown_keys(table, allowed)
        if unknown:
            self.fail(f"{where}: {unknown[1]}", unknown[0], name, index)
        return table

    def keys_at(self, table: Any, allowed: set[str], where: str) -> dict[str, Any]:
        """:meth:`keys`, the place named as the message names it."""
        if not isinstance(table, dict):
            self.fail_at(where, f"expected a table, got {table!r}")
        unknown = unknown_keys(table, allowed)
        if unknown:
            self.fail_at(where, unknown[1], unknown[0])
        return table

    def typed(self, value: Any, typ: type, where: str, key: str, table: str | None, index: int = 1) -> Any:
        """``value`` after checking its type (a bool is never a number)."""
        if isinstance(value, bool) or not isinstance(value, typ):
            self.fail(f"{where}.{key}: expected {typ.__name__}, got {value!r}", key, table, index)
        return value

    def get(self, table: dict[str, Any], key: str, typ: Any, where: str, default: Any = None, minimum: float | None = None) -> Any:
        """``table[key]`` checked for its type(s) and least value; ``default`` when absent."""
        if key not in table:
            return default
        v = table[key]
        bad_bool = isinstance(v, bool) and typ in (int, float, (int, float))
        if bad_bool or not isinstance(v, typ):
            name = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            self.fail_at(f"{where}.{key}", f"expected {name}, got {v!r}", key)
        if minimum is not None and v < minimum:
            self.fail_at(f"{where}.{key}", f"must be at least {minimum}, got {v!r}", key)
        return v

    def choice(self, table: dict[str, Any], key: str, choices: tuple[str, ...], where: str, default: str) -> str:
        """``table[key]``, one of ``choices``; ``default`` when absent."""
        v = self.get(table, key, str, where, default)
        if v not in choices:
            self.fail_at(f"{where}.{key}", f"'{v}' is not one of {', '.join(choices)}", key)
        return v
