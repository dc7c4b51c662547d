"""ruff holds the code to the rules stated in pyproject.toml ([tool.ruff], [tool.ruff.lint]): the
lint rules pass and the formatter would change nothing, over the package, the tests, the
benchmarks and the documentation's build hook; and the package is laid out by the formatter
throughout: no ``fmt: skip`` and no line over the line length (long strings are adjacent literals)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PATHS = ["src", "tests", "benchmarks", "docs/hooks.py"]
PACKAGE = REPO / "src" / "sourcebias"
LINE_LENGTH = 160  # [tool.ruff] line-length


def ruff() -> list[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed (it is pinned in requirements/dev.txt: run scripts/install.sh)")
    return [found]


def test_ruff_check_passes():
    proc = subprocess.run([*ruff(), "check", *PATHS], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_ruff_format_would_change_nothing():
    proc = subprocess.run([*ruff(), "format", "--check", *PATHS], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_package_is_laid_out_by_the_formatter():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 150  # the whole package
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            where = f"{path.relative_to(REPO)}:{number}"
            if "fmt: skip" in line:
                found.append(f"{where}: fmt: skip")
            if len(line) > LINE_LENGTH:
                found.append(f"{where}: {len(line)} characters")
    assert not found, "\n".join(found)


def test_no_formatter_opt_outs_anywhere():
    """The tests, benchmarks and scripts are laid out by the formatter too: no ``fmt: skip``."""
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("tests", "benchmarks", "scripts")
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "fmt: " + "skip" in line
    ]
    assert not found, "\n".join(found)
