"""The judge's calls and answers: every item becomes one or more :class:`~sourcebias.llmcalls.Call` s
(pointwise grade, disclosed-author grades, pairwise in both orders), all sent in one batch through
the client (cached: a rerun sends only what is not answered yet), and every answer parsed into the
tables the analysis reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sourcebias.judges.items import passage
from sourcebias.judges.prompts import DISCLOSED, grade_prompt, pair_prompt
from sourcebias.llmcalls.grades import GRADE_CHOICES, read_grade

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
    """How the judge is asked (every field enters the manifest; the call fields the cache keys).

    ``prompt``: the grade modes' prompt, ``pair_prompt`` the pairwise mode's: a registered name
    (``umbrela``, ``digit``; ``pairwise``) or a prompt file (:mod:`sourcebias.llmcalls.prompts`),
    checked here for the modes asked.
    """

    modes: tuple[str, ...] = ("grade",)
    prompt: str = "umbrela"
    max_tokens: int = 16
    top_logprobs: int = 5
    seed: int = 0
    pair_prompt: str = "pairwise"

    def __post_init__(self) -> None:
        from sourcebias.core.errors import ConfigError

        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise ConfigError(f"unknown judge mode(s) {', '.join(bad) or '(none given)'}; known: {', '.join(MODES)}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")
        self.prompts()

    def describe(self) -> dict[str, Any]:
        """The settings as ``judge.json`` records them (the prompts by name; their files in ``prompts``)."""
        grade, pair = self.prompts()
        names = {"prompt": grade.name if grade is not None else None, "pair_prompt": pair.name if pair is not None else None}
        return {"modes": list(self.modes), **names, "max_tokens": self.max_tokens, "top_logprobs": self.top_logprobs, "seed": self.seed}

    def prompts(self) -> tuple[Any, Any]:
        """``(grade prompt, pairwise prompt)`` of the modes asked (``None`` for a mode not asked), checked."""
        grading = "grade" in self.modes or "disclosure" in self.modes
        grade = grade_prompt(self.prompt, disclosure="disclosure" in self.modes) if grading else None
        return grade, pair_prompt(self.pair_prompt) if "pairwise" in self.modes else None


#: the modes: a 0-3 grade per copy; a grade under each disclosed author; which copy of a pair is more relevant
MODES = ("grade", "disclosure", "pairwise")
#: top log-probabilities asked, at least, where a prompt's grade is read from the first token (a
#: server gives the grades' probabilities only among them)
FIRST_TOKEN_TOP_K = 10


def build_calls(dataset: Any, items: Any, settings: JudgeSettings) -> tuple[list[Any], list[tuple[str, dict[str, Any]]]]:
    """The calls of every mode, and for each what it is (``("grade" | "disclosed" | "pair", row)``)."""
    from sourcebias.llmcalls import Call

    corpus, human = dataset.corpus, dataset.human_source
    grader, picker = settings.prompts()
    calls: list[Any] = []
    meta: list[tuple[str, dict[str, Any]]] = []
    grade_kw: dict[str, Any] = {"max_tokens": settings.max_tokens, "temperature": 0.0, "seed": settings.seed, "top_logprobs": settings.top_logprobs}
    if grader is not None and grader.probabilities == "first-token":  # the grade is the first token: its distribution over 0-3 directly
        grade_kw.update(choices=GRADE_CHOICES, top_logprobs=max(settings.top_logprobs, FIRST_TOKEN_TOP_K))
    for row in items.itertuples(index=False):
        q, text = dataset.queries[row.query_id], passage(corpus, row.doc_id, row.source)
        base = {"query_id": row.query_id, "doc_id": row.doc_id, "source": row.source, "origin": row.origin, "assessor_grade": row.assessor_grade}
        labels = (("grade", None),) * ("grade" in settings.modes) + tuple(("disclosed", d) for d in DISCLOSED) * ("disclosure" in settings.modes)
        for kind, label in labels:
            fields = {"query": q, "passage": text, "disclosure": grader.disclosures[label] if label else ""}
            calls.append(Call(grader.render(fields), **grade_kw))
            meta.append((kind, {**base, "label": label or ""}))
    if picker is not None:
        pair_kw: dict[str, Any] = {"max_tokens": 4, "temperature": 0.0, "seed": settings.seed, "top_logprobs": 0}
        twins = items[items["source"] != human]
        for row in twins.itertuples(index=False):
            q = dataset.queries[row.query_id]
            h, llm = passage(corpus, row.doc_id, human), passage(corpus, row.doc_id, row.source)
            base = {"query_id": row.query_id, "doc_id": row.doc_id, "llm_source": row.source, "origin": row.origin}
            calls += [Call(picker.render({"query": q, "a": h, "b": llm}), **pair_kw), Call(picker.render({"query": q, "a": llm, "b": h}), **pair_kw)]
            meta += [("pair", {**base, "order": HUMAN_FIRST}), ("pair", {**base, "order": LLM_FIRST})]
    return calls, meta


def parse_answers(
    meta: Sequence[tuple[str, dict[str, Any]]],
    answers: Sequence[Any],
    human: str,
    prompt: Any = "umbrela",
    calls: Sequence[Any] | None = None,
    pair: Any = "pairwise",
) -> tuple[Any, Any]:
    """The grades table and the pairs table from the answers (:data:`GRADE_COLUMNS`, :data:`PAIR_COLUMNS`).

    ``prompt``, ``pair``: the grade and pairwise prompts (names, files or prompts) whose parsers
    read the answers. ``calls``: the calls answered (aligned with ``answers``): their messages are
    what an answer must not be read from (an echo of the prompt is unparseable); ``None``: the
    prompts' own words. The grade and its expected grade: :func:`sourcebias.llmcalls.grades.read_grade`.
    """
    import pandas as pd

    grader = grade_prompt(prompt) if any(kind != "pair" for kind, _ in meta) else None
    picker = pair_prompt(pair) if any(kind == "pair" for kind, _ in meta) else None
    grades, pairs = [], []
    for i, ((kind, row), ans) in enumerate(zip(meta, answers)):
        text = ans.text or ""
        messages = calls[i].messages if calls is not None else None
        done = {"finish_reason": ans.finish_reason or "", "answer": text}
        if kind == "pair":
            pick = picker.parse(text, messages=messages)  # type: ignore[union-attr]  # a pair's prompt is loaded above
            first, second = (human, row["llm_source"]) if row["order"] == HUMAN_FIRST else (row["llm_source"], human)
            picked = "" if pick is None else (first if pick == "A" else second)
            pairs.append({**row, "pick": pick or "", "picked": picked, **done})
            continue
        read = read_grade(grader, ans, messages)
        value = float("nan") if read.grade is None else float(read.grade)
        e = read.expected
        grades.append(
            {
                **row,
                "mode": "grade" if kind == "grade" else "disclosure",
                "grade": value,
                "expected": e.value,
                "grade_mass": e.mass,
                "expected_note": e.note,
                **done,
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
    grades, pairs = parse_answers(meta, answers, dataset.human_source, settings.prompt, calls, settings.pair_prompt)
    return grades, pairs, {"calls": len(calls), "cached": sum(1 for a in answers if getattr(a, "cached", False))}
