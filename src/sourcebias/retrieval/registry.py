"""Build retrievers and pipelines from specifications, as used on the command line.

``build_retriever("bm25>>cut:20>>lm:smollm2", device="cpu")``; the grammar, the option
precedence and where kinds come from are described in :mod:`sourcebias.retrieval.specs`.
``sourcebias retrievers`` lists every kind (:func:`available_retrievers`).
"""

from __future__ import annotations

from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.base import Pipeline, Retriever, Stage
from sourcebias.retrieval.specs import get_kind, kinds, resolve_params, split_stage

#: command-wide options a kind may fall back to (``--device``, ``--batch-size``, ...)
COMMAND_OPTIONS = ("device", "batch_size", "max_length", "cache_dir", "rerank_depth")


def build_stage(text: str, **options: Any) -> Stage:
    """One run-to-run stage, e.g. ``"ce:ms-marco-MiniLM-L-6-v2,depth=20"`` or ``"cut:20"``.

    Args:
        text: The stage's specification.
        **options: The command-wide settings (:data:`COMMAND_OPTIONS`); the stage's own options win.

    Returns:
        The :class:`~sourcebias.retrieval.base.Stage`.

    Raises:
        ConfigError: An unknown stage kind (or a first stage's), or an option it does not take.
    """
    kind, arg = split_stage(text)
    spec = get_kind(kind)
    if spec is None or spec.role != "stage":
        hint = f" ('{kind}' is a first stage; a stage follows one, e.g. bm25>>{kind})" if spec is not None else ""
        raise ConfigError(f"unknown stage '{kind}'{hint}; stages: {', '.join(kinds('stage'))}")
    stage: Stage = spec.factory(resolve_params(spec, arg, options), text.strip())
    return stage


def build_retriever(spec_text: str, **options: Any) -> Retriever:
    """A retriever or pipeline from a specification, as ``--retriever`` takes it.

    E.g. ``"bm25"``, ``"bm25:k1=0.9"`` or ``"bm25>>ce:cross-encoder/ms-marco-MiniLM-L-6-v2"``; the
    grammar, the option precedence and where kinds come from are described in
    :mod:`sourcebias.retrieval.specs`.

    Args:
        spec_text: The specification: a first stage, then ``>>``-separated stages.
        **options: The command-wide settings (:data:`COMMAND_OPTIONS`); a stage's own options win.

    Returns:
        The :class:`~sourcebias.retrieval.base.Retriever` (a :class:`~sourcebias.retrieval.base.Pipeline`
        when stages follow).

    Raises:
        ConfigError: An unknown command-wide option, an unknown kind (or a stage first), or an option
            a kind does not take.
    """
    unknown = set(options) - set(COMMAND_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(sorted(unknown))}; known: {', '.join(COMMAND_OPTIONS)}")
    stages = spec_text.split(">>")
    kind, arg = split_stage(stages[0])
    spec = get_kind(kind)
    # A stage kind whose factory is marked ``ranks_alone`` (pt:, a whole PyTerrier pipeline) may start one.
    if spec is None or (spec.role != "first" and not getattr(spec.factory, "ranks_alone", False)):
        hint = f" ('{kind}' is a stage: put a first stage before it, e.g. bm25>>{stages[0].strip()})" if spec is not None else ""
        raise ConfigError(f"unknown retriever '{kind}'{hint}; available: {', '.join(kinds('first'))}")
    retriever: Retriever = spec.factory(resolve_params(spec, arg, options), stages[0].strip())
    if len(stages) > 1:
        retriever = Pipeline(retriever, [build_stage(s, **options) for s in stages[1:]])
    return retriever


def available_retrievers() -> dict[str, dict[str, str]]:
    """Every registered kind with its help line, for ``sourcebias retrievers``.

    Returns:
        ``{"first_stage": {kind: help}, "stages": {kind: help}}``.
    """
    return {"first_stage": {k: v.help for k, v in kinds("first").items()}, "stages": {k: v.help for k, v in kinds("stage").items()}}
