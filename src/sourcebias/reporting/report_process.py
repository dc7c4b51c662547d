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
pickled requests from its standard input and answers the statistics on its standard output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sourcebias.core.errors import SourceBiasError

#: Documents of the mixed corpus from which a helper process is started.
MIN_DOCUMENTS = 5_000
#: Documents above which the statistics are computed in the evaluating process.
MAX_STATISTICS_DOCUMENTS = 1_000_000


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

    def _send(self, message: tuple[Any, ...]) -> None:
        assert self._proc.stdin is not None
        pickle.dump(message, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self._proc.stdin.flush()

    def statistics(self, result: Any, ctx: Any, names: Sequence[str]) -> Any:
        """:func:`~sourcebias.evaluation.stats.compute_statistics` of ``result``, computed by the helper.

        Raises:
            SourceBiasError: the helper could not compute them (the message says why); compute
                them in process then.
        """
        from sourcebias.evaluation.stats import StatisticsSet, resolve_statistics

        try:
            self._send(("statistics", keys_only(result), ctx, list(names)))
            assert self._proc.stdout is not None
            status, value = pickle.load(self._proc.stdout)
        except (OSError, EOFError, pickle.PickleError, AttributeError, TypeError) as exc:
            raise SourceBiasError(f"the report process could not compute the statistics: {exc!r}") from None
        if status != "ok":
            raise SourceBiasError(f"the report process could not compute the statistics: {value}")
        return StatisticsSet(resolve_statistics(names), records=value)  # this process's statistics, the helper's records

    def submit_figure(self, data: dict[str, Any], path: str | Path) -> None:
        """Send the figure's values; the helper draws them into ``path`` while the caller goes on."""
        self.path = Path(path)
        try:
            self._send(("figure", data, str(self.path)))
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        except OSError:  # the helper ended early (BrokenPipeError): wait_figure() says why
            pass

    def wait_figure(self) -> Path:
        """The figure's path, once the helper has drawn it.

        Raises:
            SourceBiasError: the helper failed (its last error line is in the message).
        """
        assert self.path is not None, "submit_figure() first"
        self._proc.wait()
        if self._proc.returncode != 0 or not self.path.is_file():
            self._errors.seek(0)
            lines = self._errors.read().decode(errors="replace").strip().splitlines()
            raise SourceBiasError(f"the figure {self.path} was not drawn: {lines[-1] if lines else f'exit status {self._proc.returncode}'}")
        return self.path

    def close(self) -> None:
        """End the helper if it is still running (after an error, or when there was nothing to draw)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
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
            pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
        elif message[0] == "figure":
            _, data, path = message
            draw_source_bias(data, path)


if __name__ == "__main__":
    main()
