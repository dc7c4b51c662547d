"""Draw an evaluation's figure in a second Python process that imports matplotlib while the
evaluation runs.

Importing matplotlib and drawing ``figures/source_bias.png`` costs about half a second of CPU,
paid at the end of every ``evaluate`` after the statistics. With a second core free, a helper
process started when the evaluation starts pays the import while the retrievers rank, receives
the figure's values (:func:`~sourcebias.reporting.evaluation_figure.figure_data`, a small JSON
document) as soon as the mixed corpus is scored, and draws while the statistics are computed
and the results written. The figure is the same file, byte for byte, as the one drawn in the
evaluating process (``tests/reporting/test_figure_process.py``); only where the time is spent
changes. :func:`start` gives ``None`` (and the figure is drawn in process, as before) where the
helper would not pay: one usable CPU, a corpus below :data:`MIN_DOCUMENTS` documents (the
evaluation is over before the helper has imported matplotlib), or matplotlib not installed.

Written here because the standard library's process pools pickle and re-import the caller's
``__main__`` and have no "start now, send the work later" for a single task; the helper is one
``subprocess`` reading one JSON request from its standard input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sourcebias.core.errors import SourceBiasError

#: Documents of the mixed corpus from which the figure is drawn by a helper process: below it an
#: evaluation of the lexical retrievers ends before the helper has imported matplotlib.
MIN_DOCUMENTS = 5_000


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class FigureProcess:
    """A helper process that draws one figure (see the module's description).

    Use :func:`start` to make one, :meth:`submit` to send the figure's values as soon as they
    are known, :meth:`wait` before the figure file is needed, and :meth:`close` in any case
    (it ends a helper that was never sent its work).
    """

    def __init__(self) -> None:
        # the helper imports this copy of sourcebias, also where it is on sys.path but not installed
        env = dict(os.environ)
        here = str(Path(__file__).resolve().parents[2])  # the folder that holds the sourcebias package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "sourcebias.reporting.figure_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.path: Path | None = None

    def submit(self, data: dict[str, Any], path: str | Path) -> None:
        """Send the figure's values; the helper draws them into ``path`` while the caller goes on."""
        assert self._proc.stdin is not None
        self.path = Path(path)
        try:
            self._proc.stdin.write(json.dumps({"data": data, "path": str(self.path)}).encode())
            self._proc.stdin.close()
        except OSError:  # the helper ended early (BrokenPipeError): wait() says why
            pass

    def wait(self) -> Path:
        """The figure's path, once the helper has drawn it.

        Raises:
            SourceBiasError: the helper failed (its error is in the message).
        """
        assert self.path is not None, "submit() first"
        assert self._proc.stderr is not None
        err = self._proc.stderr.read()
        self._proc.wait()
        self._proc.stderr.close()
        if self._proc.returncode != 0 or not self.path.is_file():
            message = err.decode(errors="replace").strip().splitlines()
            raise SourceBiasError(f"the figure {self.path} was not drawn: {message[-1] if message else f'exit status {self._proc.returncode}'}")
        return self.path

    def close(self) -> None:
        """End the helper if it is still running (after an error, or when there was nothing to draw)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def start(documents: int) -> FigureProcess | None:
    """A helper for a figure of an evaluation of ``documents`` documents, or ``None`` where it
    would not pay (one usable CPU, fewer than :data:`MIN_DOCUMENTS` documents, no matplotlib)
    or cannot start; the figure is then drawn in the evaluating process."""
    import importlib.util

    if documents < MIN_DOCUMENTS or usable_cpus() < 2 or importlib.util.find_spec("matplotlib") is None:
        return None
    try:
        return FigureProcess()
    except OSError:
        return None


def main() -> None:
    """The helper: import matplotlib, then read one request from standard input and draw it."""
    from matplotlib.backends import backend_agg  # noqa: F401  (imported now, used by savefig)
    from matplotlib.figure import Figure  # noqa: F401

    from sourcebias.reporting.evaluation_figure import draw_source_bias

    raw = sys.stdin.buffer.read()
    if not raw:  # the evaluation ended without a figure to draw
        return
    request = json.loads(raw)
    draw_source_bias(request["data"], request["path"])


if __name__ == "__main__":
    main()
