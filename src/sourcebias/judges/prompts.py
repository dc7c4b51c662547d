"""The judge's prompts: which prompt files its modes send, what they must give, and how an answer
becomes a grade or a pick.

The prompts are plug-ins (:mod:`sourcebias.llmcalls.prompts`): one TOML file each, by name or by
file (``sourcebias judge --prompt umbrela|digit|my-judge.toml``, ``--pair-prompt``).

**Pointwise (``umbrela``).** UMBRELA's zero-shot prompt (Upadhyay et al., 2024, "UMBRELA: UMbrela
is the (Open-Source Reproduction of the) Bing RELevance Assessor"; castorini/umbrela,
``prompts/qrel_zeroshot_bing.txt``, Apache-2.0), the one used for the TREC 2024 RAG track's
judgements, word for word. Why not import it: the ``umbrela`` package (0.0.7) requires pyserini (a
Java toolchain), fschat and torch at install time for what is one template and one
regular-expression parser; its parser also turns an answer it cannot read into grade 0, where
here such an answer is *unparseable*, counted and left out (a judge that ignored the prompt must
show, not grade everything 0).

**Digit variant (``digit``).** UMBRELA's text with its last instruction replaced by "answer with
the final score only, one digit": the grade is then the answer's first token, so its
probability over ``0``–``3`` is read directly (the file's ``probabilities = "first-token"``:
``Call.choices``, exact for a local model, from the first token's top log-probabilities for a
server). What differs between the two is data in their files (the parser, how the probabilities
are read), not code.

**Parsing.** The grade and the pick are read by the prompt's parser (``umbrela-grade``,
``digit-grade``, ``ab-pick`` of :mod:`sourcebias.llmcalls.parsers`: UMBRELA's own patterns and its
last-match rule; a reasoning block and echoes of the prompt are not read; an answer with no grade
is unparseable where UMBRELA's parser gives 0); the expected grade by the one rule of
:mod:`sourcebias.llmcalls.grades`.

**Disclosure.** A grade prompt's ``{disclosure}`` field holds one line after the passage saying who
wrote it (its ``[disclosures]`` table: a human, or an AI language model): the same passage graded
under both labels measures how far the label alone moves the grade.

**Pairwise (``pairwise``).** Which of two passages is more relevant, answered with the letter A or
B; every pair is asked in both orders, so the position effect and the source preference are
estimated apart (see :mod:`sourcebias.judges.stats`).
"""

from __future__ import annotations

from typing import Any

from sourcebias.llmcalls.grades import RULE as EXPECTED_GRADE_RULE
from sourcebias.llmcalls.prompts import Prompt, PromptUse, load_prompt

#: what the grade and disclosure modes give a prompt and read from it
GRADE_USE = PromptUse("the judge's grade modes", ("grade",), frozenset({"query", "passage", "disclosure"}), required=frozenset({"query", "passage"}))
#: what the pairwise mode gives a prompt and reads from it
PAIR_USE = PromptUse("the judge's pairwise mode", ("pick",), frozenset({"query", "a", "b"}), required=frozenset({"query", "a", "b"}))
#: the disclosed authors, in the order they are asked
DISCLOSED = ("human", "ai")
GRADE_RULE = (
    "the grade prompt's parser: UMBRELA's score patterns in its order, the last match of the first that matches (castorini/umbrela "
    "parse_fewshot_response, without its any-digit catch-all), else a lone digit 0-3; digit-grade: a leading grade digit first; after a <think> "
    "block, not inside an echo of the prompt; anything else unparseable (counted, left out; UMBRELA's grade 0)"
)
PICK_RULE = (
    "the leading letter A/B (not the article), else the letter stated ('the answer is B', 'passage A is more relevant'), else the passage "
    "named; 'A or B' / 'A and B', echoes of the prompt, disagreeing letters and a letter in a sentence that says no "
    "('A is less relevant than B', 'passage B is not relevant') unparseable"
)


def grade_prompt(spec: str | Prompt = "umbrela", *, disclosure: bool = False) -> Prompt:
    """The grade modes' prompt ``spec`` (a registered name or a file), checked for the judge.

    Args:
        spec: ``umbrela``, ``digit``, another registered grade prompt, or a prompt file.
        disclosure: Whether the disclosure mode sends it (then it needs a ``{disclosure}`` field
            and a ``[disclosures]`` line for each of :data:`DISCLOSED`).

    Raises:
        ConfigError, DataError: Not a prompt the judge's grade modes can send (the file named).
    """
    prompt = load_prompt(spec, GRADE_USE)
    if disclosure:
        if not any("{disclosure}" in m.content for m in prompt.messages):
            prompt.fail("the disclosure mode needs a {disclosure} field in the messages", "messages")
        missing = [label for label in DISCLOSED if label not in prompt.disclosures]
        if missing:
            prompt.fail(f"the disclosure mode needs a [disclosures] line for {', '.join(missing)} (labels: {', '.join(DISCLOSED)})", "disclosures")
    return prompt


def pair_prompt(spec: str | Prompt = "pairwise") -> Prompt:
    """The pairwise mode's prompt ``spec`` (a registered name or a file), checked for the judge."""
    return load_prompt(spec, PAIR_USE)


def grade_messages(query: str, passage: str, disclosure: str | None = None, prompt: str | Prompt = "umbrela") -> tuple[tuple[str, str], ...]:
    """The chat messages of one pointwise judgement.

    Args:
        query: The query text.
        passage: The passage text.
        disclosure: ``None``, or a label of the prompt's ``[disclosures]`` (``human``, ``ai``).
        prompt: The grade prompt (name, file or prompt).

    Returns:
        The messages (``(("user", text),)`` for UMBRELA).
    """
    p = grade_prompt(prompt, disclosure=disclosure is not None)
    return p.render({"query": query, "passage": passage, "disclosure": p.disclosures[disclosure] if disclosure else ""})


def pair_messages(query: str, a: str, b: str, prompt: str | Prompt = "pairwise") -> tuple[tuple[str, str], ...]:
    """The chat messages of one pairwise judgement (passage ``a`` shown first, as A)."""
    return pair_prompt(prompt).render({"query": query, "a": a, "b": b})


def parse_grade(text: str | None, prompt: str | Prompt = "umbrela", messages: Any = None) -> tuple[int | None, int | None]:
    """The grade an answer gives and where its digit is, by the grade prompt's parser
    (:mod:`sourcebias.llmcalls.parsers`, where the rules and their differences from UMBRELA's own
    parser are). ``messages``: the call's, whose echoes are not read (without them, the prompt's
    own words). Returns ``(grade, offset)`` or ``(None, None)`` (unparseable)."""
    result: tuple[int | None, int | None] = grade_prompt(prompt).parse(text, messages=messages)
    return result


def parse_pick(text: str | None, prompt: str | Prompt = "pairwise", messages: Any = None) -> str | None:
    """``"A"``, ``"B"`` or ``None``: the pick an answer makes, by the pairwise prompt's parser
    (``ab-pick``), not reading echoes of ``messages`` (without them, of the prompt's own words)."""
    pick: str | None = pair_prompt(prompt).parse(text, messages=messages)
    return pick


def describe_prompts(grade: Prompt | None, pair: Prompt | None) -> dict[str, Any]:
    """The prompts (name, file, digest, text) and the reading rules, for ``judge.json`` and the manifest."""
    return {
        "grade": grade.describe() if grade is not None else None,
        "pairwise": pair.describe() if pair is not None else None,
        "grade_rule": GRADE_RULE,
        "pick_rule": PICK_RULE,
        "expected_grade_rule": EXPECTED_GRADE_RULE,
    }
