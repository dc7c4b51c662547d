"""Dense search at size: the blocked exact search holds one block of scores (not a query x corpus
matrix) and equals a full sort under the documented tie rule; an approximate FAISS index is
reported with its recall@k against exact search, checked against a full sort."""

from __future__ import annotations

import tracemalloc

import numpy as np

from sourcebias.data import Corpus
from sourcebias.models.encoders import Encoder
from sourcebias.retrieval import RunBuilder
from sourcebias.retrieval.dense import DenseRetriever, exact_blocks, exact_kth_scores, recall_at_k
from sourcebias.retrieval.ties import tie_keys


class TableEncoder(Encoder):
    """Texts ``"v<i>"`` map to row ``i`` of a fixed table of vectors."""

    name = "table"

    def __init__(self, table: np.ndarray):
        self.table = table

    def _enc(self, texts):
        return self.table[[int(t[1:]) for t in texts]]

    encode_queries = _enc
    encode_documents = _enc


def corpus_of(n: int) -> Corpus:
    return Corpus([f"d{i // 2}" for i in range(n)], ["human" if i % 2 == 0 else "llm" for i in range(n)], [""] * n, [f"v{i}" for i in range(n)])


def full_sort(corpus: Corpus, scores: np.ndarray, qid: str, depth: int, seed: int) -> list[int]:
    """The documented rule on every document at once: score descending, then the tie key
    ascending, then the corpus position."""
    keys = tie_keys(corpus.key_hashes(), qid, seed)
    return np.lexsort((np.arange(len(scores)), keys, -scores))[:depth].tolist()


def test_blocked_exact_search_holds_one_block_and_equals_a_full_sort():
    rng = np.random.default_rng(0)
    n, nq, depth = 20_000, 200, 10
    docs = rng.integers(-2, 3, size=(n, 16)).astype(np.float32)  # integer vectors: many exact ties
    queries = rng.integers(-2, 3, size=(nq, 16)).astype(np.float32)
    qids = [f"q{i}" for i in range(nq)]
    corpus = corpus_of(n)
    builder = RunBuilder(corpus, depth, seed=5)
    tracemalloc.start()
    for block in exact_blocks(docs, queries, qids, chunk_size=2_000, query_block=20):
        builder.add(block)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    full_matrix = nq * n * 4
    assert peak < full_matrix / 8  # a 20 x 2,000 block (160 kB) and partial sorts, never 16 MB of scores
    run = builder.build("x", qids)
    scores = queries @ docs.T
    for i, q in enumerate(qids):
        assert run.positions[q].tolist() == full_sort(corpus, scores[i], q, depth, seed=5)
        assert np.array_equal(run.scores[q], scores[i][run.positions[q]])


def test_recall_at_k_hand_worked():
    vectors = np.array([[3.0], [2.0], [2.0], [1.0], [0.0]], dtype=np.float32)
    q = np.array([[1.0]], dtype=np.float32)
    assert exact_kth_scores(vectors, q, 2, chunk_size=2).tolist() == [2.0]
    assert recall_at_k(vectors, q, np.array([[0, 2]]), 2, chunk_size=2) == 1.0  # row 2 ties row 1: found
    assert recall_at_k(vectors, q, np.array([[0, 3]]), 2) == 0.5
    assert recall_at_k(vectors, q, np.array([[3, -1]]), 2) == 0.0
    two = np.array([[1.0], [-1.0]], dtype=np.float32)  # the second query's best are rows 4 and 3
    assert recall_at_k(vectors, two, np.array([[0, 1], [4, 0]]), 2) == 0.75


def test_hnsw_run_reports_its_recall_beside_exact():
    rng = np.random.default_rng(1)
    n, nq, depth = 3_000, 60, 10
    table = rng.standard_normal((n + nq, 24)).astype(np.float32)
    corpus = corpus_of(n)
    queries = {f"q{i}": f"v{n + i}" for i in range(nq)}
    enc = TableEncoder(table)
    exact = DenseRetriever(enc, cache_dir=False).retrieve(corpus, queries, depth=depth)
    assert "approximate" not in exact.info
    hnsw_retriever = DenseRetriever(enc, cache_dir=False, index="faiss-hnsw", hnsw_m=4, hnsw_ef_search=depth)
    hnsw = hnsw_retriever.retrieve(corpus, queries, depth=depth)
    info = hnsw.info["approximate"]
    # independently: the share of each query's true top 10 (a full sort of all scores) in the run
    scores = table[n:] @ table[:n].T
    expected = np.mean([len(set(np.argsort(-scores[i])[:depth]) & set(hnsw.positions[q].tolist())) / depth for i, q in enumerate(queries)])
    assert info["k"] == depth and info["queries_checked"] == nq and info["of_queries"] == nq
    assert abs(info["recall_at_k"] - expected) < 1e-9
    assert 0 < info["recall_at_k"] <= 1
    assert "faiss-hnsw" in info["index"] and "exact" in info["method"]
