"""Answers from OpenAI-compatible servers (vLLM, llama.cpp's server, ``sourcebias serve``, a
:class:`~sourcebias.llmcalls.simulated.SimulatedServer`, OpenAI), through
:class:`~sourcebias.llmcalls.backends.openai.OpenAIBackend`: its pool of base URLs, retries
(429, 5xx, network errors, ``Retry-After``; counted) and fail-over, with ``concurrency`` requests
in flight at once.

Log-probabilities: a call with ``top_logprobs`` or ``choices`` asks for ``logprobs`` (and
``top_logprobs``, at least :data:`CHOICE_TOP_K` for choices). A server that sends none gives
answers with ``top_logprobs`` and every choice ``None``, counted as ``no_logprobs`` in
:meth:`describe`: never a silent 0.

Identity: the answers' key holds the model name, the API (chat completions or completions) and what
the servers report serving (:mod:`sourcebias.llmcalls.backends.served`), asked when the client opens.
The answer store records that report; a store whose servers now report otherwise is refused, as is
a server of the pool that reports something else, later answers that name another ``model`` than
the stored ones, or a server that comes back (after failing) with another model. A server that
cannot be reached when the client opens is taken at the store's word (answers already stored are
read back) and checked at its first answer; with nothing stored, the client refuses at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import Future, as_completed, wait
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.core.threads import AbandonablePool
from sourcebias.llmcalls.backends.base import GenerationError, GenerationRequest, redact_url_credentials
from sourcebias.llmcalls.base import Answer, Call, call_key, choices_from_top, top_dicts, usage_of
from sourcebias.llmcalls.cache import AnswerStore, LegacyStoreError, store_path
from sourcebias.llmcalls.client import CachingClient, OnAnswer
from sourcebias.llmcalls.local import plain_prompt

CHOICE_TOP_K = 20  # top tokens asked for to read choice log-probabilities (OpenAI's maximum)
PROBE_ATTEMPTS = 3  # asks of a server that refuses connections when the client opens,
PROBE_WAIT = 1.0  # ... this many seconds apart


class ServerClient(CachingClient):
    """Calls to the model a backend (an :class:`~sourcebias.llmcalls.backends.openai.OpenAIBackend`)
    serves; what the servers report is asked now (see the module)."""

    exact_choices = False
    choice_top_k = CHOICE_TOP_K

    def __init__(self, backend: Any, *, cache_dir: str | Path | None = None, cache: bool = True):
        super().__init__(backend, cache_dir=cache_dir, cache=cache)
        self.api = "chat/completions" if backend.chat else "completions"
        self.counts.update(no_logprobs=0, retries=0, failed=0)
        self.unverified: str | None = None  # why the servers' report was taken from the store
        self._models: set[str] = set()  # the ``model`` the answers named
        try:
            self.served = self._served()
            if self._use_cache:
                _ = self.store  # opened (and checked) now, not at the first call
        except BaseException:
            backend.close()
            raise
        self.backend.expect(self.served)

    # -- identity ---------------------------------------------------------------------------
    def store_identity(self) -> dict[str, Any]:
        return {"backend": self.backend.kind, "model": self.model, "api": self.api}

    def identity(self) -> dict[str, Any]:
        return {**self.store_identity(), "server": self.served}

    def store_header(self) -> dict[str, Any]:
        return {"identity": self.store_identity(), "server": self.served}

    def _served(self) -> dict[str, Any]:
        """What the servers report serving, asked now (refused connections up to
        :data:`PROBE_ATTEMPTS` times, :data:`PROBE_WAIT` seconds apart); every server that answers
        must agree."""
        t0 = time.perf_counter()
        for attempt in range(PROBE_ATTEMPTS):
            probes = self.backend.probe()
            if any(p.status != "refused" for p in probes) or attempt + 1 == PROBE_ATTEMPTS:
                break
            time.sleep(PROBE_WAIT)
        what = self.backend.what
        unlisted = [p for p in probes if p.status == "unlisted"]
        if unlisted:
            served = sorted({m for p in unlisted for m in p.listed})
            raise ConfigError(
                f"{what}: {', '.join(_url(p.url) for p in unlisted)} do not serve '{self.model}' (they serve {', '.join(served[:8])}): name one of those models"
            )
        ok = {p.url: p.identity for p in probes if p.identity is not None}
        if len({json.dumps(v, sort_keys=True) for v in ok.values()}) > 1:
            raise ConfigError(f"{what}: the servers report different models: " + "; ".join(f"{_url(u)}: {v}" for u, v in ok.items()))
        if ok:
            self.backend.mark_verified(list(ok))
            return next(iter(ok.values()))
        notes = "; ".join(f"{_url(p.url)}: {_why(p)}" for p in probes)
        if any(p.status == "denied" for p in probes):
            raise ConfigError(f"{what}: {notes}")
        recorded = self._recorded_server()
        if recorded is not None:
            self.unverified = notes
            return recorded
        if all(p.status == "refused" for p in probes):
            urls = ", ".join(_url(p.url) for p in probes)
            seconds = time.perf_counter() - t0
            raise ConfigError(
                f"{what}: nothing answers at {urls} (connection refused, {PROBE_ATTEMPTS} attempts over {seconds:.1f} s): start the server or correct the URL"
            )
        raise ConfigError(f"{what}: cannot ask the server what it serves ({notes}), and no answer of it is stored: start the server or correct the URL")

    def _store_file(self) -> Path:
        return store_path(self.store_identity(), self._cache_dir)

    def _recorded_server(self) -> dict[str, Any] | None:
        """The report a store made before holds (``None``: no store, or none recorded)."""
        path = self._store_file()
        if not self._use_cache or not path.is_file():
            return None
        with path.open("rb") as fh:
            first = fh.readline()
        try:
            header = json.loads(first) if first.endswith(b"\n") else {}
        except ValueError:
            return None
        return header.get("server") if isinstance(header, dict) else None

    def check_store(self, store: AnswerStore) -> None:
        header = store.header
        if not header.get("format"):
            raise LegacyStoreError(
                f"{store.path} holds answers of '{self.model}' stored by an earlier sourcebias, which did not record what the server served, "
                "so they cannot be told apart from another model's under that name: delete the file to start this store again, or pass another cache folder"
            )
        if header.get("server") != self.served:
            raise ConfigError(
                f"{self.backend.what}: the servers now report {self.served} for '{self.model}' ({self.api}), but the answers in {store.path} "
                f"were given by a server that reported {header.get('server')}: the model behind the name changed. Serve the model under another "
                "name (an alias naming its file), pass another cache folder, or delete that file to start again"
            )

    # -- calls --------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        d = self.backend.describe()
        out = {"base_urls": d["base_urls"], "api": self.api, "concurrency": d["concurrency"], "requests": d["requests"], "served": d.get("served", {})}
        if self.unverified:
            out["unverified"] = f"the servers could not be asked when the client opened ({self.unverified}); their report is the store's"
        return out

    def _request(self, call: Call, i: int) -> GenerationRequest:
        k: int | None = call.top_logprobs if call.top_logprobs > 0 else None
        if call.choices:
            k = max(call.top_logprobs, CHOICE_TOP_K)
        return GenerationRequest(
            key=str(i),
            messages=call.chat(),
            prompt=plain_prompt(call),
            max_tokens=max(call.max_tokens, 1),
            temperature=call.temperature,
            seed=call.seed,
            top_logprobs=k,
        )

    def _one(self, call: Call, i: int) -> Answer:
        stored = self._stored_since(call)
        if stored is not None:
            return stored
        req = self._request(call, i)
        try:
            res = self.backend.generate(req)
        except GenerationError as exc:  # its retries are counted too
            with self._count_lock:
                self.counts["retries"] += max(exc.attempts - 1, 0)
            raise
        with self._count_lock:
            self.counts["retries"] += res.attempts - 1
            if req.top_logprobs is not None and not res.logprobs:
                self.counts["no_logprobs"] += 1
        self._check_model(res.model)
        choices = choices_from_top(call.choices, res.logprobs) if call.choices else None
        return Answer(
            text=res.text,
            finish_reason=res.finish_reason,
            top_logprobs=top_dicts(res.logprobs, call.top_logprobs),
            choice_logprobs=choices,
            usage=usage_of(res.prompt_tokens, res.completion_tokens, res.seconds),
            served={"model": res.model, "system_fingerprint": res.system_fingerprint},
        )

    def _stored_since(self, call: Call) -> Answer | None:
        """The answer another process sharing the store wrote since this batch began (two jobs on
        one store do not both send a call one of them has answered)."""
        store = self.store
        if store is None:
            return None
        store.refresh()
        return store.get(call_key(self.identity(), call))

    def _check_model(self, model: str | None) -> None:
        """An answer that names another ``model`` than the stored (or earlier) answers did is not
        mixed in."""
        if not model:
            return
        with self._count_lock:
            if model in self._models:  # the common case: checked at an earlier answer
                return
            known = (self.store.served_models() if self.store is not None else set()) | self._models
            if not known or model in known:
                self._models.add(model)
                return
        if model not in known:
            raise GenerationError(
                f"{self.backend.what}: the server answered as model '{model}', but the stored answers came from '{', '.join(sorted(known))}': "
                "the model behind the name changed; its answers are not mixed with the stored ones",
                retryable=False,
            )

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        """Send ``calls`` with ``concurrency`` in flight, in prefix order (:func:`prefix_order`),
        storing each answer as it arrives. At the first call that fails after its retries, or at an
        interruption (Ctrl-C; SIGTERM and SIGHUP under the command line), the calls not sent yet are
        cancelled and the answers of those in flight are awaited and stored (a second interruption
        abandons them: the process does not wait for them to end); then the error is raised. A rerun
        sends only the rest, and an interrupted job ends in the time of one call (the client says
        what is stored: :meth:`CachingClient.answer`)."""
        # daemon workers (AbandonablePool): concurrent.futures joins its workers at exit, so a
        # second interruption still waited out a hung call's timeout and retries
        pool = AbandonablePool(max(1, min(self.backend.concurrency, len(calls))), "llmcalls")
        # Each answer is delivered (stored) by the thread that received it, before that thread sends
        # the next call: a job killed with -9 loses at most the `concurrency` calls at the servers
        # (delivered from this thread, the answers waiting for it under load were lost too).
        futures: dict[Future, int] = {pool.submit(self._deliver, calls[j], j, on_answer): j for j in prefix_order(calls)}
        failed: BaseException | None = None
        interrupted = False
        try:
            # as_completed waits on every future once (a wait(FIRST_COMPLETED) loop re-arms a waiter
            # on every pending future per answer: quadratic in the calls of a batch)
            for f in as_completed(futures):
                if f.cancelled():
                    continue
                exc = f.exception()
                if exc is not None and failed is None:  # what arrives is still stored; the rest is sent again by a rerun
                    failed = exc
                    for g in futures:
                        g.cancel()
        except KeyboardInterrupt:
            interrupted = True
            self._finish_in_flight(futures)  # a second KeyboardInterrupt leaves from here, abandoning them
            raise
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
        if failed is not None:
            raise failed

    def _deliver(self, call: Call, j: int, on_answer: OnAnswer) -> None:
        """Send call ``j`` and deliver its answer (``on_answer`` stores it), in the worker thread."""
        on_answer(j, self._one(call, j))

    @staticmethod
    def _finish_in_flight(futures: dict[Future, int]) -> None:
        """Cancel the calls not sent yet; await those in flight (each stores its own answer; failures dropped)."""
        for f in futures:
            f.cancel()
        wait(list(futures))

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        fingerprints: dict[str, int] = {}
        for a in self._fingerprints():
            fingerprints[a] = fingerprints.get(a, 0) + 1
        if fingerprints:
            out["system_fingerprints"] = fingerprints
        return out

    def _fingerprints(self) -> list[str]:
        store = self.store
        if store is None:
            return []
        return [str(fp) for key in self._used if (a := store.get(key)) is not None and (fp := (a.served or {}).get("system_fingerprint"))]


def prefix_order(calls: Sequence[Call]) -> list[int]:
    """The order calls are sent in: sorted by their messages, so that calls sharing a prefix (one
    instruction and query, many passages; one passage under several disclosures) go one after the
    other. A server that keeps the last prompt's state (llama.cpp's server: "prefix-match hit")
    or caches prefixes (vLLM's automatic prefix caching) then evaluates the shared part once;
    answers are the same in any order."""
    return sorted(range(len(calls)), key=lambda j: calls[j].messages)


def _url(url: str) -> str:
    return redact_url_credentials(url)


def _why(p: Any) -> str:
    return "connection refused" if p.status == "refused" else p.note
