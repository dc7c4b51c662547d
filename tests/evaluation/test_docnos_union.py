"""``docnos.tsv``: every document of an evaluation's runs once, in order of first appearance,
whatever the runs' corpora (the mixed corpus and its sole parts, samples of them, corpora of
other documents); checked against the plain computation (a dict of every ``(doc_id, source)``
with its name, filled run by run)."""

from __future__ import annotations

import numpy as np

from sourcebias.data import load_dataset
from sourcebias.data.corpus import Corpus
from sourcebias.evaluation.result_io import _docno_rows
from sourcebias.retrieval.docnos import DocnoMap


def plain(corpora):
    names = {}
    for c in corpora:
        for docno, d, s in DocnoMap.sourcebias(c).rows():
            names.setdefault((d, s), docno)
    return [(n, d, s) for (d, s), n in names.items()]


def test_sole_corpora_add_nothing_and_other_corpora_add_their_new_documents(nq_utd):
    mixed = load_dataset(nq_utd).corpus
    human, llm = (mixed.subset([s]) for s in mixed.sources)
    rng = np.random.default_rng(3)
    sample = mixed.take(rng.permutation(len(mixed))[:300])  # another order, both sources
    extra = Corpus.keys_only(["new-1", mixed.doc_ids[0], "new 2"], ["human", mixed.source_of(0), "other"])
    cases = [[mixed, human, llm], [human, mixed, llm], [llm, sample], [sample, mixed], [human, extra, mixed, extra], [extra]]
    for corpora in cases:
        got = list(_docno_rows(corpora))
        assert got == plain(corpora)
        assert len({(d, s) for _, d, s in got}) == len(got)
    assert list(_docno_rows([mixed, human, llm])) == list(DocnoMap.sourcebias(mixed).rows())
    assert ("other/new_2", "new 2", "other") in list(_docno_rows([extra]))  # whitespace in a name, as TREC needs
