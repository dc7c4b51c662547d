"""Tokens longer than 255 UTF-16 units are cut as Lucene's StandardTokenizer cuts them.

Lucene's scanner buffer holds ``maxTokenLength`` = 255 chars and does not grow: a token that
fills it ends at the last place the grammar accepts within it, and the rest is scanned afresh as
the next token (``StandardTokenizerImpl.zzRefill``, ``StandardTokenizer.setMaxTokenLength``).
The development corpora hold no such token, so this is checked on constructed text: each expected
list below is Lucene 9.9.1's ``EnglishAnalyzer`` output (Anserini 0.24.0's jar, the one
``benchmarks/compare_lucene_pyserini.py`` uses), written out here by its rule (slices of the
input) and checked equal to Lucene's printed terms when the test was written.
"""

from __future__ import annotations

import pytest

from sourcebias.retrieval.lexical import EnglishAnalyzer

CASES = [
    # a 300-letter word: 255, then the 45 left
    ("a" * 300, ["a" * 255, "a" * 45]),
    # a DNA string: cut inside a base quartet
    ("acgt" * 75, ["acgt" * 63 + "acg", "t" + "acgt" * 11]),
    # a URL whose path holds a long word; the parts before it are tokens of their own
    ("see https://example.org/" + "x" * 300 + " tail", ["see", "http", "example.org", "x" * 255, "x" * 45, "tail"]),
    # exactly 255 stays whole; 256 leaves one letter (Porter turns the first piece's final y into i)
    ("x" * 255 + " " + "y" * 256, ["x" * 255, "y" * 254 + "i", "y"]),
    # 600 letters: three tokens
    ("z" * 600, ["z" * 255, "z" * 255, "z" * 90]),
    # letters outside the BMP are two UTF-16 units: 127 of them (254 units), never half a pair
    ("\U0001d400" * 200, ["\U0001d400" * 127, "\U0001d400" * 73]),
    # the 255th char is a '.' between letters, where the grammar does not accept: the token ends
    # before it, and the rest is scanned afresh (the '.' alone is no token)
    ("a" * 254 + ".b" + "c" * 50, ["a" * 254, "b" + "c" * 50]),
    # the possessive filter sees the last piece
    ("x" * 300 + "'s", ["x" * 255, "x" * 45]),
    # numbers and words joined by '_' (ExtendNumLet) are cut the same way
    ("1" * 300, ["1" * 255, "1" * 45]),
    ("ab_" * 100, ["ab_" * 85, "ab_" * 15]),
    # an accented letter inside: 255 chars (U+00E9 is one unit)
    ("q" * 253 + "\u00e9" + "r" * 10, ["q" * 253 + "\u00e9r", "r" * 9]),
    # a combining accent just after the cut starts the next scan, which skips it
    ("q" * 254 + "e\u0301" + "r" * 10, ["q" * 254 + "e", "r" * 10]),
    # Katakana and Hangul runs
    ("\u30ab" * 300, ["\u30ab" * 255, "\u30ab" * 45]),
    ("\ud55c" * 300, ["\ud55c" * 255, "\ud55c" * 45]),
    # each piece is stemmed alone (Porter: "...walkingwal" -> "...walkingw", "king...walking" -> "...walk")
    ("walking" * 40, ["walking" * 36 + "w", "king" + "walking" * 2 + "walk"]),
    ("The BRCA1 sequence " + "ACGTTGCA" * 40 + " was read.", ["brca1", "sequenc", "acgttgca" * 31 + "acgttgc", "a" + "acgttgca" * 8, "read"]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=range(len(CASES)))
def test_a_long_token_is_cut_as_lucene_cuts_it(text, expected):
    assert EnglishAnalyzer()(text) == expected


def test_the_cut_counts_in_the_document_length():
    """BM25's length is the number of tokens: a 600-letter word is three, as in Lucene's norms."""
    from sourcebias.data.corpus import Corpus
    from sourcebias.retrieval import BM25

    corpus = Corpus(["d1", "d2"], ["human", "human"], ["", ""], ["z" * 600, "z z z"])
    bm25 = BM25()
    run = bm25.retrieve(corpus, {"q": "z" * 255}, depth=2)
    assert run.keys("q") == [("d1", "human")]  # only d1 holds the 255-letter token
    assert EnglishAnalyzer()("z" * 600 + " word") == ["z" * 255, "z" * 255, "z" * 90, "word"]
