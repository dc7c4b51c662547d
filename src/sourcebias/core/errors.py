"""Errors that sourcebias reports to users.

Every error a user can cause (a bad file, a bad option, a model that cannot be loaded) is a
subclass of :class:`SourceBiasError`. The CLI prints these as one clear message instead of a
traceback; the Python API raises them as ordinary exceptions.
"""

from __future__ import annotations

from pathlib import Path


class SourceBiasError(Exception):
    """Base class of every error that is the user's to fix."""


class DataError(SourceBiasError, ValueError):
    """A problem in an input file, located by file and (where it applies) line.

    The message reads ``path:line: problem`` so that editors and terminals can jump to it.
    """

    def __init__(self, path: str | Path | None, problem: str, line: int | None = None):
        self.path = None if path is None else Path(path)
        self.line = line
        self.problem = problem
        where = ""
        if self.path is not None:
            where = str(self.path) + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {problem}" if where else problem)


class ConfigError(SourceBiasError, ValueError):
    """An option or parameter that cannot be used (unknown retriever, bad metric name, ...)."""


class ModelUnavailableError(SourceBiasError, OSError):
    """A model could not be found locally and cannot be downloaded (offline, or unknown name)."""


class OutputError(SourceBiasError, OSError):
    """An output folder that cannot be used (a file, not writable, another run's results, locked)."""
