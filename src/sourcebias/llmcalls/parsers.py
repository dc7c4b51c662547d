"""How an LLM's answer becomes a value: every parser of the LLM stages, in one place.

Each parser is a pure function of the answer text (and of what it needs to know: the window
size, the number of passages, the prompt the answer may echo), registered by name in
:data:`PARSERS` so that a prompt can name the parser of its answers:

* ``umbrela-grade``: the 0–3 grade of an answer to UMBRELA's prompt, and where its digit is
  (castorini/umbrela's ``parse_fewshot_response``);
* ``digit-grade``: the same for the one-digit variant (a leading grade digit first);
* ``ab-pick``: which of two passages, ``"A"`` or ``"B"``, a pairwise answer picks (no peer: a
  hand-written rule);
* ``rankgpt-permutation``: the order a RankGPT window's answer gives, and its repairs
  (castorini/rank_llm's ``receive_permutation``);
* ``alce-citations``: the passages an answer to ALCE's prompt cites (princeton-nlp/ALCE's
  ``eval.py``).

Two rules come first, whatever the parser:

* **Reasoning is not the answer.** A reasoning model's ``<think>…</think>`` block is removed: the
  answer is what follows the last ``</think>`` (rank_llm's ``clean_ranking_response``); an
  answer that opens ``<think>`` and never closes it (cut at ``max_tokens`` while reasoning) has
  no answer at all (rank_llm reads its digits as a ranking; here it is unparseable).
* **The prompt is not the answer** (``echo_of``: the prompt's messages). A grade, pick,
  identifier or citation that lies inside a verbatim copy of the prompt of at least
  :data:`ECHO_WORDS` words (white space collapsed), or in an answer that repeats one of the
  prompt's messages whole, is not read: small models continue or repeat their prompt
  ("Assign category 1 if the passage…", "Answer with one letter only: A or B.", "Received
  passage [10].", "use [1][2][3]"). The peers read those; here they are unparseable.

Where a parser reads less than its peer, on purpose, its docstring says so (and the tests hold a
copy of the peer's own function as the oracle on a table of real answers): an answer with no
grade is *unparseable* (``None``, counted and left out), never UMBRELA's grade 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: the fewest words of a verbatim copy of the prompt that make an echo (a shorter overlap, e.g.
#: "category 1" or "[1] > [2]", is what a genuine answer says too)
ECHO_WORDS = 4

Prompt = str | Sequence[str] | None


# -- the two rules before every parser --------------------------------------------------------------
def strip_reasoning(text: str) -> tuple[str, int]:
    """The answer after a reasoning block, and where it starts in ``text``.

    After the last ``</think>`` (any case) when there is one; ``""`` when ``text`` opens with
    ``<think>`` and never closes it (the model was cut while reasoning); ``text`` itself otherwise.
    """
    low = text.lower()
    end = low.rfind("</think>")
    if end >= 0:
        start = end + len("</think>")
        return text[start:], start
    if low.lstrip().startswith("<think>"):
        return "", len(text)
    return text, 0


def _collapse(s: str) -> str:
    return " ".join(s.split())


def echo_spans(text: str, echo_of: Prompt, min_words: int = ECHO_WORDS) -> list[tuple[int, int]]:
    """The character spans of ``text`` that copy the prompt verbatim.

    Args:
        text: The answer.
        echo_of: The prompt's messages (or one string); ``None``: no echo is looked for.
        min_words: The fewest consecutive words (white space collapsed) a copy must have.

    Returns:
        ``[(start, end), ...]`` in order: the whole answer when it repeats one of the messages
        whole, else every maximal run of at least ``min_words`` words that occurs in the prompt.
    """
    if not echo_of or not text.strip():
        return []
    messages = [echo_of] if isinstance(echo_of, str) else [m for m in echo_of if m]
    whole = _collapse(text)
    if any(whole == _collapse(m) for m in messages):
        return [(0, len(text))]
    hay = _collapse("\n".join(messages))
    words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]
    spans, i = [], 0
    while i < len(words):
        j, run = i, ""
        while j < len(words) and (candidate := f"{run} {words[j][2]}".lstrip()) in hay:
            run, j = candidate, j + 1
        if j - i >= min_words:
            spans.append((words[i][0], words[j - 1][1]))
            i = j
        else:
            i += 1
    return spans


def _inside(at: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s <= at < e for s, e in spans)


def _masked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with the echoed spans blanked by NUL characters (nothing reads across them)."""
    for s, e in spans:
        text = text[:s] + "\0" * (e - s) + text[e:]
    return text


