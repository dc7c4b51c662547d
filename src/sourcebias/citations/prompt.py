"""The numbered-citation prompt a generator answers (a prompt plug-in: the file ``alce``, or any
prompt asking for ``citations``; :mod:`sourcebias.llmcalls.prompts`).

The shipped prompt is ALCE's instruction (Gao et al., EMNLP 2023, "Enabling Large Language Models
to Generate Text with Citations"), the one most citation studies since reuse, with the passages
numbered as ALCE numbers them (``Document [1](Title: ...): text``), so that an answer cites with
the same ``[1][2]`` markers TREC RAG 2024's baselines ask for, and one demonstration. Passages
are numbered 1..k in the order of the context (which the job shuffles over seeds); the number a
passage gets is its *position in the context*, never its retrieval rank.
"""

from __future__ import annotations

from collections.abc import Sequence

from sourcebias.llmcalls.prompts import USES, Prompt, load_prompt

#: what the study gives a prompt (the query; per passage its number, title and text) and reads from it
CITE_USE = USES["cite"]


def cite_prompt(spec: str | Prompt = "alce") -> Prompt:
    """The citation prompt ``spec`` (a registered name or a file), checked for the study."""
    return load_prompt(spec, CITE_USE)


def citation_messages(question: str, passages: Sequence[tuple[str, str]], shots: int = 1, prompt: str | Prompt = "alce") -> tuple[tuple[str, str], ...]:
    """The chat messages asking for a cited answer to ``question`` from ``passages``.

    Args:
        question: The query's text.
        passages: ``(title, text)`` of each passage, in context order (numbered from 1).
        shots: How many of the prompt's demonstrations come first (``alce`` has one).
        prompt: The citation prompt (a name, a file or a prompt).

    Returns:
        The messages (``alce``: ``(("system", instruction), [demonstration,] ("user", documents + question))``).
    """
    return cite_prompt(prompt).render({"query": question}, [{"title": title, "text": text} for title, text in passages], shots)
