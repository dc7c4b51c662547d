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
Small models that cannot follow UMBRELA's ``##final score:`` format often give a grade this way;
those that answer something else (a list marker ``1.``, a refusal) are unparseable, and their
first token's probabilities over the grades are not read as a grade (see *Expected grade*).

**Parsing.** The grade, the pick and their rules are the parsers ``umbrela-grade``,
``digit-grade`` and ``ab-pick`` of :mod:`sourcebias.llmcalls.parsers` (UMBRELA's own patterns and
its last-match rule; a reasoning block and echoes of the prompt are not read; an answer with no
grade is unparseable where UMBRELA's parser gives 0).

**Disclosure.** The same prompt with one line after the passage that says who wrote it (a human,
or an AI language model): the same passage graded under both labels measures how far the label
alone moves the grade.

**Pairwise.** Which of two passages is more relevant, answered with the letter A or B; every
pair is asked in both orders, so the position effect and the source preference are estimated
apart (see :mod:`sourcebias.judges.stats`).

**Expected grade.** Where the backend returns log-probabilities, the distribution over ``0``–``3``
of the token the grade was parsed from gives the expected grade ``Σ g·p(g) / Σ p(g)`` (the
probabilities renormalised over the grade tokens among the top k; their total mass is kept). It is
computed only for an answer whose grade was parsed, so the grade and the expected grade leave out
the same answers (plus those without log-probabilities): with the digit prompt from the first
token's grade probabilities when the answer starts with its grade, otherwise (and with UMBRELA's
prompt) from the grade token, found by rebuilding the answer from the most probable token at each
step. An answer whose tokens cannot be aligned with its text, or whose grade token has no grade
among its top k, has no expected grade (counted), never a guessed one; nor has one whose grade
tokens hold under :data:`MIN_GRADE_MASS` (half) of that token's probability: a distribution the
model did not put on the grades (a refusal's first token "I", with 5% left on "3" and "1") is not
its grade. Such answers are counted under that reason, with their mass kept in the table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sourcebias.llmcalls.parsers import PARSERS, Prompt, grade_is_first_token

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
#: the parser of each prompt's answers (:data:`sourcebias.llmcalls.parsers.PARSERS`)
GRADE_PARSERS = {"umbrela": "umbrela-grade", "digit": "digit-grade"}
#: an expected grade is given only where the grade tokens hold at least this share of the grade
#: token's probability (among the top k listed): below it the model did not put its answer on the
#: grades, and their renormalised distribution is not its grade (module docstring)
MIN_GRADE_MASS = 0.5
LOW_MASS = f"grade tokens hold under {MIN_GRADE_MASS:g} of the probability"

#: the disclosed author, by label
DISCLOSURES = {"human": "This passage was written by a human.", "ai": "This passage was written by an AI language model."}

PAIRWISE_PROMPT = (
    "Given a query and two passages, A and B, decide which passage is more relevant to the query: which one better answers it.\n\n"
    "Query: {query}\n\n"
    "Passage A: {a}\n\n"
    "Passage B: {b}\n\n"
    "Answer with one letter only: A or B."
)


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


def _with_template(echo_of: Prompt, template: str, *extra: str) -> list[str]:
    """The prompt an answer must not be read from: ``echo_of`` (the call's messages) and always
    the fixed text of ``template`` (its parts between the fields), so that an echo of the
    instructions is caught even when the caller does not pass the prompt."""
    given = [echo_of] if isinstance(echo_of, str) else list(echo_of or ())
    return [*given, *(part for part in re.split(r"\{\w+\}", template) if part.strip()), *extra]


def parse_grade(text: str | None, prompt: str = "umbrela", echo_of: Prompt = None) -> tuple[int | None, int | None]:
    """The grade an answer gives and where its digit is: the ``umbrela-grade`` parser for UMBRELA's
    prompt, ``digit-grade`` for the digit variant (:mod:`sourcebias.llmcalls.parsers`, where the
    rules and their differences from UMBRELA's own parser are). ``echo_of``: the prompt (with the
    template's own text always added), whose echoes are not read. Returns ``(grade, offset)`` or
    ``(None, None)`` (unparseable)."""
    return PARSERS[GRADE_PARSERS[prompt]](text, _with_template(echo_of, UMBRELA_PROMPT, DIGIT_ENDING))


def parse_pick(text: str | None, echo_of: Prompt = None) -> str | None:
    """``"A"``, ``"B"`` or ``None``: the ``ab-pick`` parser (:func:`sourcebias.llmcalls.parsers.parse_pick`)
    with the pairwise prompt (and its template's own text) as what the answer must not echo."""
    return PARSERS["ab-pick"](text, _with_template(echo_of, PAIRWISE_PROMPT))


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
    """The expected grade from the top log-probabilities of the token the parse found the grade in.

    Args:
        top_logprobs: Per generated token ``{token text: logprob}`` (``None``: the backend gave none).
        text: The answer.
        offset: Where :func:`parse_grade` found the grade digit (``None``: unparsed).

    Returns:
        ``(expected grade, probability mass of the grade tokens, note)``; NaN and the reason
        (``unparsed``, ``no log-probabilities``, ``tokens do not align``, ``no grade token in the
        top k``) when it cannot be computed; the note is empty otherwise.
    """
    nan = float("nan")
    if offset is None:
        return nan, nan, "unparsed"
    if not top_logprobs:
        return nan, nan, "no log-probabilities"
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
    """The expected grade from ``log P(g | prompt)`` of the grades ``0``–``3`` (``Call.choices``: the
    first generated token's), renormalised over the grades whose value is known; ``(NaN, NaN,
    reason)`` when none is."""
    nan = float("nan")
    if not choice_logprobs:
        return nan, nan, "no log-probabilities"
    probs = {int(g): math.exp(lp) for g, lp in choice_logprobs.items() if lp is not None and math.isfinite(lp)}
    mass = sum(probs.values())
    if mass <= 0:
        return nan, nan, "no grade token in the top k"
    return sum(g * p for g, p in probs.items()) / mass, mass, ""


def expected_for(answer: Any, offset: int | None, prompt: str = "umbrela") -> tuple[float, float, str]:
    """The expected grade of one answer, only where its grade was parsed, from the token it was
    parsed from: the first token's grade probabilities (``Call.choices``) when the digit prompt's
    answer starts with its grade, the grade token's top log-probabilities otherwise. An answer
    with no grade has none (note ``unparsed``, the grade's own reason), and neither has one whose
    grade tokens hold under :data:`MIN_GRADE_MASS` of the probability (note :data:`LOW_MASS`; its
    mass is kept).

    Args:
        answer: The :class:`~sourcebias.llmcalls.Answer` (text, top and choice log-probabilities).
        offset: Where :func:`parse_grade` found the grade digit (``None``: unparsed).
        prompt: ``umbrela`` or ``digit``.

    Returns:
        ``(expected grade, grade tokens' probability mass, note)`` (NaN and the reason when none).
    """
    text = answer.text or ""
    if offset is None:
        return float("nan"), float("nan"), "unparsed"
    if prompt == "digit" and grade_is_first_token(text, offset):
        exp, mass, note = expected_from_choices(answer.choice_logprobs)
    else:
        exp, mass, note = expected_grade(answer.top_logprobs, text, offset)
    if not note and mass < MIN_GRADE_MASS:
        return float("nan"), mass, LOW_MASS
    return exp, mass, note


def describe_prompts() -> dict[str, Any]:
    """The prompt texts and parsing rules, for the manifest and ``judge.json``."""
    return {
        "pointwise": "UMBRELA zero-shot (Upadhyay et al., 2024; castorini/umbrela qrel_zeroshot_bing.txt)",
        "pointwise_template": UMBRELA_PROMPT,
        "digit_ending": DIGIT_ENDING,
        "disclosures": dict(DISCLOSURES),
        "pairwise_template": PAIRWISE_PROMPT,
        "grade_parser": dict(GRADE_PARSERS),
        "grade_rule": "UMBRELA's score patterns in its order, the last match of the first that matches (castorini/umbrela parse_fewshot_response, "
        "without its any-digit catch-all), else a lone digit 0-3; digit prompt: a leading grade digit first; after a <think> block, not inside an echo "
        "of the prompt; anything else unparseable (counted, left out; UMBRELA's grade 0)",
        "pick_parser": "ab-pick",
        "pick_rule": "the leading letter A/B (not the article), else the letter stated ('the answer is B', 'passage A is more relevant'), else the passage "
        "named; 'A or B' / 'A and B', echoes of the prompt and disagreeing letters unparseable",
        "expected_grade_rule": f"parsed answers only, from the token the grade was parsed from; none where the grade tokens hold under {MIN_GRADE_MASS:g} "
        "of that token's probability (among the top k)",
    }
