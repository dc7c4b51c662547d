"""Progress reporting for long steps, silent unless a front end switches it on.

Library code reports progress through :func:`task`; by default nothing is shown (a notebook
or script stays quiet). The CLI installs a :class:`RichProgress` with :func:`use`, which draws
rich progress bars (rate and ETA included).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol


class TaskHandle(Protocol):
    def advance(self, n: float = 1) -> None: ...

    def update(self, *, description: str | None = None, total: float | None = None) -> None: ...


class _NullTask:
    def advance(self, n: float = 1) -> None:
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
        kw = {}
        if description is not None:
            kw["description"] = description
        if total is not None:
            kw["total"] = total
        self._p.update(self._id, **kw)


class RichProgress:
    """Rich progress bars: description, bar, count, rate, elapsed and remaining time."""

    def __init__(self, console=None, transient: bool = False):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=transient,
        )

    def __enter__(self) -> RichProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    @contextlib.contextmanager
    def task(self, description: str, total: float | None = None, unit: str = "it") -> Iterator[TaskHandle]:
        task_id = self._progress.add_task(description, total=total, rate="")
        handle = _RateTask(self._progress, task_id, unit)
        try:
            yield handle
        finally:
            self._progress.update(task_id, completed=self._progress.tasks[task_id].completed)
            self._progress.stop_task(task_id)


class _RateTask(_RichTask):
    def __init__(self, progress, task_id, unit: str):
        super().__init__(progress, task_id)
        self._unit = unit

    def advance(self, n: float = 1) -> None:
        self._p.advance(self._id, n)
        task = self._p.tasks[self._id]
        speed = task.speed
        if speed:
            self._p.update(self._id, rate=f"{speed:,.1f} {self._unit}/s")


_current: NullProgress | RichProgress = NullProgress()


def task(description: str, total: float | None = None, unit: str = "it"):
    """A progress task on the current reporter: ``with task("Encoding", total=n) as t: t.advance()``."""
    return _current.task(description, total, unit)


@contextlib.contextmanager
def use(reporter: NullProgress | RichProgress) -> Iterator[None]:
    """Make ``reporter`` the current progress reporter within the block."""
    global _current
    previous = _current
    _current = reporter
    try:
        yield
    finally:
        _current = previous
