"""A judge of known bias, to serve through :class:`sourcebias.llmcalls.simulated.SimulatedServer`:
the known-truth harness of the judge's estimators (issue 33, section 4).

:class:`BiasedJudge` answers the judge's own prompts (:mod:`sourcebias.judges.prompts`) as a judge
whose biases are set by hand, so that each estimator can be checked to recover them through the
same HTTP path, client and cache as a real server:

* **grade**: every passage's base grade is 1; the LLM copy gets +1 with probability ``p_q``, drawn
  per query around ``delta`` (``p_q = delta + u_q``, ``u_q`` uniform in ``±spread``, so queries
  differ and the CI must be clustered); then each copy independently moves ±1 with probability
  ``noise / 2`` each. The expected paired difference (LLM − human) is exactly ``delta``.
* **disclosure**: told that an AI wrote the passage, the grade gets +1 with probability
  ``label_effect`` (before the noise): the label effect is ``label_effect``.
* **pairwise**: with the LLM copy shown first, the first passage is picked with probability
  ``1/2 + preference + position``; shown second, with ``1/2 − preference + position``: the source
  preference is ``preference`` and the position effect ``position``.
* **log-probabilities**: the grade token's top log-probabilities put ``confidence`` on the grade
  given and share the rest between its neighbours (so the expected grade is known too).

Which copy a passage is comes from the corpus the judge is built from (its text → its source),
never from an id. Every draw is seeded by the call's seed and the passage, so a study is
reproducible and a different seed is a different study.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

_FIELDS = re.compile(r"Query: (?P<query>.*?)\nPassage: (?P<passage>.*?)\n(?P<label>This passage was written by [^\n]*\n)?\nSplit this problem", re.DOTALL)
_PAIR = re.compile(r"Query: (?P<query>.*?)\n\nPassage A: (?P<a>.*?)\n\nPassage B: (?P<b>.*?)\n\nAnswer with one letter", re.DOTALL)


def _uniform(*parts: Any) -> float:
    """A uniform draw in [0, 1) from a digest of ``parts`` (reproducible, order-free across threads)."""
    h = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


@dataclass
class BiasedJudge:
    """The responder (``judge(messages, params) -> (text, top_logprobs)``); see the module docstring.

    Attributes:
        sources: ``{passage text: source}``, e.g. from :meth:`from_corpus`.
        human_source: The source of the originals.
    """

    sources: dict[str, str]
    human_source: str = "human"
    delta: float = 0.3
    spread: float = 0.1
    noise: float = 0.4
    label_effect: float = 0.0
    preference: float = 0.0
    position: float = 0.0
    confidence: float = 0.8
    calls: int = field(default=0, compare=False)

    @classmethod
    def from_corpus(cls, corpus: Any, human_source: str = "human", **kw: Any) -> BiasedJudge:
        """A judge that knows each passage's source from ``corpus`` (the text a judge reads)."""
        return cls({d.retrieval_text(): d.source for d in corpus}, human_source, **kw)

    def __call__(self, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, Any]:
        self.calls += 1
        prompt = messages[-1]["content"]
        seed = params.get("seed")
        pair = _PAIR.search(prompt)
        if pair:
            return self._pick(pair["query"], pair["a"], pair["b"], seed), None
        m = _FIELDS.search(prompt)
        if not m:
            return "I cannot tell.", None
        grade = self.grade(m["query"], m["passage"], "AI" in (m["label"] or ""), seed)
        return f"##final score: {grade}", self._logprobs(grade) if params.get("top_logprobs") else None

    def is_llm(self, passage: str) -> bool:
        src = self.sources.get(passage)
        if src is None:
            raise KeyError(f"passage not in the judge's corpus: {passage[:60]!r}")
        return src != self.human_source

    def grade(self, query: str, passage: str, ai_label: bool, seed: Any) -> int:
        """The grade given (module docstring)."""
        p_q = self.delta + self.spread * (2 * _uniform("q", seed, query) - 1)
        g = 1 + int(self.is_llm(passage) and _uniform("bump", seed, query, passage) < p_q)
        g += int(ai_label and _uniform("label", seed, query, passage) < self.label_effect)
        u = _uniform("noise", seed, query, passage, ai_label)
        g += -1 if u < self.noise / 2 else (1 if u < self.noise else 0)
        return max(0, min(3, g))

    def _pick(self, query: str, a: str, b: str, seed: Any) -> str:
        llm_first = self.is_llm(a)
        p_first = 0.5 + self.position + (self.preference if llm_first else -self.preference)
        return "A" if _uniform("pick", seed, query, a, b) < p_first else "B"

    def _logprobs(self, grade: int) -> list[dict[str, float]]:
        near = [g for g in (grade - 1, grade + 1) if 0 <= g <= 3]
        dist = {str(grade): self.confidence, **{str(g): (1 - self.confidence) / len(near) for g in near}}
        return [{"##final score:": 0.0}, {f" {g}": math.log(p) for g, p in dist.items()}]

    def expected(self, grade: int) -> float:
        """The expected grade its log-probabilities give for an answer ``grade``."""
        near = [g for g in (grade - 1, grade + 1) if 0 <= g <= 3]
        return self.confidence * grade + (1 - self.confidence) * sum(near) / len(near)
