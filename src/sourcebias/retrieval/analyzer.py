"""The analyzer of the lexical retrievers: Elasticsearch's ``english`` analyzer, the analyzer of
the papers' BM25 (Cocktail ran BEIR's Elasticsearch BM25 with ``language="english"``).

Lucene's StandardTokenizer (UAX #29 word breaks, tokens over 255 UTF-16 units split), English
possessives removed, lower case, Lucene's English stop words, and Lucene's Porter stemmer (PyStemmer
where it agrees with Lucene, NLTK's reference Porter where it may not). Apart from BM25 and TF-IDF
(:mod:`.lexical`) because it is a machine of its own that any text-to-terms step reuses (segments,
audit features, analyses).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also bm25s's "en" list).
LUCENE_ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)


# The segments StandardTokenizer (Lucene 9) emits as tokens: those holding a letter or digit by
# the word-break property (ALetter, Hebrew_Letter, Numeric, Katakana: this includes symbols such
# as U+02C2 that are ALetter but not \w), an ideograph, Hiragana, a South-East Asian letter
# (Line_Break Complex_Context), or an emoji (Extended_Pictographic: also (c), (R), TM; a flag; a
# keycap). Segments of punctuation, lone combining marks or "_" are not tokens. Written as a
# character class because the regex module segments but has no notion of which segment is a word.
# Checked against Lucene 9.9.1 on every code point alone; what differs is Unicode's version
# (Lucene's tables predate Unicode 17, the regex module's): Lucene still counts as emoji the 672
# symbols that Unicode 17 took out of Extended_Pictographic (e.g. U+2605 BLACK STAR), and does not
# know the letters added since; tests/retrieval/test_lexical.py holds Lucene's output for examples of each rule.
_TOKEN_CHAR = (
    r"[\p{WB=ALetter}\p{WB=Hebrew_Letter}\p{WB=Numeric}\p{WB=Katakana}\p{Ideographic}\p{Script=Hiragana}"
    r"\p{Line_Break=Complex_Context}\p{Extended_Pictographic}\p{WB=Regional_Indicator}\u20e3]"
)
# What starts a segment but not Lucene's token: format and combining characters at the start of a
# whitespace-delimited chunk (UAX #29 WB4 attaches them to the preceding space; the regex module,
# segmenting the chunk alone, keeps them) and leading apostrophes (UAX #29 breaks between an
# apostrophe and the letter after it at a word's start: Lucene yields "organic" for "'organic";
# the regex module keeps them together).
_IGNORED_HEAD = r"^[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}'\u2019\uff07]+"
# A run of South-East Asian letters (Line_Break Complex_Context: Thai, Lao, Khmer, Myanmar, ...,
# their marks included) is one token of StandardTokenizer ({ComplexContextEx}+ in its grammar:
# the rule breaking such text into words is outside UAX #29), where UAX #29, and so the regex
# module, breaks between its letters; such segments are joined again.
_SA_RUN = r"(?:\p{Line_Break=Complex_Context}[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}]*)+"
#: Texts analysed in one batch by :meth:`EnglishAnalyzer.to_flat_ids`: their chunks (a Python
#: string each) are alive at once, about 15 MB for 4,096 passages of 58 words (180 MB for
#: 50,000: the peak of the whole evaluation at 100,000 documents); the per-batch array work is
#: negligible at this size.
FLAT_BATCH = 4096
#: Terms an analyzer remembers per analysed text, at most (a reference each: 8 bytes, besides
#: the texts kept as keys): the protocol indexes the mixed corpus, then each source's texts again.
TEXT_MEMO_TERMS = 10_000_000
#: The longest token Lucene's StandardTokenizer emits, in UTF-16 code units (Java chars):
#: StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH, Elasticsearch's ``max_token_length``. Its JFlex
#: scanner's buffer holds that many chars and does not grow (``setBufferSize``): when a token
#: fills it, the scanner ends the token at the last position the grammar accepts within the
#: buffer (``zzRefill`` reports the end of input), emits it, and scans on from there afresh, so a
#: longer word comes out as several tokens. (A surrogate pair is never split: a high surrogate in
#: the last place is held back, and the token is then at most 254 chars.)
MAX_TOKEN_LENGTH = 255
# Lucene's LowerCaseFilter lower-cases code point by code point (Java's Character.toLowerCase,
# the simple mapping), where str.lower() applies the full mapping ("İ" -> "i" + U+0307) and the
# final-sigma rule ("Σ" at a word's end -> "ς"): those two are mapped first.
_SIMPLE_LOWER = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})


def _utf16_length(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (Java's ``String.length()``)."""
    return len(text.encode("utf-16-le")) // 2


