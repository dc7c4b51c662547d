"""The English analyzer's fast path gives exactly the terms and term ids of the implementation it
replaced, on every document and query of both development corpora; the Porter stemmer that sends
most words to PyStemmer's compiled Snowball Porter stems as NLTK's reference implementation does,
on 300,000 generated words built to reach every rule.

The reference below is a verbatim copy of ``EnglishAnalyzer``'s analysis as it was before the fast
path (per-chunk loop in Python, NLTK imported whole), kept here as the yardstick; its output was
checked against Lucene 9.9.1 on these corpora (``benchmarks/compare_lucene_pyserini.py``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sourcebias.data.corpus import join_title_text
from sourcebias.retrieval import analyzer as lexical_analyzer
from sourcebias.retrieval.analyzer import _IGNORED_HEAD, _SIMPLE_LOWER, _TOKEN_CHAR, LUCENE_ENGLISH_STOP_WORDS, EnglishAnalyzer


class ReferenceAnalyzer:
    """The analyzer before the fast path (sourcebias at commit 87af36e), NLTK imported whole."""

    def __init__(self):
        import regex
        from nltk.stem.porter import PorterStemmer

        self.stopwords = LUCENE_ENGLISH_STOP_WORDS
        self._word = regex.compile(r"(?wV1)\b\S.*?\b", regex.DOTALL)
        self._is_token = regex.compile(_TOKEN_CHAR).search
        self._head = regex.compile(_IGNORED_HEAD)
        stemmer = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
        self._stem = lambda w: stemmer.stem(w, to_lowercase=False)
        self._term_of: dict[str, str | None] = {}
        self._chunk_cache: dict[str, tuple[str, ...]] = {}

    def _term(self, token):
        t = self._head.sub("", token)
        if not t or not self._is_token(t):
            self._term_of[token] = None
            return None
        if len(t) > 2 and t[-1] == "s" and t[-2] in "'\u2019\uff07":
            t = t[:-2]
        if t in self.stopwords or not t:
            term = None
        else:
            term = self._stem(t) if self._stem is not None and len(t) > 2 else t
        self._term_of[token] = term
        return term

    def _chunk_terms(self, chunk):
        cache = self._term_of
        terms = []
        for tok in self._word.findall(chunk):
            term = cache[tok] if tok in cache else self._term(tok)
            if term is not None:
                terms.append(term)
        out = tuple(terms)
        self._chunk_cache[chunk] = out
        return out

    def __call__(self, text):
        chunks = self._chunk_cache
        out = []
        if "\u0130" in text or "\u03a3" in text:
            text = text.translate(_SIMPLE_LOWER)
        for chunk in text.lower().split():
            terms = chunks.get(chunk)
            if terms is None:
                terms = self._chunk_terms(chunk)
            out.extend(terms)
        return out

    def to_ids(self, texts, vocab, *, grow):
        out = []
        get = vocab.get
        for text in texts:
            ids = []
            for term in self(text):
                tid = get(term)
                if tid is None:
                    if not grow:
                        continue
                    tid = vocab[term] = len(vocab)
                ids.append(tid)
            out.append(ids)
        return out


def _texts(folder: Path) -> tuple[list[str], list[str]]:
    """Every document of every source (title and text joined, as retrievers index them) and every query."""
    docs = []
    for path in sorted((folder / "corpus").glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            docs.extend(join_title_text(r.get("title") or "", r["text"]) for r in map(json.loads, fh))
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh]
    return docs, queries


@pytest.mark.parametrize("name", ["nq_utd", "nfcorpus"])
def test_fast_analysis_gives_the_old_term_ids_on_every_document(name, request):
    docs, queries = _texts(request.getfixturevalue(name))
    new, old = EnglishAnalyzer(), ReferenceAnalyzer()
    v_new, v_old = {}, {}
    ids_new = new.to_ids(docs, v_new, grow=True)
    assert ids_new == old.to_ids(docs, v_old, grow=True)
    assert list(v_new.items()) == list(v_old.items())  # same terms, numbered in the same order
    assert new.to_ids(queries, v_new, grow=False) == old.to_ids(queries, v_old, grow=False)
    assert len(v_new) == len(v_old)  # queries add nothing without grow
    # a second corpus through the same (now warm) analyzer, as the sole corpora are: a new vocabulary
    half = docs[len(docs) // 2 :]
    w_new, w_old = {}, {}
    assert new.to_ids(half, w_new, grow=True) == old.to_ids(half, w_old, grow=True)
    assert list(w_new.items()) == list(w_old.items())
    # queries growing a vocabulary, and the terms themselves
    assert new.to_ids(queries, {}, grow=True) == old.to_ids(queries, {}, grow=True)
    assert [new(q) for q in queries] == [old(q) for q in queries]
    assert sum(map(len, ids_new)) > 100_000


def _flat_terms(analyzer: EnglishAnalyzer, texts: list[str]) -> list[list[str]]:
    """:meth:`EnglishAnalyzer.to_flat_ids`'s result as each text's terms (through its vocabulary)."""
    vocab: dict[str, int] = {}
    lengths, flat = analyzer.to_flat_ids(texts, vocab)
    term = {i: t for t, i in vocab.items()}
    terms, at = [], 0
    for n in lengths.tolist():
        terms.append([term[i] for i in flat[at : at + n].tolist()])
        at += n
    assert at == len(flat)
    return terms


@pytest.mark.parametrize("name", ["nq_utd", "nfcorpus"])
def test_flat_analysis_in_bulk_gives_the_old_terms_on_every_document(name, request):
    """to_flat_ids (chunks looked up in bulk; a later call on texts already analysed reuses their
    terms) gives each text the reference's terms: the whole corpus, then one source's half (all
    known), then known and new texts mixed, through the same analyzer."""
    docs, queries = _texts(request.getfixturevalue(name))
    new, old = EnglishAnalyzer(), ReferenceAnalyzer()
    v_flat, v_old = {}, {}
    lengths, flat = new.to_flat_ids(docs, v_flat)
    ids_old = old.to_ids(docs, v_old, grow=True)
    assert list(v_flat.items()) == list(v_old.items())  # a fresh analyzer: numbered by first occurrence
    assert lengths.tolist() == [len(x) for x in ids_old] and flat.tolist() == [i for x in ids_old for i in x]
    expected = [old(t) for t in docs]
    half = len(docs) // 2
    assert _flat_terms(new, docs[half:]) == expected[half:]
    mixed = docs[:50] + queries[:50] + docs[half : half + 50]
    assert _flat_terms(new, mixed) == expected[:50] + [old(q) for q in queries[:50]] + expected[half : half + 50]


def test_texts_that_exercise_the_rare_branches():
    texts = [
        "\u0130stanbul \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 dogs' Xiaomi\u2019s 'organic' \u0301abc a-b-a a-b-a \u2605 \U0001f600 \uff07quoted\uff07s",
        "",
        "   \t\n ",
        "the and of",
        "repeat repeat repeat REPEAT Repeat",
        # words without a letter a-z are their own Porter stems (no stemming call): NLTK agrees
        "1,234.5 2011 日本語 αβγδες ٣٤٥٦ ⅲⅳⅴ ééé 123ed 45ing αing",
    ]
    new, old = EnglishAnalyzer(), ReferenceAnalyzer()
    v_new, v_old = {}, {}
    assert new.to_ids(texts, v_new, grow=True) == old.to_ids(texts, v_old, grow=True)
    assert list(v_new.items()) == list(v_old.items())
    assert [new(t) for t in texts] == [old(t) for t in texts]
    assert new.to_ids(["unknown words only", "repeat"], v_new, grow=False) == [[], [v_new["repeat"]]]


def _generated_words(n: int, seed: int) -> list[str]:
    """``n`` seeded words: random letters or consonant-vowel syllables, then one or two suffixes
    that Porter's rules strip or rewrite (with the ``y``, double-consonant and ``bl``/``log``
    cases where Snowball's Porter departs from the reference), some with digits."""
    import random

    rng = random.Random(seed)
    suffixes = (  # noqa: SIM905 (a list of suffixes reads best as one text)
        "|s|es|ies|sses|ss|ed|eed|ing|y|ly|ational|tional|enci|anci|izer|bli|abli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness"
        "|fulness|ousness|aliti|iviti|biliti|logi|icate|ative|alize|iciti|ical|ful|ness|al|ance|ence|er|ic|able|ible|ant|ement|ment|ent"
        "|ion|sion|tion|ou|ism|ate|iti|ous|ive|ize|e|ll|at|bl|iz|ied|ying|yed|ys|ings|edly|ingly|ably|ibly|ology|ologies|logy|bly|blies"
        "|yy|ey|ay|oy|kked|cced|hhing|vving|zzed"
    ).split("|")
    onsets = "b c d f g h j k l m n p r s t v w y z st tr pl bl ch sh th qu x".split()  # noqa: SIM905
    vowels = "a e i o u y ee oa ai ou ie ea".split()  # noqa: SIM905
    words = []
    for _ in range(n):
        if rng.random() < 0.5:
            core = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 9)))
        else:
            core = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 4)))
        word = core + rng.choice(suffixes) + (rng.choice(suffixes) if rng.random() < 0.3 else "")
        words.append(word + str(rng.randint(0, 99)) if rng.random() < 0.05 else word)
    return words


