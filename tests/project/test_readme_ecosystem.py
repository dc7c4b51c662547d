"""The README's "Use with PyTerrier, ranx and ir_datasets" snippets (the PyTerrier and ir_datasets
parts), run as printed: ``# name.py`` blocks are written as files, other Python blocks and bash
blocks are run in that folder, and every number of the output block that follows a snippet must
appear in what it printed (to a small tolerance, see :func:`reproduced`). ``../shared/data`` is the test data folder; the ir_datasets part runs
with BEIR's nfcorpus placed in a temporary ``IR_DATASETS_HOME`` (see tests/adapters/test_irds.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import DATA, REPO

pytest.importorskip("pyterrier")
pytest.importorskip("ir_datasets")
pytest.importorskip("ranx")

from irds_helpers import placed_nfcorpus  # noqa: E402

SECTION = "## Use with PyTerrier, ranx and ir_datasets"
BLOCK = re.compile(r"```(python|bash|)\n(.*?)```", re.S)
NUMBER = re.compile(r"-?\d+\.\d+")


def subsection(title: str) -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    start = section.index(f"### {title}\n")
    end = section.find("\n### ", start + 1)
    return BLOCK.findall(section[start : end if end != -1 else len(section)])


def reproduced(value: float, printed: str) -> bool:
    """Whether ``printed`` shows ``value`` (to 1% or 0.15 points: BM25's analyzer is still being
    brought to Lucene's, which moves scores in the third digit; the README is regenerated then)."""
    return any(abs(float(x) - value) <= max(0.01 * abs(value), 0.15 if abs(value) >= 1 else 0.002) for x in NUMBER.findall(printed))


def run_blocks(blocks: list[tuple[str, str]], cwd, env) -> int:
    """Run the snippets in order; check each output block against the snippet before it."""
    printed, ran = "", 0
    for kind, code in blocks:
        code = code.replace("../shared/data", DATA.as_posix())
        first = code.splitlines()[0]
        if kind == "python" and first.startswith("# ") and first.endswith(".py"):
            (cwd / first[2:]).write_text(code, encoding="utf-8")
        elif kind in ("python", "bash"):
            cmd = [sys.executable, "-c", code] if kind == "python" else ["bash", "-c", code.replace("sourcebias ", f"{sys.executable} -m sourcebias ", 1)]
            proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"{code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
            printed, ran = proc.stdout, ran + 1
        else:  # the output the README shows for the snippet before
            missing = [n for n in NUMBER.findall(code) if not reproduced(float(n), printed)]
            assert not missing, f"README output not reproduced: {missing}\n{printed[-3000:]}"
    return ran


def environment(tmp_path, **extra):
    src = str(REPO / "src")
    return {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200", "PYTHONPATH": os.pathsep.join([str(tmp_path), src]), **extra}


def test_pyterrier_snippets_run_as_printed(tmp_path):
    blocks = subsection("PyTerrier")
    assert run_blocks(blocks, tmp_path, environment(tmp_path)) == 2


def test_ir_datasets_snippets_run_as_printed(tmp_path, nfcorpus):
    home = placed_nfcorpus(nfcorpus, tmp_path / "irds-home")
    blocks = subsection("ir_datasets")
    assert run_blocks(blocks, tmp_path, environment(tmp_path, IR_DATASETS_HOME=str(home))) == 2
