"""The TREC and per-query writers, made faster, write the same text as before.

TREC runs write float32 scores in one vectorised call: the text of each is still
``str(np.float32(s))`` (the shortest that reads back to the same float32), for ordinary scores,
extreme exponents and every kind of bit pattern; float64 scores keep Python's ``repr``. Whole
files of a real evaluation equal those of the line-by-line writers they replaced (kept here).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from sourcebias.data import Corpus
from sourcebias.retrieval.formats import _score_formatter
from sourcebias.retrieval.run import Run


def _float32_values() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate(
        [
            (rng.random(20_000) * 40).astype(np.float32),  # BM25-like scores
            (rng.standard_normal(20_000) * 10.0 ** rng.integers(-30, 30, 20_000)).astype(np.float32),
            rng.integers(0, 2**32, 20_000, dtype=np.uint32).view(np.float32),  # any bit pattern
            np.array([0.0, -0.0, 1.0, 1e16, 1e-5, 1e-4, 123456789, 1.5e15, 3.4028235e38, 1e-45, np.inf, -np.inf], dtype=np.float32),
        ]
    )


def test_float32_text_is_numpys_scalar_str_and_reads_back():
    x = _float32_values()
    x = x[np.isfinite(x)]
    texts = _score_formatter(np.dtype(np.float32))(x)
    assert texts == [str(np.float32(s)) for s in x.tolist()]
    assert np.array_equal(np.array(texts, dtype=np.float32), x)


def test_float32_text_of_repeated_values_and_every_kind_of_bit_pattern():
    """Each distinct value is formatted once (BM25's scores repeat): repeated values, -0.0 next
    to 0.0, NaNs with different payloads and infinities still get their own scalar text."""
    x = _float32_values()
    repeated = np.concatenate([x, x[::-1], np.repeat(x[:500], 7), np.array([-0.0, 0.0, -0.0, np.nan, -np.nan], dtype=np.float32)])
    texts = _score_formatter(np.dtype(np.float32))(repeated)
    assert texts == [str(np.float32(s)) for s in repeated.tolist()]
    assert texts[-5:] == ["-0.0", "0.0", "-0.0", "nan", "nan"]
    assert _score_formatter(np.dtype(np.float32))(np.array([], dtype=np.float32)) == []


def test_float64_text_is_repr():
    x = np.random.default_rng(1).standard_normal(1000) * 1e3
    assert _score_formatter(np.dtype(np.float64))(x) == [repr(s) for s in x.tolist()]


def test_written_run_lines(tmp_path):
    corpus = Corpus(["d1", "d2", "d1"], ["human", "human", "llm"], ["", "", ""], ["a", "b", "c"])
    scores = np.array([12.345678, 3.0000002, 1e-7], dtype=np.float32)
    run = Run(corpus, "bm25", {"q1": np.array([2, 0, 1])}, {"q1": scores})
    run.write_trec(tmp_path / "r.trec")
    assert (tmp_path / "r.trec").read_text().splitlines() == [
        "q1 Q0 llm/d1 1 12.345678 bm25",
        "q1 Q0 human/d1 2 3.0000002 bm25",
        "q1 Q0 human/d2 3 1e-07 bm25",
    ]


def _old_write_trec(run: Run, path) -> None:
    """``Run.write_trec`` before (one f-string per line, ``str(np.float32(s))`` per score)."""
    from sourcebias.retrieval.docnos import DocnoMap

    names = DocnoMap.sourcebias(run.corpus).names
    fmt = (lambda s: str(np.float32(s))) if run._score_dtype() == np.float32 else repr
    with open(path, "w") as fh:
        for q, pos in run.positions.items():
            sc = run.scores[q]
            fh.writelines(f"{q} Q0 {names[i]} {r} {fmt(s)} {run.name}\n" for r, (i, s) in enumerate(zip(pos.tolist(), sc.tolist()), start=1))


def test_files_of_a_real_evaluation_equal_the_old_writers(nq_utd, tmp_path):
    from sourcebias.cli.main import main
    from sourcebias.core.atomic import csv_cell as _fmt
    from sourcebias.evaluation.results import PER_QUERY_COLUMNS, load_result

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_utd), "--retriever", "bm25", "--retriever", "tfidf", "--split", "test", "--output", str(out)])
    assert info.value.code in (0, None)
    result = load_result(out)
    # per_query.csv: the generic row writer, one dict per row, as it was written before
    with open(tmp_path / "old.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(PER_QUERY_COLUMNS)
        for r in result.per_query_rows():
            w.writerow([_fmt(r.get(c)) for c in PER_QUERY_COLUMNS])
    assert (out / "per_query.csv").read_text() == (tmp_path / "old.csv").read_text()
    assert len((out / "per_query.csv").read_text().splitlines()) > 1000
    written = 0
    for key, run in result.runs.items():
        run.write_trec(tmp_path / "new.trec")
        _old_write_trec(run, tmp_path / "old.trec")
        assert (tmp_path / "new.trec").read_text() == (tmp_path / "old.trec").read_text(), key
        written += len((tmp_path / "new.trec").read_text().splitlines())
    assert written > 10_000


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_float32_table_made_in_blocks_gives_each_scores_text(monkeypatch, block):
    """The distinct scores' texts made a block at a time (bounded memory) are each score's
    ``str(np.float32(s))``, whatever the block, an empty run included."""
    from sourcebias.retrieval import formats

    monkeypatch.setattr(formats, "FLOAT_TEXT_BLOCK", block)
    x = _float32_values()
    x = np.concatenate([x, x[:3000]])  # repeated scores share a text
    texts, index = formats._float32_table(x)
    assert len(texts) == len(np.unique(x.view(np.uint32)))
    assert [texts[i] for i in index.tolist()] == [str(np.float32(s)) for s in x.tolist()]
    assert formats._float32_table(np.array([], dtype=np.float32))[0] == []


@pytest.mark.parametrize("n", [0, 1, 3, 1000, 200_000])
def test_distinct_scores_and_their_index_are_numpys(n):
    """The TREC writer's distinct scores and each line's index into them (one sort of 64-bit
    keys) equal ``numpy.unique(..., return_inverse=True)``: few distinct values, all distinct,
    the extremes of 32 bits, an empty run."""
    from sourcebias.retrieval.formats import _unique_inverse

    rng = np.random.default_rng(n)
    for bits in (
        rng.integers(0, 4, size=n).astype(np.uint32),
        rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32),
        np.resize(np.array([2**32 - 1, 0, 2**31], dtype=np.uint32), n),
    ):
        distinct, index = _unique_inverse(bits)
        expected, inverse = np.unique(bits, return_inverse=True)
        assert distinct.dtype == np.uint32 and distinct.tolist() == expected.tolist()
        assert index.tolist() == inverse.reshape(-1).tolist()
