"""Cross-encoder re-ranking (``ce:``) on sentence-transformers' ``CrossEncoder``."""

from __future__ import annotations

from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.hub import resolve_device, resolve_model
from sourcebias.retrieval.rerankers.base import COMMON_PARAMS, PairwiseReranker, score_longest_first
from sourcebias.retrieval.specs import Param, register_stage

#: ``ce:`` presets -> Hugging Face names
CE_PRESETS = {
    "ms-marco-minilm-l-6-v2": "cross-encoder/ms-marco-MiniLM-L-6-v2",
    "minilm": "cross-encoder/ms-marco-MiniLM-L-6-v2",
}


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

        bs = self.batch_size

        def score(idx: list[int]) -> np.ndarray:
            pairs = [(queries[i], documents[i]) for i in idx]
            return self._model.predict(pairs, batch_size=bs, show_progress_bar=False, convert_to_numpy=True).astype(np.float64).reshape(-1)

        with torch.inference_mode():
            return score_longest_first([len(q) + len(d) for q, d in zip(queries, documents)], bs, score, task)

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update(
            {"library": "sentence-transformers CrossEncoder", "input": "[CLS] query [SEP] document [SEP]", "truncation": "longest_first (pair) to max_length"}
        )
        return cfg


@register_stage(
    "ce",
    params={
        **COMMON_PARAMS,
        "activation": Param(str, "identity (logit) or sigmoid (the papers' probabilities)", default="identity", choices=("identity", "sigmoid")),
    },
    positional="model",
    help="cross-encoder (sentence-transformers), score = relevance logit; ce:ms-marco-MiniLM-L-6-v2 "
    "(cross-encoder/ms-marco-MiniLM-L-6-v2) or ce:NAME_OR_PATH[,depth=N,activation=sigmoid]",
    offline="local folders and models in the Hugging Face cache (none ships offline)",
    extra="neural",
)
def _ce(params: dict[str, Any], text: str) -> CrossEncoderReranker:
    return CrossEncoderReranker(params.pop("model"), name=text, **params)
