"""The caching, batching part every LLM client shares; the backends only compute answers.

:class:`CachingClient.answer` looks every call up in the answer store, computes each distinct
missing call once (a call repeated in a batch is sent once), stores each answer the moment it
arrives, and returns the answers in the calls' order. Counts of cached and computed calls go
into :meth:`describe` (the manifest says how much of a study was read back).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sourcebias.llmcalls.base import Answer, Call, call_key
from sourcebias.llmcalls.cache import AnswerStore, store_path

OnAnswer = Callable[[int, Answer], None]


class CachingClient:
    """Base of the local and server clients. Subclasses set ``model`` and implement
    :meth:`identity`, :meth:`settings` and :meth:`compute` (answer ``calls`` and report each
    with ``on_answer(index, answer)`` as soon as it is known)."""

    model: str = ""

    def __init__(self, *, cache_dir: str | Path | None = None, cache: bool = True):
        self._cache_dir = cache_dir
        self._use_cache = cache
        self._store: AnswerStore | None = None
        self._count_lock = threading.Lock()
        self.counts = {"calls": 0, "cached": 0, "computed": 0}

    # -- for subclasses ---------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """Backend settings that do not change answers (URLs, concurrency, device)."""
        return {}

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        raise NotImplementedError

    # -- the shared part --------------------------------------------------------------------
    @property
    def store(self) -> AnswerStore | None:
        if self._use_cache and self._store is None:
            ident = self.identity()
            self._store = AnswerStore(store_path(ident, self._cache_dir), ident)
        return self._store

    def answer(self, calls: Sequence[Call], *, task: Any = None) -> list[Answer]:
        ident = self.identity()
        keys = [call_key(ident, c) for c in calls]
        out: list[Answer | None] = [None] * len(calls)
        store = self.store
        todo: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            hit = store.get(k) if store is not None else None
            if hit is not None:
                out[i] = hit
            else:
                todo.setdefault(k, []).append(i)
        cached = len(calls) - sum(len(v) for v in todo.values())
        if task is not None and cached:
            task.advance(cached)
        unique = list(todo)

        def on_answer(j: int, ans: Answer) -> None:
            if store is not None:
                store.put(unique[j], ans)
            for i in todo[unique[j]]:
                out[i] = ans
            if task is not None:
                task.advance(len(todo[unique[j]]))

        if unique:
            self.compute([calls[todo[k][0]] for k in unique], on_answer)
        with self._count_lock:
            self.counts["calls"] += len(calls)
            self.counts["cached"] += cached
            self.counts["computed"] += len(unique)
        missing = [i for i, a in enumerate(out) if a is None]
        if missing:  # a backend that skipped a call is a bug, not a result
            raise RuntimeError(f"{type(self).__name__}.compute left {len(missing)} calls unanswered")
        return [a for a in out if a is not None]

    def describe(self) -> dict[str, Any]:
        store = self.store
        return {
            "identity": self.identity(),
            **self.settings(),
            "answer_store": str(store.path) if store is not None else None,
            "calls": dict(self.counts),
        }

    def close(self) -> None:
        """Nothing to release by default."""
