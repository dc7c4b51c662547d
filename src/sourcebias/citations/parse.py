"""Reading the citations out of a generated answer, with every answer's status counted.

The parser is ``alce-citations`` (:func:`sourcebias.llmcalls.parsers.parse_citations`, where
every LLM stage's parsers are): a citation is a bracketed number, ``[1]``, ``[1][3]``, ``[1, 3]``
or ``[1; 3]`` (ALCE's and TREC RAG's form, and the variants small models write). Statuses:

* ``empty``: the answer has no text (a backend that returned nothing, or only a reasoning block);
* ``no_citation``: no bracketed number at all (the model ignored the instruction, or refused);
* ``out_of_range``: at least one number outside 1..k: those numbers are dropped (they match no
  passage) and the ones in range kept; an answer whose every number is out of range cites no
  passage (``--uncited`` decides whether it counts as citing none or is left out);
* ``cited``: every number names a passage.

A passage is cited when its number appears at least once; how often does not count. The statuses
are counted in the output, so a study whose generator did not cite says so.

What the answer repeats of its prompt is not a citation: a repeated passage header, ``Document
[n](Title: ...)`` as the prompt writes it (small models often continue the prompt's list of
documents, inventing ``Document [6]``), and any bracketed number inside a verbatim copy of the
prompt of four words or more (the instruction's "use [1][2][3]", the demonstration's answer).
Those are removed before the citations are read, and the answer is marked ``echoed`` (counted
apart; an answer that quotes a passage without its bracketed numbers is not). A reasoning model's
``<think>`` block is not read either.
"""

from __future__ import annotations

from sourcebias.llmcalls.parsers import STATUSES, ParsedAnswer, parse_citations

__all__ = ["STATUSES", "ParsedAnswer", "parse_citations"]
