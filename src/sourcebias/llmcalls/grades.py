"""The 0–3 relevance grade and the expected grade, built once for every stage that asks for one
(the judge's grade modes, ``llm-yesno``'s ``answers=grade``).

**The grade** is what the prompt's parser reads from the answer (``umbrela-grade``,
``digit-grade``: :mod:`sourcebias.llmcalls.parsers`); an answer it cannot read is *unparseable*:
no grade, counted and left out, never grade 0.

**The expected grade** ``Σ g·p(g) / Σ p(g)`` comes from a distribution over the grades ``0``–``3``
of one token, read as the prompt says (``probabilities``):

* ``first-token``: the grades' probabilities as the answer's first token (``Call.choices``: exact
  for a local model, from the first token's top log-probabilities for a server), used when the
  answer's grade is its first token (or, for a stage that only scores, always);
* ``grade-token``: the top log-probabilities of the token the grade was parsed from, found by
  rebuilding the answer from the most probable token of each step.

One rule for what is not known, and one for the mass, whatever the stage:

* A grade whose probability is not given (outside a server's top k) is **missing**: left out of
  the renormalisation and counted, never guessed (neither 0 nor a bound).
* The grades' total probability (their **mass**, kept) must reach :data:`MIN_GRADE_MASS` (half):
  below it the model did not put its answer on the grades (a refusal's first token "I", with 5%
  left on "3" and "1"), and the renormalised distribution is not its grade: no expected grade,
  with that reason.
* An answer whose grade was not parsed has no expected grade (``unparsed``): a grade and its
  expected grade leave out the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GRADES = (0, 1, 2, 3)
#: the grades as the choices a call scores (``Call.choices``)
GRADE_CHOICES = ("0", "1", "2", "3")
#: the least share of a token's probability its grade tokens must hold for an expected grade
MIN_GRADE_MASS = 0.5
LOW_MASS = f"grade tokens hold under {MIN_GRADE_MASS:g} of the probability"
#: the reasons an answer has no expected grade
UNPARSED, NO_LOGPROBS, NOT_ALIGNED, NO_GRADE_TOKEN = "unparsed", "no log-probabilities", "tokens do not align with the text", "no grade token in the top k"
RULE = (
    f"parsed answers only; from the token the grade was parsed from (the first token's grade probabilities where the prompt reads them and the "
    f"answer starts with its grade); grades outside the top k left out of the renormalisation (counted); none where the grade tokens hold under "
    f"{MIN_GRADE_MASS:g} of that token's probability"
)


@dataclass(frozen=True)
class ExpectedGrade:
    """An expected grade, the grades' probability mass it rests on, how many grades were missing
    (outside the top k) and, where there is none, why (``note``; empty when there is one)."""

    value: float
    mass: float
    missing: int = 0
    note: str = ""

    @property
    def known(self) -> bool:
        """Whether there is an expected grade."""
        return not self.note


def expected_grade(probabilities: Mapping[int, float | None]) -> ExpectedGrade:
    """The expected grade of one token's grade probabilities (the module's rules).

    Args:
        probabilities: ``{grade: probability, or None where not given}`` (a grade absent from
            the mapping counts as not given).

    Returns:
        The :class:`ExpectedGrade`; NaN and the reason (``no grade token in the top k``, or
        :data:`LOW_MASS` with the mass kept) where there is none.
    """
    known = {g: p for g, p in probabilities.items() if p is not None and math.isfinite(p) and p > 0}
    missing = sum(1 for g in GRADES if g not in known)
    mass = sum(known.values())
    if mass <= 0:
        return ExpectedGrade(math.nan, math.nan, missing, NO_GRADE_TOKEN)
    value = sum(g * p for g, p in known.items()) / mass
    if mass < MIN_GRADE_MASS:
        return ExpectedGrade(math.nan, mass, missing, LOW_MASS)
    return ExpectedGrade(value, mass, missing)


def unavailable(note: str) -> ExpectedGrade:
    """No expected grade, for ``note``."""
    return ExpectedGrade(math.nan, math.nan, 0, note)


def from_choices(choice_logprobs: Mapping[str, float | None] | None) -> ExpectedGrade:
    """The expected grade from ``log P(g)`` of the grade choices ``"0"``–``"3"`` (``Call.choices``)."""
    if not choice_logprobs:
        return unavailable(NO_LOGPROBS)
    return expected_grade({int(g): (None if lp is None or not math.isfinite(lp) else math.exp(lp)) for g, lp in choice_logprobs.items() if g in GRADE_CHOICES})


def token_at(top_logprobs: Sequence[Mapping[str, float]], text: str, offset: int) -> int | None:
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


def at_token(top_logprobs: Sequence[Mapping[str, float]] | None, text: str, offset: int | None) -> ExpectedGrade:
    """The expected grade from the top log-probabilities of the token that holds character
    ``offset`` of ``text`` (where the grade was parsed; ``None``: unparsed). Entries whose text,
    stripped of white space, is a grade count for it (``"2"`` and ``" 2"`` alike)."""
    if offset is None:
        return unavailable(UNPARSED)
    if not top_logprobs:
        return unavailable(NO_LOGPROBS)
    i = token_at(top_logprobs, text, offset)
    if i is None:
        return unavailable(NOT_ALIGNED)
    probs: dict[int, float] = {}
    for token, lp in top_logprobs[i].items():
        t = token.strip()
        if t in GRADE_CHOICES and lp is not None and math.isfinite(lp):
            probs[int(t)] = probs.get(int(t), 0.0) + math.exp(lp)
    return expected_grade(probs)


@dataclass(frozen=True)
class GradeReading:
    """One answer read as a grade: the grade (``None``: unparseable), where its digit is, and its
    expected grade."""

    grade: int | None
    offset: int | None
    expected: ExpectedGrade


def read_grade(prompt: Any, answer: Any, messages: Sequence[tuple[str, str]] | None = None) -> GradeReading:
    """An answer to a grade prompt: its grade by the prompt's parser, and its expected grade from
    the token the grade was read from (the module's rules).

    Args:
        prompt: The :class:`~sourcebias.llmcalls.prompts.Prompt` (its ``parser`` and ``probabilities``).
        answer: The :class:`~sourcebias.llmcalls.Answer` (text, top and choice log-probabilities).
        messages: The call's messages, whose echoes are not read as a grade.

    Returns:
        The :class:`GradeReading`.
    """
    from sourcebias.llmcalls.parsers import grade_is_first_token

    text = answer.text or ""
    grade, offset = prompt.parse(text, messages=messages)
    if grade is None:
        return GradeReading(None, None, unavailable(UNPARSED))
    if prompt.probabilities == "first-token" and grade_is_first_token(text, offset):
        return GradeReading(grade, offset, from_choices(answer.choice_logprobs))
    return GradeReading(grade, offset, at_token(answer.top_logprobs, text, offset))
