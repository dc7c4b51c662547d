"""monoT5 re-ranking (``monot5:``): log P(``true``) for ``Query: q Document: d Relevant:``."""

from __future__ import annotations

from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.hub import resolve_device, resolve_model
from sourcebias.retrieval.rerankers.base import COMMON_PARAMS, PairwiseReranker, score_longest_first, truncate_to_tokens
from sourcebias.retrieval.specs import Param, register_stage

#: ``monot5:`` presets -> Hugging Face names
MONOT5_PRESETS = {
    "base": "castorini/monot5-base-msmarco",
    "monot5-base-msmarco": "castorini/monot5-base-msmarco",
    "base-10k": "castorini/monot5-base-msmarco-10k",
}
#: tokenizer used by pygaggle (and hence the papers) for castorini's monoT5 checkpoints, which
#: are fine-tuned from t5-base and do not all ship tokenizer files
T5_BASE_TOKENIZER = "google-t5/t5-base"


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
        texts = [self.input_text(q, d) for q, d in zip(queries, documents)]
        pick = torch.tensor([self._false_id, self._true_id], device=self.device)

        def score(idx: list[int]) -> np.ndarray:
            enc = self._tok([texts[i] for i in idx], padding=True, truncation=True, max_length=self.max_length, return_tensors="pt").to(self.device)
            dec = torch.full((len(idx), 1), self._start_id, dtype=torch.long, device=self.device)
            logits = self._model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], decoder_input_ids=dec).logits[:, 0, :]
            two = logits.index_select(1, pick).double()
            return torch.log_softmax(two, dim=-1)[:, 1].cpu().numpy()

        with torch.inference_mode():
            return score_longest_first([len(t) for t in texts], self.batch_size, score, task)

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


@register_stage(
    "monot5",
    params={**COMMON_PARAMS, "tokenizer": Param(str, "tokenizer name or path (default: the model's, else google-t5/t5-base)")},
    positional="model",
    help="monoT5, score = log P(true) over {false,true} for 'Query: q Document: d Relevant:'; "
    "monot5:base (castorini/monot5-base-msmarco) or monot5:NAME_OR_PATH[,tokenizer=T5_TOKENIZER]",
    offline="local folders and models in the Hugging Face cache (none ships offline)",
    extra="neural",
    extra_modules=("torch", "transformers"),
)
def _monot5(params: dict[str, Any], text: str) -> MonoT5Reranker:
    return MonoT5Reranker(params.pop("model"), name=text, **params)
