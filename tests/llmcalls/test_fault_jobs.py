"""Issue 40, part 3, at the level of a job: ``sourcebias judge`` through a fault-injecting proxy, a
judge whose calls stop getting answers, a judge job killed with -9, and two judge jobs sharing one
answer store. Each result must equal an undisturbed run's (its grades, pairs and every estimate),
with no answer stored twice, and the retries in the command's printed notes. No timing is asserted."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import pytest
from pandas.testing import assert_frame_equal

from sourcebias.cli.main import main
from sourcebias.data import load_dataset
from sourcebias.judges import JudgePlan, JudgeSettings, load_judge, run_judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.llmcalls import ModelAccess, open_client
from sourcebias.llmcalls.backends.base import GenerationError
from sourcebias.llmcalls.cache import AnswerStore
from sourcebias.llmcalls.faults import FaultProxy
from sourcebias.llmcalls.simulated import SimulatedServer

SETTINGS = JudgeSettings(modes=("grade", "pairwise"))
MIX = ("429", "500", "503", "reset", "cut", "drop", "malformed", "no-choices")


@pytest.fixture(scope="module")
def nq(nq_utd):
    return load_dataset(nq_utd)


@pytest.fixture(scope="module")
def reference(nq_utd, nq, tmp_path_factory):
    """Undisturbed judge runs of 3 and 4 queries (120 and 160 calls), each in its own store."""
    root = tmp_path_factory.mktemp("reference")
    out = {}
    with SimulatedServer(BiasedJudge.from_corpus(nq.corpus, nq.human_source)) as url:
        for q in (3, 4):
            out[q], _ = run_judge(
                str(nq_utd),
                f"openai:sim@{url}",
                root / f"q{q}",
                settings=SETTINGS,
                plan=JudgePlan(max_queries=q, resamples=200),
                access=ModelAccess(cache_dir=root / f"c{q}"),
            )
    return out


def _missing_as_none(value):
    """``value`` with every NaN as None (NaN is not equal to itself; a written result holds null)."""
    if isinstance(value, dict):
        return {k: _missing_as_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_missing_as_none(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def same_result(got, ref) -> None:
    """The same grades, pairs and estimates (the client's own counts aside)."""
    assert_frame_equal(got.grades.reset_index(drop=True), ref.grades.reset_index(drop=True))
    assert_frame_equal(got.pairs.reset_index(drop=True), ref.pairs.reset_index(drop=True))
    # a value refused on 3 or 4 queries is NaN in memory and null once written: both are "missing"
    assert _missing_as_none(got.analyses) == _missing_as_none(ref.analyses)
    assert _missing_as_none(got.protocol) == _missing_as_none(ref.protocol)
    assert [n for n in got.notes if not n.startswith("judge calls: ")] == ref.notes


def store_keys(cache) -> list[str]:
    (path,) = (cache / "llmcalls").glob("*.jsonl")
    return AnswerStore(path).keys_on_disk()


def judge_args(nq_utd, url, queries, cache, out):
    return [
        "judge",
        str(nq_utd),
        "--judge",
        f"openai:sim@{url}",
        "--max-queries",
        str(queries),
        "--mode",
        "grade",
        "--mode",
        "pairwise",
        "--resamples",
        "200",
        "--cache-dir",
        str(cache),
        "-o",
        str(out),
    ]


def test_a_judge_through_every_kind_of_fault_equals_an_undisturbed_run(nq_utd, nq, reference, tmp_path, capsys):
    """Every 5th request gets a fault, the kinds in turn: the command completes, its output equals
    the undisturbed run's, and it prints how many requests were retried."""
    with SimulatedServer(BiasedJudge.from_corpus(nq.corpus, nq.human_source)) as server_url:
        proxy = FaultProxy(server_url, lambda n: MIX[(n // 5) % len(MIX)] if n % 5 == 2 else None, retry_after=1)
        with proxy as url, pytest.raises(SystemExit) as info:
            main(judge_args(nq_utd, url, 3, tmp_path / "cache", tmp_path / "out"))
    printed = capsys.readouterr()
    assert info.value.code == 0, printed.err
    injected = sum(proxy.injected.values())
    assert injected >= 24 and set(proxy.injected) == set(MIX)  # 120 calls: 24 faults at least, every kind
    result = load_judge(tmp_path / "out")
    same_result(result, reference[3])
    assert result.judge["client"]["calls"]["retries"] == injected and result.judge["client"]["calls"]["failed"] == 0
    assert f"judge calls: {injected} requests retried after faults of the servers or the network" in " ".join(printed.out.split())
    keys = store_keys(tmp_path / "cache")
    assert len(keys) == 120 and len(set(keys)) == 120


def test_a_judge_whose_calls_stop_getting_answers_fails_and_a_rerun_completes_it(nq_utd, nq, reference, tmp_path):
    """From the 31st request on, every answer is a 503: the job stops with an error that says what
    is stored, writes no output folder, and a rerun (the server well again) sends only the rest."""
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)
    with SimulatedServer(bj) as server_url:
        proxy = FaultProxy(server_url, lambda n: "503" if n >= 30 else None)
        with proxy as url:
            client = open_client(f"openai:sim@{url}", cache_dir=tmp_path / "cache", max_retries=2, backoff_base=0.01, backoff_max=0.05)
            with pytest.raises(GenerationError, match=r"90 of 120 calls of this batch got no answer; the 30 answered are stored in .* a rerun sends only"):
                run_judge(
                    str(nq_utd), "sim", tmp_path / "out", settings=SETTINGS, plan=JudgePlan(max_queries=3, resamples=200), access=ModelAccess(client=client)
                )
            assert not (tmp_path / "out").exists()
            proxy.set_plan(None)
            result, _ = run_judge(
                str(nq_utd),
                f"openai:sim@{url}",
                tmp_path / "out",
                settings=SETTINGS,
                plan=JudgePlan(max_queries=3, resamples=200),
                access=ModelAccess(cache_dir=tmp_path / "cache"),
            )
    same_result(result, reference[3])
    assert result.judge["cached"] == 30 and result.judge["client"]["calls"]["computed"] == 90
    keys = store_keys(tmp_path / "cache")
    assert len(keys) == 120 and len(set(keys)) == 120


def _env():
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def test_a_judge_job_killed_with_9_resumes_to_the_undisturbed_result(nq_utd, nq, reference, tmp_path):
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)

    def slow(messages, params):
        time.sleep(0.02)
        return bj(messages, params)

    with SimulatedServer(slow) as url:
        args = [sys.executable, "-m", "sourcebias", *judge_args(nq_utd, url, 3, tmp_path / "cache", tmp_path / "out"), "--concurrency", "2"]
        proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while bj.calls < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stored = len(store_keys(tmp_path / "cache"))
        assert 0 < stored < 120 and not (tmp_path / "out").exists()
        done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = load_judge(tmp_path / "out")
    same_result(result, reference[3])
    assert result.judge["cached"] == stored
    keys = store_keys(tmp_path / "cache")
    assert len(keys) == 120 and len(set(keys)) == 120


def test_two_judge_jobs_sharing_one_store_each_equal_their_undisturbed_run(nq_utd, nq, reference, tmp_path):
    """Jobs of 3 and 4 queries at once on one store (the 4-query sample holds the 3-query one: 120
    calls in common): each result equals its undisturbed run's, and the store holds the 160
    distinct answers once each."""
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)

    def slow(messages, params):
        time.sleep(0.01)
        return bj(messages, params)

    with SimulatedServer(slow) as url:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "sourcebias", *judge_args(nq_utd, url, q, tmp_path / "cache", tmp_path / f"out{q}")],
                env=_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for q in (3, 4)
        ]
        errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    for q in (3, 4):
        same_result(load_judge(tmp_path / f"out{q}"), reference[q])
    keys = store_keys(tmp_path / "cache")
    assert len(keys) == 160 and len(set(keys)) == 160
    assert 160 <= bj.calls <= 120 + 160  # each job sends a call at most once (never one the other had stored when its turn came)
