"""AbandonablePool: futures as an executor's, and a call in flight that never ends does not hold up
the process's exit once abandoned (concurrent.futures' exit hook joins its workers: the process
waited for the call)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError, as_completed

import pytest

from sourcebias.core.threads import AbandonablePool

ABANDON = """
import sys, time
from concurrent.futures import {pool_import}
pool = {pool}
pool.submit(time.sleep, 120)
time.sleep(0.2)  # the call is running
pool.shutdown(wait=False, cancel_futures=True)
print("main done", flush=True)
"""


def _ends_within(pool_import: str, pool: str, limit: float) -> bool:
    """Whether the script ended within ``limit`` seconds (killed if not)."""
    code = ABANDON.format(pool_import=pool_import, pool=pool)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return False
    assert proc.returncode == 0 and out.strip() == "main done"
    return True


def test_an_abandoned_call_does_not_hold_up_the_exit():
    # a hang detector, not a timing: the abandoned call sleeps 120 s
    assert _ends_within("Future", "__import__('sourcebias.core.threads', fromlist=['x']).AbandonablePool(2, 't')", limit=90)
    # the standard executor, told the same, waits for the call: why the pool exists
    assert not _ends_within("ThreadPoolExecutor", "ThreadPoolExecutor(2)", limit=5)


def test_results_exceptions_order_and_cancelled_queue():
    pool = AbandonablePool(1, "t")
    gate = threading.Event()
    first = pool.submit(gate.wait, 30)
    failing = pool.submit(int, "not a number")
    queued = [pool.submit(pow, 2, k) for k in range(4)]
    assert queued[3].cancel()  # not started: one worker, held by the gate
    gate.set()
    assert first.result(timeout=30) is True
    with pytest.raises(ValueError, match="not a number"):
        failing.result(timeout=30)
    assert [f.result(timeout=30) for f in queued[:3]] == [1, 2, 4]
    with pytest.raises(CancelledError):
        queued[3].result()
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(pow, 2, 2)


def test_shutdown_cancels_what_was_not_started_and_waits_for_the_rest():
    pool = AbandonablePool(2, "t")
    gate = threading.Event()
    running = [pool.submit(gate.wait, 30) for _ in range(2)]
    waiting = [pool.submit(pow, 3, k) for k in range(5)]
    time.sleep(0.1)
    threading.Timer(0.3, gate.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert all(f.done() and f.result() is True for f in running)
    assert all(f.cancelled() for f in waiting)
    assert [f.result() for f in as_completed(running)] == [True, True]
    assert not any(t.is_alive() for t in pool._threads)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        AbandonablePool(0, "t")
