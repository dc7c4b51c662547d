"""A thread pool whose calls in flight can be abandoned: its workers never hold up the exit.

Written by hand because :class:`concurrent.futures.ThreadPoolExecutor` cannot abandon a call: its
worker threads are joined when the interpreter exits (``concurrent.futures``' exit hook), whatever
``shutdown(wait=False)`` said. A job stopped twice (Ctrl-C, then Ctrl-C again; SIGTERM twice) then
still waited for the call in flight: with an HTTP backend's retries against a server that never
answers, the timeout times the attempts (with ``--timeout 600``, up to 90 minutes).

:class:`AbandonablePool`'s workers are daemon threads: after ``shutdown(wait=False)`` the process
ends without them. What such a call was doing is lost, as with ``kill -9``; every caller here stores
each answer as it arrives, in lines a cut-off write cannot spoil for the rest (a rerun sends the
call again). Its futures are :class:`concurrent.futures.Future`: ``wait`` and ``as_completed`` work
on them as on an executor's.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = object()


class AbandonablePool:
    """``workers`` daemon threads named ``NAME_0``, ``NAME_1``, … running submitted calls in
    submission order."""

    def __init__(self, workers: int, name: str):
        if workers < 1:
            raise ValueError(f"AbandonablePool: workers must be >= 1, got {workers}")
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Queue ``fn(*args)``; its future."""
        if self._closed:
            raise RuntimeError("AbandonablePool: submit after shutdown")
        fut: Future = Future()
        self._queue.put((fut, fn, args))
        return fut

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fut, fn, args = item
            if not fut.set_running_or_notify_cancel():  # cancelled before it started
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # delivered to whoever waits on the future, never printed here
                fut.set_exception(exc)
            else:
                fut.set_result(result)

    def shutdown(self, *, wait: bool = True, cancel_futures: bool = False) -> None:
        """No more calls; with ``cancel_futures`` the queued ones are cancelled; with ``wait`` the
        calls in flight are awaited, without it they are abandoned (the process may end first)."""
        self._closed = True
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[0].cancel()
        for _ in self._threads:
            self._queue.put(_STOP)
        if wait:
            for t in self._threads:
                t.join()
