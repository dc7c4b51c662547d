"""Tokens longer than 255 UTF-16 units are cut as Lucene's StandardTokenizer cuts them.

Lucene's scanner buffer holds ``maxTokenLength`` = 255 chars and does not grow: a token that
fills it ends at the last place the grammar accepts within it, and the rest is scanned afresh as
the next token (``StandardTokenizerImpl.zzRefill``, ``StandardTokenizer.setMaxTokenLength``).
The development corpora hold no such token, so this is checked on constructed text: each expected
list below is Lucene 9.9.1's ``EnglishAnalyzer`` output (Anserini 0.24.0's jar, the one
``benchmarks/compare_lucene_pyserini.py`` uses), written out here by its rule (slices of the
input) and checked equal to Lucene's printed terms when the test was written. 300 seeded texts
with many tokens near, at and over 255 units are then checked against digests of Lucene's own
terms for them (all 300 equal; before the cut, 273 differed). A run of ``_`` longer than the
buffer before a word's first letter is skipped a character at a time (the grammar's catch-all
rule): 200 seeded texts of such runs are checked the same way (65 differed before, issue 38 point 11).
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


# -- generated text against Lucene's own output -------------------------------------------------------
#: SHA-256 (first 10 hex digits) of Lucene 9.9.1's terms, joined by U+001F, of each text of
#: :func:`generated_texts` (printed by its EnglishAnalyzer when the test was written)
LUCENE_DIGESTS = (  # noqa: SIM905 (ten digests a line)
    "398204fbb9 4d96b4178b f0376f4ed1 812cbeb31b b2c6b1b816 bb51cff830 74c8b54ac9 dbe29a5c6f da64353b41 db92b8faf8 "
    "6a3f3c0b29 f354e388b1 5ce337ca44 9b12b9510f e1d0b51b4d acd0f525c2 e6d32ee0b7 7939989aa0 4caf130419 67f71f2165 "
    "78464e94cd 6a05f73fc5 246b90483b f1e6e8630d 733ddf8b86 99f838f9b7 088e552f84 9a4c1960b4 c1bb4a997f 3b4340fe3e "
    "a7c8c5bcfe 6773e7e959 d3aec1a1dd 95d446cac2 ed32afc2c5 2fa4286ba0 03cf7790a8 152b4cf886 a47127e8cf f873763d4b "
    "cdda88dfac 7c142e7306 fd9a408656 e9e1b29a10 c8263d3303 22b3ee4ccd 49bb2db107 189e9fdd94 bbcb03ac22 01451b0b88 "
    "6623b1817d 1fc74311ef c3e46154ac 0d4eb96b1e 8575b97977 3c6327789d 2f322b69f4 226854f3d6 e60728867a 5e86419f18 "
    "a21a90b8b3 3d1bf7e221 a111a59493 d9673e17c8 d3ef788b00 3df225570d c05085cef6 82ee7e2f2f e1ba990652 0afb09780f "
    "48c8f3743c 23dd31036a 0c0e01e6f4 c5ce4da110 eb0db44328 cca6a6ba77 74c4fd858a 696e59b534 52637138ae 76ec426ccf "
    "15fb93ac00 cc5c07fccb ba96b18a6c 8318b571c5 4c86967db0 f3586c837c d7fede54a9 563f3c1dd6 b81a2f65ed 7bab0a4620 "
    "a41ed2dc72 21b6abaab5 b8e879d588 d1b8aee697 7f6a4ac755 e1d12dba34 e7ee992625 c77462cd02 95c70b46fa 3f52ff4eb3 "
    "1226ac35f5 e6558461ed 2cd3ab6e59 206a586ae2 7d22c7ba7d bca68f4436 5db727b32c ea5e1223a0 5cdb2cd6ee 645e698fa2 "
    "3ff0f2598e a448909073 88cd958850 01fb7ef1f4 4368c8539c 496b465ddf 490f737728 4abdf397f8 e2487d2c6b dce4ea5de7 "
    "da34a953b3 5813801533 6965a04849 5a3d7fc898 d4f39322a2 178aeda6b1 3897ca30aa 5a40b08659 26847e98f5 adb16c639d "
    "097a08cd89 6ca832215a ed75446524 17aec50f1f 5df9013422 2576c7b533 188cfff7de 89caeb549d 88d971926a f29ff1b92a "
    "5c8800ef89 c1da8d45e2 34945ef9b0 3aa167a409 54a8c7bb34 15e1ae4a6c 1e5b967edb c5b4d6d80d c9792c1e15 4b8bdbc2ea "
    "f3865fe053 9dfb4cebee bd3cd7fbb2 31d33e9a6a c2572c7125 9145db56d0 bad2d46ddd a03002940e f23b0bf689 dd1f8be0f1 "
    "c04a7e97c9 ab15b1cd53 6283a99fbd c4b73cb962 fcf4fdd475 d2df5dc542 e1f042f170 1474d39bbf 59fe0297bc aa4812207e "
    "67d6636c81 4010c89c58 f2a1230639 c86966697e c97ef5d117 2086de0448 35d7c65667 e6f80bca31 815c5228f5 ad05a066c1 "
    "e7b54823ff cda64e5903 3814c3da4f ae5f17e438 3cc5d8bf62 a7f201957f 3fd6afdc96 f51192b4de d5bff472c9 df4aadf6f5 "
    "f374f0f987 cbabba8b07 2817ce02cd 494e1e4ced a803b791d4 9bf499443b a0da3f2a2e 117f398fb3 1693b5c4c6 44d460ade5 "
    "53e662a725 c67b552341 5fec0a9235 5d06143824 f12556d007 80dba6fead 1200fbd504 76f4d8904d 1f9cac0e3c e47c756962 "
    "4e3a8158bc 9098977701 ea66f67b3c 667f61a7ca 1100656053 5b284352bf 866e29dc30 07672fac8a a72b89bf7e 1e9590dd99 "
    "a976a952cb 0a4968ba82 6962fe704c 5532533e06 3e42a68406 cc2fd0dedd 4d8f759f93 8bc5f7b59c 19d00c835d 7380a99498 "
    "59a184819c 96dbd06ca0 a0449d0058 208d89b262 80605e3b44 0997055c68 3dfee095cd 0e3a3ecdb8 f04993dc4b 149ec93e4b "
    "d5ae15b4c2 b5970024e1 9c74eb66e7 29b51631a5 54b469ff4a b8862efea3 aadef269a4 978f4c941f 40bd169cae 4678303529 "
    "6f8f4af65b 67d39e33c0 d7145c3277 b1d03b9177 20719d1b8d c06748e5f1 92b0412c86 d09ddab581 c3a6d5c05a 7637557ffe "
    "9d99e42eab 24273f4ab5 bef5974b9a 8a28ce67a6 855bb4132c 310ed6565f 10c4379a10 5d3fe3d740 e862d1c102 84e8518909 "
    "4e346b07ae 7c429f9a9d 5482e7dd6e 1b6552b87c aefdc5164f 0fb3bcd6e5 7861855826 597b9f8039 4b5223ade9 22409c166a "
    "d1b36ad269 e20c9d4497 9225a2225f 5f3bbad9e7 124474badd 07375964f1 949a155f01 2504316814 7d9498d8db 458ac0c46c "
    "0cbd119223 e6b5e8d8da 2848aaf50d 8258901127 994beff502 98c6800f87 0ed43caf69 2633838c69 a857f09030 fba6ca6a76 "
).split()


def generated_texts(n: int = 300) -> list[str]:
    """Seeded texts of 50 to 520 pieces (letters, digits, punctuation between them, an accented
    letter, a letter outside the BMP, Katakana, Hangul, a Han ideograph, a possessive, Thai), a
    third of them opening with a 253-256-character word: tokens near, at and over 255 units."""
    import random

    rng = random.Random(11)
    pieces = ["a", "b", "z", "1", "9", ".", ",", "'", "_", "-", "/", ":", "\u00e9", "\U0001d400", "\u30ab", "\ud55c", "\u4e2d", "'s", "x", "\u0e44\u0e17\u0e22"]
    weights = [20, 10, 10, 8, 4, 3, 3, 2, 2, 2, 1, 1, 2, 1, 1, 1, 1, 1, 10, 1]
    out = []
    for _ in range(n):
        size = rng.choice([50, 120, 240, 250, 254, 255, 256, 260, 300, 520])
        text = "".join(rng.choices(pieces, weights, k=size))
        if rng.random() < 0.3:
            text = "".join(rng.choice(["a", "1", "x"]) for _ in range(rng.choice([253, 254, 255, 256]))) + text
        out.append(text)
    return out


def test_generated_text_gives_lucenes_terms():
    import hashlib

    analyzer = EnglishAnalyzer()
    texts = generated_texts(len(LUCENE_DIGESTS))
    assert sum(any(len(t.encode("utf-16-le")) // 2 > 255 for t in text.split()) for text in texts) > 100  # many long tokens
    got = [hashlib.sha256("\x1f".join(analyzer(t)).encode("utf-8")).hexdigest()[:10] for t in texts]
    wrong = [i for i, (a, b) in enumerate(zip(got, LUCENE_DIGESTS)) if a != b]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ from Lucene's terms, e.g. text {wrong[0]}"


# -- a run of "_" (ExtendNumLet) longer than the buffer before a word's first letter ------------------
# No rule of the grammar but its catch-all "[^]" matches a buffer of "_" alone, so Lucene skips one
# character at a time until the buffer reaches the first letter (issue 38, point 11): each expected
# list is Lucene 9.9.1's EnglishAnalyzer output (Anserini 0.24.0's jar), written out by that rule.
UNDERSCORE_CASES = [
    ("_" * 300 + "abc", ["_" * 254 + "a", "bc"]),
    ("_" * 255 + "abc", ["_" * 254 + "a", "bc"]),
    ("_" * 253 + "abc", ["_" * 253 + "ab", "c"]),
    ("_" * 600 + "abc", ["_" * 254 + "a", "bc"]),
    ("\u203f" * 300 + "abc", ["\u203f" * 254 + "a", "bc"]),  # UNDERTIE, another ExtendNumLet
    ("_" * 300 + "\U0001d400" * 3, ["_" * 253 + "\U0001d400", "\U0001d400" * 2]),  # a letter of two UTF-16 units
    ("_" * 300 + "1" * 5, ["_" * 254 + "1", "1" * 4]),
    ("_" * 300 + "\u30ab" * 3, ["_" * 254 + "\u30ab", "\u30ab" * 2]),
    ("_" * 300, []),
    ("_" * 300 + "abc" + "_" * 300 + "de", ["_" * 254 + "a", "bc" + "_" * 253, "_" * 47 + "de"]),
    ("x" + "_" * 300 + "abc", ["x" + "_" * 254, "_" * 46 + "abc"]),
]


@pytest.mark.parametrize(("text", "expected"), UNDERSCORE_CASES, ids=range(len(UNDERSCORE_CASES)))
def test_a_long_run_of_underscores_is_skipped_as_lucene_skips_it(text, expected):
    assert EnglishAnalyzer()(text) == expected


def underscore_texts(n: int = 200) -> list[str]:
    """Seeded texts opening with 200 to 600 characters of ExtendNumLet (``_``, U+203F, U+FF3F), some
    with a mark or a zero-width joiner attached, then letters, digits, marks, Katakana, Hangul, a
    letter outside the BMP, punctuation, Thai, a Han ideograph."""
    import random

    rng = random.Random(41)
    pieces = ["_", "\u203f", "\u2040", "\ufe33", "\uff3f", "a", "b", "x", "1", "9", "\u0301", "\u200d", "\u00ad", "\u30ab", "\ud55c", "\U0001d400"]
    pieces += [".", "'", ",", "-", "\u4e2d", "\u0e44", "s"]
    weights = [30, 3, 2, 1, 2, 10, 5, 5, 4, 2, 2, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 2]
    out = []
    for _ in range(n):
        lead = "".join(rng.choices(["_", "\u203f", "\uff3f", "_\u0301", "\u200d"], [10, 2, 2, 1, 1], k=rng.choice([200, 253, 254, 255, 256, 300, 600])))
        tail = "".join(rng.choices(pieces, weights, k=rng.choice([1, 3, 10, 50, 300])))
        out.append(rng.choice(["", "x", "1", "ab", "\u30ab", "'", "."]) + lead + tail + (" word" if rng.random() < 0.5 else ""))
    return out


#: SHA-256 (first 10 hex digits) of Lucene 9.9.1's terms, joined by U+001F, of each text of
#: :func:`underscore_texts` (printed by its EnglishAnalyzer when the test was written)
LUCENE_UNDERSCORE_DIGESTS = (  # noqa: SIM905 (ten digests a line)
    "e611ac3898 f124a4a357 d34a77b762 5f01252630 e264adbb24 016f1cab1a 0f18cd4783 e3b0c44298 e3b0c44298 aa9a7b2fc6 "
    "e11a607acc 98c1eb4ee9 07f4312931 d8883c84ba 9b484006e2 eeb6916f40 8998b05def f2d6663aff e3b0c44298 cd3033b507 "
    "c9bf6e0eb5 dc95239bd9 86e9c2777b 8b65249d12 d2b092e3ec 05750b4077 5ba892311e aa4b5e7ef8 864130f4a2 55ea68042c "
    "4cff913b11 035aa043ce e3b0c44298 30a24a47f0 7f12ce77b9 34c8f57450 2ff7b69e6e d426c0c726 e3b0c44298 77ec573644 "
    "06eeb64e76 d59b69d935 5b6d48a090 80eff73025 e9e93b6e3b 3f6f0ad816 06285f05d4 2b9c57a558 ec197e05fc a31e7ff85b "
    "98c1eb4ee9 726444a158 96b7cc3d0a e347400236 5c49080696 4b62a3d414 98c1eb4ee9 a124068472 96cc88d332 45588c87d4 "
    "f8c4cdef90 32f039e357 1413fac006 ca7e066b08 98c1eb4ee9 0d7f8191c9 3b60d8767f cbb3363f80 210332e4f0 c2668fc092 "
    "2464f9986b f01fe8e64b 2d7ba5fc08 1c15ab92a7 cfb5086bf4 e07dfc3771 98c1eb4ee9 474e643632 6bffab16ac 2f24f23f2e "
    "13537b3a72 363cf8bcb2 2a68c715b1 2f33c30cbb 98c1eb4ee9 598451e10e 1ecedacae7 6322d37edb 98c1eb4ee9 2dcfcb35f2 "
    "1a2f7760f8 1527bba284 98c1eb4ee9 7633a7f217 3c099bbaea 0ac0211cc7 37efa94944 367e860027 b98d1fd113 49663fb6d9 "
    "1f9bf53c07 6738160ec1 ef1e2d3eaa b581b581b1 0b263f965e 98c1eb4ee9 5ba61f5212 5f04a53040 27abfb00ce 91c6b9caee "
    "0b5e456163 d07be4da24 87afc9b2ea 7945aa2ffc 9ffd05eac6 8953ccec51 1f2120946c 5273d0cfd3 21d9f40246 09237272f7 "
    "dad829f46f f9a10b24ed 4910011d54 93407d97f6 33d39764f8 4c08e57e83 53de98ebc9 3c0db2f4df 787c3e56d2 d53c40e7c5 "
    "05659d1fbe c8a23793e8 5c522117c5 e32756f5c5 a4a077ebf2 2f1ec6b34f cad9389f55 3f2835feb8 5092cd66ed 9fc7f0ac81 "
    "cfbc0a1ec4 bcc5f759bb 1e260c05cc 83499fb263 2f517e0ec6 d2b734f2f8 b1752c8bd5 ef46d7c341 d08d5bad69 3fe53082c0 "
    "1128576cdc 88f4e8b2c0 3e7090cbcb e3b0c44298 5357ad7945 ff51a7f63b 02e0816624 c5668eb657 7c11722ae7 eb3fdd20ba "
    "be0dd682af bb2b421170 aa586cd85a 48505f2fb8 bc489e6efb 9b4674863e 7b35af36db 2166d359e0 1ac3d3b203 b0dc603435 "
    "23e4426264 5d0b7d46d1 a9a1197a17 417f517353 1978491e74 72da2c1a88 3eb7d74419 7c85d53394 854fe93783 05a52a9b7a "
    "fd6963e91a 20854b2019 83827304ed e21d01f891 a81810f3b0 44889e3a0a 3db8be6720 98c1eb4ee9 452b032c5f 56460cec10 "
    "db310ae4fe 3656600bb9 37640a504c 613217dd06 e3b0c44298 3d6da1fb6a d6b83bbcf7 7644bb0360 d19b2e8819 e3b0c44298 "
).split()


def test_generated_underscore_runs_give_lucenes_terms():
    import hashlib

    analyzer = EnglishAnalyzer()
    texts = underscore_texts(len(LUCENE_UNDERSCORE_DIGESTS))
    got = [hashlib.sha256("\x1f".join(analyzer(t)).encode("utf-8")).hexdigest()[:10] for t in texts]
    wrong = [i for i, (a, b) in enumerate(zip(got, LUCENE_UNDERSCORE_DIGESTS)) if a != b]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ from Lucene's terms, e.g. text {wrong[0]}"
