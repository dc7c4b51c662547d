"""Marks and format characters after a character belong to it (UAX #29 rule WB4: X (Extend |
Format)* -> X), so a word in decomposed form (NFD: "e" + U+0301) is one token, as in Lucene's
StandardTokenizer, also before a mid-word character ("cafe" + U+0301 + "'s", "e" + U+0301 + ":b").
The regex module broke such a word at the mark; nine of these cases differed from Lucene before,
and four more with a zero-width joiner (issue 41).

Each expected list is Lucene 9.9.1's ``EnglishAnalyzer`` output (Anserini 0.24.0's jar, as
``benchmarks/compare_lucene_pyserini.py`` uses it), printed by Lucene when the test was written.
A Thai mark after a non-word character starts a token of its own there (Lucene skips the
character alone and starts a South-East Asian run at the mark).
"""

from __future__ import annotations

import pytest

from sourcebias.retrieval.lexical import EnglishAnalyzer

CASES = [
    ("e\u0301:b", ["e\u0301:b"]),
    ("cafe\u0301's menu", ["cafe\u0301", "menu"]),
    ("ae\u0301.b", ["ae\u0301.b"]),
    ("x,\u0e31", ["x", "\u0e31"]),
    ("'\u0e31", ["\u0e31"]),
    ("nai\u0308ve", ["nai\u0308v"]),
    ("re\u0301sume\u0301 de\u0301ja\u0300", ["re\u0301sume\u0301", "de\u0301ja\u0300"]),
    ("\u0301abc", ["abc"]),
    ("a\u200db", ["a\u200db"]),
    ("1\u20e3", ["1\u20e3"]),
    ("\U0001f44d\U0001f3fd", ["\U0001f44d\U0001f3fd"]),
    ("\u2764\ufe0f", ["\u2764\ufe0f"]),
    ("4\u0301,997", ["4\u0301,997"]),
    ("o\u0308l'\u0301s", ["o\u0308l'\u0301"]),
    ("a\xad.b", ["a\xad.b"]),
    ("e\u0301\u0301.x", ["e\u0301\u0301.x"]),
    ("x\u0301_y", ["x\u0301_y"]),
    # a zero-width joiner after a character belongs to it too (WB4), also before a mid-word
    # character; between two emoji it joins them, but after a letter it does not join an emoji
    ("a\u200d.b", ["a\u200d.b"]),
    ("\U0001d400\u200d'b", ["\U0001d400\u200d'b"]),
    ("9\u200d,5", ["9\u200d,5"]),
    ("e\u0301\u200d:b", ["e\u0301\u200d:b"]),
    ("a\u200d\U0001f468", ["a\u200d", "\U0001f468"]),
    ("xx\u200d\u2764", ["xx\u200d", "\u2764"]),
    ("\U0001f468\u200d\U0001f469", ["\U0001f468\u200d\U0001f469"]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=range(len(CASES)))
def test_marks_stay_with_their_character_as_in_lucene(text, expected):
    assert EnglishAnalyzer()(text) == expected
