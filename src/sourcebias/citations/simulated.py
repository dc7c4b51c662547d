"""A generator with a known citation bias, for :class:`~sourcebias.llmcalls.simulated.SimulatedServer`:
the known-truth check of the citation estimators through the same HTTP path as a real server.

:class:`CitingResponder` reads the passages of each prompt back through the prompt plug-in
(:meth:`sourcebias.llmcalls.prompts.Prompt.read`: the file that wrote the call, not wording wired
in here) and cites each one independently with probability σ(a_position + β·[LLM-written]): a position
effect ``a`` and a source effect ``β`` (log odds) of known size, and no rank effect. Its
randomness is seeded by the call's seed and the prompt, so a call answers the same every time
(the answer store and a rerun agree) while studies run with different seeds are independent.

:func:`true_effects` gives, for the contexts a study actually showed, the value each estimator
targets: β for the logit's log odds ratio; the mean over shown passages of σ(a_pos + β) − σ(a_pos)
for its average marginal effect; and the mean over twin pairs of σ(a_pos(twin) + β) −
σ(a_pos(original)) for the twin difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.citations.prompt import cite_prompt
from sourcebias.data.corpus import hash64

NOTHING = "The search results do not answer the question."


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class CitingResponder:
    """``responder(messages, params) -> (text, None)`` citing LLM passages with log odds ``beta``
    more than human ones; ``position_logits[j - 1]`` is the log odds at context position j;
    ``llm`` maps each passage, ``(title, text)`` as ``prompt`` shows them, to whether it is
    LLM-written; ``prompt`` (a name or a file) is the citation prompt the study sends."""

    llm: Mapping[tuple[str, str], bool]
    position_logits: Sequence[float]
    beta: float
    prompt: str = "alce"

    def probability(self, position: int, is_llm: bool) -> float:
        return _sigmoid(self.position_logits[position - 1] + self.beta * is_llm)

    def __call__(self, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        user = messages[-1]["content"]
        rng = np.random.default_rng([int(params.get("seed") or 0) & 0xFFFFFFFF, hash64(user) & 0xFFFFFFFF])
        shown = (cite_prompt(self.prompt).read(messages) or {}).get("passages", [])
        cited = [p["number"] for p in shown if rng.random() < self.probability(p["number"], self.llm[p["title"], p["text"]])]
        return (" ".join(f"Statement {i} [{n}]." for i, n in enumerate(cited, start=1)) or NOTHING), None


def responder_for(corpus: Any, human: str, position_logits: Sequence[float], beta: float, prompt: str = "alce") -> CitingResponder:
    """A :class:`CitingResponder` over the documents of ``corpus`` (LLM-written: any source but
    ``human``), for the citation prompt ``prompt``."""
    shown = cite_prompt(prompt)
    llm = {(shown.shown("title", d.title), shown.shown("text", d.text)): d.source != human for d in corpus}
    return CitingResponder(llm, tuple(position_logits), beta, prompt)


def true_effects(responder: CitingResponder, passages: Any, human: str) -> dict[str, float]:
    """What each estimator targets for the contexts in ``passages`` (a study's passage table)."""
    pos = passages["position"].to_numpy()
    a = np.asarray(responder.position_logits)[pos - 1]
    ame = float(np.mean(1 / (1 + np.exp(-(a + responder.beta))) - 1 / (1 + np.exp(-a))))
    keys = ["query_id", "order", "doc_id"]
    both = passages[passages["source"] != human].merge(passages[passages["source"] == human], on=keys, suffixes=("_llm", "_human"))
    twins = [responder.probability(int(pl), True) - responder.probability(int(ph), False) for pl, ph in zip(both["position_llm"], both["position_human"])]
    return {"log_odds": responder.beta, "ame": ame, "twins": float(np.mean(twins)) if twins else float("nan")}
