"""Building an LLM twin of a corpus: the resumable rewriting job (Dai et al., KDD 2024, §2.2.2; Cocktail, Findings of ACL 2024, §3.1).

:func:`rewrite_corpus` reads a human corpus, sends each document to a backend with a
rewriting prompt, post-processes the answer and appends one record per document to the twin
file, e.g. ``DATASET/corpus/<name>.jsonl``::

    {"_id": ..., "title": <the original's>, "text": <the rewrite, or the human text when flagged>,
     "metadata": {"rewrite_status": "ok" | "refused" | "empty" | "truncated" | "filtered" | "length", ...}}

Safety and resumption
---------------------
* Each finished document is one ``write`` + ``flush`` of one line (:class:`~sourcebias.data.jsonl.JsonlAppender`),
  so a ``kill -9`` loses at most the requests in flight and leaves at most a torn last line,
  which the next run detects and removes (:func:`~sourcebias.data.jsonl.repair_torn_tail`).
* A rerun reads the ids already in the file and skips them: each document ends up exactly once.
* Requests that still fail after the backend's retries are listed in the state folder
  (``.<name>.state/failed.jsonl``) and are *not* written as documents; the next run retries
  them. ``settings.json`` there records what the file was made with; a rerun with other
  settings (model, prompt, sampling) is refused instead of mixing two twins in one file.
* A second run on the same twin while one is running is refused (an ``flock`` on
  ``.<name>.state/lock``, released by the kernel even when the holder is killed).
* ``<name>.manifest.json`` beside the output records model, backend, prompt, parameters,
  counts and timings of every run. Neither side file ends in ``.jsonl``, so dataset loaders
  (which glob ``corpus/*.jsonl``) do not take them for sources.

Cocktail's corpus rules (Cocktail, §3 and Appendix) are options: the length filter (documents
of 10-2,000 words are rewritten; others keep the human text, flagged ``filtered``) and the
large-corpus sample (over ``cap`` documents: every labelled document plus seeded random others
up to ``cap``; documents outside the sample get no twin).

Length control (``settings.length_control``, :mod:`sourcebias.generation.length`) asks for a
target length, retries answers outside its band (bounded, seeded per attempt) inside the
document's one request-to-record step, and marks those still outside ``length``: a document is
written once, after its last attempt, so resumption is unchanged.

The job lives in a few modules: :mod:`.rules` (seeds, token budget, Cocktail's filter and
sample), :mod:`.job` (settings, target, selection), :mod:`.journal` (the files beside the twin
that make it resumable), :mod:`.records` (one document's request-to-record step) and this one,
which drives the backend's workers and writes what they finish. The names of all of them are
importable from here, as before.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core import progress
from sourcebias.core.threads import AbandonablePool
from sourcebias.data.corpus import Corpus
from sourcebias.data.jsonl import JsonlAppender
from sourcebias.data.readers import read_corpus
from sourcebias.generation.job import RewriteSettings, RewriteTarget, resolve_target, select_documents
from sourcebias.generation.journal import check_settings, consolidate_failed, count_output, exclusive, read_done_ids, start_over, write_run_manifest
from sourcebias.generation.records import record_of, rewrite_one
from sourcebias.generation.rules import (
    COCKTAIL_LENGTH,
    COCKTAIL_SAMPLE_CAP,
    attempt_seed,
    cocktail_sample,
    document_seed,
    max_new_tokens_for,
    passes_length_filter,
    word_count,
)
from sourcebias.llmcalls.backends.base import Backend, GenerationError


@dataclass
class RewriteSummary:
    """What a run did. ``counts``: statuses over the whole output file (all runs);
    ``written``: records this run appended (by status); ``failed``: documents that failed
    this run (to be retried); ``skipped_done``: documents already in the file."""

    output: Path
    manifest: Path
    selected: int
    skipped_done: int
    written: dict[str, int]
    failed: int
    counts: dict[str, int]
    documents_in_output: int
    identical: int
    seconds: float
    docs_per_s: float
    completion_tokens: int
    repaired_bytes: int
    interrupted: bool = False
    failures: list[dict[str, Any]] = field(default_factory=list)
    length_retries: int = 0

    @property
    def complete(self) -> bool:
        return self.documents_in_output >= self.selected and self.failed == 0


def rewrite_corpus(
    target: RewriteTarget,
    backend: Backend,
    settings: RewriteSettings,
    *,
    overwrite: bool = False,
    human_source: str = "human",
) -> RewriteSummary:
    """Rewrite the selected documents of ``target.human_file`` not yet in ``target.output``.

    Returns a :class:`RewriteSummary`. Raises :class:`ConfigError` when the existing output
    was made with other settings, and :class:`GenerationError` when
    ``settings.max_consecutive_failures`` documents in a row fail (the backend is down, the
    key is wrong, ...); everything finished before is kept either way. On Ctrl-C, requests
    already running are awaited and written (a second Ctrl-C abandons them). Progress goes
    to :mod:`sourcebias.core.progress` (documents/s, ETA, refusals in the description).
    """
    settings.validate()
    with exclusive(target):
        return _rewrite_locked(target, backend, settings, overwrite=overwrite, human_source=human_source)


@dataclass
class _Plan:
    """What a run is to do, read from the files before the first request."""

    corpus: Corpus
    positions: list[int]  # the documents this twin covers
    todo: list[int]  # those not yet in the twin
    done: set[str]  # ids in the twin before this run
    repaired: int  # bytes of a torn last line removed
    retrying: int  # documents that failed in earlier runs, tried again
    started_utc: str
    t_start: float


def _plan(target: RewriteTarget, backend: Backend, settings: RewriteSettings, *, overwrite: bool, human_source: str) -> _Plan:
    """Start over (``overwrite``) or resume: repair the twin, check its settings, gather earlier
    failures, select the documents, and record the run as started in the manifest."""
    t_start = time.perf_counter()
    started_utc = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    if overwrite:
        start_over(target)
    target.output.parent.mkdir(parents=True, exist_ok=True)
    done, repaired = read_done_ids(target.output)
    check_settings(target, settings.fingerprint(backend.model), has_output=target.output.exists() and target.output.stat().st_size > 0)
    retrying = consolidate_failed(target, done)
    corpus, _ = read_corpus(target.human_file, human_source, empty_text="skip")
    positions = select_documents(corpus, settings, target.qrels_files)
    todo = [i for i in positions if corpus.doc_ids[i] not in done]
    run = {
        "started_utc": started_utc,
        "finished": False,
        "documents_to_do": len(todo),
        "skipped_already_done": len(positions) - len(todo),
        "retried_previous_failures": retrying,
    }
    write_run_manifest(target, backend, settings, len(positions), run)
    return _Plan(corpus, positions, todo, done, repaired, retrying, started_utc, t_start)


def _rewrite_locked(target: RewriteTarget, backend: Backend, settings: RewriteSettings, *, overwrite: bool, human_source: str) -> RewriteSummary:
    plan = _plan(target, backend, settings, overwrite=overwrite, human_source=human_source)
    state = _RunState()
    fail_log = JsonlAppender(target.failed_log)
    try:
        with (
            JsonlAppender(target.output, fsync=settings.fsync) as out,
            progress.task(_describe(state, plan.retrying), total=len(plan.todo), unit="docs") as bar,
        ):
            _Workers(plan.corpus, backend, settings, state, out, fail_log, bar).run(plan.todo)
    finally:
        fail_log.close()
        final_done, _ = read_done_ids(target.output)
        consolidate_failed(target, final_done)
        summary = _finish(target, backend, settings, plan, state)
    if state.consecutive >= settings.max_consecutive_failures:
        raise GenerationError(
            f"stopped after {state.consecutive} documents in a row failed; last error: {state.last_error}. "
            f"The {sum(state.written.values())} documents written this run are kept; fix the cause and rerun to resume."
        )
    return summary


@dataclass
class _RunState:
    written: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    consecutive: int = 0
    last_error: str = ""
    interrupted: bool = False
    length_retries: int = 0


class _Workers:
    """Sends documents to the backend's workers (a thread pool fed a short queue, so memory
    stays flat and an interruption leaves little queued work) and writes each finished one."""

    def __init__(self, corpus: Corpus, backend: Backend, settings: RewriteSettings, state: _RunState, out: JsonlAppender, fail_log: JsonlAppender, bar: Any):
        self.corpus, self.backend, self.settings, self.state = corpus, backend, settings, state
        self.out, self.fail_log, self.bar = out, fail_log, bar
        self.workers = max(1, backend.concurrency)

    def run(self, todo: list[int]) -> None:
        """Rewrite the documents at ``todo``; on Ctrl-C, write what is already running (a second
        Ctrl-C abandons it: the process does not wait for it to end) and re-raise."""
        pending: dict[cf.Future, Any] = {}
        queue = iter(todo)
        # daemon workers (AbandonablePool): concurrent.futures joins its workers at exit, so a
        # second Ctrl-C still waited out a hung request's timeout and retries
        pool = AbandonablePool(self.workers, "rewrite")
        try:
            while True:
                self._fill(pool, pending, queue)
                if not pending:
                    break
                finished, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    self._handle(fut, pending.pop(fut))
        except KeyboardInterrupt:
            self.state.interrupted = True
            for fut in pending:
                fut.cancel()
            try:
                running = {f: d for f, d in pending.items() if not f.cancelled()}
                for fut in cf.as_completed(running):
                    self._handle(fut, running[fut])
            except KeyboardInterrupt:
                pass
            raise
        finally:
            pool.shutdown(wait=not self.state.interrupted, cancel_futures=True)

    def _fill(self, pool: AbandonablePool, pending: dict[cf.Future, Any], queue: Any) -> None:
        """Submit documents until two per worker are pending (or too many failed in a row); a
        document outside the length filter is written at once, flagged, with its human text."""
        settings = self.settings
        while self.state.consecutive < settings.max_consecutive_failures and len(pending) < 2 * self.workers:
            i = next(queue, None)
            if i is None:
                return
            doc = self.corpus[i]
            if settings.length_filter and not passes_length_filter(doc.text, *settings.length_filter):
                lo, hi = settings.length_filter
                self.out.write(
                    record_of(doc, settings, self.backend, status="filtered", text=doc.text, note=f"{word_count(doc.text)} words, outside {lo}-{hi}")
                )
                self.state.written["filtered"] += 1
                self.bar.advance(1)
                continue
            pending[pool.submit(rewrite_one, doc, self.backend, settings)] = doc

    def _handle(self, fut: cf.Future, doc: Any) -> None:
        """Write a finished document, or log its failure (it is retried by the next run)."""
        state = self.state
        try:
            record, n_tokens = fut.result()
        except GenerationError as exc:
            state.consecutive += 1
            state.last_error = str(exc)
            entry = {"_id": doc.doc_id, "error": str(exc), "attempts": exc.attempts, "retryable": exc.retryable, "time_utc": _utc()}
            self.fail_log.write(entry)
            state.failures.append(entry)
        else:
            state.consecutive = 0
            self.out.write(record)
            state.written[record["metadata"]["rewrite_status"]] += 1
            state.tokens += n_tokens
            state.length_retries += len(record["metadata"].get("length", {}).get("attempt_words", [None])) - 1
        self.bar.advance(1)
        self.bar.update(description=_describe(state))


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _describe(state: _RunState, retrying: int = 0) -> str:
    w = state.written
    text = f"Rewriting · {w['refused']} refused · {w['truncated']} truncated · {w['empty']} empty"
    if w["length"] or state.length_retries:
        text += f" · {w['length']} off length ({state.length_retries} retries)"
    if state.failures:
        text += f" · {len(state.failures)} failed"
    if retrying:
        text += f" · retrying {retrying} failed before"
    return text


def _finish(target: RewriteTarget, backend: Backend, settings: RewriteSettings, plan: _Plan, state: _RunState) -> RewriteSummary:
    """The run's summary, also recorded (``finished: true``) in the twin's manifest."""
    seconds = time.perf_counter() - plan.t_start
    counts, n_out, identical = count_output(target.output)
    n_written = sum(state.written.values())
    summary = RewriteSummary(
        output=target.output,
        manifest=target.manifest_file,
        selected=len(plan.positions),
        skipped_done=sum(1 for i in plan.positions if plan.corpus.doc_ids[i] in plan.done),
        written=dict(state.written),
        failed=len(state.failures),
        counts=dict(counts),
        documents_in_output=n_out,
        identical=identical,
        seconds=seconds,
        docs_per_s=n_written / seconds if seconds > 0 else 0.0,
        completion_tokens=state.tokens,
        repaired_bytes=plan.repaired,
        interrupted=state.interrupted,
        failures=list(state.failures),
        length_retries=state.length_retries,
    )
    run = {
        "started_utc": plan.started_utc,
        "finished": True,
        "seconds": round(seconds, 3),
        "documents_written": n_written,
        "written_by_status": dict(state.written),
        "failed": len(state.failures),
        "retried_previous_failures": plan.retrying,
        "skipped_already_done": summary.skipped_done,
        "docs_per_s": round(summary.docs_per_s, 4),
        "completion_tokens": state.tokens,
        "length_retries": state.length_retries,
        "torn_tail_bytes_repaired": plan.repaired,
        "interrupted": state.interrupted,
    }
    write_run_manifest(target, backend, settings, len(plan.positions), run)
    return summary


__all__ = [
    "COCKTAIL_LENGTH",
    "COCKTAIL_SAMPLE_CAP",
    "RewriteSettings",
    "RewriteSummary",
    "RewriteTarget",
    "attempt_seed",
    "cocktail_sample",
    "document_seed",
    "max_new_tokens_for",
    "passes_length_filter",
    "read_done_ids",
    "resolve_target",
    "rewrite_corpus",
    "select_documents",
    "word_count",
    "write_run_manifest",
]
