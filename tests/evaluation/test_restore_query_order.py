"""Putting back a loaded run's saved query order reads the saved list a bounded number of times.

The check for queries outside the saved list built ``set(query_ids)`` once per query of the run:
quadratic (2.7 s a run at 6,979 queries, minutes at 100,000). Counted here, not timed."""

from __future__ import annotations

import numpy as np
import pytest

from sourcebias.core.errors import DataError
from sourcebias.data.corpus import Corpus
from sourcebias.evaluation.result_io import _restore_query_order
from sourcebias.retrieval.run import Run


class CountingList(list):
    """A list that counts how many times it is iterated."""

    iterations = 0

    def __iter__(self):
        CountingList.iterations += 1
        return super().__iter__()


def _run(qids):
    corpus = Corpus.keys_only(["d1", "d2"], ["human", "human"])
    positions = {q: np.array([0, 1]) for q in qids}
    scores = {q: np.array([2.0, 1.0]) for q in qids}
    return Run(corpus, "bm25", positions, scores)


def test_the_saved_list_is_read_a_bounded_number_of_times(tmp_path):
    saved = [f"q{i}" for i in range(2000)]
    run = _run(saved[::2])  # every other query retrieved something; the rest had no line
    CountingList.iterations = 0
    _restore_query_order(run, CountingList(saved), tmp_path / "run.trec")
    assert CountingList.iterations <= 3  # it was 1,000 + 2 (one set per query of the run)
    assert list(run.positions) == saved and list(run.scores) == saved
    assert run.positions["q1"].size == 0 and run.scores["q1"].size == 0
    assert run.positions["q0"].tolist() == [0, 1]


def test_a_query_outside_the_saved_list_is_refused_with_the_file(tmp_path):
    run = _run(["q1", "q9"])
    with pytest.raises(DataError, match=r"query 'q9' is not among the run's saved queries") as info:
        _restore_query_order(run, ["q1", "q2"], tmp_path / "run.trec")
    assert "run.trec" in str(info.value)
