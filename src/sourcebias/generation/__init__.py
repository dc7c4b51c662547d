"""Building LLM twins of corpora: prompts, post-processing, the resumable job. Models are reached
through :mod:`sourcebias.llmcalls` (its backends; ``sourcebias serve`` is
:mod:`sourcebias.llmcalls.server`).

Typical use (the CLI ``sourcebias generate`` does the same)::

    from sourcebias.generation import RewriteSettings, load_prompt, resolve_target, rewrite_corpus
    from sourcebias.llmcalls import open_backend

    target = resolve_target("data/my-dataset", "smollm2-tmp0.2")
    summary = rewrite_corpus(target, open_backend("smollm2"), RewriteSettings(load_prompt("kdd")))

This package depends on ``sourcebias.data``, ``core`` and ``llmcalls`` only.
"""

from sourcebias.generation.length import LENGTH_INSTRUCTION, LengthControl
from sourcebias.generation.postprocess import STATUSES, Cleaned, clean_output, detect_refusal
from sourcebias.generation.prompts import BUILTIN_PROMPTS, COCKTAIL_PROMPT, KDD_PROMPT, TABLE7_INSTRUCTIONS, PromptTemplate, load_prompt
from sourcebias.generation.rewrite import (
    COCKTAIL_LENGTH,
    COCKTAIL_SAMPLE_CAP,
    RewriteSettings,
    RewriteSummary,
    RewriteTarget,
    attempt_seed,
    cocktail_sample,
    document_seed,
    max_new_tokens_for,
    passes_length_filter,
    resolve_target,
    rewrite_corpus,
)

__all__ = [
    "BUILTIN_PROMPTS",
    "COCKTAIL_LENGTH",
    "COCKTAIL_PROMPT",
    "COCKTAIL_SAMPLE_CAP",
    "KDD_PROMPT",
    "LENGTH_INSTRUCTION",
    "STATUSES",
    "TABLE7_INSTRUCTIONS",
    "Cleaned",
    "LengthControl",
    "PromptTemplate",
    "RewriteSettings",
    "RewriteSummary",
    "RewriteTarget",
    "attempt_seed",
    "clean_output",
    "cocktail_sample",
    "detect_refusal",
    "document_seed",
    "load_prompt",
    "max_new_tokens_for",
    "passes_length_filter",
    "resolve_target",
    "rewrite_corpus",
]
