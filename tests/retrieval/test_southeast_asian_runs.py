"""A run of South-East Asian letters (Thai, Lao, Khmer, Myanmar: Line_Break Complex_Context) is
one token, as in Lucene's StandardTokenizer, whose grammar keeps such runs whole
(``{ComplexContextEx}+``), where UAX #29 alone breaks between their letters.

Each expected list is Lucene 9.9.1's ``EnglishAnalyzer`` output (Anserini 0.24.0's jar, as
``benchmarks/compare_lucene_pyserini.py`` uses it), printed by Lucene when the test was written;
the long ones are written out by the rule (slices of the input) and were checked equal too.
"""

from __future__ import annotations

import pytest

from sourcebias.retrieval.lexical import EnglishAnalyzer

CASES = [
    ("สวัสดีครับ", ["สวัสดีครับ"]),
    ("ภาษาไทย ง่าย", ["ภาษาไทย", "ง่าย"]),
    ("ไทยabc", ["ไทย", "abc"]),
    ("abcไทย", ["abc", "ไทย"]),
    ("ไทย๑๒๓", ["ไทย", "๑๒๓"]),  # Thai digits are numbers, not part of the run
    ("ไทย123", ["ไทย", "123"]),
    ("ພາສາລາວ", ["ພາສາລາວ"]),  # Lao
    ("ភាសាខ្មែរ", ["ភាសាខ្មែរ"]),  # Khmer
    ("မြန်မာဘာသာ", ["မြန်မာဘာသာ"]),  # Myanmar
    ("ไทย.ไทย", ["ไทย", "ไทย"]),
    ("ไทย-ไทย", ["ไทย", "ไทย"]),
    ("ๆ ไทยๆ", ["ๆ", "ไทยๆ"]),
    ("ฯลฯ", ["ฯลฯ"]),
    ("ั ไทย", ["ั", "ไทย"]),  # a Thai mark is part of its run, even at a chunk's start
    ("ไทย ัส", ["ไทย", "ัส"]),
    ("เมื่อวันที่ ๑ มกราคม ๒๕๖๗ ประเทศไทย", ["เมื่อวันที่", "๑", "มกราคม", "๒๕๖๗", "ประเทศไทย"]),
    ("ພາສາລາວ ແລະ ภาษาไทย", ["ພາສາລາວ", "ແລະ", "ภาษาไทย"]),
    # longer than 255 chars: cut at 255, the rest a token of its own (a mark included)
    ("สวัสดี" * 50, ["สวัสดี" * 42 + "สวั", "สดี" + "สวัสดี" * 7]),
    ("ก" * 254 + "ั" + "ข" * 20, ["ก" * 254 + "ั", "ข" * 20]),
    ("ไทย" * 100 + "abc", ["ไทย" * 85, "ไทย" * 15, "abc"]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=range(len(CASES)))
def test_a_south_east_asian_run_is_one_token_as_in_lucene(text, expected):
    assert EnglishAnalyzer()(text) == expected
