"""The numbered-citation prompt a generator answers, and its inverse for the known-truth harness.

The instruction is ALCE's (Gao et al., EMNLP 2023, "Enabling Large Language Models to Generate
Text with Citations"), the one most citation studies since reuse, and the passages are numbered
as ALCE numbers them (``Document [1](Title: ...): text``), so that an answer cites with the
same ``[1][2]`` markers TREC RAG 2024's baselines ask for. Passages are numbered 1..k in the
order of the context (which the job shuffles over seeds); the number a passage gets is its
*position in the context*, never its retrieval rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: ALCE's instruction (Gao et al. 2023), unchanged
INSTRUCTION = (
    "Write an accurate, engaging, and concise answer for the given question using only the provided search results "
    "(some of which might be irrelevant) and cite them properly. Use an unbiased and journalistic tone. Always cite for any "
    "factual claim. When citing several search results, use [1][2][3]. Cite at least one document and at most three "
    "documents in each sentence. If multiple documents support the sentence, only cite a minimum sufficient subset of "
    "the documents."
)
PROMPT_VERSION = "alce-1"
_DOCUMENT = re.compile(r"^Document \[(\d+)\]\(Title: (.*?)\): (.*)$", re.MULTILINE)


def _one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed, so that one passage is one line of the prompt."""
    return " ".join(text.split())


def format_passage(number: int, title: str, text: str) -> str:
    """One numbered passage as ALCE writes it: ``Document [n](Title: title): text``."""
    return f"Document [{number}](Title: {_one_line(title)}): {_one_line(text)}"


def citation_messages(question: str, passages: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The chat messages asking for a cited answer to ``question`` from ``passages``.

    Args:
        question: The query's text.
        passages: ``(title, text)`` of each passage, in context order (numbered from 1).

    Returns:
        ``(("system", INSTRUCTION), ("user", documents + question))``.
    """
    documents = "\n".join(format_passage(i, title, text) for i, (title, text) in enumerate(passages, start=1))
    return (("system", INSTRUCTION), ("user", f"{documents}\n\nQuestion: {_one_line(question)}\nAnswer:"))


def passages_in_prompt(user_message: str) -> list[tuple[int, str, str]]:
    """``(number, title, text)`` of each passage of a prompt :func:`citation_messages` wrote (used
    by a simulated generator, which must know what it was shown)."""
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in _DOCUMENT.finditer(user_message)]


def passage_key(title: str, text: str) -> tuple[str, str]:
    """A passage as the prompt shows it (white space collapsed): what :func:`passages_in_prompt`
    reads back, so a simulated generator can look up what it was shown."""
    return _one_line(title), _one_line(text)
