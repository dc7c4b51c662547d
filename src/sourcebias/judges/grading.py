"""The judge's calls and answers: every item becomes one or more :class:`~sourcebias.llmcalls.Call` s
(pointwise grade, disclosed-author grades, pairwise in both orders), all sent in one batch through
the client (cached: a rerun sends only what is not answered yet), and every answer parsed into the
tables the analysis reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sourcebias.judges.items import passage
from sourcebias.judges.prompts import (
    DISCLOSURES,
    GRADE_CHOICES,
    PROMPTS,
    expected_for,
    grade_messages,
    pair_messages,
    parse_grade,
    parse_pick,
)

HUMAN_FIRST, LLM_FIRST = "human_first", "llm_first"
GRADE_COLUMNS = (
    "mode",
    "query_id",
    "doc_id",
    "source",
    "label",
    "origin",
    "assessor_grade",
    "grade",
    "expected",
    "grade_mass",
    "expected_note",
    "finish_reason",
    "answer",
)
PAIR_COLUMNS = ("query_id", "doc_id", "llm_source", "order", "origin", "pick", "picked", "finish_reason", "answer")


@dataclass(frozen=True)
class JudgeSettings:
    """How the judge is asked (every field enters the manifest; the call fields the cache keys)."""

    modes: tuple[str, ...] = ("grade",)
    prompt: str = "umbrela"
    max_tokens: int = 16
    top_logprobs: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        from sourcebias.core.errors import ConfigError

        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise ConfigError(f"unknown judge mode(s) {', '.join(bad) or '(none given)'}; known: {', '.join(MODES)}")
        if self.prompt not in PROMPTS:
            raise ConfigError(f"unknown judge prompt {self.prompt!r}; known: {', '.join(PROMPTS)}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")


#: the modes: a 0-3 grade per copy; a grade under each disclosed author; which copy of a pair is more relevant
MODES = ("grade", "disclosure", "pairwise")


def build_calls(dataset: Any, items: Any, settings: JudgeSettings) -> tuple[list[Any], list[tuple[str, dict[str, Any]]]]:
    """The calls of every mode, and for each what it is (``("grade" | "disclosed" | "pair", row)``)."""
    from sourcebias.llmcalls import Call

    corpus, human = dataset.corpus, dataset.human_source
    calls: list[Any] = []
    meta: list[tuple[str, dict[str, Any]]] = []
    grade_kw: dict[str, Any] = {"max_tokens": settings.max_tokens, "temperature": 0.0, "seed": settings.seed, "top_logprobs": settings.top_logprobs}
    if settings.prompt == "digit":  # the grade is the first token: its distribution over 0-3 directly
        grade_kw.update(choices=GRADE_CHOICES, top_logprobs=max(settings.top_logprobs, 10))
    for row in items.itertuples(index=False):
        q, text = dataset.queries[row.query_id], passage(corpus, row.doc_id, row.source)
        base = {"query_id": row.query_id, "doc_id": row.doc_id, "source": row.source, "origin": row.origin, "assessor_grade": row.assessor_grade}
        if "grade" in settings.modes:
            calls.append(Call(grade_messages(q, text, prompt=settings.prompt), **grade_kw))
            meta.append(("grade", {**base, "label": ""}))
        if "disclosure" in settings.modes:
            for label in DISCLOSURES:
                calls.append(Call(grade_messages(q, text, label, settings.prompt), **grade_kw))
                meta.append(("disclosed", {**base, "label": label}))
    if "pairwise" in settings.modes:
        pair_kw: dict[str, Any] = {"max_tokens": 4, "temperature": 0.0, "seed": settings.seed, "top_logprobs": 0}
        twins = items[items["source"] != human]
        for row in twins.itertuples(index=False):
            q = dataset.queries[row.query_id]
            h, llm = passage(corpus, row.doc_id, human), passage(corpus, row.doc_id, row.source)
            base = {"query_id": row.query_id, "doc_id": row.doc_id, "llm_source": row.source, "origin": row.origin}
            calls += [Call(pair_messages(q, h, llm), **pair_kw), Call(pair_messages(q, llm, h), **pair_kw)]
            meta += [("pair", {**base, "order": HUMAN_FIRST}), ("pair", {**base, "order": LLM_FIRST})]
    return calls, meta


def parse_answers(
    meta: Sequence[tuple[str, dict[str, Any]]], answers: Sequence[Any], human: str, prompt: str = "umbrela", calls: Sequence[Any] | None = None
) -> tuple[Any, Any]:
    """The grades table and the pairs table from the answers (:data:`GRADE_COLUMNS`, :data:`PAIR_COLUMNS`).

    ``calls``: the calls answered (aligned with ``answers``): their prompts are what an answer
    must not be read from (an echo of the prompt is unparseable); ``None``: no echo is looked for.
    An expected grade is computed only for an answer whose grade was parsed
    (:func:`~sourcebias.judges.prompts.expected_for`).
    """
    import pandas as pd

    grades, pairs = [], []
    for i, ((kind, row), ans) in enumerate(zip(meta, answers)):
        text = ans.text or ""
        echo_of = [content for _role, content in calls[i].messages] if calls is not None else None
        if kind == "pair":
            pick = parse_pick(text, echo_of)
            first, second = (human, row["llm_source"]) if row["order"] == HUMAN_FIRST else (row["llm_source"], human)
            picked = "" if pick is None else (first if pick == "A" else second)
            pairs.append({**row, "pick": pick or "", "picked": picked, "finish_reason": ans.finish_reason or "", "answer": text})
            continue
        grade, offset = parse_grade(text, prompt, echo_of)
        exp, mass, note = expected_for(ans, offset, prompt)
        mode = "grade" if kind == "grade" else "disclosure"
        value = float("nan") if grade is None else float(grade)
        grades.append(
            {
                **row,
                "mode": mode,
                "grade": value,
                "expected": exp,
                "grade_mass": mass,
                "expected_note": note,
                "finish_reason": ans.finish_reason or "",
                "answer": text,
            }
        )
    return pd.DataFrame(grades, columns=list(GRADE_COLUMNS)), pd.DataFrame(pairs, columns=list(PAIR_COLUMNS))


def ask(client: Any, dataset: Any, items: Any, settings: JudgeSettings) -> tuple[Any, Any, dict[str, int]]:
    """Send every call (one batch; the client caches and reports progress) and parse the answers.

    Returns:
        ``(grades, pairs, {"calls": n, "cached": answered from the cache})``.
    """
    from sourcebias.core import progress

    calls, meta = build_calls(dataset, items, settings)
    with progress.task("judging", total=len(calls), unit="calls") as bar:
        answers = client.answer(calls, task=bar) if calls else []
    grades, pairs = parse_answers(meta, answers, dataset.human_source, settings.prompt, calls)
    return grades, pairs, {"calls": len(calls), "cached": sum(1 for a in answers if getattr(a, "cached", False))}
