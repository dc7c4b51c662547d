"""A persistent answer store: each answered call is one appended JSON line, so that a killed job
loses at most the calls in flight and a rerun sends only the calls not answered yet.

One file per model identity (``<cache>/llmcalls/<identity digest>.jsonl``), each line
``{"key": call key, "answer": {...}}``. Lines are written whole with one ``write`` on a file
opened for appending, under an ``flock`` (several processes may share a store); a ``kill -9``
in the middle of a write can leave only a torn last line, which the next opening removes. A key
already in the store is never written again. (Not fsynced: the operating system keeps what a
killed process wrote; a power cut may lose the last answers, which a rerun computes again.)

Why not the embedding store or the rewriting journal: both store one kind of record per corpus;
these answers are keyed by a digest of the whole request and shared across corpora and stages.
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
from sourcebias.data.jsonl import iter_jsonl, repair_torn_tail
from sourcebias.llmcalls.base import Answer, digest


def store_path(identity: dict[str, Any], cache_dir: str | Path | None = None) -> Path:
    """Where the answers of the model ``identity`` are kept."""
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
    """The answers of one model, keyed by :func:`sourcebias.llmcalls.base.call_key`."""

    def __init__(self, path: str | Path, identity: dict[str, Any] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._answers: dict[str, dict[str, Any]] = {}
        self.repaired_bytes = 0
        with self.path.open("a+b") as fh, _locked(fh):
            self.repaired_bytes = repair_torn_tail(self.path)
            if self.path.stat().st_size == 0 and identity is not None:
                fh.write((json.dumps({"identity": identity}, sort_keys=True) + "\n").encode("utf-8"))
        self._load()

    def _load(self) -> None:
        for _, rec in iter_jsonl(self.path):
            if "key" in rec:
                self._answers.setdefault(str(rec["key"]), rec["answer"])

    def __contains__(self, key: str) -> bool:
        return key in self._answers

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> Answer | None:
        data = self._answers.get(key)
        return None if data is None else Answer.from_json(data, cached=True)

    def put(self, key: str, answer: Answer) -> bool:
        """Append ``answer`` unless this store holds ``key`` already; returns whether it was
        written. (Two processes answering the same call at once may both append it; the first
        line wins on reading, so the answer read back is always one the model gave.)"""
        line = (json.dumps({"key": key, "answer": answer.to_json()}, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if key in self._answers:
                return False
            with self.path.open("ab") as fh, _locked(fh):
                fh.write(line)
                fh.flush()
            self._answers[key] = answer.to_json()
        return True

    def keys_on_disk(self) -> list[str]:
        """Every key line in the file, in order (duplicates included: for checks)."""
        return [str(rec["key"]) for _, rec in iter_jsonl(self.path) if "key" in rec]


def remove_store(path: str | Path) -> None:
    """Delete a store (``--overwrite``-style fresh starts in tests and benchmarks)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
