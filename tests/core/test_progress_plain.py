"""Without a terminal, long steps report progress as plain periodic lines on stderr (logs in CI,
under nohup), not rich bars that never draw."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from sourcebias.core import progress
from sourcebias.core.errors import ConfigError

ANSI = re.compile(r"\x1b\[")


def test_plain_progress_writes_periodic_lines_and_an_end_line():
    stream = io.StringIO()
    with progress.PlainProgress(stream=stream, interval=0.01) as reporter, progress.use(reporter), progress.task("encoding", total=4, unit="docs") as t:
        t.advance(1)
        time.sleep(0.2)  # twenty intervals
        t.advance(3)
    lines = stream.getvalue().splitlines()
    assert lines[-1].startswith("encoding: 4/4 docs, 100%") and lines[-1].endswith("(done)")
    periodic = lines[:-1]
    assert periodic and all(line.startswith("encoding: 1/4 docs, 25%") for line in periodic)
    assert all("elapsed 0:00:0" in line for line in lines)


def test_a_step_shorter_than_the_interval_prints_nothing():
    stream = io.StringIO()
    with progress.PlainProgress(stream=stream, interval=60) as reporter, progress.use(reporter), progress.task("quick", total=1) as t:
        t.advance()
    assert stream.getvalue() == ""


def test_a_bad_interval_is_refused(monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_SECONDS_ENV, "soon")
    with pytest.raises(ConfigError, match="SOURCEBIAS_PROGRESS_SECONDS='soon'"):
        progress.progress_interval()


def test_cli_without_a_terminal_prints_plain_progress_lines_on_stderr(nq_utd, tmp_path):
    env = {**os.environ, progress.PROGRESS_SECONDS_ENV: "0.005"}
    cmd = [sys.executable, "-m", "sourcebias", "evaluate", str(nq_utd), "-r", "bm25", "--metric", "NDCG", "--k", "3", "--no-runs", "-o", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert not ANSI.search(proc.stderr)
    periodic = [line for line in lines if not line.endswith("(done)")]
    done = [line for line in lines if line.endswith("(done)")]
    assert periodic and done, proc.stderr
    assert any(line.startswith("bm25: indexing 1,600 documents: ") for line in periodic)
    assert all(re.match(r"bm25: [^:]+: \d+/\d+ \w+, \d+%.*, elapsed \d+:\d\d:\d\d", line) for line in lines if line.startswith("bm25: ")), proc.stderr
