"""Time the README's test command (``python -m pytest``) on this machine, and list its slowest tests.

    python benchmarks/bench_test_suite.py [--repo DIR] [--durations 30] [--log FILE] [-- extra pytest options]

Runs the suite once in a subprocess (exactly the README's step 2, from the repository root given by
``--repo``, default this checkout) with ``--durations`` added, and prints the wall time, the
machine (cores, load average before and after, CPU model) and pytest's own summary line. Pass the
root of another checkout (an older commit in a ``git worktree``) as ``--repo`` to compare two
versions in one session on the same machine. No timing is asserted anywhere: this is a measurement.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def machine() -> str:
    """Cores, CPU model and the load average, in one line."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return f"{os.cpu_count()} cores, {model or platform.processor()}, load average {tuple(round(x, 2) for x in load)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--python", default=None, help="interpreter to run pytest with (default: REPO/.venv/bin/python, else this one)")
    parser.add_argument("--durations", type=int, default=30)
    parser.add_argument("--log", type=Path, default=None, help="write pytest's whole output here (failures in full)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    repo = args.repo.resolve()
    python = args.python or (str(repo / ".venv" / "bin" / "python") if (repo / ".venv" / "bin" / "python").exists() else sys.executable)
    cmd = [python, "-m", "pytest", f"--durations={args.durations}", *args.pytest_args]
    print(f"repo: {repo}")
    print(f"before: {machine()}")
    print(f"command: {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = proc.stdout.splitlines()
    try:
        first = next(i for i, line in enumerate(lines) if "slowest" in line and "durations" in line)
        print("\n".join(lines[first : first + args.durations + 1]))
    except StopIteration:
        pass
    summary = next((i for i, line in enumerate(lines) if "short test summary info" in line), len(lines) - 1)
    print("\n".join(lines[summary:]))  # every FAILED and ERROR line, then pytest's count
    if args.log is not None:
        args.log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    print(f"after: {machine()}")
    print(f"wall time: {wall:.0f} s ({wall / 60:.1f} min), exit status {proc.returncode}")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
