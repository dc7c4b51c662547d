"""No function over 60 lines (def line to last line, docstring and signature included) in the
packages checked here so far: data/, evaluation/ (its stats/ is checked on its own) and the
evaluate command. Add a package to CHECKED once its functions are under the limit."""

from __future__ import annotations

import ast
from pathlib import Path

import sourcebias

ROOT = Path(sourcebias.__file__).parent
LIMIT = 60
CHECKED = ["data", "evaluation", "cli/evaluate.py", "cli/datasets.py", "cli/options.py", "reporting/evaluation_job.py"]
NOT_YET = ["evaluation/stats"]


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_function_over_60_lines():
    files = [p for c in CHECKED for p in ((ROOT / c).rglob("*.py") if (ROOT / c).is_dir() else [ROOT / c])]
    files = [p for p in files if not any(p.relative_to(ROOT).as_posix().startswith(n) for n in NOT_YET)]
    assert len(files) > 20
    found = [line for p in files for line in long_functions(p)]
    assert not found, "\n".join(found)
