"""A citation study in memory: show each query's top k to a generator in several context orders,
read what each answer cites, and estimate the source effect (:func:`cite_run`,
:func:`analyse`).

Every call goes through an :class:`~sourcebias.llmcalls.LLMClient`, whose answer store makes
the study resumable: a killed run loses at most the calls in flight, and a rerun sends only the
calls not answered yet (same contexts, same prompts, same parameters: the same cache keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from sourcebias.citations.design import Context, build_contexts, check_design
from sourcebias.citations.estimate import LOGIT_METHOD, TWIN_METHOD, balanced_queries, logit_effects, rate_method, rate_notes, rate_table, twin_differences
from sourcebias.citations.parse import STATUSES, ParsedAnswer
from sourcebias.citations.prompt import cite_prompt
from sourcebias.citations.result import CitationResult
from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls.client import call_notes

UNCITED_RULES = ("keep", "drop")


@dataclass(frozen=True)
class CiteSettings:
    """How the study is run: the top ``k`` passages, ``orders`` context orders per query (rows of
    a cyclic Latin square, order 0 as ranked: at most ``k``; ``orders = k`` balances each query's
    contexts, which the matched twins need), the ``seed`` (query sample, and sent with each call),
    generation parameters, ``uncited`` (``keep``: an answer that cites no passage, with no citation
    or only numbers outside 1..k, counts as citing none of its passages; ``drop``: its passages are
    left out of the estimates; counted either way), the intervals' ``level``, ``max_queries`` (a
    seeded sample; all when None), ``shots`` (how many of the prompt's demonstrations come first:
    ``alce`` has one) and ``prompt`` (a registered name or a prompt file asking for citations,
    :mod:`sourcebias.llmcalls.prompts`)."""

    k: int = 5
    orders: int = 1
    seed: int = 0
    max_tokens: int = 128
    temperature: float = 0.0
    uncited: str = "keep"
    level: float = 0.95
    max_queries: int | None = None
    shots: int = 1
    prompt: str = "alce"

    def check(self) -> None:
        if self.k < 2:
            raise ConfigError(f"k must be at least 2 (a citation choice needs two passages), got {self.k}")
        if self.orders < 1:
            raise ConfigError(f"orders must be at least 1, got {self.orders}")
        if self.orders > self.k:
            raise ConfigError(
                f"orders ({self.orders}) must be at most k ({self.k}): {self.k} passages have {self.k} cyclic orders, more would show a context twice; "
                f"orders = k puts each passage at each position once"
            )
        if self.uncited not in UNCITED_RULES:
            raise ConfigError(f"uncited must be one of {', '.join(UNCITED_RULES)}, got '{self.uncited}'")
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"level must be in (0, 1), got {self.level}")
        demos = len(cite_prompt(self.prompt).demonstrations)
        if not 0 <= self.shots <= demos:
            raise ConfigError(f"shots is 0 to {demos} (the demonstrations of the prompt {self.prompt}), got {self.shots}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be positive, got {self.max_tokens}")

    def describe(self) -> dict[str, Any]:
        return {**asdict(self), "prompt": cite_prompt(self.prompt).describe()}


def calls_for(contexts: list[Context], corpus: Any, queries: Mapping[str, str], settings: CiteSettings) -> list[Any]:
    """One :class:`~sourcebias.llmcalls.Call` per context (the citation prompt of its passages)."""
    from sourcebias.llmcalls import Call

    prompt = cite_prompt(settings.prompt)
    calls = []
    for c in contexts:
        passages = [{"title": corpus[p].title, "text": corpus[p].text} for p in c.positions]
        calls.append(
            Call(
                messages=prompt.render({"query": queries[c.query_id]}, passages, settings.shots),
                max_tokens=settings.max_tokens,
                temperature=settings.temperature,
                seed=settings.seed,
            )
        )
    return calls


def tables(
    contexts: list[Context], answers: list[Any], corpus: Any, uncited: str, calls: list[Any] | None = None, prompt: Any = "alce"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(passages, answers)`` frames (see :mod:`.result`) from the contexts and their answers.

    A passage row is ``used`` (enters the estimates) when its answer cites a passage of its
    context, or under ``uncited="keep"``: an answer that cites nothing, or only numbers outside
    1..k, cites no passage. ``calls``: the calls answered (their prompts are what an answer must
    not be read from: an echo is not a citation); ``None``: no echo is looked for. ``prompt``: the
    citation prompt, whose parser reads the answers.
    """
    reader = cite_prompt(prompt)
    rows, out = [], []
    for i, (c, a) in enumerate(zip(contexts, answers)):
        parsed: ParsedAnswer = reader.parse(a.text, len(c.positions), messages=calls[i].messages if calls is not None else ())
        used = bool(parsed.cited) or uncited == "keep"
        cited, outside = " ".join(map(str, parsed.cited)), " ".join(map(str, parsed.out_of_range))
        done = {"finish_reason": a.finish_reason or "", "cached": bool(a.cached), "text": a.text}
        out.append(
            {"query_id": c.query_id, "order": c.order, "status": parsed.status, "citations": cited, "out_of_range": outside, "echoed": parsed.echoed, **done}
        )
        for pos, (p, rank) in enumerate(zip(c.positions, c.ranks), start=1):
            where = {"doc_id": corpus.doc_ids[p], "source": corpus.source_of(p), "rank": rank, "position": pos}
            rows.append({"query_id": c.query_id, "order": c.order, **where, "cited": int(pos in parsed.cited), "status": parsed.status, "used": used})
    return pd.DataFrame(rows), pd.DataFrame(out)


