"""Reading the citations out of a generated answer, with every answer's status counted.

An answer cites with bracketed numbers: ``[1]``, ``[1][3]``, ``[1, 3]`` or ``[1; 3]`` (ALCE's and
TREC RAG's form, and the variants small models write). Rules, in order:

* ``empty``: the answer has no text (a backend that returned nothing);
* ``no_citation``: no bracketed number at all (the model ignored the instruction, or refused);
* ``out_of_range``: at least one number outside 1..k: those numbers are dropped (they match no
  passage) and the ones in range kept;
* ``cited``: every number names a passage.

A passage is cited when its number appears at least once; how often does not count. The statuses
are counted in the output, so a study whose generator did not cite says so.

A repeated passage header, ``Document [n](Title: ...)`` as the prompt writes it, is not a
citation: small models often continue the prompt's list of documents (inventing ``Document [6]``)
instead of answering. Such headers are removed before the citations are read, and the answer is
marked ``echoed`` (counted apart).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STATUSES = ("cited", "out_of_range", "no_citation", "empty")
_BRACKET = re.compile(r"\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")
_NUMBER = re.compile(r"\d+")
_HEADER = re.compile(r"Document\s*\[\s*\d+\s*\]\s*\(\s*Title:")


@dataclass(frozen=True)
class ParsedAnswer:
    """What one answer cites: ``cited`` the context positions (1-based, sorted, each once),
    ``out_of_range`` the numbers that name no passage, ``status`` one of :data:`STATUSES`."""

    cited: tuple[int, ...]
    out_of_range: tuple[int, ...]
    status: str
    echoed: bool = False


def parse_citations(text: str | None, k: int) -> ParsedAnswer:
    """The passages an answer cites, by the rules of the module docstring.

    Args:
        text: The generated answer.
        k: How many passages the context held (numbered 1..k).

    Returns:
        The :class:`ParsedAnswer`.
    """
    if text is None or not text.strip():
        return ParsedAnswer((), (), "empty")
    body, headers = _HEADER.subn(" ", text)
    numbers = [int(n) for m in _BRACKET.finditer(body) for n in _NUMBER.findall(m.group(1))]
    if not numbers:
        return ParsedAnswer((), (), "no_citation", headers > 0)
    inside = tuple(sorted({n for n in numbers if 1 <= n <= k}))
    outside = tuple(sorted({n for n in numbers if not 1 <= n <= k}))
    return ParsedAnswer(inside, outside, "out_of_range" if outside else "cited", headers > 0)
