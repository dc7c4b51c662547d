"""BM25 and TF-IDF against hand-computed scores; the Elasticsearch-like English analyzer."""

import math

import numpy as np
import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.data import Corpus
from sourcebias.retrieval import BM25, EnglishAnalyzer, SelfMatchFilter, TfIdf, build_retriever


def test_english_analyzer_like_elasticsearch():
    a = EnglishAnalyzer()
    # possessive removed, numbers kept whole, one-letter words kept, stop words dropped, Porter stems
    terms = a("Xiaomi’s SU7 measures 4,997 mm; the U.S. e-mail is running")
    assert terms == ["xiaomi", "su7", "measur", "4,997", "mm", "u.", "e", "mail", "run"]
    assert a("'Organic' foods and the dogs' food") == ["organ", "food", "dog", "food"]
    assert a("The and of") == []
    assert EnglishAnalyzer(stemmer=None, stopwords=None)("The Cats") == ["the", "cats"]


# Lucene 9.9.1's PorterStemFilter (through Pyserini 0.24.0), which follows Martin Porter's
# reference C implementation: "bli" -> "ble" and "logi" -> "log" are its departures from the
# 1980 paper (Snowball's "porter", the paper's algorithm, gives "possibli" and "analogi");
# "fulli" is left alone (NLTK's own extensions would make "carefully" "care").
LUCENE_PORTER = {
    "biological": "biolog",
    "analogy": "analog",
    "possibly": "possibl",
    "probably": "probabl",
    "sensibility": "sensibl",
    "generalization": "gener",
    "carefully": "carefulli",
    "hopefully": "hopefulli",
    "running": "run",
    "measures": "measur",
    "caresses": "caress",
    "agreed": "agre",
}


def test_stemmer_is_lucenes_porter():
    a = EnglishAnalyzer()
    assert a(" ".join(LUCENE_PORTER)) == list(LUCENE_PORTER.values())
    # the paper's algorithm (PyStemmer's Snowball "porter") differs exactly on the departures
    import Stemmer

    paper = Stemmer.Stemmer("porter")
    assert [paper.stemWord(w) for w in ("possibly", "analogy")] == ["possibli", "analogi"]


# The English analyzer's output for these texts, as Lucene 9.9.1 gives it: Anserini's default
# analyzer (StandardTokenizer, EnglishPossessiveFilter, LowerCaseFilter, the English stop set,
# PorterStemFilter — Elasticsearch's ``english``) through Pyserini 0.24.0's
# ``Analyzer(get_lucene_analyzer()).analyze(text)``, copied here (benchmarks/compare_lucene_pyserini.py
# says how to set Pyserini up).
LUCENE_ANALYSIS = [
    # possessive, numbers kept whole, 'U.S.' -> u.s -> Porter 'u.'
    ("Xiaomi\u2019s SU7 measures 4,997 mm; the U.S. e-mail is running", ["xiaomi", "su7", "measur", "4,997", "mm", "u.", "e", "mail", "run"]),
    # leading/trailing apostrophes, inner apostrophes kept, possessives removed
    ("'Organic' foods and the dogs' food, rock'n'roll, don\u2019t, O'Neil's", ["organ", "food", "dog", "food", "rock'n'rol", "don\u2019t", "o'neil"]),
    # (R), TM and (c) are tokens (emoji: Extended_Pictographic)
    ("Juice Plus+\u00ae and Windows\u2122 \u00a9 2023 Nutrition Facts", ["juic", "plu", "\u00ae", "window", "\u2122", "\u00a9", "2023", "nutrit", "fact"]),
    # numbers with separators, letters after digits, underscores, double hyphens
    ("1,000.5 kg at 3.14abc, ab_cd _x x_ a--b 1.a a.b U.S.A.", ["1,000.5", "kg", "3.14abc", "ab_cd", "_x", "x_", "b", "1", "a.b", "u.s.a"]),
    # URLs and e-mail addresses are split as UAX #29 splits them
    ("see https://example.com/a-b?x=1 or mail foo@bar.com", ["see", "http", "example.com", "b", "x", "1", "mail", "foo", "bar.com"]),
    # emoji: modifiers, flags (two per token), ZWJ and keycap sequences; lone '#' and '*' are not
    (
        "great \U0001f64f\U0001f3fc news \U0001f1e8\U0001f1f3\U0001f1ea\U0001f1fa family \U0001f468\u200d\U0001f469\u200d\U0001f467 #\ufe0f\u20e3 # * \u2764\ufe0f\u200d\U0001f525 \U0001f642\U0001f642 a\U0001f642 1\U0001f642",
        [
            "great",
            "\U0001f64f\U0001f3fc",
            "new",
            "\U0001f1e8\U0001f1f3",
            "\U0001f1ea\U0001f1fa",
            "famili",
            "\U0001f468\u200d\U0001f469\u200d\U0001f467",
            "#\ufe0f\u20e3",
            "\u2764\ufe0f\u200d\U0001f525",
            "\U0001f642",
            "\U0001f642",
            "\U0001f642",
            "1",
            "\U0001f642",
        ],
    ),
    # format characters (word joiner, soft hyphen) and combining marks
    ("\u2060event e\u2060vent \u00adsoft a\u0301b \u2019tis '90s", ["event", "e\u2060vent", "soft", "a\u0301b", "ti", "90"]),
    # lower case code point by code point (no final sigma; dotted I -> i)
    ("\u03a3\u039f\u03a6\u0399\u0391\u03a3 \u0130zmir NA\u00cfVE Caf\u00e9", ["\u03c3\u03bf\u03c6\u03b9\u03b1\u03c3", "izmir", "na\u00efv", "caf\u00e9"]),
]


