"""Work a resumed job finds done (answers in the store) is on the bar but not in the rate or the
time left. Found on a real judge: 690 stored answers read in 26 s, then three calls a minute,
printed "26.4 calls/s, ETA 0:00:17" and, three minutes on, "3.4 calls/s, ETA 0:02:14" for
two and a half hours of work."""

from __future__ import annotations

import io

import pytest

from sourcebias.core import progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progress.time, "monotonic", c)
    return c


def test_a_plain_line_rates_only_this_runs_work(clock):
    t = progress._PlainTask("judging", 1156, "calls")
    t.skip(690)
    clock.now += 60
    t.advance(3)
    # 3 calls in 60 s: 0.05 a second, 3.0 a minute; 1,156 - 693 = 463 left: 9,260 s = 2:34:20
    assert t.line(clock.now) == "judging: 693/1,156 calls, 60%, 690 done before, 3.0 calls/min, elapsed 0:01:00, ETA 2:34:20"


def test_a_plain_line_before_any_new_work_has_no_rate_and_no_eta(clock):
    t = progress._PlainTask("judging", 10, "calls")
    t.skip(4)
    clock.now += 5
    assert t.line(clock.now) == "judging: 4/10 calls, 40%, 4 done before, elapsed 0:00:05"


@pytest.mark.parametrize(("rate", "text"), [(26.4, "26.4 docs/s"), (1.0, "1.0 docs/s"), (0.05, "3.0 docs/min"), (0.01, "36.0 docs/h")])
def test_the_rate_reads_per_second_minute_or_hour(rate, text):
    assert progress._rate_text(rate, "docs") == text


def test_a_rich_bar_shows_the_same_rate_and_time_left(clock):
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    reporter = progress.RichProgress(console=console)
    with reporter, progress.use(reporter), progress.task("judging", total=1156, unit="calls") as t:
        t.skip(690)
        clock.now += 60
        t.advance(3)
        fields = reporter._progress.tasks[0].fields
        assert reporter._progress.tasks[0].completed == 693
        assert fields["rate"] == "690 done before; 3.0 calls/min"
        assert fields["eta"] == "2:34:20"


def test_the_client_skips_what_its_store_answers(tmp_path):
    from sourcebias.llmcalls.base import Answer, Call
    from sourcebias.llmcalls.client import CachingClient

    class Echo(CachingClient):
        def identity(self):
            return {"model": "echo"}

        def compute(self, calls, on_answer):
            for i, c in enumerate(calls):
                on_answer(i, Answer(c.messages[-1][1], "stop"))

    class Backend:
        model = "echo"

    class Recorder:
        def __init__(self) -> None:
            self.events: list[tuple[str, float]] = []

        def advance(self, n: float = 1) -> None:
            self.events.append(("advance", n))

        def skip(self, n: float) -> None:
            self.events.append(("skip", n))

    calls = [Call(messages=(("user", f"q{i}"),)) for i in range(5)]
    Echo(Backend(), cache_dir=tmp_path).answer(calls[:3])
    rec = Recorder()
    answers = Echo(Backend(), cache_dir=tmp_path).answer(calls, task=rec)
    assert [a.text for a in answers] == [f"q{i}" for i in range(5)]
    assert rec.events == [("skip", 3), ("advance", 1), ("advance", 1)]