def _visible(text: str | None, echo_of: Prompt) -> tuple[str, int, list[tuple[int, int]]]:
    """The answer after its reasoning, where it starts, and its echoed spans (relative to it)."""
    body, start = strip_reasoning(text or "")
    return body, start, echo_spans(body, echo_of)


# -- grades --------------------------------------------------------------------------------------
#: a grade digit: not part of a longer number ("10", "2024"), a decimal ("2.5") or a negative
#: number ("-1", "−1": UMBRELA reads grade 1)
_G = r"(?<![-\u2212\d])([0-3])(?!\.?\d)"
#: castorini/umbrela's ``parse_fewshot_response`` patterns (Apache-2.0), in its order, each with
#: the same meaning; written with word boundaries where its own would read a grade out of any word
#: ("o\s*…" reads "to 3" and "into 2"; "[a-z]+ is N" reads "there is 1 mention"), its
#: ``"score of N"`` standing for the five "… score of N" forms after it (it matches all of them
#: first), and its last pattern, ``\n*(0|1|2|3)`` (any digit 0–3 anywhere), left out: an answer
#: with no stated grade is unparseable. Then forms UMBRELA reaches only through that last pattern.
_UMBRELA_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"[\"']o[\"']\s*[:=-]?\s*{_G}",  # "o": 2, 'o': 2
        rf"(?<![\w'\"])o\)?\s*[:=-]?\s*{_G}",  # O: 2, (O): 2
        rf"\"(?:overall_score|overall|overall score|final score)\"\s*[:=-]?\s*{_G}",
        rf"final[ _]score\W{{0,4}}{_G}",  # final score: 2, ##final score: 2, **Final score:** 2
        rf"final score is\s+{_G}",
        rf"\"(?:final_score|score|o_score)\"\s*[:=-]?\s*{_G}",
        rf"output score is\s+{_G}",
        rf"score is\s+{_G}",
        rf"score of\s+{_G}",  # I would assign a score of 2; give it a score of 2; conclude with a score of 2
        rf"score:\s*{_G}",
        rf"\b(?:score|grade|rating|relevance|category|label|judgment|judgement|answer|result)\s+is\s+{_G}",
        rf"relevance category\s*[:=-]?\s*{_G}",
        rf"relevance category is\s+{_G}",
        rf"it falls into the category\s+{_G}",
        rf"\bcategory\s*{_G}",
        rf"relevance category for this passage would be\s+{_G}",
        rf"the relevance category would be\s+{_G}",
        rf"\b(?:grade|rating|relevance|label|overall|output|answer|result)\s*[:=-]\s*{_G}",
        rf"\A[^\w\n]*{_G}\s*[-–—:]\s",  # 2 - the passage answers it
        rf"\b(?:give|assign|rate)s?\s+(?:it|this|this passage|the passage)\s+(?:a\s+|an\s+|as\s+)?{_G}",
        rf"(?:\A|\n)[^\w\n]*{_G}[^\w\n]*\s*\Z",  # the answer, or its last line, is one grade digit: "2", " 1.\n", "**3**"
    )
)
#: the digit prompt's answer: a grade digit first, not a list number ("1." starts "1. 0 = ...")
_LEADING_GRADE = re.compile(r"\A\s*([0-3])(?![\d.])")


def _last_grade(body: str, start: int, spans: Sequence[tuple[int, int]], patterns: Sequence[re.Pattern[str]]) -> tuple[int | None, int | None]:
    """The first pattern with a match outside the echoes, and its last such match (UMBRELA's rule)."""
    for pattern in patterns:
        found = [m for m in pattern.finditer(body) if not _inside(m.start(1), spans)]
        if found:
            return int(found[-1].group(1)), start + found[-1].start(1)
    return None, None


