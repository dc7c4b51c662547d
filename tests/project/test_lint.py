"""ruff holds the code to the rules stated in pyproject.toml ([tool.ruff], [tool.ruff.lint]): the
lint rules pass and the formatter would change nothing, over the package, the tests, the
benchmarks and the documentation's build hook."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PATHS = ["src", "tests", "benchmarks", "docs/hooks.py"]


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
