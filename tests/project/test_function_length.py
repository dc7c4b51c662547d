"""No function over 60 lines (def line to last line, docstring and signature included) in any
module of the package: command functions declare their options as ``Annotated`` aliases
(sourcebias.cli.options*), and longer work is split into a helper per step."""

from __future__ import annotations

import ast
from pathlib import Path

import sourcebias

ROOT = Path(sourcebias.__file__).parent
LIMIT = 60


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_function_over_60_lines():
    files = sorted(ROOT.rglob("*.py"))
    assert len(files) > 150  # the whole package, every subpackage and top-level module
    found = [line for p in files for line in long_functions(p)]
    assert not found, "\n".join(found)
