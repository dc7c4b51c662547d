"""The answer store: every answer a model gave, once, so that a killed job loses at most the calls in
flight and a rerun sends only the calls not answered yet. It is the only store of what a model said
(the LLM stages, the judge, the citation study and Raidar's rewrites all keep their answers here; a
rewriting job's journal records what the job did).

Format (final for 0.3.0). One JSON Lines file per model name, ``<cache>/llmcalls/<digest of the
name identity, 24 hex>.jsonl``, where the name identity is ``{backend, model, api}`` for servers and
the full identity (weights digest included) for local models. Its first line is the header::

    {"format": 2, "identity": {...the name identity...}, "server": {...what the server reported...}}

(``server`` for servers only: :mod:`sourcebias.llmcalls.backends.served`). Every other line is one
answer::

    {"key": K, "answer": {"text", "finish_reason", "top_logprobs", "choice_logprobs"},
     "usage": {"prompt_tokens", "completion_tokens", "seconds"}, "served": {"model", "system_fingerprint"}}

``K`` is :func:`~sourcebias.llmcalls.base.call_key`: the SHA-256 of the full identity (for servers:
backend, model, API and the server's report) and every field of the call. ``served`` is what a
server's answer named (absent for local models).

Safety: lines are written whole, with one ``write`` on a file opened for appending, under an
``flock``; before writing, a writer reads what other processes appended since it last looked, so a
key is never written twice, whatever number of processes share the store. A ``kill -9`` in the middle
of a write can leave only a torn last line, which the next writer (or opening) removes. Not fsynced:
the operating system keeps what a killed process wrote; a power cut may lose the last answers, which a
rerun computes again.

Stores of earlier versions: a local model's (header ``{"identity"}``, answers without ``usage``) is
read as it is (its identity, the weights digest, is unchanged). A server's is refused with a message
(:class:`LegacyStoreError`): it does not record what the server served, so its answers cannot be told
apart from another model's under the same name.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sourcebias.core.cache import default_cache_dir
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.jsonl import repair_torn_tail
from sourcebias.llmcalls.base import Answer, digest

FORMAT = 2


class LegacyStoreError(ConfigError):
    """A server's answer store written before the store recorded what the server served."""


def store_path(identity: dict[str, Any], cache_dir: str | Path | None = None) -> Path:
    """Where the answers of the model ``identity`` (its name identity) are kept."""
    return Path(cache_dir or default_cache_dir()) / "llmcalls" / f"{digest(identity)[:24]}.jsonl"


@contextlib.contextmanager
def _locked(fh: Any) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: appends of one line are still whole on local file systems
        yield
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class AnswerStore:
    """The answers of one model, keyed by :func:`sourcebias.llmcalls.base.call_key`.

    ``header``: the first line (``{"format", "identity", "server"}``), written when the store is
    created from ``header`` and read back otherwise; ``repaired_bytes``: a torn last line removed.
    """

    def __init__(self, path: str | Path, header: dict[str, Any] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}
        self._models: set[str] = set()
        self._offset = 0
        self._line = 0
        self.header: dict[str, Any] = {}
        with self.path.open("a+b") as fh, _locked(fh):
            self.repaired_bytes = repair_torn_tail(self.path)
            if self.path.stat().st_size == 0 and header is not None:
                fh.write((json.dumps({"format": FORMAT, **header}, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
                fh.flush()
            self._read_new()

    # -- reading ------------------------------------------------------------------------------
    def _read_new(self) -> None:
        """Read the complete lines appended since the last read (by this or another process)."""
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # a line still being written (no newline yet) waits
        for raw in data[:end].splitlines():
            self._line += 1
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                raise DataError(self.path, "malformed JSON in the answer store (not a torn last line: the file was changed by hand?)", self._line) from None
            if "key" in rec:
                self._keep(rec)
            elif self._line == 1:
                self.header = rec
        self._offset += end

    def _keep(self, rec: dict[str, Any]) -> None:
        self._records.setdefault(str(rec["key"]), rec)
        model = (rec.get("served") or {}).get("model")
        if model:
            self._models.add(str(model))

    def refresh(self) -> None:
        """Read what other processes appended since the last look."""
        with self._lock:
            if self.path.stat().st_size > self._offset:
                self._read_new()

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> Answer | None:
        rec = self._records.get(key)
        return None if rec is None else Answer.from_json(rec["answer"], cached=True, usage=rec.get("usage"), served=rec.get("served"))

    def served_models(self) -> set[str]:
        """The ``model`` names the stored answers' servers gave."""
        return set(self._models)

    # -- writing ------------------------------------------------------------------------------
    def put(self, key: str, answer: Answer) -> bool:
        """Append ``answer`` (with its usage) unless the store holds ``key`` already, in this process
        or written by another since; returns whether it was written."""
        rec: dict[str, Any] = {"key": key, "answer": answer.to_json()}
        if answer.usage is not None:
            rec["usage"] = answer.usage
        if answer.served is not None:
            rec["served"] = answer.served
        line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if key in self._records:
                return False
            with self.path.open("ab") as fh, _locked(fh):
                if os.fstat(fh.fileno()).st_size > self._offset:  # another process wrote since
                    self._repair_under_lock()
                    self._read_new()
                    if key in self._records:
                        return False
                fh.write(line)
                fh.flush()
            self._keep(rec)
            self._offset += len(line)
            self._line += 1
        return True

    def _repair_under_lock(self) -> None:
        """Holding the lock, a last line without its newline is a writer killed mid-write: remove it."""
        size = self.path.stat().st_size
        if size > self._offset:
            with self.path.open("rb") as fh:
                fh.seek(size - 1)
                complete = fh.read(1) == b"\n"
            if not complete:
                self.repaired_bytes += repair_torn_tail(self.path)

    def keys_on_disk(self) -> list[str]:
        """Every key line in the file, in order (duplicates included: for checks)."""
        out = []
        with self.path.open("rb") as fh:
            for raw in fh:
                if raw.endswith(b"\n") and raw.strip():
                    rec = json.loads(raw)
                    if "key" in rec:
                        out.append(str(rec["key"]))
        return out


def remove_store(path: str | Path) -> None:
    """Delete a store (``--overwrite``-style fresh starts in tests and benchmarks)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
