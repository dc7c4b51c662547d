"""The scripts the guides tell users to run work on a plain install, from any folder.

They defaulted to ``../shared/data`` beside the repository (the development copies), so on a
user's machine, which has the built-in NQ-UTD only, they ended in a traceback. Each check copies
the scripts into a clone's layout with nothing beside it, runs them from another folder with
``SOURCEBIAS_DATA`` unset and an empty dataset cache, and reads what they print: the built-in
NQ-UTD is found through the dataset registry, a dataset that is not downloaded is one line that
says how to get it, and a downloaded one gives the very files the development copy gives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def clone(tmp: Path, *scripts: str) -> Path:
    """``tmp/clone/benchmarks`` holding the scripts (and the helper they share), nothing beside."""
    bench = tmp / "clone" / "benchmarks"
    bench.mkdir(parents=True)
    for name in ("script_data.py", *scripts):
        shutil.copy(REPO / "benchmarks" / name, bench / name)
    return bench


def run(script: Path, *args: str, cwd: Path, datasets: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SOURCEBIAS_DATA"}
    env |= {"SOURCEBIAS_DATASETS": str(datasets), "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_judge_known_truth_study_runs_on_the_builtin_nq_utd(tmp_path):
    bench = clone(tmp_path, "judge_known_truth.py")
    args = ("--studies", "2", "--queries", "4", "--scenario", "few-queries")  # 3 queries a study: every estimate refused, as it must be
    done = run(bench / "judge_known_truth.py", *args, cwd=tmp_path / "elsewhere", datasets=tmp_path / "no-downloads")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 studies a scenario, 4 seeded NQ-UTD queries a study" in done.stdout and "few-queries" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_dataset_not_downloaded_is_one_line_saying_how_to_get_it(tmp_path):
    bench = clone(tmp_path, "make_scale_corpus.py")
    done = run(bench / "make_scale_corpus.py", str(tmp_path / "out"), "--docs", "100", cwd=tmp_path / "elsewhere", datasets=tmp_path / "no-downloads")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: 'nfcorpus' is neither a folder here nor downloaded yet"), done.stderr
    assert "run `sourcebias download nfcorpus`" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_downloaded_dataset_and_the_builtin_one_give_the_development_copies_bytes(tmp_path, nfcorpus, nq_utd):
    """nfcorpus as ``sourcebias download`` leaves it (the development copy, linked, with the
    download's marker) and the built-in, gzip-compressed NQ-UTD: the scale corpus is the one
    ``--data`` gives from the development copies, byte for byte."""
    from sourcebias.data.registry import MARKER

    datasets = tmp_path / "datasets"
    (datasets / "nfcorpus").mkdir(parents=True)
    for item in nfcorpus.iterdir():
        (datasets / "nfcorpus" / item.name).symlink_to(item.resolve())
    (datasets / "nfcorpus" / MARKER).write_text("{}\n", encoding="utf-8")
    bench = clone(tmp_path, "make_scale_corpus.py")
    args = ("--docs", "400", "--queries", "30", "--seed", "3")
    mine = run(bench / "make_scale_corpus.py", str(tmp_path / "registry"), *args, cwd=tmp_path / "elsewhere", datasets=datasets)
    assert mine.returncode == 0, mine.stderr[-3000:]
    dev = run(bench / "make_scale_corpus.py", str(tmp_path / "dev"), *args, "--data", str(nq_utd.parent), cwd=tmp_path / "elsewhere", datasets=datasets)
    assert dev.returncode == 0, dev.stderr[-3000:]
    for rel in ("corpus/human.jsonl", "corpus/llama-2-7b-chat-tmp0.2.jsonl", "queries.jsonl", "qrels/test.tsv", "SHAPE.json"):
        assert (tmp_path / "registry" / rel).read_bytes() == (tmp_path / "dev" / rel).read_bytes(), rel


@pytest.mark.slow
def test_the_llm_rerankers_worked_run_runs_on_the_builtin_nq_utd(tmp_path):
    """The guide's worked run, one query and one window of five (one SmolLM2 call)."""
    bench = clone(tmp_path, "llm_rerankers_nq_utd.py")
    args = ("--queries", "1", "--depth", "5", "--orders", "1", "--words", "8", "-o", str(tmp_path / "out"))
    done = run(bench / "llm_rerankers_nq_utd.py", *args, cwd=tmp_path / "elsewhere", datasets=tmp_path / "no-downloads")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NQ-UTD test, first 1 queries, mixed corpus, top 5" in done.stdout and (tmp_path / "out" / "rankgpt-orders1").is_dir()
