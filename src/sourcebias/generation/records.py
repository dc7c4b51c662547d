"""One document's request-to-record step (run in a worker thread): the request(s) to the
backend, the answer post-processed (:func:`~sourcebias.generation.postprocess.clean_output`),
length control's bounded retries, and the twin's record (a flagged record keeps the human text).
"""

from __future__ import annotations

from typing import Any

from sourcebias.generation.job import RewriteSettings
from sourcebias.generation.postprocess import STATUSES, clean_output
from sourcebias.generation.rules import attempt_seed, max_new_tokens_for, word_count
from sourcebias.llmcalls.backends.base import Backend, GenerationRequest, GenerationResult


def rewrite_one(doc: Any, backend: Backend, settings: RewriteSettings) -> tuple[dict[str, Any], int]:
    """Request, post-process and build the record of one document (runs in a worker thread);
    with length control, ask again (at most ``max_retries`` times) while the answer is outside
    the band. Returns the record and the completion tokens of all attempts."""
    lc = settings.length_control
    words_in = word_count(doc.text)
    prompt = settings.prompt.with_sentence(lc.instruction(words_in)) if lc else settings.prompt
    n_in = backend.count_tokens(doc.text)
    budget_in = lc.budget_input(n_in) if lc else n_in
    tried: list[tuple[GenerationRequest, GenerationResult, Any]] = []
    # a greedy answer (temperature 0) does not change with the seed: retrying would repeat it
    retries = lc.max_retries if lc and settings.temperature > 0 else 0
    for attempt in range(1 + retries):
        request = GenerationRequest(
            key=doc.doc_id,
            messages=prompt.messages(doc.text, doc.title),
            prompt=prompt.render(doc.text, doc.title),
            max_tokens=max_new_tokens_for(budget_in, settings.max_new_tokens_ratio, settings.min_new_tokens, settings.max_new_tokens),
            temperature=settings.temperature,
            top_p=settings.top_p,
            seed=attempt_seed(settings.seed, doc.doc_id, attempt),
        )
        result = backend.generate(request)
        cleaned = clean_output(
            result.text,
            finish_reason=result.finish_reason,
            source_text=doc.text,
            template=prompt.template,
            answer_marker=prompt.answer_marker or "Rewritten Text:",
        )
        tried.append((request, result, cleaned))
        if lc is None or not cleaned.ok or lc.accepts(words_in, word_count(cleaned.text)):
            break
    record = answer_record(doc, backend, settings, tried, words_in)
    return record, sum(int(r.completion_tokens or 0) for _, r, _ in tried)


def answer_record(doc: Any, backend: Backend, settings: RewriteSettings, tried: list, words_in: int) -> dict[str, Any]:
    """The record of a document from its attempts (the last one decides): its status, the
    rewrite or (flagged) the human text, and the accounting; with length control, the target,
    the band and each attempt's words, and status ``length`` when the last is still outside."""
    request, result, cleaned = tried[-1]
    lc = settings.length_control
    status, note = cleaned.status, cleaned.reason
    if lc is not None and cleaned.ok and not lc.accepts(words_in, word_count(cleaned.text)):
        lo, hi = lc.bounds(words_in)
        status, note = "length", f"{word_count(cleaned.text)} words, outside {lo}-{hi} (target {lc.target(words_in)}) after {len(tried)} attempts"
    ok = status == "ok"
    text = cleaned.text if ok else doc.text
    extra: dict[str, Any] = {
        "finish_reason": result.finish_reason,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "seconds": round(sum(r.seconds for _, r, _ in tried), 3),
        "attempts": result.attempts,
    }
    if lc is not None:
        extra["length"] = {
            "words_in": words_in,
            "target": lc.target(words_in),
            "bounds": list(lc.bounds(words_in)),
            "attempt_words": [word_count(c.text) for _, _, c in tried],
            "attempt_seeds": [q.seed for q, _, _ in tried],
        }
    if cleaned.removed:
        extra["cleaned"] = list(cleaned.removed)
    if settings.keep_raw:
        extra["raw"] = result.text
    record = record_of(doc, settings, backend, status=status, text=text, note=note, extra=extra)
    record["metadata"]["identical_to_original"] = ok and " ".join(text.split()) == " ".join(doc.text.split())
    return record


def record_of(
    doc: Any, settings: RewriteSettings, backend: Backend, *, status: str, text: str, note: str | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One line of the twin: the original's id and title, ``text``, and ``metadata`` with the
    status (one of :data:`~sourcebias.generation.postprocess.STATUSES`), model, backend,
    prompt, ``note`` and ``extra``."""
    assert status in STATUSES
    meta: dict[str, Any] = {"rewrite_status": status, "model": backend.model, "backend": backend.kind, "prompt": settings.prompt.name}
    if note:
        meta["note"] = note
    meta.update(extra or {})
    return {"_id": doc.doc_id, "title": doc.title, "text": text, "metadata": meta}