def parse_umbrela_grade(text: str | None, echo_of: Prompt = None) -> tuple[int | None, int | None]:
    """The 0–3 grade an answer to UMBRELA's prompt gives, and where its digit is.

    The rule is UMBRELA's (castorini/umbrela ``parse_fewshot_response``): its patterns in its
    order (``"O": 2``, ``O: 2``, ``final score: 2``, ``final score is 2``, ``score is 2``,
    ``score of 2``, ``score: 2``, ``category 2``, …; case-insensitive); the first pattern that
    matches gives the grade, from its **last** match in the answer. Then the forms UMBRELA reaches
    only through its catch-all (``Grade: 2``, ``Overall: 2``, ``Answer: 2``, ``I give it a 2``,
    ``2 - the passage answers it``) and an answer (or its last line) that is one digit 0–3. Read
    after the reasoning and outside the echoes of the prompt (module).

    Differences from UMBRELA, on purpose: an answer with no grade is unparseable (``None``),
    where UMBRELA returns grade 0 (with a flag); UMBRELA's catch-all ``\\n*(0|1|2|3)`` (the last
    digit 0–3 anywhere: "10/10" is grade 0, "from 2023" grade 3, "Rating: 2 out of 3" grade 3) is
    not used, nor its patterns' reading of a grade out of any word ending in "o" or any "X is N";
    a digit that is part of a number ("10", "2.5", "-1") is not a grade; an echoed prompt is not read.

    Returns:
        ``(grade, character offset of its digit in text)``, or ``(None, None)``.
    """
    body, start, spans = _visible(text, echo_of)
    return _last_grade(body, start, spans, _UMBRELA_PATTERNS)


def parse_digit_grade(text: str | None, echo_of: Prompt = None) -> tuple[int | None, int | None]:
    """The grade an answer to the one-digit prompt gives: a grade digit that starts the answer
    (``2``, ``2 - relevant``), else :func:`parse_umbrela_grade`'s patterns but its last (a lone
    digit). A digit followed by a period is a list number here, not a grade (small models answer
    this prompt ``1.`` and go on ``0 = represent…``, the prompt's scale); UMBRELA reads it as the
    grade. Returns ``(grade, offset of its digit)`` or ``(None, None)``."""
    body, start, spans = _visible(text, echo_of)
    m = _LEADING_GRADE.match(body)
    if m and not _inside(m.start(1), spans):
        return int(m.group(1)), start + m.start(1)
    return _last_grade(body, start, spans, _UMBRELA_PATTERNS[:-1])


def grade_is_first_token(text: str | None, offset: int | None) -> bool:
    """Whether the grade digit at ``offset`` is the first thing the answer says (only white space
    before it), so that the first generated token's distribution is the grade's."""
    return offset is not None and not (text or "")[:offset].strip()


# -- pairwise picks ------------------------------------------------------------------------------
_PASSAGE = r"(?:(?i:passage|document|option)\s+)?"
#: "A or B", "A and B", "passage A nor passage B", "A/B", "A vs B": a list of both, not a pick
_BOTH = re.compile(rf"\b{_PASSAGE}[AB]\s*(?i:or|and|nor|/|,|&|vs\.?|versus)\s*{_PASSAGE}[AB]\b")
#: "A passage about…": the article, not a pick (a lower-case word after it on the same line, not a verb of a pick)
_ARTICLE = re.compile(r"A[ \t]+(?!(?:is|was|seems|appears|better|more|wins|because|answers|provides|contains)\b)[a-z]")
_LEADING_PICK = re.compile(rf"\A[^\w\n]*{_PASSAGE}([AB]|[ab](?=[^\w]*\Z))(?![\w])")
_STATED = tuple(
    re.compile(p)
    for p in (
        rf"(?i:\banswer)\s*(?i:is)?\s*[:=]?\s*[*\"'(\[]*{_PASSAGE}([AB])\b",
        rf"(?i:\b(?:choose|chose|pick|select|prefer|go with))\s+{_PASSAGE}([AB])\b",
        rf"{_PASSAGE}\b([AB])\s+(?i:is|seems|appears)\s+(?i:more|better|the more|the better|the most)\b",
    )
)
_MENTION = re.compile(r"(?i:\b(?:passage|document|option))\s+([AB])\b")
#: words that turn a sentence's letter from a pick into a rejection or a comparison against it
#: ("A is less relevant than B", "Passage B is not relevant", "I would not choose A")
_NEGATED = re.compile(r"(?i)\b(?:not|never|no|neither|nor|less|least|worse|worst|irrelevant|unrelated|off-topic)\b|n't\b")
_SENTENCE_END = re.compile(r"[.!?;\n]")


