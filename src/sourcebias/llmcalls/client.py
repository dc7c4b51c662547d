"""The caching, batching part every LLM client shares; the backends only compute answers.

:class:`CachingClient.answer` looks every call up in the answer store (first reading what other
processes sharing it added), computes each distinct missing call once (a call repeated in a batch
is sent once), stores each answer with its usage the moment it arrives, and returns the answers in
the calls' order. :meth:`~CachingClient.describe` says what a study cost: calls (cached and
computed), and the tokens and seconds of the calls computed now and of every answer used (a cached
answer as its call cost when it was made).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sourcebias.llmcalls.backends.base import GenerationError
from sourcebias.llmcalls.base import Answer, Call, call_key
from sourcebias.llmcalls.cache import AnswerStore, store_path

OnAnswer = Callable[[int, Answer], None]


def _zero() -> dict[str, Any]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "without_token_counts": 0}


def _add(total: dict[str, Any], usage: dict[str, Any] | None) -> None:
    total["calls"] += 1
    if not usage:
        total["without_token_counts"] += 1
        return
    if usage.get("prompt_tokens") is None or usage.get("completion_tokens") is None:
        total["without_token_counts"] += 1
    total["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
    total["completion_tokens"] += int(usage.get("completion_tokens") or 0)
    total["seconds"] += float(usage.get("seconds") or 0.0)


def call_notes(described: dict[str, Any], where: str = "") -> list[str]:
    """What a reader of a job's output must see about its calls (from a client's
    :meth:`~CachingClient.describe`): requests retried after faults (HTTP 429 or 5xx, refused,
    reset or cut connections, time-outs, malformed answers), and calls that got no answer. Nothing
    when there were none, so an undisturbed run's output is unchanged."""
    calls = described.get("calls") or {}
    retries, failed = int(calls.get("retries") or 0), int(calls.get("failed") or 0)
    out = []
    if retries:
        out.append(
            f"{where}{retries:,} requests retried after faults of the servers or the network (HTTP 429/5xx, "
            "connections refused, reset or cut, time-outs, malformed answers); every answer used is a whole answer"
        )
    if failed:
        out.append(f"{where}{failed:,} calls got no answer after their retries (the job stopped; a rerun sends only the calls not stored)")
    return out


