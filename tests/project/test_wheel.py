"""The package as a user gets it: a wheel built from the repository, installed into a fresh virtual
environment, runs the quick start with nothing of the source tree on its path (the package data
and the entry point are complete; `pip install sourcebias` will work the day it is published).

The fresh environment takes the wheel alone (``pip install --no-deps``); its dependencies are
those of this test environment, reached through a path file, not a second install (that would
download PyTorch and the rest again). What is checked is what the wheel brings: the modules, the
built-in dataset, the licence, the ``sourcebias`` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(build)},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (found,) = out.glob("sourcebias-*.whl")
    return found


def test_the_wheel_carries_the_data_the_licence_and_the_command(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("corpus/human.jsonl.gz", "corpus/llama-2-7b-chat-tmp0.2.jsonl.gz", "queries.jsonl.gz", "qrels/test.tsv.gz", "LICENSE"):
        assert f"sourcebias/data/builtin/nq-utd/{f}" in names, f
    for prompt in (REPO / "src" / "sourcebias" / "llmcalls" / "prompt_files").glob("*.toml"):  # the LLM stages' prompts
        assert f"sourcebias/llmcalls/prompt_files/{prompt.name}" in names, prompt.name
    dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert f"{dist}/licenses/LICENSE" in names
    entry_points = zipfile.ZipFile(wheel).read(f"{dist}/entry_points.txt").decode()
    assert "sourcebias = sourcebias.cli.main:main" in entry_points
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)


def test_the_quick_start_runs_from_the_installed_wheel(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], capture_output=True, text=True, check=False
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "test-dependencies.pth").write_text("\n".join(sorted(deps)) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(COLUMNS="100", OMP_NUM_THREADS="1")
    where = subprocess.run(
        [str(python), "-c", "import sourcebias; print(sourcebias.__file__)"], capture_output=True, text=True, cwd=tmp_path, env=env, check=False
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(site), where.stdout  # the wheel's copy, not the source tree
    cmd = [str(venv / "bin" / "sourcebias"), "evaluate", "nq-utd", "-r", "bm25", "--k", "3", "--metric", "NDCG", "--statistics", "none", "-o", "out"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "│ bm25      │ NDCG@3 │ 70.5 │  42.4 │ 37.4 │  12.5 │       66.5 │     70.6 │" in proc.stdout
    assert (tmp_path / "out" / "figures" / "source_bias.png").is_file()
    listed = subprocess.run([str(venv / "bin" / "sourcebias"), "prompts"], capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert listed.returncode == 0 and all(name in listed.stdout for name in ("umbrela", "rankgpt", "alce")), (
        listed.stdout + listed.stderr
    )  # read from the wheel