def _negated(body: str, at: int) -> bool:
    """Whether the sentence around ``body[at]`` says no to something (:data:`_NEGATED`)."""
    ends = [m.start() for m in _SENTENCE_END.finditer(body)]
    start = max([e + 1 for e in ends if e < at], default=0)
    end = min([e for e in ends if e > at], default=len(body))
    return bool(_NEGATED.search(body, start, end))


def parse_pick(text: str | None, echo_of: Prompt = None) -> str | None:
    """``"A"`` or ``"B"``: which passage an answer to the pairwise prompt picks, else ``None``.

    After the reasoning and with the echoes of the prompt blanked (module), and with every list
    of both letters blanked ("A or B", "passage A and passage B", "A/B": the instruction's own
    words, or "both"/"neither" answers), in order: the letter the answer starts with ("B",
    "**A**", "Passage B", "b"; not the article "A" of "A passage about…"); else the letters it
    states ("the answer is B", "I choose A", "passage B is more relevant"); else the passages it
    names ("Passage A. It answers…"). Letters stated or named that disagree make the answer
    unparseable, and so does a letter read from a sentence that says no ("A is less relevant
    than B", "Passage B is not relevant", "I would not choose A": :data:`_NEGATED`): a pick is
    never guessed, nor read backwards.
    """
    body, _start, spans = _visible(text, echo_of)
    body = _masked(body, spans)
    body = _BOTH.sub(lambda m: "\0" * len(m.group()), body)
    lead = _LEADING_PICK.match(body)
    if lead and not _ARTICLE.match(body[lead.start(1) :]):
        return None if _negated(body, lead.start(1)) else lead.group(1).upper()
    for found in ([m for p in _STATED for m in p.finditer(body)], list(_MENTION.finditer(body))):
        letters = {m.group(1).upper() for m in found}
        if any(_negated(body, m.start(1)) for m in found):
            return None
        if len(letters) == 1:
            return letters.pop()
        if letters:
            return None
    return None


# -- RankGPT permutations -----------------------------------------------------------------------
#: rank_llm's ``clean_ranking_response`` reads these as digits (superscript, subscript, circled,
#: negative circled, full-width and 🄀… digits), in its order and with its values
_FAKE_DIGITS = str.maketrans(
    "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
    "0123456789012345678912345678912345678901234567890123456789",
)


def parse_permutation(text: str | None, n: int, echo_of: Prompt = None) -> tuple[list[int], dict[str, int]]:
    """A permutation of ``0..n-1`` (best first) from a RankGPT answer, and what was repaired.

    The rule is RankGPT's as castorini/rank_llm applies it (``receive_permutation`` and
    ``clean_ranking_response``): the answer after its reasoning, its look-alike digits
    (superscripts, circled, full-width) read as digits, every run of digits an identifier;
    identifiers outside ``1..n`` are dropped, repeated ones kept at their first place, and the
    passages the answer leaves out appended in the order they were shown; an answer with no
    identifier keeps the shown order. Unlike rank_llm, identifiers inside an echo of the prompt
    ("Received passage [10].", "e.g., [1] > [2]") and in an unterminated ``<think>`` are not read
    (the answer is then unparseable: no identifier, every passage appended).

    Returns:
        ``(order, counts)``, ``counts`` = ``{"unknown": ids outside 1..n, "duplicates": repeated
        ids, "missing": ids appended}`` (``missing == n``: no ranking at all).
    """
    body, _start, spans = _visible(text, echo_of)
    ids = [int(x) - 1 for x in re.findall(r"\d+", _masked(body, spans).translate(_FAKE_DIGITS))]
    seen: list[int] = []
    unknown = duplicates = 0
    for i in ids:
        if not 0 <= i < n:
            unknown += 1
        elif i in seen:
            duplicates += 1
        else:
            seen.append(i)
    missing = [i for i in range(n) if i not in seen]
    return seen + missing, {"unknown": unknown, "duplicates": duplicates, "missing": len(missing) if seen else n}


# -- ALCE citations ------------------------------------------------------------------------------
STATUSES = ("cited", "out_of_range", "no_citation", "empty")
_BRACKET = re.compile(r"\[\s*(\d+(?:\s*[,;\-\u2013]\s*\d+)*)\s*\]")
#: a range inside a bracket: "[1-3]", "[2–4]" (hyphen or en dash)
_RANGE = re.compile(r"(\d+)\s*[\-\u2013]\s*(\d+)")
_HEADER = re.compile(r"Document\s*\[\s*\d+\s*\]\s*\(\s*Title:")


