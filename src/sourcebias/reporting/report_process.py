"""An evaluation's statistics and figure computed by a second Python process that imports SciPy,
statsmodels, pandas and matplotlib while the retrievers rank.

Those imports cost about a second of CPU at the end of every ``evaluate`` (SciPy's statistics
alone 0.45 s, matplotlib 0.3 s on the development machine), and drawing the figure a little more.
With a second CPU free, a helper process started when the evaluation starts pays them while the
retrievers rank; once the mixed corpus is scored it receives the result (its runs over the
corpus's keys, without the texts) and computes the statistics with the same code
(:func:`~sourcebias.evaluation.stats.compute_statistics`), then draws the figure from its values
(:func:`~sourcebias.reporting.evaluation_figure.figure_data`) while the evaluating process
writes the results. Every statistic and the PNG are the same, value for value and byte for byte,
as when computed in the evaluating process (``tests/reporting/test_report_process.py``): only
where the time is spent changes. Where the helper cannot give them (it failed, a statistic
registered only in the evaluating process), the evaluating process computes them itself, so an
error it raises is the one the user sees.

:func:`start` gives ``None`` (everything is computed in process, as before) where the helper
would not pay: one usable CPU, a corpus below :data:`MIN_DOCUMENTS` documents (the evaluation is
over before the helper has imported its libraries); above :data:`MAX_STATISTICS_DOCUMENTS` the
statistics stay in process (sending the corpus's keys would cost more than the imports).

Written here because the standard library's process pools re-import the caller's ``__main__``
and have no "start now, send the work later"; the helper is one ``subprocess`` that reads
pickled requests from its standard input and answers the statistics on its standard output
(each answer preceded by its length).

**A helper that hangs** (stopped, say by ``kill -STOP``, or blocked) never blocks the evaluation:
the request is written by a thread, and the answer (or the figure) is waited for only while the
helper makes progress: when its CPU time has not advanced for :data:`STALL_SECONDS`, or
:data:`MAX_WAIT_SECONDS` have passed, the helper is ended and the evaluating process computes
the statistics (draws the figure) itself, and says so: :attr:`ReportProcess.fallbacks` holds the
reason, which ``evaluate`` prints as a note and records in the manifest (``report_process``).
The CPU time is read from ``/proc`` (Linux; the core install has no psutil); where it cannot be
read the wait is bounded by :data:`MAX_WAIT_SECONDS` alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import selectors
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sourcebias.core.errors import SourceBiasError

#: Documents of the mixed corpus from which a helper process is started.
MIN_DOCUMENTS = 5_000
#: Documents above which the statistics are computed in the evaluating process.
MAX_STATISTICS_DOCUMENTS = 1_000_000
#: Seconds without progress (the helper's CPU time unchanged) after which a helper is given up.
STALL_SECONDS = 30.0
#: Seconds a helper's answer or figure is waited for at most, progress or not.
MAX_WAIT_SECONDS = 3600.0
#: How often the wait looks at the helper (seconds).
_POLL_SECONDS = 0.1
_LENGTH = struct.Struct("<Q")  # the length of each answer, before it


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used, from ``/proc/PID/stat``; None where
    it cannot be read (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


class _Watch:
    """Whether a helper still makes progress: its CPU time advanced within :data:`STALL_SECONDS`
    and :data:`MAX_WAIT_SECONDS` have not passed since the watch began."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = self.changed = time.monotonic()
        self.cpu = cpu_seconds(pid)

    def stalled(self) -> str:
        """Why the helper is given up, or "" while it may still answer."""
        now, cpu = time.monotonic(), cpu_seconds(self.pid)
        if cpu is not None and cpu != self.cpu:
            self.cpu, self.changed = cpu, now
        elif cpu is not None and now - self.changed > STALL_SECONDS:
            return f"the report process made no progress for {STALL_SECONDS:g} s (stopped or hung)"
        if now - self.start > MAX_WAIT_SECONDS:
            return f"the report process did not finish within {MAX_WAIT_SECONDS:g} s"
        return ""


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def keys_only(result: Any) -> Any:
    """``result`` with every run over its corpus's keys (ids and sources, same positions), without
    texts: what the statistics read, and small enough to send."""
    from sourcebias.data.corpus import Corpus

    thin: dict[int, Corpus] = {}
    runs = {}
    for key, run in result.runs.items():
        c = run.corpus
        if id(c) not in thin:
            thin[id(c)] = Corpus.keys_only(c.doc_ids, c.source_list(), source_order=c.sources)
        runs[key] = dataclasses.replace(run, corpus=thin[id(c)])
    return dataclasses.replace(result, runs=runs)