def test_porter_stems_as_the_reference_implementation_on_generated_words():
    """Lucene's Porter is Martin Porter's reference implementation (NLTK's MARTIN_EXTENSIONS mode);
    sourcebias's Porter asks PyStemmer's compiled Snowball Porter for the words on which the two
    cannot differ. Every generated word, and words of each kind where Snowball departs, stem as
    NLTK's reference does."""
    from nltk.stem.porter import PorterStemmer

    reference = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
    ours = lexical_analyzer._stemmer("porter")
    departures = ["trekked", "revving", "hyyed", "fistyying", "gerontology", "ideologies", "possibly", "sensibly", "biology", "naïve", "o'neil"]
    words = sorted({w for w in _generated_words(300_000, seed=0) if len(w) > 2}) + departures
    assert len(words) > 250_000
    expected = [reference.stem(w, to_lowercase=False) for w in words]
    assert [ours(w) for w in words] == expected
    assert [ours(w) for w in departures] == ["trek", "rev", "hy", "fisti", "gerontolog", "ideolog", "possibl", "sensibl", "biologi", "naïv", "o'neil"]
    # on these words Snowball's Porter alone would be wrong: the split is needed
    import Stemmer

    snowball = Stemmer.Stemmer("porter").stemWord
    assert sum(snowball(w) != e for w, e in zip(words, expected)) > 300


def test_porter_without_the_package_import_is_nltks_stemmer(nfcorpus):
    import nltk
    from nltk.stem.porter import PorterStemmer

    before = {n: m for n, m in sys.modules.items() if n.startswith("nltk")}
    isolated = lexical_analyzer._porter_without_nltk_package()
    # sys.modules is as it was: the real package and its modules, nothing of the shells
    assert {n: m for n, m in sys.modules.items() if n.startswith("nltk")} == before
    assert sys.modules["nltk"] is nltk
    assert isolated is not PorterStemmer and isolated.__module__ == PorterStemmer.__module__
    assert Path(sys.modules[isolated.__module__].__file__).samefile(__import__("inspect").getfile(isolated))
    a, b = isolated(mode=isolated.MARTIN_EXTENSIONS), PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
    docs, queries = _texts(nfcorpus)
    words = sorted({w for t in docs + queries for w in t.lower().split() if len(w) > 2})
    assert len(words) > 30_000
    assert [a.stem(w, to_lowercase=False) for w in words] == [b.stem(w, to_lowercase=False) for w in words]
