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
#: one demonstration (ALCE prompts with demonstrations too; a small model without one rarely
#: writes a citation at all): a user turn in the same format and the answer, as chat turns
DEMONSTRATION = (
    (("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas on the border of Nepal and China."),
     ("K2", "K2 is the second-highest mountain on Earth, on the border of China and Pakistan.")),
    "Which is the highest mountain on Earth?",
    "Mount Everest is the highest mountain on Earth [1]. K2, on the border of China and Pakistan, is the second highest [2].",
)  # fmt: skip
_DOCUMENT = re.compile(r"^Document \[(\d+)\]\(Title: (.*?)\): (.*)$", re.MULTILINE)


def _one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed, so that one passage is one line of the prompt."""
    return " ".join(text.split())


def format_passage(number: int, title: str, text: str) -> str:
    """One numbered passage as ALCE writes it: ``Document [n](Title: title): text``."""
    return f"Document [{number}](Title: {_one_line(title)}): {_one_line(text)}"


def _user_turn(question: str, passages: Sequence[tuple[str, str]]) -> str:
    documents = "\n".join(format_passage(i, title, text) for i, (title, text) in enumerate(passages, start=1))
    return f"{documents}\n\nQuestion: {_one_line(question)}\nAnswer:"


def citation_messages(question: str, passages: Sequence[tuple[str, str]], shots: int = 1) -> tuple[tuple[str, str], ...]:
    """The chat messages asking for a cited answer to ``question`` from ``passages``.

    Args:
        question: The query's text.
        passages: ``(title, text)`` of each passage, in context order (numbered from 1).
        shots: 1: the :data:`DEMONSTRATION` first (a user turn and its answer); 0: none.

    Returns:
        ``(("system", INSTRUCTION), [demonstration,] ("user", documents + question))``.
    """
    demo_passages, demo_question, demo_answer = DEMONSTRATION
    demo = (("user", _user_turn(demo_question, demo_passages)), ("assistant", demo_answer)) if shots else ()
    return (("system", INSTRUCTION), *demo, ("user", _user_turn(question, passages)))


def passages_in_prompt(user_message: str) -> list[tuple[int, str, str]]:
    """``(number, title, text)`` of each passage of a prompt :func:`citation_messages` wrote (used
    by a simulated generator, which must know what it was shown)."""
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in _DOCUMENT.finditer(user_message)]


def passage_key(title: str, text: str) -> tuple[str, str]:
    """A passage as the prompt shows it (white space collapsed): what :func:`passages_in_prompt`
    reads back, so a simulated generator can look up what it was shown."""
    return _one_line(title), _one_line(text)
