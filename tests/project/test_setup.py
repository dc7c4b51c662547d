"""The README's set-up: CI runs exactly its two commands, and step 1 says what it cannot install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def readme_setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set-up (development)", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def ci_commands() -> list[str]:
    lines = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    # the shell's own preamble: strict mode and the repository root, nothing that installs or runs
    assert commands[:2] == ["set -euo pipefail", 'cd "$(dirname "$0")/.."'], commands
    return commands[2:]


def test_ci_runs_exactly_the_readme_commands():
    readme = readme_setup_commands()
    assert len(readme) == 2, readme
    assert ci_commands() == readme


def test_install_script_names_what_it_cannot_install(tmp_path):
    """Without chromium on PATH and without apt-get, step 1 installs the Python packages (here
    pip's --dry-run into this environment) and ends with status 1, naming the package."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HOME"))}
    env.update(PATH=str(bin_dir), VIRTUAL_ENV=sys.prefix)
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "install.sh"), "--dry-run", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"installing the locked Python packages into {sys.prefix}" in done.stdout
    assert "could not install: chromium" in done.stderr
    assert "your system's package manager" in done.stderr
