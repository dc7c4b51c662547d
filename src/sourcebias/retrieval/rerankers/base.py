"""The shared driver of pointwise re-rankers.

A re-ranker re-scores the top ``depth`` documents (100 by default, as in the papers) of the run
before it, one (query, document) pair at a time, and re-orders them with the project's tie rule
(:class:`~sourcebias.retrieval.ties.TieRule`). Documents below ``depth`` are dropped.

A re-ranker sees a document as ``title + " " + text`` (as BEIR's re-ranking does) and uses only
its first ``max_length`` tokens (512, as in the papers; see each class for what exactly counts).
Every distinct (query text, document text) pair is scored once per re-ranker object and
remembered: identical twins (a refusal kept as the human text) then get *exactly* the same
score, so their order is decided by the tie rule and not by float noise from batch padding, and
the sole-corpus settings of the protocol re-use the mixed setting's scores.

References
----------
* Dai et al., *Neural Retrievers are Biased Towards LLM-Generated Content*, KDD 2024 (re-ranking
  BM25's top 100 with MiniLM and monoT5).
* Dai et al., *Cocktail*, ACL Findings 2024 (CE and monoT5 re-rankers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus, join_title_text
from sourcebias.retrieval.base import Stage
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param
from sourcebias.retrieval.stages import append_stage_info
from sourcebias.retrieval.ties import TieRule

DEFAULT_DEPTH = 100
DEFAULT_MAX_LENGTH = 512
DEFAULT_BATCH_SIZE = 32

#: options every re-ranker kind takes; ``--rerank-depth``, ``--batch-size``, ``--max-length``
#: and ``--device`` are the command-wide fallbacks
COMMON_PARAMS = {
    "model": Param(str, "preset, Hugging Face name or local path", required=True),
    "depth": Param(int, "documents re-scored per query", default=DEFAULT_DEPTH, option="rerank_depth"),
    "batch_size": Param(int, "pairs per forward pass", default=DEFAULT_BATCH_SIZE, option="batch_size"),
    "max_length": Param(int, "tokens of the document used", default=DEFAULT_MAX_LENGTH, option="max_length"),
    "device": Param(str, "cpu, cuda, cuda:1", option="device"),
}


def preset_name(name: str, presets: Mapping[str, str]) -> tuple[str, str | None]:
    """``(model name or path, preset name or None)``; a preset is matched case-insensitively."""
    key = name.strip().lower()
    if key in presets:
        return presets[key], name.strip()
    return name.strip(), None


def score_longest_first(
    lengths: Sequence[int], batch_size: int, score_batch: Callable[[list[int]], np.ndarray], task: progress.TaskHandle | None = None
) -> np.ndarray:
    """Scores of ``len(lengths)`` inputs, computed in batches of ``batch_size``, longest first.

    Each batch then holds inputs of similar length (less padding); ``score_batch(idx)`` scores the
    inputs at positions ``idx``, and the scores land at those positions. ``task`` advances by
    each batch.
    """
    out = np.empty(len(lengths), dtype=np.float64)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        out[idx] = score_batch(idx)
        if task is not None:
            task.advance(len(idx))
    return out


def truncate_to_tokens(tokenizer: Any, text: str, n_tokens: int) -> tuple[str, bool]:
    """The prefix of ``text`` made of its first ``n_tokens`` tokens (no special tokens), and
    whether anything was cut.

    Cutting the *text* at the end offset of the last kept token (rather than cutting token ids)
    lets the caller then tokenize the whole prompt once, as the model's tokenizer would, which
    keeps the tokens at the seams (``Document:``, ``Relevant:``) what they are in training.
    Needs a fast tokenizer (offsets); otherwise the kept ids are decoded back to text.
    """
    if n_tokens <= 0:
        return "", bool(text)
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) <= n_tokens:
            return text, False
        return tokenizer.decode(ids[:n_tokens]), True
    offsets = enc["offset_mapping"]
    if len(offsets) <= n_tokens:
        return text, False
    return text[: offsets[n_tokens - 1][1]], True


class PairwiseReranker(Stage):
    """Pick the top ``depth`` of each query, score every new (query, document) pair with
    :meth:`score_pairs`, re-order with the tie rule.

    Parameters
    ----------
    model:
        A preset name, a Hugging Face name or a local path.
    depth:
        How many of the previous stage's documents to re-score per query (the papers: 100). The
        returned run holds only these, re-ordered.
    batch_size, max_length, device:
        Inference settings (``device=None``: CUDA when available, else CPU).
    name:
        Name in tables and file names (default ``KIND:MODEL``).
    memo:
        Remember every pair's score (keyed by the query and document *texts*) for the life of
        this object. Besides saving work across the protocol's settings, this is what makes
        identical texts score identically; turn it off only for very large runs.
    """

    kind = "pairwise"
    #: short description of the score, written to manifests
    score_definition = ""

    def __init__(
        self,
        model: str,
        *,
        depth: int = DEFAULT_DEPTH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = DEFAULT_MAX_LENGTH,
        device: str | None = None,
        name: str | None = None,
        memo: bool = True,
        presets: Mapping[str, str] | None = None,
    ):
        if depth < 1:
            raise ConfigError(f"re-ranking depth must be at least 1, got {depth}")
        if batch_size < 1:
            raise ConfigError(f"batch size must be at least 1, got {batch_size}")
        if max_length < 8:
            raise ConfigError(f"max length must be at least 8 tokens, got {max_length}")
        self.model_name, self.preset = preset_name(model, presets or {})
        self.depth = int(depth)
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        self.device_requested = device
        self.name = name or f"{self.kind}:{model}"
        self.memo = memo
        self._scores: dict[tuple[str, str], float] = {}
        self._loaded = False

    # -- subclasses ------------------------------------------------------------------------
    def load(self) -> None:
        """Load the model and tokenizer (called on first use)."""
        raise NotImplementedError

    def score_pairs(self, queries: Sequence[str], documents: Sequence[str], task: progress.TaskHandle | None = None) -> np.ndarray:
        """Scores (float64) of the pairs ``(queries[i], documents[i])``; higher is more relevant.

        ``task`` (optional) is advanced by the number of pairs scored, as they are.
        """
        raise NotImplementedError

    # -- driver ------------------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()
            self._loaded = True

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return self.depth

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        """Re-score the first ``self.depth`` documents of each query of ``run`` and re-order them.

        Requirements: every query of ``run`` has its text in ``queries``. Returns a run with at
        most ``depth`` documents per query, ordered by score (highest first) and, for equal
        scores, by the tie rule with ``seed``. ``run.info["stages"]`` gains an entry saying
        what was re-ranked.
        """
        t0 = time.perf_counter()
        corpus = run.corpus
        tops, keys = self._pairs(run, queries)
        memo = self._scores if self.memo else {}
        todo = self._score_new(keys, memo)
        n_pairs = sum(len(r) for r in keys.values())

        rule = TieRule(corpus, seed)
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for qid, top in tops.items():
            s = np.fromiter((memo[k] for k in keys[qid]), dtype=np.float64, count=len(top))
            order = rule.order(qid, s, top)
            positions[qid] = top[order]
            scores[qid] = s[order]

        info = append_stage_info(
            run,
            {
                "name": self.name,
                "input_run": run.name,
                "depth": self.depth,
                "queries": len(tops),
                "pairs": n_pairs,
                "pairs_scored": len(todo),
                "pairs_reused": n_pairs - len(todo),
                "seconds": round(time.perf_counter() - t0, 3),
            },
        )
        return Run(corpus, self.name, positions, scores, info)

    def _pairs(self, run: Run, queries: Mapping[str, str]) -> tuple[dict[str, np.ndarray], dict[str, list[tuple[str, str]]]]:
        """Per query, the first ``depth`` positions of ``run`` and their (query text, document
        text) pairs (each document's text built once)."""
        titles, texts = run.corpus.titles, run.corpus.texts
        doc_text: dict[int, str] = {}
        tops: dict[str, np.ndarray] = {}
        keys: dict[str, list[tuple[str, str]]] = {}
        for qid, pos in run.positions.items():
            if qid not in queries:
                raise ConfigError(f"query '{qid}' of run '{run.name}' has no text")
            top = np.asarray(pos[: self.depth], dtype=np.int64)
            tops[qid] = top
            qtext = queries[qid]
            row = []
            for i in top.tolist():
                if i not in doc_text:
                    doc_text[i] = join_title_text(titles[i], texts[i])
                row.append((qtext, doc_text[i]))
            keys[qid] = row
        return tops, keys

    def _score_new(self, keys: dict[str, list[tuple[str, str]]], memo: dict) -> list[tuple[str, str]]:
        """Score the distinct pairs ``memo`` lacks (loading the model only then) into ``memo``;
        returns them."""
        todo = list(dict.fromkeys(k for row in keys.values() for k in row if k not in memo))
        if todo:
            self._ensure_loaded()
            with progress.task(f"{self.name}: re-ranking", total=len(todo), unit="pairs") as t:
                values = self.score_pairs([q for q, _ in todo], [d for _, d in todo], t)
            if len(values) != len(todo):
                raise RuntimeError(f"{type(self).__name__}.score_pairs returned {len(values)} scores for {len(todo)} pairs")
            memo.update(zip(todo, np.asarray(values, dtype=np.float64).tolist()))
        return todo

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": type(self).__name__,
            "model": self.model_name,
            "preset": self.preset,
            "depth": self.depth,
            "max_length": self.max_length,
            "batch_size": self.batch_size,
            "device": self.device_requested,
            "document": "title + ' ' + text",
            "score": self.score_definition,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model_name!r}, depth={self.depth})"
