"""A generator with a known citation bias, for :class:`~sourcebias.llmcalls.simulated.SimulatedServer`:
the known-truth check of the citation estimators through the same HTTP path as a real server.

:class:`CitingResponder` reads the passages of each prompt back through the prompt plug-in
(:meth:`sourcebias.llmcalls.prompts.Prompt.read`: the file that wrote the call, not wording wired
in here) and cites each one independently with probability σ(a_position + β·[LLM-written]): a position
effect ``a`` and a source effect ``β`` (log odds) of known size, and no rank effect. Its
randomness is seeded by the call's seed and the prompt, so a call answers the same every time
(the answer store and a rerun agree) while studies run with different seeds are independent.

:func:`true_effects` gives the value each estimator targets: β for the logit's log odds ratio;
the mean over the shown passages of σ(a_pos + β) − σ(a_pos) for its average marginal effect (the
logit models position, so its AME is defined at the positions shown); and, for the twin
difference, the source effect **at balanced positions**, (1/n) Σ_j σ(a_j + β) − σ(a_j) over the n
positions of each twin pair's context, averaged over the pairs of the balanced queries the
estimator uses. That truth does not depend on where the copies happened to stand, so a twin
estimate that absorbed a position effect (an LLM copy always shown above its original) misses it.
:func:`true_rates` gives each rate cell's truth, the mean of σ(a_pos + β·[LLM]) over its rows.
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
    """What each estimator targets for the study whose passage table is ``passages`` (module
    docstring): ``log_odds``, ``ame`` and ``twins`` (NaN when no balanced query shows a twin pair)."""
    from sourcebias.citations.estimate import balanced_queries

    pos = passages["position"].to_numpy()
    a = np.asarray(responder.position_logits)[pos - 1]
    ame = float(np.mean(1 / (1 + np.exp(-(a + responder.beta))) - 1 / (1 + np.exp(-a))))
    keys = ["query_id", "order", "doc_id"]
    both = passages[passages["source"] != human].merge(passages[passages["source"] == human], on=keys, suffixes=("_llm", "_human"))
    both = both[both["query_id"].astype(str).isin(balanced_queries(passages))]
    size = passages.groupby(["query_id", "order"]).size()
    effect = {n: float(np.mean([responder.probability(j, True) - responder.probability(j, False) for j in range(1, n + 1)])) for n in set(size.tolist())}
    twins = [effect[int(size[(q, o)])] for q, o in zip(both["query_id"], both["order"])]
    return {"log_odds": responder.beta, "ame": ame, "twins": float(np.mean(twins)) if twins else float("nan")}


def true_rates(responder: CitingResponder, passages: Any, human: str, by: Sequence[str]) -> dict[tuple[Any, ...], float]:
    """Each rate cell's truth: the mean over its rows of σ(a_position + β·[LLM-written]).

    Args:
        responder: The simulated generator.
        passages: The study's passage table.
        human: The human source.
        by: The cell's columns (``["source", "rank"]``, ``["source", "position"]``).

    Returns:
        ``{cell key: truth}``, keys as :func:`~sourcebias.citations.estimate.rate_table` orders them.
    """
    p = [responder.probability(int(j), s != human) for j, s in zip(passages["position"], passages["source"])]
    cells = passages.assign(truth=p).groupby(list(by), sort=True)["truth"].mean()
    return {k if isinstance(k, tuple) else (k,): float(v) for k, v in cells.items()}


def twins_above_originals(dataset: Any, run: Any) -> Any:
    """A ranking whose top 5 put each LLM twin right above its original: issue 38's case of a
    design where a difference between the copies' citation rates is all position (two pairs, then
    a third twin; queries whose ranking holds fewer than three paired documents are left out).

    Args:
        dataset: The dataset (its corpus, human and LLM sources).
        run: A ranking of its mixed corpus (the documents to take, best first).

    Returns:
        The :class:`~sourcebias.retrieval.run.Run` named ``twins-above``.
    """
    from sourcebias.retrieval.run import Run

    corpus, llm, human = dataset.corpus, dataset.other_sources[0], dataset.human_source
    positions, scores = {}, {}
    for q in run.query_ids:
        docs = list(dict.fromkeys(corpus.doc_ids[p] for p in run.positions[q].tolist()))
        paired = [d for d in docs if corpus.position(d, llm) is not None and corpus.position(d, human) is not None][:3]
        if len(paired) == 3:
            order = [(paired[0], llm), (paired[0], human), (paired[1], llm), (paired[1], human), (paired[2], llm)]
            positions[q] = np.array([corpus.position(d, s) for d, s in order], dtype=np.int64)
            scores[q] = np.arange(5, 0, -1, dtype=np.float64)
    return Run(corpus, "twins-above", positions, scores, {})
