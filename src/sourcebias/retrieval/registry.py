"""Build retrievers and pipelines from specifications, as used on the command line.

``build_retriever("bm25>>cut:20>>lm:smollm2", device="cpu")``; the grammar, the option
precedence and where kinds come from are described in :mod:`sourcebias.retrieval.specs`.
``sourcebias retrievers`` lists every kind (:func:`available_retrievers`).
"""

from __future__ import annotations

import re
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.base import Pipeline, Retriever, Stage
from sourcebias.retrieval.specs import get_kind, kinds, resolve_params, split_stage

#: command-wide options a kind may fall back to (``--device``, ``--batch-size``, ...)
COMMAND_OPTIONS = ("device", "batch_size", "max_length", "cache_dir", "rerank_depth")


#: ``LABEL=SPEC``: a label is a word before the first ``=`` (a specification's options follow a
#: kind and ``:`` or ``,``, so a word right before ``=`` cannot start one)
_LABEL = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]*)\s*=\s*(\S.*)$", re.S)
#: a server's address in a specification (``openai:MODEL@http://HOST:PORT/v1``, several ``@URL`` s)
_URL = re.compile(r"@https?://[^,>@\s]*")


def split_label(text: str) -> tuple[str | None, str]:
    """``LABEL=SPEC`` -> ``(LABEL, SPEC)``; a plain specification -> ``(None, SPEC)``.

    The label names the system in tables, notes and file names (``-r "rg=bm25>>rankgpt:..."``,
    as ``--run NAME=FILE`` names a run); the specification is recorded in full.
    """
    m = _LABEL.match(text)
    return (m.group(1), m.group(2).strip()) if m else (None, text.strip())


def short_name(spec: str) -> str:
    """A specification without its servers' addresses.

    The name a system gets when it has no label (``bm25>>rankgpt:openai:qwen@http://127.0.0.1:8088/v1,depth=10``
    -> ``bm25>>rankgpt:openai:qwen,depth=10``); the full specification goes into the notes and the
    manifest.
    """
    return _URL.sub("", spec.strip())


def system_name(text: str) -> str:
    """The name of the system ``text`` (``LABEL=SPEC`` or ``SPEC``) builds.

    Its label, or its :func:`short_name`.
    """
    label, spec = split_label(text)
    return label or short_name(spec)


def build_stage(text: str, **options: Any) -> Stage:
    """One run-to-run stage, e.g. ``"ce:ms-marco-MiniLM-L-6-v2,depth=20"`` or ``"cut:20"``.

    Args:
        text: The stage's specification.
        **options: The command-wide settings (:data:`COMMAND_OPTIONS`); the stage's own options win.

    Returns:
        The :class:`~sourcebias.retrieval.base.Stage`.

    Raises:
        ConfigError: An unknown stage kind (or a first stage's), an option it does not take, or its
            optional extra is not installed.
    """
    spec, params = _parse_stage(text, options)
    stage: Stage = spec.factory(params, text.strip())
    return stage


def _parse_stage(text: str, options: Any) -> tuple[Any, dict[str, Any]]:
    kind, arg = split_stage(text)
    spec = get_kind(kind)
    if spec is None or spec.role != "stage":
        hint = f" ('{kind}' is a first stage; a stage follows one, e.g. bm25>>{kind})" if spec is not None else ""
        raise ConfigError(f"unknown stage '{kind}'{hint}; stages: {', '.join(kinds('stage'))}{_did_you_mean(kind, kinds('stage'))}")
    params = resolve_params(spec, arg, options)
    _require_extras(spec, params, text)
    return spec, params


def _parse_first(text: str, options: Any) -> tuple[Any, dict[str, Any]]:
    unknown = set(options) - set(COMMAND_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(sorted(unknown))}; known: {', '.join(COMMAND_OPTIONS)}")
    kind, arg = split_stage(text)
    spec = get_kind(kind)
    # A stage kind whose factory is marked ``ranks_alone`` (pt:, a whole PyTerrier pipeline) may start one.
    if spec is None or (spec.role != "first" and not getattr(spec.factory, "ranks_alone", False)):
        hint = f" ('{kind}' is a stage: put a first stage before it, e.g. bm25>>{text.strip()})" if spec is not None else ""
        raise ConfigError(f"unknown retriever '{kind}'{hint}; available: {', '.join(kinds('first'))}{_did_you_mean(kind, kinds('first'))}")
    params = resolve_params(spec, arg, options)
    _require_extras(spec, params, text)
    return spec, params


def check_retriever(spec_text: str, **options: Any) -> None:
    """Check a specification as :func:`build_retriever` does, building nothing.

    Args:
        spec_text: The specification.
        **options: The command-wide settings.

    Raises:
        ConfigError: What :func:`build_retriever` would raise before making a model: an unknown kind
            (with the nearest known names), an option a kind does not take, a missing extra.
    """
    first, *rest = spec_text.split(">>")
    _parse_first(first, options)
    for text in rest:
        _parse_stage(text, options)


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
        ConfigError: An unknown command-wide option, an unknown kind (or a stage first), an option
            a kind does not take, or a kind's optional extra (``pip install 'sourcebias[neural]'``)
            that is not installed.
    """
    check_retriever(spec_text, **options)  # every stage checked (options, extras) before any model is made
    stages = spec_text.split(">>")
    spec, params = _parse_first(stages[0], options)
    retriever: Retriever = spec.factory(params, stages[0].strip())
    if len(stages) > 1:
        retriever = Pipeline(retriever, [build_stage(s, **options) for s in stages[1:]])
    return retriever


#: ``backend=`` values of dense kinds and the modules of the ``fast`` extra each needs
_BACKEND_MODULES = {"onnx": ("onnx", "onnxruntime"), "openvino": ("openvino",)}


def _require_extras(spec: Any, params: dict[str, Any], text: str) -> None:
    """Refuse a kind whose optional extra (or whose ``backend=``'s) is not installed, naming the extra."""
    from sourcebias.core.extras import require

    what = f"--retriever {text.strip()}"
    if spec.extra is not None:
        require(spec.extra, what, spec.extra_modules)
    for name, param in spec.params.items():
        if param.extra_of is not None and params.get(name) is not None:
            extra, modules = param.extra_of(params[name], text.strip())
            require(extra, what, modules)
    backend = params.get("backend")
    if isinstance(backend, str) and backend in _BACKEND_MODULES:
        require("fast", what, _BACKEND_MODULES[backend])
    index = params.get("index")
    if isinstance(index, str) and index.startswith("faiss"):
        require("neural", what, ("faiss",))


def _did_you_mean(name: str, known: Any) -> str:
    """``; did you mean 'bm25'?`` for a near miss (difflib), or nothing."""
    import difflib

    close = difflib.get_close_matches(name.lower(), list(known), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def available_retrievers() -> dict[str, dict[str, str]]:
    """Every registered kind with its help line, for ``sourcebias retrievers``.

    Returns:
        ``{"first_stage": {kind: help}, "stages": {kind: help}}``.
    """
    return {"first_stage": {k: v.help for k, v in kinds("first").items()}, "stages": {k: v.help for k, v in kinds("stage").items()}}
