"""The package type-checks: mypy, run with the project's configuration (``[tool.mypy]`` in
pyproject.toml: default strictness over all of ``src/sourcebias``, every flag of ``--strict`` on
the public API), reports no error; and the declarations written for type checkers only agree with
what the code does at run time.

mypy keeps its cache in the repository's ``.mypy_cache`` (mypy puts a ``.gitignore`` in it): a
fresh clone checks everything once (about a minute of CPU), later runs only what changed.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import sourcebias
from sourcebias.experiments.settings import GRID_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "sourcebias"


def test_mypy_reports_no_error_over_the_package():
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed here: requirements/dev.txt pins it (or pip install 'sourcebias[lint]')")
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache"), "--no-color-output"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mypy found errors (exit {proc.returncode}):\n{output}"
    assert "Success: no issues found" in proc.stdout, output


def _type_checking_block(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of the ``if TYPE_CHECKING:`` block among ``body``."""
    for node in body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return node.body
    raise AssertionError("no `if TYPE_CHECKING:` block")


def test_grid_config_declares_for_type_checkers_exactly_the_grid_settings():
    # GridConfig gets one field per GRID_SETTINGS entry at run time (_declared_settings); its
    # `if TYPE_CHECKING:` block spells them out for type checkers and must name the same ones.
    tree = ast.parse((PACKAGE / "experiments" / "config.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GridConfig")
    declared = [n.target.id for n in _type_checking_block(cls.body) if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    assert declared == [s.name for s in GRID_SETTINGS]


def test_the_top_level_names_type_checkers_see_are_the_lazy_exports():
    # sourcebias/__init__ imports its exports lazily (__getattr__); the `if TYPE_CHECKING:`
    # imports let type checkers and editors see them, and must match _EXPORTS name for name.
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    seen = {}
    for node in _type_checking_block(tree.body):
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: re-export it as itself (`import X as X`)"
            seen[alias.name] = node.module
    assert seen == sourcebias._EXPORTS