def _porter_stemmer_class() -> Any:
    """NLTK's ``PorterStemmer`` class, without NLTK's package import when NLTK is not loaded yet.

    ``import nltk.stem.porter`` runs ``nltk/__init__``, which imports most of NLTK (its
    collocations pull in SciPy's stats, its classifiers scikit-learn and pandas): about 3 s, for
    one pure-Python module that itself needs only ``nltk.redos``, ``nltk.stem.api`` and
    ``nltk.termsec``. So NLTK's own ``stem/porter.py`` is imported under two empty package
    shells (``nltk``, ``nltk.stem``, pointing at NLTK's folders) that are removed from
    ``sys.modules`` at once, together with every ``nltk.*`` module loaded meanwhile: a later
    ``import nltk`` anywhere in the process then imports the real package from scratch. The
    class is NLTK's unchanged code (``tests/retrieval/test_lexical_fast_analysis.py`` checks it stems
    every word of the development corpora as the fully imported NLTK does). When NLTK is already
    imported, or the shells do not suffice (a future NLTK whose ``porter.py`` needs more of its
    package), the ordinary import is used: slower, the same class. (Another thread importing
    ``nltk`` during those few milliseconds would see a shell; sourcebias builds analyzers in
    one thread.)
    """
    import sys

    if "nltk" not in sys.modules:
        try:
            return _porter_without_nltk_package()
        except (ImportError, AttributeError):  # the shells did not suffice: import NLTK whole
            pass
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer


def _porter_without_nltk_package() -> type:
    """``nltk.stem.porter.PorterStemmer`` imported under empty package shells; ``sys.modules``
    is left as it was found (any ``nltk`` modules already there are put back)."""
    import importlib
    import importlib.machinery
    import importlib.util
    import os
    import sys
    import types

    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed")

    def nltk_modules() -> list[str]:
        return [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]

    saved = {n: sys.modules.pop(n) for n in nltk_modules()}
    root = list(spec.submodule_search_locations)
    try:
        for name, path in (("nltk", root), ("nltk.stem", [os.path.join(p, "stem") for p in root])):
            shell = types.ModuleType(name)
            shell.__path__ = path
            shell.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            shell.__spec__.submodule_search_locations = path
            sys.modules[name] = shell
        return importlib.import_module("nltk.stem.porter").PorterStemmer
    finally:
        for name in nltk_modules():
            del sys.modules[name]
        sys.modules.update(saved)


# Words that Snowball's Porter (PyStemmer, compiled C) may stem otherwise than Lucene's Porter:
# Lucene's PorterStemmer is Martin Porter's reference implementation, whose step 2 rewrites
# "bli" (not only "abli") and "logi", and whose step 1b undoubles every double consonant but
# l, s, z, where Snowball's undoubles only bb dd ff gg mm nn pp rr tt (so "trekked", "yy"); and
# any word with a character outside a-z and 0-9 (the two implementations class such characters
# as they may). Such a word can only reach those rules if it holds "bl", "log" or one of those
# doubles, so every other word of a-z and 0-9 gets the same stem from either (checked on every
# word of the development corpora and on a million generated words; the suite checks 300,000,
# tests/retrieval/test_lexical_fast_analysis.py); the others, about 6% of nfcorpus's distinct
# words, go to NLTK's pure-Python reference stemmer.
_NEEDS_REFERENCE_PORTER = r"[^a-z0-9]|bl|log|([^aeioubdfgmnprtlsz])\1"


