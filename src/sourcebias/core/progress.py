"""Progress reporting for long steps, silent unless a front end switches it on.

Library code reports progress through :func:`task`; by default nothing is shown (a notebook
or script stays quiet). The CLI installs a :class:`RichProgress` with :func:`use`, which draws
rich progress bars (rate and ETA included) on a terminal; when the console is not a terminal
(logs in CI, ``nohup``, a pipe) it writes plain lines to stderr instead (:class:`PlainProgress`):
one every ``SOURCEBIAS_PROGRESS_SECONDS`` (default 30) while a step runs and one when a step so
reported ends (a shorter step prints nothing) — no ANSI codes.

Work a resumed job finds already done (answers an LLM client reads from its store; the jobs that
resume by leaving out what is done, such as rewriting or encoding, count only the rest)
is reported with ``skip``, not ``advance``: it counts towards the bar but not towards the rate, so
the rate and the time left are those of the work this run does. (Counted in, 690 stored answers
read in 26 s made a judge that asks three calls a minute print "26 calls/s, ETA 0:00:17".)
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol, TextIO

PROGRESS_SECONDS_ENV = "SOURCEBIAS_PROGRESS_SECONDS"
DEFAULT_PROGRESS_SECONDS = 30.0


class TaskHandle(Protocol):
    def advance(self, n: float = 1) -> None: ...

    def skip(self, n: float) -> None: ...

    def update(self, *, description: str | None = None, total: float | None = None) -> None: ...


class _NullTask:
    def advance(self, n: float = 1) -> None:
        pass

    def skip(self, n: float) -> None:
        pass

    def update(self, *, description: str | None = None, total: float | None = None) -> None:
        pass


class NullProgress:
    @contextlib.contextmanager
    def task(self, description: str, total: float | None = None, unit: str = "it") -> Iterator[TaskHandle]:
        yield _NullTask()


class _RichTask:
    def __init__(self, progress, task_id):
        self._p = progress
        self._id = task_id

    def advance(self, n: float = 1) -> None:
        self._p.advance(self._id, n)

    def update(self, *, description: str | None = None, total: float | None = None) -> None:
        kw: dict[str, Any] = {}
        if description is not None:
            kw["description"] = description
        if total is not None:
            kw["total"] = total
        self._p.update(self._id, **kw)


def progress_interval() -> float:
    """Seconds between two plain progress lines: ``$SOURCEBIAS_PROGRESS_SECONDS`` or 30.

    Raises:
        ConfigError: when the variable is set to something other than a positive number.
    """
    raw = os.environ.get(PROGRESS_SECONDS_ENV, "").strip()
    if not raw:
        return DEFAULT_PROGRESS_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        from sourcebias.core.errors import ConfigError

        raise ConfigError(f"{PROGRESS_SECONDS_ENV}={raw!r}: expected a positive number of seconds")
    return value


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _rate_text(rate: float, unit: str) -> str:
    """``rate`` (units a second) per second, minute or hour, whichever reads at least 1."""
    if rate >= 1:
        return f"{rate:,.1f} {unit}/s"
    if rate * 60 >= 1:
        return f"{rate * 60:,.1f} {unit}/min"
    return f"{rate * 3600:,.1f} {unit}/h"


class _Counts:
    """What a step did, kept apart from what an earlier run had done (``skip``): the rate and the
    time left are computed from this run's work only, averaged since the step started."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.completed = 0.0
        self.skipped = 0.0

    def advance(self, n: float = 1) -> None:
        self.completed += n

    def skip(self, n: float) -> None:
        self.completed += n
        self.skipped += n

    def rate(self, now: float) -> float:
        elapsed = now - self.started
        return (self.completed - self.skipped) / elapsed if elapsed > 0 else 0.0

    def remaining(self, total: float | None, now: float) -> float | None:
        rate = self.rate(now)
        if not total or rate <= 0 or self.completed >= total:
            return None
        return (total - self.completed) / rate