class CachingClient:
    """Base of the local and server clients, over a backend (``self.backend``). Subclasses
    implement :meth:`identity`, :meth:`settings` and :meth:`compute` (answer ``calls`` and report
    each with ``on_answer(index, answer)`` as soon as it is known), and may name the store by a
    shorter identity (:meth:`store_identity`) and check it when it opens (:meth:`check_store`)."""

    model: str = ""
    exact_choices: bool = False
    choice_top_k: int = 0

    def __init__(self, backend: Any, *, cache_dir: str | Path | None = None, cache: bool = True):
        self.backend = backend
        self.model = backend.model
        self._cache_dir = cache_dir
        self._use_cache = cache
        self._store: AnswerStore | None = None
        self._count_lock = threading.Lock()
        self.counts: dict[str, int] = {"calls": 0, "cached": 0, "computed": 0}
        self._usage = {"computed": _zero(), "answers": _zero()}
        self._used: set[str] = set()

    # -- for subclasses ---------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def store_identity(self) -> dict[str, Any]:
        """What names the store's file and goes in its header (default: :meth:`identity`)."""
        return self.identity()

    def store_header(self) -> dict[str, Any]:
        return {"identity": self.store_identity()}

    def check_store(self, store: AnswerStore) -> None:
        """Refuse a store that does not hold this model's answers (default: nothing to check)."""

    def settings(self) -> dict[str, Any]:
        """Backend settings that do not change answers (URLs, concurrency, device)."""
        return {}

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        """Answer ``calls``, giving each answer to ``on_answer(index, answer)`` as it arrives;
        ``on_answer`` stores it and may be called from several threads at once."""
        raise NotImplementedError

    # -- the shared part --------------------------------------------------------------------
    @property
    def store(self) -> AnswerStore | None:
        if self._use_cache and self._store is None:
            store = AnswerStore(store_path(self.store_identity(), self._cache_dir), self.store_header())
            self.check_store(store)
            self._store = store
        return self._store

    def missing(self, calls: Sequence[Call]) -> int:
        """How many distinct calls of ``calls`` have no stored answer (all of them without a store)."""
        ident = self.identity()
        keys = {call_key(ident, c) for c in calls}
        store = self.store
        if store is None:
            return len(keys)
        store.refresh()
        return sum(1 for k in keys if k not in store)

    def answer(self, calls: Sequence[Call], *, task: Any = None) -> list[Answer]:
        """One answer per call, in order (see the module)."""
        ident = self.identity()
        keys = [call_key(ident, c) for c in calls]
        out: list[Answer | None] = [None] * len(calls)
        todo = self._look_up(keys, out)
        cached = len(calls) - sum(len(v) for v in todo.values())
        if task is not None and cached:
            task.skip(cached)  # found in the store: on the bar, not in the rate
        unique = list(todo)
        late: set[str] = set()  # stored by another process while this batch ran (read, not computed)
        store = self.store

        def on_answer(j: int, ans: Answer) -> None:
            key = unique[j]
            if store is not None:
                store.put(key, ans)
            for i in todo[key]:
                out[i] = ans
            with self._count_lock:
                if ans.cached:
                    late.add(key)
                else:
                    _add(self._usage["computed"], ans.usage)
            self._count_used(key, ans)
            if task is not None:
                task.advance(len(todo[key]))

        try:
            if unique:
                self.compute([calls[todo[k][0]] for k in unique], on_answer)
        except GenerationError as exc:
            raise self._unanswered(exc, len(unique), sum(1 for k in unique if out[todo[k][0]] is not None)) from exc
        finally:
            answered = sum(1 for k in unique if out[todo[k][0]] is not None)
            with self._count_lock:
                self.counts["calls"] += len(calls)
                self.counts["cached"] += cached + sum(len(todo[k]) for k in late)
                self.counts["computed"] += answered - len(late)
                if "failed" in self.counts:
                    self.counts["failed"] += len(unique) - answered
        missing = [i for i, a in enumerate(out) if a is None]
        if missing:  # a backend that skipped a call is a bug, not a result
            raise RuntimeError(f"{type(self).__name__}.compute left {len(missing)} calls unanswered")
        return [a for a in out if a is not None]

    def _look_up(self, keys: Sequence[str], out: list[Answer | None]) -> dict[str, list[int]]:
        """Fill ``out`` with the stored answers (what other processes added read first); the keys
        to compute, each with the indices of its calls (a call repeated in a batch is sent once)."""
        store = self.store
        if store is not None:
            store.refresh()
        todo: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            hit = store.get(k) if store is not None else None
            if hit is not None:
                out[i] = hit
                self._count_used(k, hit)
            else:
                todo.setdefault(k, []).append(i)
        return todo

    def _unanswered(self, exc: GenerationError, sent: int, answered: int) -> GenerationError:
        """The error of a batch a call of which could not be answered (after its retries, or not
        retryable): the job stops rather than leave the item out (an estimate without it would be
        of other items than asked); what was answered is stored, and a rerun sends only the rest."""
        store = self.store
        kept = (
            f"the {answered} answered are stored in {store.path} ({len(store)} answers in all): a rerun sends only the calls not stored"
            if store is not None
            else "nothing is stored (no answer store)"
        )
        return GenerationError(f"{exc}\n{sent - answered} of {sent} calls of this batch got no answer; {kept}", retryable=exc.retryable, attempts=exc.attempts)

    def _count_used(self, key: str, ans: Answer) -> None:
        with self._count_lock:
            if key not in self._used:
                self._used.add(key)
                _add(self._usage["answers"], ans.usage)

    def usage(self) -> dict[str, dict[str, Any]]:
        """``computed``: the calls computed by this client (tokens as the model counted them;
        seconds summed over calls, so concurrent calls overlap); ``answers``: every distinct answer
        it gave (a cached one as its call cost when made). ``without_token_counts``: calls whose
        backend sent no token counts (left out of the sums)."""
        with self._count_lock:
            return {k: {**v, "seconds": round(v["seconds"], 3)} for k, v in self._usage.items()}

    def describe(self) -> dict[str, Any]:
        store = self.store
        return {
            "identity": self.identity(),
            **self.settings(),
            "answer_store": str(store.path) if store is not None else None,
            "calls": dict(self.counts),
            "usage": self.usage(),
        }

    def close(self) -> None:
        """Release the backend (a server's connections; a local model stays loaded for the process)."""
        self.backend.close()