def status_counts(answers: pd.DataFrame) -> dict[str, Any]:
    """How many answers have each status, how many cite only numbers outside 1..k (``out_of_range``
    answers that cite no passage), how many hit the token limit and how many repeat the prompt."""
    if not len(answers):
        return {"answers": 0, **dict.fromkeys(STATUSES, 0), "only_out_of_range": 0, "truncated": 0, "echoed": 0}
    counts = {s: int((answers["status"] == s).sum()) for s in STATUSES}
    only = int(((answers["status"] == "out_of_range") & (answers["citations"].fillna("").astype(str) == "")).sum())
    truncated, echoed = int((answers["finish_reason"] == "length").sum()), int(answers["echoed"].sum())
    return {"answers": len(answers), **counts, "only_out_of_range": only, "truncated": truncated, "echoed": echoed}


def _notes(counts: dict[str, Any], settings: CiteSettings, used: pd.DataFrame, passages: pd.DataFrame) -> list[str]:
    n = counts["answers"]
    notes = []
    only = counts.get("only_out_of_range", 0)
    if counts["no_citation"] or counts["empty"] or only:
        rule = "counted as citing none of their passages" if settings.uncited == "keep" else "left out of the estimates"
        parts = f"{counts['no_citation']} without a citation, {counts['empty']} empty" + (f", {only} citing only numbers outside 1..k" if only else "")
        notes.append(f"{counts['no_citation'] + counts['empty'] + only} of {n} answers cite no passage ({parts}): {rule} (uncited={settings.uncited}).")
    if counts["out_of_range"]:
        notes.append(f"{counts['out_of_range']} of {n} answers cite a number outside 1..k: those numbers were dropped, their other citations kept.")
    if counts["echoed"]:
        notes.append(
            f"{counts['echoed']} of {n} answers repeat the prompt's passage headers (Document [n](Title: ...)), e.g. continuing the list of documents, "
            "or a bracketed number of its text (the instruction's [1][2][3], the demonstration): those are not read as citations."
        )
    if counts["truncated"]:
        notes.append(f"{counts['truncated']} of {n} answers stopped at max_tokens={settings.max_tokens}: citations after the cut are missing.")
    if len(used) < len(passages):
        notes.append(f"{len(passages) - len(used)} of {len(passages)} passage rows left out of the estimates (their answer cites no passage).")
    short = passages.groupby(["query_id", "order"]).size()
    if len(short) and short.min() < settings.k:
        notes.append(f"{int((short < settings.k).sum())} contexts hold fewer than k={settings.k} passages (their ranking is shorter).")
    return notes