def _bracket_numbers(inner: str, k: int) -> list[int]:
    """The numbers a bracket's inside names: each listed one, and every one of a range (either way
    round) that names a passage (1..k), with the range's ends that do not (``[2020-2021]``: two
    numbers out of range, not two thousand)."""
    out: list[int] = []
    for m in _RANGE.finditer(inner):
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        out.extend(range(max(a, 1), min(b, k) + 1))
        out.extend(n for n in (a, b) if not 1 <= n <= k)
    out.extend(int(n) for n in re.findall(r"\d+", _RANGE.sub(" ", inner)))
    return out


@dataclass(frozen=True)
class ParsedAnswer:
    """What one answer cites: ``cited`` the context positions (1-based, sorted, each once),
    ``out_of_range`` the numbers that name no passage, ``status`` one of :data:`STATUSES`,
    ``echoed`` whether it repeats a passage header or a bracketed number of the prompt (not read)."""

    cited: tuple[int, ...]
    out_of_range: tuple[int, ...]
    status: str
    echoed: bool = False


def parse_citations(text: str | None, k: int, echo_of: Prompt = None) -> ParsedAnswer:
    """The passages an answer to ALCE's prompt cites.

    A citation is a bracketed number, ``[1]``, ``[1][3]``, ``[1, 3]``, ``[1; 3]`` or a range
    ``[1-3]`` (every number from the first to the last, as ``[1][2][3]``), read after the
    reasoning, outside the echoes of the prompt (module) and outside repeated passage headers
    (``Document [6](Title: …)``: a model continuing the prompt's list of documents). Status:
    ``empty`` (no text, or only reasoning); ``no_citation``; ``out_of_range`` (a number outside
    1..k: dropped, those in range kept; an answer whose every number is out of range cites no
    passage); ``cited``. A passage is cited when its number appears at least once.

    ALCE (``eval.py``: ``re.findall(r"\\[\\d+", sentence)``) reads ``[1][3]`` alike; it reads only
    the first number of ``[1, 3]`` and of ``[1-3]`` and an unclosed ``[2`` at a cut, and reads echoed
    headers and reasoning as citations; here the list and the range count whole, an unclosed
    bracket does not, and an echo or reasoning is not read. (Without the range, ``[1-3]`` would be
    no citation at all.)
    """
    if text is None or not text.strip():
        return ParsedAnswer((), (), "empty")
    body, _start, spans = _visible(text, echo_of)
    if not body.strip():
        return ParsedAnswer((), (), "empty")
    body, headers = _HEADER.subn(lambda m: "\0" * len(m.group()), body)  # the same length: the echoes' offsets hold
    found = [(m.start(), m.group(1)) for m in _BRACKET.finditer(body)]
    kept = [inner for at, inner in found if not _inside(at, spans)]
    echoed = headers > 0 or len(kept) < len(found)  # counted where the echo held a citation, not for every quote of a passage
    numbers = [n for inner in kept for n in _bracket_numbers(inner, k)]
    if not numbers:
        return ParsedAnswer((), (), "no_citation", echoed)
    inside = tuple(sorted({n for n in numbers if 1 <= n <= k}))
    outside = tuple(sorted({n for n in numbers if not 1 <= n <= k}))
    return ParsedAnswer(inside, outside, "out_of_range" if outside else "cited", echoed)


#: the parsers by name (a prompt names the parser of its answers)
PARSERS: dict[str, Callable[..., Any]] = {
    "umbrela-grade": parse_umbrela_grade,
    "digit-grade": parse_digit_grade,
    "ab-pick": parse_pick,
    "rankgpt-permutation": parse_permutation,
    "alce-citations": parse_citations,
}


def get_parser(name: str) -> Callable[..., Any]:
    """The parser registered as ``name`` (:data:`PARSERS`); a clear error for an unknown name."""
    from sourcebias.core.errors import ConfigError

    if name not in PARSERS:
        raise ConfigError(f"unknown answer parser {name!r}; known: {', '.join(PARSERS)}")
    return PARSERS[name]
