"""Neural re-rankers, one module per model kind: cross-encoders (``ce:``), monoT5 (``monot5:``)
and causal-LM query likelihood (``lm:``). Each is a :class:`~sourcebias.retrieval.base.Stage`
built on :class:`~sourcebias.retrieval.rerankers.base.PairwiseReranker`; each module registers
its kind. Importing this package imports no model library."""

from sourcebias.retrieval.rerankers.base import DEFAULT_BATCH_SIZE, DEFAULT_DEPTH, DEFAULT_MAX_LENGTH, PairwiseReranker, truncate_to_tokens

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_DEPTH", "DEFAULT_MAX_LENGTH", "PairwiseReranker", "truncate_to_tokens"]


def __getattr__(name: str):
    # The concrete re-rankers, imported on use (each module imports its model library lazily too).
    from importlib import import_module

    where = {"CrossEncoderReranker": "cross_encoder", "MonoT5Reranker": "monot5", "CausalLMReranker": "causal_lm"}
    if name in where:
        return getattr(import_module(f"sourcebias.retrieval.rerankers.{where[name]}"), name)
    raise AttributeError(name)
