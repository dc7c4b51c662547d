"""What the LLM re-rankers (``llm-yesno:``, ``rankgpt:``) share: their options, the client they
open (:mod:`sourcebias.llmcalls`: a local model or OpenAI-compatible servers, every answer
cached), how a passage is cut, and the regression that separates the effect of a document's
position in the prompt from the effect of its source.

Passages are cut by *words*, not tokens: a server gives no tokenizer, and the same cut must
reach a local model and a server (RankGPT cuts passages to their first 300 words the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sourcebias.retrieval.specs import Param

DEFAULT_WORDS = 300


def model_extra(spec: str, stage: str) -> tuple[str, tuple[str, ...]]:
    """The extra a stage's model spec needs (a malformed spec is refused here, naming the stage)."""
    from sourcebias.llmcalls.spec import parse_model_spec, required_extra

    return required_extra(parse_model_spec(spec, what=stage))


#: options of every LLM re-ranker; the command-wide ``--rerank-depth``, ``--device``,
#: ``--cache-dir`` / ``--no-cache`` apply when a stage does not set them
LLM_PARAMS = {
    "model": Param(str, "smollm2, gemma3, a GGUF/folder/HF name, or openai:MODEL@http://HOST:PORT/v1", required=True, extra_of=model_extra),
    "depth": Param(int, "documents re-ranked per query", default=100, option="rerank_depth"),
    "words": Param(int, "words of each passage shown to the model", default=DEFAULT_WORDS),
    "concurrency": Param(int, "requests in flight against servers (default 4 per server)"),
    "timeout": Param(float, "seconds a server request may take, waiting included (default 300; raise it for long prompts on a one-request-at-a-time server)"),
    "device": Param(str, "cpu, cuda (local models)", option="device"),
    "cache_dir": Param(str, "answer store root (default: the sourcebias cache)", option="cache_dir"),
    "cache": Param(bool, "keep every answer on disk (reruns send only what is missing)", default=True, option="cache"),
}


def cut_words(text: str, words: int) -> str:
    """The first ``words`` words of ``text`` (white space normalised)."""
    return " ".join(text.split()[:words])


def open_llm(params: dict[str, Any], what: str = "model=") -> Any:
    """The :mod:`sourcebias.llmcalls` client a stage's options name (``what``: the stage's spec,
    named in errors)."""
    from sourcebias.llmcalls import open_client

    cache_dir = params.get("cache_dir")
    return open_client(
        params["model"],
        cache_dir=cache_dir if cache_dir not in (None, False) else None,
        cache=bool(params.get("cache", True)) and cache_dir is not False,
        concurrency=params.get("concurrency"),
        device=params.get("device"),
        what=what,
        timeout=params.get("timeout"),
    )


def position_source_fit(records: Sequence[dict[str, Any]], reference: str, *, level: float = 0.95) -> dict[str, Any]:
    """The listwise answers' position/source fit: the registered ``position_source`` estimator
    (:mod:`sourcebias.clustered.position_source`) on a stage's records, positions scaled to
    [0, 1] within their window (0 = first shown / ranked first), windows of one passage left out,
    and the rows of repaired answers left out and counted.

    Args:
        records: One per shown passage: ``query``, ``n`` (window size), ``shown``, ``answered``
            (0-based), ``source``, ``repaired`` (its answer needed a repair or held no identifier).
        reference: The source the others are compared with.
        level: The intervals' coverage.

    Returns:
        The estimator's dict, with ``answers`` (complete and left out: each answer's rows count once).
    """
    from sourcebias.clustered import get_estimator

    rows = [r for r in records if r["n"] > 1]
    fit = get_estimator("position_source").estimate(
        [r["query"] for r in rows],
        [r["shown"] / (r["n"] - 1) for r in rows],
        [r["answered"] / (r["n"] - 1) for r in rows],
        [r["source"] for r in rows],
        reference,
        kept=[not r["repaired"] for r in rows],
        level=level,
    )
    answers = {(r["query"], r["window"], r["order"]): bool(r["repaired"]) for r in rows}
    fit["answers"] = {"complete": sum(1 for v in answers.values() if not v), "left_out": sum(answers.values())}
    return fit