class _PlainTask(_Counts):
    """One step's counts, read by the reporter's timer thread."""

    def __init__(self, description: str, total: float | None, unit: str):
        super().__init__()
        self.description, self.total, self.unit = description, total, unit
        self.reported = False

    def update(self, *, description: str | None = None, total: float | None = None) -> None:
        if description is not None:
            self.description = description
        if total is not None:
            self.total = total

    def line(self, now: float) -> str:
        elapsed = now - self.started
        done = f"{self.completed:,.0f}"
        parts = [f"{self.description}: {done}/{self.total:,.0f} {self.unit}" if self.total else f"{self.description}: {done} {self.unit}"]
        if self.total:
            parts.append(f"{100 * self.completed / self.total:.0f}%")
        if self.skipped:
            parts.append(f"{self.skipped:,.0f} done before")
        rate = self.rate(now)
        if rate > 0:
            parts.append(_rate_text(rate, self.unit))
        parts.append(f"elapsed {_clock(elapsed)}")
        left = self.remaining(self.total, now)
        if left is not None:
            parts.append(f"ETA {_clock(left)}")
        return ", ".join(parts)


class PlainProgress:
    """Progress as plain lines on a stream (stderr): one per running step every ``interval``
    seconds, and one when a step that was reported ends. For logs, where bars cannot redraw."""

    def __init__(self, stream: TextIO | None = None, interval: float | None = None):
        self._stream = stream
        self._interval = progress_interval() if interval is None else interval
        self._tasks: list[_PlainTask] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            now = time.monotonic()
            for t in list(self._tasks):
                t.reported = True
                self._write(t.line(now))

    def __enter__(self) -> PlainProgress:
        self._stop.clear()
        self._thread = threading.Thread(target=self._tick, name="sourcebias-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @contextlib.contextmanager
    def task(self, description: str, total: float | None = None, unit: str = "it") -> Iterator[TaskHandle]:
        handle = _PlainTask(description, total, unit)
        self._tasks.append(handle)
        try:
            yield handle
        finally:
            self._tasks.remove(handle)
            if handle.reported:
                self._write(handle.line(time.monotonic()) + " (done)")


class RichProgress:
    """Rich progress bars: description, bar, count, rate, elapsed and remaining time — or, when
    the console is not a terminal, plain periodic lines on stderr (:class:`PlainProgress`)."""

    def __init__(self, console=None, transient: bool = False):
        from rich.console import Console

        self._plain: PlainProgress | None = None
        if not (console or Console(stderr=True)).is_terminal:
            self._plain = PlainProgress()
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=console,
            transient=transient,
        )

    def __enter__(self) -> RichProgress:
        (self._plain or self._progress).__enter__()
        return self

    def __exit__(self, *exc) -> None:
        (self._plain or self._progress).__exit__(*exc)

    @contextlib.contextmanager
    def task(self, description: str, total: float | None = None, unit: str = "it") -> Iterator[TaskHandle]:
        if self._plain is not None:
            with self._plain.task(description, total, unit) as handle:
                yield handle
            return
        task_id = self._progress.add_task(description, total=total, rate="", eta="-:--:--")
        handle = _RateTask(self._progress, task_id, unit)
        try:
            yield handle
        finally:
            # a finished task's bar is removed: left on screen it would read as work still to do
            # ("Loading nq-utd ━━━ 0/?" under the encoder's bar, for a task without a total)
            self._progress.remove_task(task_id)


class _RateTask(_RichTask):
    """A rich bar whose rate and time left are ours (:class:`_Counts`): rich's own speed would
    count the work skipped."""

    def __init__(self, progress, task_id, unit: str):
        super().__init__(progress, task_id)
        self._unit = unit
        self._counts = _Counts()

    def advance(self, n: float = 1) -> None:
        self._counts.advance(n)
        self._p.advance(self._id, n)
        self._show()

    def skip(self, n: float) -> None:
        self._counts.skip(n)
        self._p.advance(self._id, n)
        self._show()

    def _show(self) -> None:
        task = next(t for t in self._p.tasks if t.id == self._id)  # ids are not positions once a finished task is removed
        now = time.monotonic()
        rate = self._counts.rate(now)
        left = self._counts.remaining(task.total, now)
        before = f"{self._counts.skipped:,.0f} done before; " if self._counts.skipped else ""
        self._p.update(
            self._id,
            rate=before + (_rate_text(rate, self._unit) if rate > 0 else ""),
            eta="-:--:--" if left is None else _clock(left),
        )


_current: NullProgress | RichProgress | PlainProgress = NullProgress()


def task(description: str, total: float | None = None, unit: str = "it"):
    """A progress task on the current reporter: ``with task("Encoding", total=n) as t: t.advance()``."""
    return _current.task(description, total, unit)


@contextlib.contextmanager
def use(reporter: NullProgress | RichProgress | PlainProgress) -> Iterator[None]:
    """Make ``reporter`` the current progress reporter within the block."""
    global _current
    previous = _current
    _current = reporter
    try:
        yield
    finally:
        _current = previous