@functools.cache
def _stemmer(name: str) -> Callable[[str], str]:
    """A word -> stem function: ``"porter"`` is Lucene's Porter stemmer (the reference C
    implementation: NLTK's ``MARTIN_EXTENSIONS`` mode, with PyStemmer's compiled Snowball Porter
    for the words on which the two cannot differ), memoised per word and shared by every analyzer
    of the process; other names are PyStemmer's."""
    import Stemmer

    if name != "porter":
        return Stemmer.Stemmer(name).stemWord
    compiled = Stemmer.Stemmer("porter").stemWord
    needs_reference = re.compile(_NEEDS_REFERENCE_PORTER).search
    has_letter = re.compile("[a-z]").search

    @functools.cache
    def reference() -> Callable[..., str]:  # NLTK's stemmer, imported at its first word
        porter = _porter_stemmer_class()
        return porter(mode=porter.MARTIN_EXTENSIONS).stem

    # Every Porter rule strips or rewrites a suffix of the letters a-z (the one rule with an
    # empty suffix, step 1b's "(m=1 and *o) -> e", runs only after "ed" or "ing" was
    # stripped), so a word without such a letter (a number: 15% of nfcorpus's distinct
    # words) is its own stem; tests/retrieval/test_lexical_fast_analysis.py checks every word.
    def stem(word: str) -> str:
        if not has_letter(word):
            return word
        if needs_reference(word):
            return reference()(word, to_lowercase=False)
        return compiled(word)

    return functools.lru_cache(maxsize=1 << 20)(stem)


def _stemmer_library(name: str | None) -> str | None:
    from importlib.metadata import version

    if not name:
        return None
    if name == "porter":
        return (
            f"nltk {version('nltk')} PorterStemmer(MARTIN_EXTENSIONS) and PyStemmer {version('PyStemmer')} porter where they agree, as Lucene's PorterStemmer"
        )
    return f"PyStemmer {version('PyStemmer')}"


class _Memo(dict):
    """A dict that computes a missing key's value once, with ``compute(key)``, and keeps it: a
    lookup of a known key stays a C-level ``dict`` lookup (``map(memo.__getitem__, keys)``)."""

    __slots__ = ("_compute",)

    def __init__(self, compute: Callable[[Any], Any]):
        super().__init__()
        self._compute = compute

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self._compute(key)
        return value


