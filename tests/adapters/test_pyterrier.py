"""PyTerrier both ways: sourcebias retrievers as pt.Transformers (SourceBias), and any
pt.Transformer as a sourcebias stage or first stage (the pt: kind), on nq-utd.

The BM25-like PyTerrier transformer below is written here, as a user would write one; nothing
of sourcebias' own BM25 is used by it.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

pt = pytest.importorskip("pyterrier")
pd = pytest.importorskip("pandas")

from sourcebias.core.errors import ConfigError  # noqa: E402
from sourcebias.data import load_dataset  # noqa: E402
from sourcebias.data.corpus import Corpus  # noqa: E402
from sourcebias.evaluation import evaluate  # noqa: E402
from sourcebias.evaluation.measures import measure_grid  # noqa: E402
from sourcebias.pyterrier import SourceBias, qrels_frame, topics_frame  # noqa: E402
from sourcebias.retrieval.pyterrier_stage import PyTerrierStage  # noqa: E402
from sourcebias.retrieval.registry import build_retriever  # noqa: E402
from sourcebias.retrieval.run import Run  # noqa: E402
from sourcebias.retrieval.ties import tie_resolved_scores  # noqa: E402

MEASURES = measure_grid(["NDCG"], [1, 3, 10])
TOKEN = re.compile(r"\w+")


class BM25Like(pt.Transformer):
    """Okapi BM25 over its own documents (Q frame in, R frame out), in plain Python."""

    def __init__(self, docs, k1: float = 0.9, b: float = 0.4, depth: int = 100):
        self.docnos = [d["docno"] for d in docs]
        self.tfs = [Counter(TOKEN.findall(d["text"].lower())) for d in docs]
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=np.float64)
        df = Counter(t for tf in self.tfs for t in tf)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b, self.depth, self.avg = k1, b, depth, self.lens.mean()

    def transform(self, topics):
        rows = []
        norm = self.k1 * (1 - self.b + self.b * self.lens / self.avg)
        for qid, query in zip(topics["qid"], topics["query"]):
            terms = TOKEN.findall(query.lower())
            s = np.zeros(len(self.docnos))
            for t in terms:
                if t in self.idf:
                    tf = np.array([d.get(t, 0) for d in self.tfs], dtype=np.float64)
                    s += self.idf[t] * tf * (self.k1 + 1) / (tf + norm)
            top = np.argsort(-s, kind="stable")[: self.depth]
            rows += [{"qid": qid, "query": query, "docno": self.docnos[i], "score": float(s[i])} for i in top if s[i] > 0]
        return pt.model.add_ranks(pd.DataFrame(rows))


def overlap_reranker():
    """A pt.apply re-ranker: the number of distinct query words in the document (many ties)."""
    return pt.apply.doc_score(lambda row: float(len(set(TOKEN.findall(row["query"].lower())) & set(TOKEN.findall(row["text"].lower())))))


@pytest.fixture(scope="module")
def ds(nq_utd):
    return load_dataset(nq_utd, split="test")


def test_pt_experiment_on_our_transformer_equals_our_ndcg(ds):
    ours = evaluate(ds, [build_retriever("bm25")], measures=MEASURES, depth=100, sole=False)
    t = SourceBias("bm25", ds, depth=100)
    for target in [*ds.sources, "all"]:
        exp = pt.Experiment([t], topics_frame(ds), qrels_frame(ds, target), eval_metrics=["ndcg_cut_1", "ndcg_cut_3", "ndcg_cut_10"], names=["bm25"])
        for k in (1, 3, 10):
            assert exp[f"ndcg_cut_{k}"].iloc[0] == pytest.approx(ours.mean("bm25", "mixed", target, f"NDCG@{k}"), abs=1e-12)


def test_our_transformer_keeps_our_tie_order_in_its_scores(tmp_path):
    # identical twins tie exactly under BM25: the frame's scores must still order them as we do
    human = [("d1", "red apples and green pears"), ("d2", "green apples"), ("d3", "pears")]
    corpus = Corpus([d for d, _ in human] * 2, ["human"] * 3 + ["llm"] * 3, [""] * 6, [t for _, t in human] * 2)
    topics = pd.DataFrame({"qid": [f"q{i}" for i in range(20)], "query": ["green apples pears"] * 20})
    for seed in (0, 1):
        bm25 = build_retriever("bm25")
        frame = SourceBias(bm25, corpus, depth=6, seed=seed).transform(topics)
        run = bm25.retrieve(corpus, dict(zip(topics["qid"], topics["query"])), 6, seed=seed)
        for qid, g in frame.groupby("qid", sort=False):
            assert list(g["docno"]) == [f"{corpus.source_of(p)}/{corpus.doc_ids[p]}" for p in run.positions[qid]]
            assert np.all(np.diff(g["score"].to_numpy()) < 0) and list(g["rank"]) == list(range(len(g)))
            resorted = g.sort_values(["score", "docno"], ascending=[False, True])  # what trec_eval / ranx do
            assert list(resorted["docno"]) == list(g["docno"])
    firsts = {SourceBias("bm25", corpus, depth=6, seed=0).transform(topics).groupby("qid").head(1)["docno"].iloc[i].split("/")[0] for i in range(20)}
    assert firsts == {"human", "llm"}  # the tie rule, not the docno, picks the first copy


def test_tie_resolved_scores_change_only_ties():
    s = np.array([3.0, 2.0, 2.0, 2.0, 1.0, 1.0])
    out = tie_resolved_scores(s)
    assert np.all(np.diff(out.astype(np.float32)) < 0) and out[0] == 3.0 and out[1] == 2.0 and out[4] == 1.0
    assert np.allclose(out, s, atol=1e-6)


def test_pyterrier_pipeline_on_nq_utd_relative_delta_equals_trec_file(ds, tmp_path):
    """A whole PyTerrier pipeline (our hand-written BM25-like transformer) measured with our
    protocol, and the same ranking read back from the TREC file PyTerrier writes."""
    docs = [{"docno": f"{d.source}/{d.doc_id}", "text": d.retrieval_text()} for d in ds.corpus]
    bm25like = BM25Like(docs)
    stage = PyTerrierStage(bm25like, name="pt-bm25like")
    live = evaluate(ds, [stage], measures=MEASURES, depth=100, sole=False)
    frame = bm25like.transform(topics_frame(ds))
    path = tmp_path / "bm25like.trec"
    pt.io.write_results(frame, str(path), format="trec")
    from_file = evaluate(ds, runs={"pt-bm25like": Run.from_trec(path, ds.corpus)}, measures=MEASURES, depth=100, sole=False)
    for k in (1, 3, 10):
        a, b = live.relative_delta("pt-bm25like", f"NDCG@{k}"), from_file.relative_delta("pt-bm25like", f"NDCG@{k}")
        assert a == b and not math.isnan(a)
        for target in ds.sources:
            np.testing.assert_array_equal(
                live.values("pt-bm25like", "mixed", target, f"NDCG@{k}"), from_file.values("pt-bm25like", "mixed", target, f"NDCG@{k}")
            )
    assert live.mean("pt-bm25like", "mixed", "human", "NDCG@10") > 0.3  # a real retriever, not noise


def test_pt_stage_reranks_bm25_from_a_spec_and_ties_follow_our_rule(ds):
    spec = f"bm25>>pt:{__name__}:overlap_reranker"
    r = build_retriever(spec)
    assert r.name == spec
    result = evaluate(ds, [r], measures=MEASURES, depth=20, sole=True)
    assert not math.isnan(result.relative_delta(spec, "NDCG@3"))
    queries = {q: ds.queries[q] for q in ds.evaluation_queries()[:10]}
    for seed in (0, 1):
        run = r.retrieve(ds.corpus, queries, 20, seed=seed)
        # the same: our own ordering of the transformer's scores over BM25's top 20
        first = build_retriever("bm25").retrieve(ds.corpus, queries, 20, seed=seed)
        from sourcebias.retrieval.ties import TieRule

        rule = TieRule(ds.corpus, seed)
        for q, text in queries.items():
            pos = first.positions[q]
            words = set(TOKEN.findall(text.lower()))
            s = np.array([float(len(words & set(TOKEN.findall(ds.corpus[p].retrieval_text().lower())))) for p in pos])
            assert list(run.positions[q]) == list(pos[rule.order(q, s, pos)])


def test_a_pyterrier_pipeline_around_our_transformer_is_measured_as_a_first_stage(ds):
    pipe = SourceBias("bm25", ds, depth=50, text=True) >> overlap_reranker()
    r = PyTerrierStage(pipe, name="pt-pipeline")
    result = evaluate(ds, [r], measures=MEASURES, depth=50, sole=False)
    assert 0 < result.mean("pt-pipeline", "mixed", "all", "NDCG@10") <= 1


def test_bad_pt_specs_say_what_is_wrong():
    with pytest.raises(ConfigError, match="MODULE:NAME"):
        build_retriever("bm25>>pt:nomodule")
    with pytest.raises(ConfigError, match="cannot import module 'no_such_mod'"):
        build_retriever("bm25>>pt:no_such_mod:f")
    with pytest.raises(ConfigError, match=r"is not a pt\.Transformer"):
        build_retriever(f"bm25>>pt:{__name__}:TOKEN")


def test_unknown_docno_names_the_rule(ds):
    bad = pt.apply.generic(lambda df: pd.DataFrame({"qid": df["qid"], "docno": "nope", "score": 1.0}))
    with pytest.raises(ConfigError, match=r"docno 'nope'.*<source>/<doc_id>"):
        PyTerrierStage(bad).retrieve(ds.corpus, {"q": "x"}, 10)


PIPELINE: dict = {}  # what make_pipeline builds on, set by the test below


def make_pipeline():
    """A whole PyTerrier pipeline (our BM25 as a transformer, then a pt.apply re-ranker)."""
    return SourceBias("bm25", PIPELINE["ds"], depth=30, text=True) >> overlap_reranker()


def test_a_whole_pyterrier_pipeline_from_a_spec_is_a_first_stage(ds):
    PIPELINE["ds"] = ds
    r = build_retriever(f"pt:{__name__}:make_pipeline")
    assert isinstance(r, PyTerrierStage)
    result = evaluate(ds, [r], measures=MEASURES, depth=30, sole=False)
    assert not math.isnan(result.relative_delta(r.name, "NDCG@3"))
    with pytest.raises(ConfigError, match="--no-sole"):  # its own index holds both sources
        evaluate(ds, [r], measures=MEASURES, depth=30, sole=True)