class ReportProcess:
    """A helper process for one evaluation's statistics and figure (see the module's description).

    Use :func:`start` to make one; :meth:`statistics` computes the statistics there;
    :meth:`submit_figure` sends the figure's values, :meth:`wait_figure` waits for the file;
    :meth:`close` ends the helper in any case.
    """

    def __init__(self, documents: int) -> None:
        # the helper imports this copy of sourcebias, also where it is on sys.path but not installed
        env = dict(os.environ)
        here = str(Path(__file__).resolve().parents[2])  # the folder that holds the sourcebias package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close()) a file, not a pipe: the helper never blocks on it
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "sourcebias.reporting.report_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            env=env,
        )
        self.takes_statistics = documents <= MAX_STATISTICS_DOCUMENTS
        self.path: Path | None = None
        #: what the evaluating process did itself and why, by task (``statistics``, ``figure``)
        self.fallbacks: dict[str, str] = {}
        self._gave: list[str] = []  # the tasks the helper did
        self._sender: threading.Thread | None = None
        self._ended = False  # ended by end() before its work was done (a stall, or close())

    def _send(self, message: tuple[Any, ...], *, close: bool = False) -> None:
        """Write ``message`` (then, with ``close``, the end of input) from a thread: a helper that
        does not read cannot block the caller (:meth:`_wait` ends it, and the write fails)."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        stdin = self._proc.stdin
        assert stdin is not None

        def write() -> None:
            with contextlib.suppress(OSError, ValueError):  # the helper ended (BrokenPipeError), or was ended
                stdin.write(data)
                stdin.flush()
                if close:
                    stdin.close()

        self._sender = threading.Thread(target=write, name="sourcebias-report-request", daemon=True)
        self._sender.start()

    def _wait(self, ready: Callable[[float], bool]) -> None:
        """Wait until ``ready(timeout)`` says so while the helper makes progress (:class:`_Watch`).

        Raises:
            SourceBiasError: the helper stalled: it has been ended, the message says why.
        """
        watch = _Watch(self._proc.pid)
        while not ready(_POLL_SECONDS):
            why = watch.stalled()
            if why:
                self.end()
                raise SourceBiasError(why)

    def _read(self, n: int) -> bytes:
        """``n`` bytes of the helper's answers, waited for as :meth:`_wait` waits."""
        assert self._proc.stdout is not None
        fd, out = self._proc.stdout.fileno(), bytearray()
        with selectors.DefaultSelector() as readable:  # epoll on Linux: no limit on the descriptor's number
            readable.register(fd, selectors.EVENT_READ)
            while len(out) < n:
                self._wait(lambda t: bool(readable.select(t)))
                chunk = os.read(fd, n - len(out))
                if not chunk:
                    raise EOFError("the report process ended before it answered")
                out += chunk
        return bytes(out)

    def statistics(self, result: Any, ctx: Any, names: Sequence[str]) -> Any:
        """:func:`~sourcebias.evaluation.stats.compute_statistics` of ``result``, computed by the helper.

        Raises:
            SourceBiasError: the helper could not compute them (the message says why); compute
                them in process then.
        """
        from sourcebias.evaluation.stats import StatisticsSet, resolve_statistics

        try:
            self._send(("statistics", keys_only(result), ctx, list(names)))
            status, value = pickle.loads(self._read(_LENGTH.unpack(self._read(_LENGTH.size))[0]))
        except SourceBiasError as exc:  # it stalled
            self.fallbacks["statistics"] = str(exc)
            raise SourceBiasError(f"the report process could not compute the statistics: {exc}") from None
        except (OSError, EOFError, pickle.PickleError, AttributeError, TypeError, ValueError) as exc:
            self.fallbacks["statistics"] = repr(exc)
            raise SourceBiasError(f"the report process could not compute the statistics: {exc!r}") from None
        if status != "ok":
            self.fallbacks["statistics"] = str(value)
            raise SourceBiasError(f"the report process could not compute the statistics: {value}")
        self._gave.append("statistics")
        return StatisticsSet(resolve_statistics(names), records=value)  # this process's statistics, the helper's records

    def submit_figure(self, data: dict[str, Any], path: str | Path) -> None:
        """Send the figure's values; the helper draws them into ``path`` while the caller goes on."""
        self.path = Path(path)
        self._send(("figure", data, str(self.path)), close=True)  # a helper that ended early: wait_figure() says why

    def wait_figure(self) -> Path:
        """The figure's path, once the helper has drawn it.

        Raises:
            SourceBiasError: the helper failed (its last error line is in the message).
        """
        assert self.path is not None, "submit_figure() first"
        try:
            self._wait(lambda t: self._exited(t))
        except SourceBiasError as exc:  # it stalled
            self.fallbacks["figure"] = str(exc)
            raise SourceBiasError(f"the figure {self.path} was not drawn: {exc}") from None
        if self._proc.returncode != 0 or not self.path.is_file():
            self._errors.seek(0)
            lines = self._errors.read().decode(errors="replace").strip().splitlines()
            why = self.fallbacks.get("statistics") if self._ended else None  # ended here after the statistics stalled
            self.fallbacks["figure"] = why or (lines[-1] if lines else f"exit status {self._proc.returncode}")
            raise SourceBiasError(f"the figure {self.path} was not drawn: {self.fallbacks['figure']}")
        self._gave.append("figure")
        return self.path

    def _exited(self, timeout: float) -> bool:
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def end(self) -> None:
        """End the helper now (a stopped one too: SIGKILL needs no cooperation)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
            self._ended = True
        if self._sender is not None:
            self._sender.join()  # its write fails once the helper is gone

    def describe(self) -> dict[str, str]:
        """Where the statistics and the figure it was sent were made, for the manifest: ``report
        process``, or ``evaluating process: WHY`` where the helper did not give them."""
        return dict.fromkeys(self._gave, "report process") | {task: f"evaluating process: {why}" for task, why in self.fallbacks.items()}

    def close(self) -> None:
        """End the helper if it is still running (after an error, or when there was nothing to draw)."""
        self.end()
        for stream in (self._proc.stdin, self._proc.stdout, self._errors):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):  # a request the ended helper never read (BrokenPipeError)
                    stream.close()


def start(documents: int) -> ReportProcess | None:
    """A helper for an evaluation of ``documents`` documents, or ``None`` where it would not pay
    (one usable CPU, fewer than :data:`MIN_DOCUMENTS` documents) or cannot start."""
    if documents < MIN_DOCUMENTS or usable_cpus() < 2:
        return None
    try:
        return ReportProcess(documents)
    except OSError:
        return None


def _preload() -> None:
    """Import now, while the evaluation ranks, what the statistics and the figure will need."""
    import importlib

    for name in ("scipy.stats", "statsmodels.stats.multitest", "pandas", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        with contextlib.suppress(ImportError):  # an extra not installed: the step that needs it says so when it runs
            importlib.import_module(name)


def main() -> None:
    """The helper: preload, then answer each pickled request on standard input until it closes."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything printed goes to the error file, never into the replies
    _preload()
    from sourcebias.evaluation.stats import compute_statistics
    from sourcebias.reporting.evaluation_figure import draw_source_bias

    requests = sys.stdin.buffer
    while True:
        try:
            message = pickle.load(requests)
        except EOFError:  # the evaluation is over
            return
        if message[0] == "statistics":
            _, result, ctx, names = message
            try:
                reply: tuple[str, Any] = ("ok", compute_statistics(result, ctx, names).records)
            except Exception as exc:  # the evaluating process computes them again and raises it itself
                reply = ("error", f"{type(exc).__name__}: {exc}")
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            replies.write(_LENGTH.pack(len(data)) + data)
            replies.flush()
        elif message[0] == "figure":
            _, data, path = message
            draw_source_bias(data, path)


if __name__ == "__main__":
    main()