@pytest.mark.parametrize("text, terms", LUCENE_ANALYSIS)
def test_analysis_equals_lucenes(text, terms):
    assert EnglishAnalyzer()(text) == terms


def small_corpus():
    docs = ["cat cat dog", "dog bird", "cat", "fish fish fish fish"]
    return Corpus([f"d{i}" for i in range(4)], ["human"] * 4, [""] * 4, docs)


def lucene_bm25(query_terms, docs, k1=1.2, b=0.75):
    """Independent BM25 (Lucene 8+: idf = ln(1 + (N - n + .5)/(n + .5)), no (k1+1) factor)."""
    toks = [d.split() for d in docs]
    avgdl = sum(map(len, toks)) / len(toks)
    out = []
    for t in toks:
        s = 0.0
        for q in query_terms:
            n = sum(q in x for x in toks)
            if n == 0:
                continue
            idf = math.log(1 + (len(toks) - n + 0.5) / (n + 0.5))
            tf = t.count(q)
            s += idf * tf / (tf + k1 * (1 - b + b * len(t) / avgdl))
        out.append(s)
    return out


def no_stem():
    return EnglishAnalyzer(stemmer=None, stopwords=None)


def test_bm25_matches_hand_computed_scores():
    c = small_corpus()
    run = BM25(analyzer=no_stem()).retrieve(c, {"q": "cat dog"}, depth=10)
    expected = lucene_bm25(["cat", "dog"], c.texts)
    got = {c.doc_ids[p]: s for p, s in zip(run.positions["q"], run.scores["q"])}
    # d3 ("fish ...") shares no term: not returned, as a search engine would not.
    assert set(got) == {"d0", "d1", "d2"}
    for i in range(3):
        assert got[f"d{i}"] == pytest.approx(expected[i], rel=1e-5)
    assert [c.doc_ids[p] for p in run.positions["q"]] == sorted(got, key=lambda d: -got[d])


def test_tfidf_matches_hand_computed_cosine():
    c = small_corpus()
    run = TfIdf(analyzer=no_stem()).retrieve(c, {"q": "cat"}, depth=10)
    toks = [d.split() for d in c.texts]
    vocab = sorted({w for t in toks for w in t})
    N = len(toks)
    idf = {w: math.log((1 + N) / (1 + sum(w in t for t in toks))) + 1 for w in vocab}  # smoothed idf

    def vec(t):
        v = np.array([t.count(w) * idf[w] for w in vocab])
        return v / np.linalg.norm(v)

    q = vec(["cat"])
    expected = {f"d{i}": float(vec(t) @ q) for i, t in enumerate(toks)}
    got = {c.doc_ids[p]: s for p, s in zip(run.positions["q"], run.scores["q"])}
    assert set(got) == {"d0", "d2"}
    for d in got:
        assert got[d] == pytest.approx(expected[d], rel=1e-5)


def test_query_without_known_terms_returns_nothing():
    run = BM25().retrieve(small_corpus(), {"q": "zebra", "r": "the"}, depth=5)
    assert len(run.positions["q"]) == 0 and len(run.positions["r"]) == 0


def test_self_matches_removed_only_when_asked():
    c = Corpus(["q1", "q1", "d2"], ["human", "llm", "human"], ["", "", ""], ["cat", "cat", "cat dog"])
    kept = BM25().retrieve(c, {"q1": "cat"}, depth=5)
    assert len(kept.positions["q1"]) == 3 and "self_matches_removed" not in kept.info
    removed = (BM25() >> SelfMatchFilter()).retrieve(c, {"q1": "cat"}, depth=5)
    assert [c.doc_ids[p] for p in removed.positions["q1"]] == ["d2"]
    assert removed.info["self_matches_removed"] == 2
    # The filter asks the first stage for one extra document per source, so a full list remains.
    many = Corpus(["q1", "q1"] + [f"d{i}" for i in range(6)], ["human", "llm"] + ["human"] * 6, [""] * 8, ["cat"] * 8)
    cut = (BM25() >> SelfMatchFilter()).retrieve(many, {"q1": "cat"}, depth=4)
    assert len(cut.positions["q1"]) == 4 and "q1" not in [many.doc_ids[p] for p in cut.positions["q1"]]


def test_registry_parameters_and_errors():
    r = build_retriever("bm25:k1=0.9,b=0.4")
    assert (r.k1, r.b, r.name) == (0.9, 0.4, "bm25:k1=0.9,b=0.4")
    with pytest.raises(ConfigError, match="unknown retriever 'bm52'"):
        build_retriever("bm52")
    with pytest.raises(ConfigError, match="unknown option 'k3'"):
        build_retriever("bm25:k3=1")
    with pytest.raises(ConfigError, match="expects a number"):
        build_retriever("bm25:k1=high")