class EnglishAnalyzer:
    """Text to index terms, as Elasticsearch's ``english`` analyzer does.

    Steps: Unicode (UAX #29) word segmentation, as Lucene's StandardTokenizer (numbers such as
    ``4,997`` and ``3.5`` stay whole; one-letter words are kept; emoji and the (c), (R) and TM
    signs are tokens; punctuation is not); English possessive removal (``Xiaomi's`` ->
    ``Xiaomi``); lower-casing code point by code point; Lucene's 33 English stop words; Lucene's
    Porter stemming. On the development corpora (nq-utd, nfcorpus: 8,866 documents) every
    document's terms equal Lucene 9.9.1's, and BM25's scores equal Lucene's to the last bit
    (``benchmarks/compare_lucene_pyserini.py``).

    Written here because no maintained Python package offers this chain: bm25s's tokenizer is
    one ``re`` pattern that drops one-character tokens, splits ``4,997`` and has no possessive
    filter. The segmentation is the ``regex`` module's Unicode word boundaries and the stemmer
    is NLTK's; this class only chains them, remembering the result per distinct segment, per
    distinct whitespace-delimited chunk and per text (up to :data:`TEXT_MEMO_TERMS` terms), so
    that each distinct word is segmented and stemmed once and a text already analysed (the sole
    corpora after the mixed one) costs a lookup.

    Parameters
    ----------
    stemmer:
        ``"porter"`` (the default): Lucene's ``PorterStemFilter``, which follows Martin Porter's
        reference C implementation (its departures from the 1980 paper: ``bli -> ble``,
        ``logi -> log``), through NLTK's ``PorterStemmer(mode="MARTIN_EXTENSIONS")``, the same
        algorithm (checked against Lucene 9.9's output on every word of the development
        corpora). Any other name is a Snowball algorithm for PyStemmer (``"english"`` for
        Porter2), or ``None`` for no stemming.
    stopwords:
        A set of words to drop (default: Lucene's English list), or ``None`` to keep all.
    """

    def __init__(self, stemmer: str | None = "porter", stopwords: Iterable[str] | None = LUCENE_ENGLISH_STOP_WORDS):
        import regex

        self.stemmer_name = stemmer
        self.stopwords = frozenset(stopwords) if stopwords is not None else frozenset()
        # A segment between two Unicode word boundaries (UAX #29, the regex module's "w" flag);
        # _term keeps those that StandardTokenizer emits as tokens.
        self._word = regex.compile(r"(?wV1)\b\S.*?\b", regex.DOTALL)
        self._is_token = regex.compile(_TOKEN_CHAR).search
        self._head = regex.compile(_IGNORED_HEAD)
        self._has_sa = regex.compile(r"\p{Line_Break=Complex_Context}").search
        # (a ZWJ too, but not one between two emoji: it joins them, as in Lucene's emoji sequences)
        self._attached = regex.compile(
            r"(?<=.)(?:[\p{WB=Extend}\p{WB=Format}]|\p{WB=ZWJ}(?!\p{Extended_Pictographic})"
            r"|(?<!\p{Extended_Pictographic}[\p{WB=Extend}\p{WB=Format}]*)\p{WB=ZWJ})",
            regex.DOTALL,
        )
        self._sa_run = regex.compile(_SA_RUN).fullmatch
        self._plain = re.compile(r"[a-z0-9]+\Z").match
        self._stem = _stemmer(stemmer) if stemmer else None
        # segment -> its index term (None: not a token, or a stop word); chunk -> its terms.
        # Both persist for the analyzer's life: corpora and their sole parts reuse chunks heavily.
        self._term_of = _Memo(self._term)
        self._terms_of_chunk = _Memo(self._chunk_terms)
        self._terms_of_text: dict[str, tuple[str, ...]] = {}
        self._text_memo_room = TEXT_MEMO_TERMS
        # for to_flat_ids: each term met gets a number (its place in _term_list); chunk -> code
        self._term_list: list[str] = []
        self._term_number = _Memo(self._number)
        self._multi: list[tuple[int, ...]] = []
        # _multi as arrays (each chunk's number of terms, where its terms start in _multi_flat),
        # extended by _flat_terms with the chunks met since its last batch
        self._multi_lengths = np.zeros(0, dtype=np.int64)
        self._multi_first = np.zeros(0, dtype=np.int64)
        self._multi_flat = np.zeros(0, dtype=np.int32)
        self._chunk_code = _Memo(self._code)
        self._last_flat: tuple[dict[str, int], np.ndarray, np.ndarray] | None = None

    def _number(self, term: str) -> int:
        self._term_list.append(term)
        return len(self._term_list) - 1

    def config(self) -> dict[str, Any]:
        return {
            "tokenizer": "unicode-word-boundaries (UAX#29), tokens as Lucene's StandardTokenizer",
            "possessive": True,
            "lowercase": True,
            "stopwords": len(self.stopwords),
            "stemmer": self.stemmer_name,
            "stemmer_library": _stemmer_library(self.stemmer_name),
        }

    def _term(self, token: str) -> str | None:
        """The index term of one segment, or None when it is not a token or is a stop word."""
        t = token if self._sa_run(token) else self._head.sub("", token)  # a South-East Asian mark is part of its run
        if not t or not self._is_token(t):
            return None
        if len(t) > 2 and t[-1] == "s" and t[-2] in "'\u2019\uff07":
            t = t[:-2]
        if t in self.stopwords or not t:
            return None
        # Lucene's PorterStemmer leaves words of one or two letters alone (Snowball's would
        # turn "s" into "").
        return self._stem(t) if self._stem is not None and len(t) > 2 else t

    def _chunk_terms(self, chunk: str) -> tuple[str, ...]:
        """Index terms of one whitespace-free, lower-cased chunk.

        A chunk of ASCII letters and digits alone (four chunk occurrences in five in nfcorpus) is one segment
        (UAX #29 breaks neither between letters nor between letters and digits: WB5, WB8-WB10) and
        one token, whose term is looked up without segmenting it. A chunk that may hold a token
        longer than :data:`MAX_TOKEN_LENGTH` goes to :meth:`_long_chunk_terms`."""
        if len(chunk) > MAX_TOKEN_LENGTH // 2 and _utf16_length(chunk) > MAX_TOKEN_LENGTH:  # a shorter one cannot
            return self._long_chunk_terms(chunk)
        if self._plain(chunk):
            term = self._term_of[chunk]
            return () if term is None else (term,)
        return tuple(t for t in map(self._term_of.__getitem__, self._segments(chunk)) if t is not None)

    def _segments(self, chunk: str) -> list[str]:
        """The UAX #29 segments of ``chunk`` (which they cover, in order), each run of South-East
        Asian segments joined into one (:data:`_SA_RUN`)."""
        if chunk.isascii():
            return self._word.findall(chunk)
        segments = self._wb4_segments(chunk) if self._attached.search(chunk) else self._word.findall(chunk)
        if not self._has_sa(chunk):
            return segments
        out: list[str] = []
        for seg in self._split_sa_marks(segments):
            if out and self._sa_run(seg) and self._sa_run(out[-1]):
                out[-1] += seg
            else:
                out.append(seg)
        return out

    def _split_sa_marks(self, segments: list[str]) -> list[str]:
        """``segments`` with South-East Asian marks split from a non-word character before them
        (",", "'"): UAX #29 attaches a mark to any character, but Lucene skips such a character
        alone and its grammar starts a South-East Asian run at the mark."""
        out: list[str] = []
        for seg in segments:
            m = self._has_sa(seg)
            if m is not None and m.start() > 0 and not self._is_token(seg[: m.start()]):
                out += [seg[: m.start()], seg[m.start() :]]
            else:
                out.append(seg)
        return out

    def _wb4_segments(self, chunk: str) -> list[str]:
        """The UAX #29 segments of a chunk holding marks or format characters after a character:
        segmented without them and each put back after the character it follows (rule WB4: X
        (Extend | Format)* -> X). The regex module breaks a word at such a mark before a
        mid-word character ("e" + U+0301 + ":b", "cafe" + U+0301 + "'s") where UAX #29 and
        Lucene do not."""
        keep = [i for i in range(len(chunk)) if i == 0 or not self._attached.match(chunk, i)]
        out, start = [], 0
        for seg in self._word.findall("".join(chunk[i] for i in keep)):
            end = start + len(seg)
            out.append(chunk[keep[start] : keep[end] if end < len(keep) else len(chunk)])
            start = end
        return out

    def _long_chunk_terms(self, chunk: str) -> tuple[str, ...]:
        """Index terms of a chunk with a segment longer than :data:`MAX_TOKEN_LENGTH` UTF-16
        units, cut as StandardTokenizer cuts it: the longest prefix of at most that many units
        that is a whole segment on its own (the grammar accepts it) is one token, and the chunk is
        segmented afresh from the character after it; characters Lucene skips before a token
        (:data:`_IGNORED_HEAD`) are skipped first. When that prefix holds no letter or digit (a
        run of ``_`` or another ExtendNumLet before the word's first letter), only the grammar's
        catch-all rule ``[^]`` matches: Lucene skips one character and scans again, until its
        buffer reaches the first letter (:meth:`_skipped_before_token`)."""
        out: list[str] = []
        rest = chunk
        while rest:
            start = 0
            for seg in self._segments(rest):  # they cover ``rest``: each starts where the last ended
                if _utf16_length(seg) <= MAX_TOKEN_LENGTH or not self._is_token(seg):
                    term = self._term_of[seg]
                    if term is not None:
                        out.append(term)
                    start += len(seg)
                    continue
                head = None if self._sa_run(seg) else self._head.match(seg)
                cut = len(head.group()) if head else self._token_prefix(seg)
                if not head and not self._is_token(seg[:cut]):
                    cut = self._skipped_before_token(seg)
                elif not head:
                    term = self._term_of[seg[:cut]]
                    if term is not None:
                        out.append(term)
                rest = rest[start + cut :]  # scanned afresh, as Lucene's next token
                break
            else:
                rest = ""
        return tuple(out)

    def _skipped_before_token(self, segment: str) -> int:
        """How many characters of ``segment`` (a token whose first :data:`MAX_TOKEN_LENGTH`
        UTF-16 units hold no letter or digit) Lucene skips one by one with its catch-all rule
        before its buffer, starting at the next one, holds the segment's first letter or digit:
        ``"_" * 300 + "abc"`` skips 46 and then emits ``"_" * 254 + "a"`` and ``"bc"``."""
        first = self._is_token(segment)
        end = first.end() if first else len(segment)
        units, skip = _utf16_length(segment[:end]), 0
        while units > MAX_TOKEN_LENGTH:
            units -= 2 if ord(segment[skip]) > 0xFFFF else 1
            skip += 1
        return max(skip, 1)

    def _token_prefix(self, segment: str) -> int:
        """The length of the longest prefix of ``segment`` within :data:`MAX_TOKEN_LENGTH` UTF-16
        units that is one segment on its own (at least one character)."""
        cut, units = 0, 0
        for c in segment:
            units += 2 if ord(c) > 0xFFFF else 1
            if units > MAX_TOKEN_LENGTH:
                break
            cut += 1
        while cut > 1 and self._segments(segment[:cut]) != [segment[:cut]]:
            cut -= 1
        return max(cut, 1)

    @staticmethod
    def _chunks(text: str) -> list[str]:
        """The whitespace-delimited chunks of ``text``, lower-cased as Lucene does.

        Whitespace always separates words (UAX #29), so each chunk is segmented on its own, once
        per distinct chunk."""
        if "\u0130" in text or "\u03a3" in text:  # rare: skip translate's cost otherwise
            text = text.translate(_SIMPLE_LOWER)
        return text.lower().split()

    def _text_terms(self, text: str) -> tuple[str, ...]:
        """The index terms of ``text``: remembered per text while the memo holds fewer than
        :data:`TEXT_MEMO_TERMS` terms (a corpus's sole parts are its texts again)."""
        terms = self._terms_of_text.get(text)
        if terms is None:
            terms = tuple(itertools.chain.from_iterable(map(self._terms_of_chunk.__getitem__, self._chunks(text))))
            if self._text_memo_room >= len(terms):
                self._terms_of_text[text] = terms
                self._text_memo_room -= len(terms)
        return terms

    def __call__(self, text: str) -> list[str]:
        """The index terms of ``text``, in order."""
        return list(self._text_terms(text))

    def to_ids(self, texts: Sequence[str], vocab: dict[str, int], *, grow: bool) -> list[list[int]]:
        """Term ids of each text; with ``grow`` new terms are added to ``vocab`` (numbered in
        order of first occurrence), else dropped. Per token, C-level lookups only: chunk ->
        terms, then term -> id (the terms are the memo's strings, their hashes cached)."""
        if not grow:
            return [[vocab[t] for t in self._text_terms(text) if t in vocab] for text in texts]
        id_of = _Memo(lambda term: vocab.setdefault(term, len(vocab)))
        get = id_of.__getitem__
        return [list(map(get, self._text_terms(text))) for text in texts]

    def to_flat_ids(self, texts: Sequence[str], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`to_ids` with ``grow``, as each text's number of terms and all texts' term ids
        end to end (int32): 4 bytes a term where a list per text holds a pointer of 8 and a
        list header, about 0.5 GB less at a million passages.

        In bulk, for speed at a million passages: each chunk (:meth:`_chunks`) is looked up once
        per occurrence, in one C-level pass per batch of texts, as a code (:meth:`_chunk_code`:
        the analyzer's number of its one term, or of its several terms, or none), and the codes
        become term ids with whole-array operations. New terms are numbered in the order the
        analyzer first met them (for a fresh analyzer, the order of first occurrence in ``texts``,
        as :meth:`to_ids`)."""
        lengths, terms = self._known_terms(texts)
        if lengths is None:
            lengths = np.empty(len(texts), dtype=np.int64)
            parts = []
            for start in range(0, len(texts), FLAT_BATCH):
                batch_lengths, batch_terms = self._flat_terms(texts[start : start + FLAT_BATCH])
                lengths[start : start + len(batch_lengths)] = batch_lengths
                parts.append(batch_terms)
            terms = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
            # kept for the next call: the sole corpora are the mixed corpus's texts again (read only)
            terms.flags.writeable = False
            self._last_flat = ({t: i for i, t in enumerate(texts)}, np.concatenate(([0], np.cumsum(lengths))), terms)
        used = np.zeros(len(self._term_list), dtype=bool)
        used[terms] = True
        ids = np.full(len(self._term_list), -1, dtype=np.int32)
        kept = np.flatnonzero(used)
        ids[kept] = [vocab.setdefault(t, len(vocab)) for t in map(self._term_list.__getitem__, kept.tolist())]
        if len(kept) == len(ids) and np.array_equal(ids, np.arange(len(ids), dtype=np.int32)):
            return lengths, terms  # the analyzer's numbers are the ids (a fresh analyzer's first corpus): no copy (read only)
        return lengths, ids[terms]

    def _known_terms(self, texts: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """Each text's number of terms and the analyzer's numbers of its terms, end to end, from
        the last :meth:`to_flat_ids` call when it analysed every one of ``texts`` (one dict
        lookup a text instead of a lookup a chunk); ``(None, ...)`` otherwise."""
        if self._last_flat is None:
            return None, np.zeros(0, dtype=np.int32)
        index, starts, numbers = self._last_flat
        at = np.fromiter(map(index.get, texts, itertools.repeat(-1)), dtype=np.int64, count=len(texts))
        if (at < 0).any():
            return None, np.zeros(0, dtype=np.int32)
        lengths = starts[at + 1] - starts[at]
        if len(at) and np.array_equal(at, np.arange(at[0], at[0] + len(at))):  # a run of the last texts (a sole corpus): a view
            return lengths, numbers[starts[at[0]] : starts[at[-1] + 1]]
        step = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return lengths, numbers[np.repeat(starts[at], lengths) + step]

    def _flat_terms(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each text's number of terms and the analyzer's numbers of all its terms (int32), end to end."""
        chunks = list(map(self._chunks, texts))
        per_text = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
        codes = np.fromiter(map(self._chunk_code.__getitem__, itertools.chain.from_iterable(chunks)), dtype=np.int64, count=int(per_text.sum()))
        del chunks
        self._extend_multi()
        n_terms = (codes >= 0).astype(np.int64)
        multi = np.flatnonzero(codes < -1)  # chunks of several terms ("long-term", "e.g.")
        which = -codes[multi] - 2
        n_terms[multi] = self._multi_lengths[which]
        starts = np.concatenate(([0], np.cumsum(n_terms)))  # where each chunk's terms start
        bounds = np.concatenate(([0], np.cumsum(per_text)))  # where each text's chunks start
        lengths = starts[bounds[1:]] - starts[bounds[:-1]]
        terms = np.repeat(codes, n_terms).astype(np.int32)
        if len(multi):  # each such chunk's terms in its place
            count = n_terms[multi]
            step = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
            terms[np.repeat(starts[multi], count) + step] = self._multi_flat[np.repeat(self._multi_first[which], count) + step]
        return lengths, terms

    def _extend_multi(self) -> None:
        """Bring the arrays of the chunks of several terms up to :attr:`_multi` (the chunks met since the last call only)."""
        done = len(self._multi_lengths)
        if done == len(self._multi):
            return
        new = self._multi[done:]
        lengths = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
        first = len(self._multi_flat) + np.cumsum(lengths) - lengths
        flat = np.fromiter(itertools.chain.from_iterable(new), dtype=np.int32, count=int(lengths.sum()))
        self._multi_lengths = np.concatenate((self._multi_lengths, lengths))
        self._multi_first = np.concatenate((self._multi_first, first))
        self._multi_flat = np.concatenate((self._multi_flat, flat))

    def _code(self, chunk: str) -> int:
        """A chunk's code for :meth:`_flat_terms`: the analyzer's number of its one term, ``-1``
        for no term, ``-2 - j`` for its ``j``-th chunk of several terms."""
        terms = self._terms_of_chunk[chunk]
        numbers = tuple(self._term_number[t] for t in terms)
        if len(numbers) == 1:
            return numbers[0]
        if not numbers:
            return -1
        self._multi.append(numbers)
        return -1 - len(self._multi)
