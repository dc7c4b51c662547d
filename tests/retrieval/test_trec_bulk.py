"""The bulk TREC reader (pyarrow) against the line-by-line reader: on every file, either the same
values or it gives up, and then the line-by-line reader names the fault's line.

The line-by-line reader is the reference (each of its refusals is tested with its line in
test_external_runs.py); the files here are what other systems and hand edits produce: tabs,
CRLF, a byte-order mark, gzip, every way of writing a float, and each fault."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import DataError
from sourcebias.retrieval import formats, trec_bulk
from sourcebias.retrieval.docnos import DocnoMap


@pytest.fixture(scope="module")
def corpus():
    return sb.load_dataset("nq-utd").corpus


def _line_reader(path, docnos, order):
    """The reference: (per query positions, scores, ranks as lists; entries) or the DataError text."""
    try:
        per_query, n = formats._read_trec(path, docnos, order)
    except DataError as exc:
        return str(exc)
    return {q: tuple(list(map(type(v[0]), v)) if v else [] for v in t) for q, t in per_query.items()}, n


def _bulk(path, docnos, order):
    got = trec_bulk.read_trec_bulk(path, docnos, order)
    if got is None:
        return None
    per_query, n = got
    return {q: (p.tolist(), s.tolist(), r.tolist()) for q, (p, s, r) in per_query.items()}, n


def _same(bulk, ref) -> bool:
    """Equal queries in the same order, positions, ranks, and scores bit for bit (NaN included)."""
    (bq, bn), (rq, rn) = bulk, ref
    if bn != rn or list(bq) != list(rq):
        return False
    for q in bq:
        (bp, bs, br), (rp, rs, rr) = bq[q], rq[q]
        if bp != rp or br != rr or np.asarray(bs, dtype=np.float64).tobytes() != np.asarray(rs, dtype=np.float64).tobytes():
            return False
    return True


def _names(corpus):
    docnos = DocnoMap.sourcebias(corpus)
    return docnos, [f"{d.source}/{d.doc_id}" for d in corpus]


def _random_run(names, seed, n_queries=60, depth=40, score=lambda rng: repr(rng.uniform(0, 20)), shuffle=True):
    rng = random.Random(seed)
    lines = []
    for q in range(n_queries):
        qid = f"q{rng.randrange(10**6)}-{q}"
        for rank, name in enumerate(rng.sample(names, depth), start=1):
            lines.append(f"{qid} Q0 {name} {rank} {score(rng)} run{seed}")
    if shuffle:
        rng.shuffle(lines)  # other systems need not group a query's lines: first appearance decides the order
    return lines


FLOATS = [
    lambda rng: repr(rng.uniform(-50, 50)),
    lambda rng: str(np.float32(rng.uniform(0, 30))),
    lambda rng: f"{rng.uniform(0, 1):.3e}",
    lambda rng: rng.choice(
        ["1", "0", "-0", "5.", ".5", "1e300", "1e400", "4.9e-324", "1e-400", "inf", "-inf", "Infinity", "0.1000000000000000055511151231257827"]
    ),
    lambda rng: f"{rng.randrange(-(10**6), 10**6)}",
]


@pytest.mark.parametrize("style", ["space", "tab", "crlf", "bom", "gz", "no-final-newline", "grouped", "small blocks"])
@pytest.mark.parametrize("order", ["score", "rank"])
def test_clean_files_read_in_bulk_to_the_same_values(corpus, tmp_path, monkeypatch, style, order):
    docnos, names = _names(corpus)
    lines = _random_run(names, seed=7, score=lambda rng: rng.choice(FLOATS)(rng), shuffle=style != "grouped")
    if style == "small blocks":  # many chunks: one dictionary for all, queries and names in order of first appearance
        monkeypatch.setattr(trec_bulk, "BLOCK_BYTES", 4096)
    sep = {"tab": "\t"}.get(style, " ")
    end = "\r\n" if style == "crlf" else "\n"
    text = end.join(line.replace(" ", sep) for line in lines) + ("" if style == "no-final-newline" else end)
    data = (b"\xef\xbb\xbf" if style == "bom" else b"") + text.encode()
    path = tmp_path / ("run.trec.gz" if style == "gz" else "run.trec")
    path.write_bytes(gzip.compress(data) if style == "gz" else data)
    ref, bulk = _line_reader(path, docnos, order), _bulk(path, docnos, order)
    assert not isinstance(ref, str), ref
    assert bulk is not None, "a clean file is read in bulk"
    assert _same(bulk, ref)


FAULTS = {
    "five fields": "q1 Q0 {a} 1 2.0\n",
    "seven fields": "q1 Q0 {a} 1 2.0 t x\n",
    "two spaces": "q1 Q0 {a} 1 2.0  t\n",
    "leading space": " q1 Q0 {a} 1 2.0 t\n",
    "trailing space": "q1 Q0 {a} 1 2.0 t \n",
    "no tag, a trailing space": "q1 Q0 {a} 1 2.0 \n",
    "no Q0, two spaces": "q1  {a} 1 2.0 t\n",
    "no query id, a leading space": " Q0 {a} 1 2.0 t\n",
    "no document, two spaces": "q1 Q0  1 2.0 t\n",
    "no rank, two spaces": "q1 Q0 {a}  2.0 t\n",
    "no score, two spaces": "q1 Q0 {a} 1  t\n",
    "a tab line in a space file": "q1\tQ0\t{a}\t1\t2.0\tt\n",
    "blank line of spaces": "q1 Q0 {a} 1 2.0 t\n   \nq1 Q0 {b} 2 1.0 t\n",
    "tab and space": "q1\tQ0 {a} 1 2.0 t\n",
    "vertical tab": "q1 Q0 {a} 1 2.0 t\x0bx\n",
    "form feed inside a query id": "q\x0c1 Q0 {a} 1 2.0 t\n",
    "bare carriage return": "q1 Q0 {a} 1 2.0 t\rq2 Q0 {b} 1 1.0 t\n",
    "no-break space in a query id": "q\u00a01 Q0 {a} 1 2.0 t\n",
    "no-break space in the tag": "q1 Q0 {a} 1 2.0 t\u00a0x\n",
    "ideographic space in Q0": "q1 Q0\u3000z {a} 1 2.0 t\n",
    "unknown document": "q1 Q0 {a} 1 2.0 t\nq1 Q0 nobody/d0 2 1.0 t\n",
    "document twice": "q1 Q0 {a} 1 2.0 t\nq2 Q0 {b} 1 2.0 t\nq1 Q0 {a} 2 1.0 t\n",
    "rank twice": "q1 Q0 {a} 1 2.0 t\nq1 Q0 {b} 1 1.0 t\n",
    "score not a number": "q1 Q0 {a} 1 high t\n",
    "score with a comma": "q1 Q0 {a} 1 1,5 t\n",
    "score with an underscore": "q1 Q0 {a} 1 1_5 t\n",
    "score NA": "q1 Q0 {a} 1 NA t\n",
    "score nan (read line by line)": "q1 Q0 {a} 1 nan t\n",
    "score nan(1)": "q1 Q0 {a} 1 nan(1) t\n",
    "rank with a plus": "q1 Q0 {a} +1 2.0 t\n",
    "rank not an integer": "q1 Q0 {a} 1.0 2.0 t\n",
    "rank in Arabic digits": "q1 Q0 {a} \u0661 2.0 t\n",
    "rank in hexadecimal": "q1 Q0 {a} 0x10 2.0 t\n",
    "score in hexadecimal": "q1 Q0 {a} 1 0x1p3 t\n",
    "rank past int64": "q1 Q0 {a} 99999999999999999999 2.0 t\n",
    "empty": "",
    "only blank lines": "\n\n",
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("order", ["score", "rank"])
def test_a_fault_or_a_doubt_is_given_up_or_read_the_same(corpus, tmp_path, fault, order):
    docnos, names = _names(corpus)
    head = "".join(line + "\n" for line in _random_run(names[2:], seed=3, n_queries=5, depth=4))
    path = tmp_path / "run.trec"
    path.write_bytes((head + FAULTS[fault].format(a=names[0], b=names[1])).encode())
    ref, bulk = _line_reader(path, docnos, order), _bulk(path, docnos, order)
    if bulk is not None:  # read in bulk only where the line-by-line reader reads it too, the same
        assert not isinstance(ref, str) and _same(bulk, ref), (ref, bulk)
    if isinstance(ref, str):
        assert bulk is None
        # read_trec then names the line, as the line-by-line reader does
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(trec_bulk, "MIN_BYTES", 0)
            with pytest.raises(DataError) as info:
                formats.read_trec(path, corpus, docnos=docnos, order=order)
        assert str(info.value) == ref


@pytest.mark.parametrize("line", ["q1\tQ0\t{a}\t1\t2.0\t\n", "q1\t\t{a}\t1\t2.0\tt\n", "\tQ0\t{a}\t1\t2.0\tt\n", "q1\tQ0\t{a}\t1\t2.0\tt\t\n"])
def test_an_empty_field_of_a_tab_file_is_given_up(corpus, tmp_path, line):
    docnos, names = _names(corpus)
    head = "".join(x.replace(" ", "\t") + "\n" for x in _random_run(names[2:], seed=3, n_queries=5, depth=4))
    path = tmp_path / "run.trec"
    path.write_text(head + line.format(a=names[0]))
    assert _bulk(path, docnos, "score") is None  # the line-by-line reader refuses it, or (a trailing tab) reads it
    path.write_text(head)
    assert _bulk(path, docnos, "score") is not None  # the same file without that line is read in bulk


def test_bytes_that_are_not_utf8_and_a_cut_gz_are_named_by_the_line_reader(corpus, tmp_path, monkeypatch):
    docnos, names = _names(corpus)
    monkeypatch.setattr(trec_bulk, "MIN_BYTES", 0)
    bad = tmp_path / "bad.trec"
    bad.write_bytes(f"q1 Q0 {names[0]} 1 2.0 t\nq1 Q0 {names[1]} 2 1.0 t\xff\n".encode("latin-1"))
    assert trec_bulk.read_trec_bulk(bad, docnos, "score") is None
    with pytest.raises(DataError, match=r"bad\.trec:2: not UTF-8 text"):
        formats.read_trec(bad, corpus, docnos=docnos)
    cut = tmp_path / "cut.trec.gz"
    cut.write_bytes(gzip.compress("".join(f"q1 Q0 {n} {i} 1.0 t\n" for i, n in enumerate(names[:500], 1)).encode())[:-30])
    assert trec_bulk.read_trec_bulk(cut, docnos, "score") is None
    with pytest.raises(DataError, match=r"cut\.trec\.gz.*cannot read the file"):
        formats.read_trec(cut, corpus, docnos=docnos)


def test_a_large_run_goes_the_bulk_way_and_reads_the_same_run(corpus, tmp_path, monkeypatch):
    """Through Run.from_trec, past the size where the bulk reader is tried: the same Run (order by
    the tie rule, scores) as with the line-by-line reader."""
    docnos, names = _names(corpus)
    # repeated scores, so that the tie rule orders many equal scores
    lines = _random_run(names, seed=11, n_queries=320, depth=80, score=lambda rng: f"{rng.randrange(8) / 4}")
    path = tmp_path / "big.trec"
    path.write_text("".join(line + "\n" for line in lines))
    assert path.stat().st_size >= trec_bulk.MIN_BYTES
    calls = []
    real = trec_bulk.read_trec_bulk
    monkeypatch.setattr(formats, "read_trec_bulk", lambda *a: calls.append(real(*a)) or calls[-1])
    bulk = sb.Run.from_trec(path, corpus, docnos=docnos, seed=5)
    assert len(calls) == 1 and calls[0] is not None
    monkeypatch.setattr(trec_bulk, "MIN_BYTES", 1 << 60)
    monkeypatch.setattr(formats, "worth_it", trec_bulk.worth_it)
    lines_run = sb.Run.from_trec(path, corpus, docnos=docnos, seed=5)
    assert len(calls) == 1  # not tried this time
    assert bulk == lines_run and list(bulk.positions) == list(lines_run.positions)
    assert all(np.array_equal(bulk.positions[q], lines_run.positions[q]) for q in bulk.positions)


def test_every_score_and_rank_pyarrow_reads_python_reads_the_same():
    """Random texts from the characters numbers are written with: what pyarrow converts, Python's
    int and float convert to the same value (the bulk reader's claim); the rest goes line by line."""
    rng = random.Random(0)
    alphabet = "0123456789" * 3 + ".eE+-_naifINFtyx"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    texts += ["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "infinity", "1e308", "2e308", "1e-324", "0x10", "1.", ".", "-", "e1", "1e", "00", "-0"]
    texts += ["-nan", "+nan", "NAN", "INF", "+inf", "-INF", "iNfInItY", "nan(1)", "infinit", "1e+5", "1E-5", "0001.5", "1.5e0001", "9" * 400]
    converted = {"r": 0, "s": 0}
    for text in texts:
        for col, convert, line in (("r", int, f"q1 Q0 d1 {text} 1.0 t\n"), ("s", float, f"q1 Q0 d1 1 {text} t\n")):
            table = trec_bulk._parse(line.encode(), b" ")
            if table is None:
                continue
            try:
                expected = convert(text)
            except ValueError:
                pytest.fail(f"pyarrow read {text!r} as a {convert.__name__}, Python does not")
            got = table[col].to_pylist()[0]
            if col == "s":
                assert np.float64(got).tobytes() == np.float64(expected).tobytes(), text
            else:
                assert got == expected, text
            converted[col] += 1
    assert min(converted.values()) > 300, converted  # the test saw numbers, not only refusals


def test_random_damage_is_given_up_or_read_the_same(corpus, tmp_path):
    """A clean file with a few characters inserted, deleted or replaced at random (whitespace of
    every kind, signs, letters, digits, quotes): the bulk reader either gives up or agrees with
    the line-by-line reader, for 400 damaged files."""
    docnos, names = _names(corpus)
    rng = random.Random(5)
    clean = "".join(line + "\n" for line in _random_run(names, seed=2, n_queries=4, depth=5))
    pieces = [
        " ",
        "  ",
        "\t",
        "\r",
        "\r\n",
        "\n",
        "\x0b",
        "\x0c",
        "\x1f",
        "\u00a0",
        "\u3000",
        "\x85",
        "",
        "-",
        "+",
        "e",
        "x",
        "0",
        "7",
        ".",
        '"',
        "#",
        "\ufeff",
        "nan",
    ]
    agreed = given_up = 0
    for i in range(400):
        text = clean
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            cut = rng.choice([0, 0, 1])
            text = text[:at] + rng.choice(pieces) + text[at + cut :]
        path = tmp_path / f"d{i}.trec"
        path.write_bytes(text.encode())
        for order in ("score", "rank"):
            ref, bulk = _line_reader(path, docnos, order), _bulk(path, docnos, order)
            if bulk is None:
                given_up += 1
                continue
            assert not isinstance(ref, str), f"bulk read what the line reader refuses ({ref}): {text!r}"
            assert _same(bulk, ref), text
            agreed += 1
    assert agreed > 50 and given_up > 50  # both ways were exercised
