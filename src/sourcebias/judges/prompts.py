"""The judges' prompts and how an answer becomes a grade or a preference.

**Pointwise (UMBRELA).** The 0–3 relevance prompt is UMBRELA's zero-shot prompt (Upadhyay et al.,
2024, "UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing RELevance Assessor";
castorini/umbrela, ``prompts/qrel_zeroshot_bing.txt``, Apache-2.0), the one used for the TREC
2024 RAG track's judgements, written here word for word. Why not import it: the ``umbrela``
package (0.0.7) requires pyserini (a Java toolchain), fschat and torch at install time for what
is one template and one regular-expression parser; its parser also turns an answer it cannot read
into grade 0, where here such an answer is *unparseable*, counted and left out (a judge that
ignored the prompt must show, not grade everything 0).

**Digit variant** (``prompt="digit"``). UMBRELA's text with its last instruction replaced by
"answer with the final score only, one digit": the grade is then the answer's first token, so its
probability over ``0``–``3`` is read directly (``Call.choices``: exact for a local model, from the
first token's top log-probabilities for a server), and the answer's leading digit is the grade.
Small models that cannot follow UMBRELA's ``##final score:`` format still give a distribution
over the grades this way (how good a judge that makes them is another matter: the guide says).

**Disclosure.** The same prompt with one line after the passage that says who wrote it (a human,
or an AI language model): the same passage graded under both labels measures how far the label
alone moves the grade.

**Pairwise.** Which of two passages is more relevant, answered with the letter A or B; every
pair is asked in both orders, so the position effect and the source preference are estimated
apart (see :mod:`sourcebias.judges.stats`).

**Expected grade.** Where the backend returns the top log-probabilities of each generated token,
the grade token's distribution over ``0``–``3`` gives the expected grade ``Σ g·p(g) / Σ p(g)``
(the probabilities renormalised over the grade tokens among the top k; their total mass is kept).
The grade token is found by rebuilding the answer from the most probable token at each step; an
answer whose tokens cannot be aligned with its text, or whose grade token has no grade among its
top k, has no expected grade (counted), never a guessed one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

GRADES = (0, 1, 2, 3)

UMBRELA_PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:\n"
    "0 = represent that the passage has nothing to do with the query, \n"
    "1 = represents that the passage seems related to the query but does not answer it, \n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and \n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents "
    "something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely "
    "refers to the topic. If none of the above satisfies give it category 0.\n\n"
    "Query: {query}\n"
    "Passage: {passage}\n{disclosure}\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: score without providing any reasoning."
)

#: UMBRELA's closing instruction and the digit variant's (module docstring)
UMBRELA_ENDING = "Do not provide any code in result. Provide each score in the format of: ##final score: score without providing any reasoning."
DIGIT_ENDING = "Answer with the final score (O) only: a single digit, 0, 1, 2 or 3, without any other text."
PROMPTS = ("umbrela", "digit")
GRADE_CHOICES = ("0", "1", "2", "3")

#: the disclosed author, by label
DISCLOSURES = {"human": "This passage was written by a human.", "ai": "This passage was written by an AI language model."}

PAIRWISE_PROMPT = (
    "Given a query and two passages, A and B, decide which passage is more relevant to the query: which one better answers it.\n\n"
    "Query: {query}\n\n"
    "Passage A: {a}\n\n"
    "Passage B: {b}\n\n"
    "Answer with one letter only: A or B."
)

#: UMBRELA's answer patterns (its ``parse_fewshot_response``) that name the final score, in order,
#: after the format its zero-shot prompt asks for; the first match wins
_GRADE_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"final[ _]score\W{0,4}([0-3])\b",
        r"\"?\bo\"?\s*[:=]\s*([0-3])\b",
        r"overall(?:[ _]score)?\"?\s*[:=]\s*([0-3])\b",
        r"\bscore\"?\s*[:=]\s*([0-3])\b",
        r"relevance category(?: is| would be|:)?\s*([0-3])\b",
        r"\bcategory\s*([0-3])\b",
    )
)
_BARE_GRADE = re.compile(r"^\W*([0-3])\W*$")
#: the digit variant: an answer that starts with a grade digit not followed by a digit or a list's "." ("2", "2 - relevant"; not "1. 0 = ...")
_LEADING_GRADE = re.compile(r"^\s*([0-3])(?![\d.])")
_PAIR_PATTERNS = (re.compile(r"^\W*(?:passage\s+)?([AB])\b"), re.compile(r"\b(?:passage|answer)\s*:?\s*([AB])\b", re.IGNORECASE))


def grade_messages(query: str, passage: str, disclosure: str | None = None, prompt: str = "umbrela") -> tuple[tuple[str, str], ...]:
    """The chat messages of one pointwise judgement.

    Args:
        query: The query text.
        passage: The passage text.
        disclosure: ``None``, or a key of :data:`DISCLOSURES` (``human``, ``ai``).
        prompt: ``umbrela`` (verbatim) or ``digit`` (the grade as the answer's first token).

    Returns:
        ``(("user", prompt),)``.
    """
    line = f"{DISCLOSURES[disclosure]}\n" if disclosure else ""
    text = UMBRELA_PROMPT.format(query=query, passage=passage, disclosure=line)
    if prompt == "digit":
        text = text.replace(UMBRELA_ENDING, DIGIT_ENDING)
    return (("user", text),)


def pair_messages(query: str, a: str, b: str) -> tuple[tuple[str, str], ...]:
    """The chat messages of one pairwise judgement (passage ``a`` shown first, as A)."""
    return (("user", PAIRWISE_PROMPT.format(query=query, a=a, b=b)),)


def parse_grade(text: str, prompt: str = "umbrela") -> tuple[int | None, int | None]:
    """The grade an answer gives, and where its digit is.

    The rule: the first of UMBRELA's patterns that matches (``##final score: 2``, ``"O": 2``,
    ``score: 2``, ``category 2``; case-insensitive), else an answer that is one digit 0–3 and
    nothing else; with the ``digit`` prompt, also an answer that starts with a grade digit (not a
    list number such as ``1.``). Anything else is unparseable (``None``), never a default grade.

    Args:
        text: The model's answer.
        prompt: The prompt it answers (``umbrela`` or ``digit``).

    Returns:
        ``(grade, character offset of its digit)``, or ``(None, None)``.
    """
    patterns = (_LEADING_GRADE, *_GRADE_PATTERNS) if prompt == "digit" else (*_GRADE_PATTERNS, _BARE_GRADE)
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            return int(m.group(1)), m.start(1)
    return None, None


def parse_pick(text: str) -> str | None:
    """``"A"`` or ``"B"``: the answer's first letter when it is A or B (after punctuation or the
    word *passage*), else ``Passage B`` / ``Answer: A`` anywhere; ``None`` when neither."""
    for pattern in _PAIR_PATTERNS:
        m = pattern.search(text.strip())
        if m:
            return m.group(1).upper()
    return None


def _token_at(top_logprobs: Sequence[dict[str, float]], text: str, offset: int) -> int | None:
    """The index of the generated token that covers character ``offset`` of ``text``, from the
    most probable token of each step; ``None`` when those tokens do not rebuild the text."""
    pos = 0
    for i, step in enumerate(top_logprobs):
        if not step:
            return None
        token = max(step.items(), key=lambda kv: kv[1])[0]
        if text[pos : pos + len(token)] != token:
            return None
        if pos <= offset < pos + len(token):
            return i
        pos += len(token)
    return None


def expected_grade(top_logprobs: Sequence[dict[str, float]] | None, text: str, offset: int | None) -> tuple[float, float, str]:
    """The expected grade from the grade token's top log-probabilities.

    Args:
        top_logprobs: Per generated token ``{token text: logprob}`` (``None``: the backend gave none).
        text: The answer.
        offset: Where :func:`parse_grade` found the grade digit (``None``: unparsed).

    Returns:
        ``(expected grade, probability mass of the grade tokens, note)``; NaN and the reason
        (``no log-probabilities``, ``unparsed``, ``tokens do not align``, ``no grade token in the
        top k``) when it cannot be computed; the note is empty otherwise.
    """
    nan = float("nan")
    if not top_logprobs:
        return nan, nan, "no log-probabilities"
    if offset is None:
        return nan, nan, "unparsed"
    i = _token_at(top_logprobs, text, offset)
    if i is None:
        return nan, nan, "tokens do not align with the text"
    probs: dict[int, float] = {}
    for token, lp in top_logprobs[i].items():
        t = token.strip()
        if t in ("0", "1", "2", "3") and lp is not None and math.isfinite(lp):
            probs[int(t)] = probs.get(int(t), 0.0) + math.exp(lp)
    mass = sum(probs.values())
    if mass <= 0:
        return nan, nan, "no grade token in the top k"
    return sum(g * p for g, p in probs.items()) / mass, mass, ""


def expected_from_choices(choice_logprobs: dict[str, float | None] | None) -> tuple[float, float, str]:
    """The expected grade from ``log P(g | prompt)`` of the grades ``0``–``3`` (``Call.choices``),
    renormalised over the grades whose value is known; ``(NaN, NaN, reason)`` when none is."""
    nan = float("nan")
    if not choice_logprobs:
        return nan, nan, "no log-probabilities"
    probs = {int(g): math.exp(lp) for g, lp in choice_logprobs.items() if lp is not None and math.isfinite(lp)}
    mass = sum(probs.values())
    if mass <= 0:
        return nan, nan, "no grade token in the top k"
    return sum(g * p for g, p in probs.items()) / mass, mass, ""


def describe_prompts() -> dict[str, Any]:
    """The prompt texts and parsing rules, for the manifest and ``judge.json``."""
    return {
        "pointwise": "UMBRELA zero-shot (Upadhyay et al., 2024; castorini/umbrela qrel_zeroshot_bing.txt)",
        "pointwise_template": UMBRELA_PROMPT,
        "digit_ending": DIGIT_ENDING,
        "disclosures": dict(DISCLOSURES),
        "pairwise_template": PAIRWISE_PROMPT,
        "grade_rule": "first of UMBRELA's score patterns, else a bare digit 0-3; anything else unparseable (counted, left out)",
        "pick_rule": "the first letter A/B (after punctuation or 'passage'), else 'passage X' / 'answer: X'; anything else unparseable",
    }