def analyse(
    passages: pd.DataFrame,
    answers: pd.DataFrame,
    settings: CiteSettings,
    human: str,
    *,
    generator: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
) -> CitationResult:
    """The rates and effects of a study's tables (the passages whose ``used`` is true).

    Args:
        passages: one row per (query, order, passage), as :func:`tables` builds it.
        answers: one row per call.
        settings: the study's settings (level, the uncited rule).
        human: the human source (the reference of every effect).
        generator: what answered (recorded).
        inputs: the run and dataset (recorded).

    Returns:
        The :class:`~sourcebias.citations.result.CitationResult`.
    """
    used = passages[passages["used"]]
    counts = status_counts(answers)
    rates = {
        name: rate_table(used, by, settings.level)
        for name, by in (("source", ["source"]), ("source_rank", ["source", "rank"]), ("source_position", ["source", "position"]))
    }
    logit, logit_notes = logit_effects(used, human, settings.level) if len(used) else ([], ["no passage rows to estimate from"])
    effects = logit + twin_differences(used, human, settings.level)
    notes = (
        _notes(counts, settings, used, passages)
        + [_design_note(used, settings)]
        + rate_notes(rates)
        + logit_notes
        + [f"{r['estimator']} {r['level']}: {r['note']}" for r in effects if r["note"] and r["term"] == "source"]
    )
    method = {
        "rates": rate_method(),
        "logit": LOGIT_METHOD,
        "twins": TWIN_METHOD,
        "level": settings.level,
        "orders": "rows of a cyclic Latin square: 0 as ranked, j the ranking rotated (sourcebias.clustered.design)",
    }
    return CitationResult(
        settings=settings.describe(),
        generator=generator or {},
        inputs=inputs or {},
        counts=counts,
        rates=rates,
        effects=effects,
        passages=passages.reset_index(drop=True),
        answers=answers.reset_index(drop=True),
        notes=notes,
        method=method,
    )


def _design_note(used: pd.DataFrame, settings: CiteSettings) -> str:
    """The design the estimates rest on: its balance, and how many queries are balanced."""
    from sourcebias.clustered.design import order_balance

    queries = int(used["query_id"].nunique()) if len(used) else 0
    return f"design: {order_balance(settings.k, settings.orders)['text']}; {len(balanced_queries(used))} of {queries} queries balanced in the rows estimated"


def top_k(run: Any, query_ids: list[str], k: int) -> dict[str, list[int]]:
    """Query id -> the corpus positions of its top ``k`` (queries the run ranks nothing for are
    left out)."""
    return {q: [int(p) for p in run.positions[q][:k]] for q in query_ids if len(run.positions.get(q, ())) > 0}


def cite_run(
    run: Any,
    queries: Mapping[str, str],
    client: Any,
    settings: CiteSettings,
    human: str,
    *,
    query_ids: list[str] | None = None,
    inputs: dict[str, Any] | None = None,
) -> CitationResult:
    """Run the study on ``run`` (its top k per query) with ``client``.

    Args:
        run: a :class:`~sourcebias.retrieval.run.Run` of the mixed corpus, bound to its texts.
        queries: query id -> text.
        client: an :class:`~sourcebias.llmcalls.LLMClient`.
        settings: the study's settings (checked here).
        human: the human source.
        query_ids: the queries to ask (default: the run's, in order).
        inputs: what the run and dataset are (recorded).

    Returns:
        The :class:`~sourcebias.citations.result.CitationResult`.
    """
    from sourcebias.core import progress

    settings.check()
    ids = list(run.query_ids if query_ids is None else query_ids)
    missing = [q for q in ids if q not in queries]
    if missing:
        raise ConfigError(f"{len(missing)} queries of the run have no text in the dataset (e.g. {missing[0]})")
    contexts = build_contexts(top_k(run, ids, settings.k), settings.orders)
    check_design(contexts, run.corpus, human, settings.orders)  # refuses a design that can estimate no source effect, before any call
    calls = calls_for(contexts, run.corpus, queries, settings)
    with progress.task("cited answers", total=len(calls), unit="answer") as task:
        answers = client.answer(calls, task=task)
    passages, answer_frame = tables(contexts, answers, run.corpus, settings.uncited, calls, settings.prompt)
    described = client.describe()
    result = analyse(passages, answer_frame, settings, human, generator=described, inputs=inputs)
    result.notes += call_notes(described, "generator calls: ")
    return result
