"""Dense retrieval: encode once (cached by text content), then exact search in chunks or FAISS.

* **Encode once.** Each distinct text is encoded once per encoder: vectors are kept in memory
  for the life of the retriever and, unless disabled, on disk (:mod:`.embedding_cache`), so the
  human-only, LLM-only and mixed settings, reruns and later analyses reuse them. Encoding is
  written shard by shard, so an interrupted run resumes where it stopped.
* **Memory-safe exact search.** Scores are computed for a block of queries against a chunk of
  the corpus at a time, keeping a running top-k per query; no query x corpus matrix is built.
  The running top-k uses the tie rule of :mod:`.ties` in every chunk, so the result is exactly
  the top-k of a full sort.
* **FAISS** (optional, ``index="faiss"`` exact inner product or ``"faiss-hnsw"`` approximate)
  for large corpora; the candidates it returns are re-ordered with the tie rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.data.corpus import Corpus
from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.base import Retriever, self_matches
from sourcebias.models.embedding_store import EmbeddingCache, text_key
from sourcebias.models.encoders import Encoder
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.ties import select_top, tie_keys

INDEXES = ("exact", "faiss", "faiss-hnsw")


class DenseRetriever(Retriever):
    """Rank a corpus by the inner product of query and document vectors.

    Parameters
    ----------
    encoder:
        An :class:`~.encoders.Encoder` (or any object with ``encode_queries`` and
        ``encode_documents``).
    cache_dir:
        Root of the on-disk embedding cache (default ``$SOURCEBIAS_CACHE`` or
        ``~/.cache/sourcebias``); ``False`` keeps vectors in memory only.
    shard_size:
        Texts encoded between two cache writes (what an interruption can lose at most).
    index:
        ``exact`` (default), ``faiss`` (exact, FAISS's inner-product kernels) or ``faiss-hnsw``
        (approximate, for very large corpora).
    chunk_size, query_block:
        Documents and queries scored at a time by the exact search (memory is
        ``query_block x chunk_size`` floats).
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        name: str | None = None,
        cache_dir: str | Path | bool | None = None,
        shard_size: int = 2048,
        index: str = "exact",
        chunk_size: int = 65536,
        query_block: int = 256,
        hnsw_m: int = 32,
        hnsw_ef_search: int = 256,
    ):
        if index not in INDEXES:
            raise ConfigError(f"unknown index '{index}'; choose from {', '.join(INDEXES)}")
        self.encoder = encoder
        self.name = name or getattr(encoder, "name", type(encoder).__name__)
        if cache_dir is None or cache_dir is True:
            from sourcebias.models.llm import default_cache_dir

            cache_dir = default_cache_dir()
        self.cache_dir = None if cache_dir is False else Path(cache_dir)
        self.shard_size = shard_size
        self.index = index
        self.chunk_size = chunk_size
        self.query_block = query_block
        self.hnsw_m = hnsw_m
        self.hnsw_ef_search = hnsw_ef_search
        self._memory: dict[str, dict[bytes, np.ndarray]] = {}
        self._disk: dict[str, EmbeddingCache] = {}
        self.stats = {"encoded": 0, "from_disk": 0, "from_memory": 0}

    def config(self) -> dict[str, Any]:
        enc = self.encoder.config() if hasattr(self.encoder, "config") else {"class": type(self.encoder).__name__}
        return {"name": self.name, "class": "DenseRetriever", "encoder": enc, "index": self.index, "cache": str(self.cache_dir) if self.cache_dir else None}

    # -- embeddings ----------------------------------------------------------------------------
    def _cache(self, role: str) -> tuple[str, EmbeddingCache | None]:
        fp_fn = getattr(self.encoder, "fingerprint", None)
        fp = fp_fn(role) if fp_fn is not None else None
        mem_key = fp or f"{id(self.encoder)}:{role}"
        disk = None
        if fp is not None and self.cache_dir is not None:
            if fp not in self._disk:
                info = self.encoder.config() if hasattr(self.encoder, "config") else {}
                self._disk[fp] = EmbeddingCache(self.cache_dir, fp, {**info, "role": role})
            disk = self._disk[fp]
        return mem_key, disk

    def embed_unique(self, texts: Sequence[str], role: str = "document") -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, inverse)``: one vector per distinct text and, for each text, the row of its
        vector. Each distinct text is encoded at most once, and only if no cache has it."""
        mem_key, disk = self._cache(role)
        memory = self._memory.setdefault(mem_key, {})
        keys = [text_key(t, role) for t in texts]
        row_of: dict[bytes, int] = {}
        inverse = np.fromiter((row_of.setdefault(k, len(row_of)) for k in keys), dtype=np.int64, count=len(keys))
        distinct = list(row_of)
        text_of = {k: t for k, t in zip(keys, texts)}
        pending = [k for k in distinct if k not in memory]
        self.stats["from_memory"] += len(distinct) - len(pending)
        if disk is not None and pending:
            missing_idx = set(disk.missing(pending))
            found = [k for i, k in enumerate(pending) if i not in missing_idx]
            if found:
                for k, v in zip(found, disk.get(found)):
                    memory[k] = v
                self.stats["from_disk"] += len(found)
            pending = [k for i, k in enumerate(pending) if i in missing_idx]
        if pending:
            # Similar lengths together: less padding per batch.
            pending.sort(key=lambda k: len(text_of[k]))
            encode = self.encoder.encode_queries if role == "query" else self.encoder.encode_documents
            unit = "queries" if role == "query" else "docs"
            with progress.task(f"{self.name}: encoding {len(pending):,} {unit}", total=len(pending), unit=unit) as t:
                for start in range(0, len(pending), self.shard_size):
                    chunk = pending[start : start + self.shard_size]
                    vecs = np.asarray(encode([text_of[k] for k in chunk]), dtype=np.float32)
                    if vecs.ndim != 2 or len(vecs) != len(chunk):
                        raise ValueError(f"encoder returned shape {vecs.shape} for {len(chunk)} texts")
                    if disk is not None:
                        disk.put(chunk, vecs)
                    for k, v in zip(chunk, vecs):
                        memory[k] = v
                    self.stats["encoded"] += len(chunk)
                    t.advance(len(chunk))
        vectors = np.stack([memory[k] for k in distinct]) if distinct else np.empty((0, 0), dtype=np.float32)
        return vectors, inverse

    def embed(self, texts: Sequence[str], role: str = "document") -> np.ndarray:
        """Vectors of ``texts`` in order (``role`` is ``"document"`` or ``"query"``); see
        :meth:`embed_unique`."""
        vectors, inverse = self.embed_unique(texts, role)
        return vectors[inverse] if len(inverse) else vectors

    def embed_corpus(self, corpus: Corpus) -> np.ndarray:
        """Document vectors of a corpus (title and text joined), in corpus order."""
        return self.embed(corpus.retrieval_texts(), "document")

    # -- search --------------------------------------------------------------------------------
    def retrieve(self, corpus: Corpus, queries: Mapping[str, str], depth: int = 1000, *, seed: int = 0, exclude_self: bool = False) -> Run:
        qids = list(queries)
        doc_vecs, doc_rows = self.embed_unique(corpus.retrieval_texts(), "document")
        q_vecs = self.embed([queries[q] for q in qids], "query")
        exclude = self_matches(corpus, qids) if exclude_self else None
        with progress.task(f"{self.name}: searching {len(corpus):,} docs", total=len(qids), unit="queries") as t:
            if self.index == "exact":
                positions, scores = exact_search(
                    corpus, doc_vecs, q_vecs, qids, depth, rows=doc_rows, seed=seed, exclude=exclude, chunk_size=self.chunk_size, query_block=self.query_block, on_block=t.advance
                )
            else:
                positions, scores = self._faiss_search(corpus, doc_vecs, doc_rows, q_vecs, qids, depth, seed, exclude)
                t.advance(len(qids))
        fp = getattr(self.encoder, "fingerprint", None)
        info: dict[str, Any] = {
            "index": self.index,
            "encoder_fingerprint": {r: fp(r) for r in ("query", "document")} if fp else None,
            "embeddings": dict(self.stats),  # cumulative for this retriever: encoded / reused
        }
        if exclude is not None:
            info["self_matches_removed"] = int(sum(len(v) for v in exclude.values()))
        return Run(corpus, self.name, positions, scores, info)

    def _faiss_search(self, corpus, vecs, rows, q_vecs, qids, depth, seed, exclude):
        import faiss

        groups = _Groups(rows)
        dim = vecs.shape[1]
        if self.index == "faiss":
            index = faiss.IndexFlatIP(dim)
        else:
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = max(self.hnsw_ef_search, depth)
        index.add(np.ascontiguousarray(vecs, dtype=np.float32))
        # A margin beyond depth so that documents tied at the cut-off (and excluded
        # self-matches) are candidates for the tie rule.
        extra = 16 + (max((len(v) for v in exclude.values()), default=0) if exclude else 0)
        k = min(len(vecs), depth + extra)
        sc, ix = index.search(np.ascontiguousarray(q_vecs, dtype=np.float32), k)
        hashes = corpus.key_hashes()
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for i, q in enumerate(qids):
            valid = ix[i] >= 0
            pos, s = groups.expand(ix[i][valid].astype(np.int64), sc[i][valid])
            if exclude is not None and q in exclude:
                keep = ~np.isin(pos, exclude[q])
                pos, s = pos[keep], s[keep]
            top = select_top(s, lambda p, q=q: tie_keys(hashes[p], q, seed), pos, depth)
            positions[q], scores[q] = pos[top], s[top]
        return positions, scores


class _Groups:
    """Documents grouped by the row of their (shared) vector: row r's documents are
    ``order[start[r]:start[r + 1]]``."""

    def __init__(self, rows: np.ndarray):
        self.order = np.argsort(rows, kind="stable")
        counts = np.bincount(rows, minlength=int(rows.max()) + 1 if len(rows) else 0)
        self.start = np.concatenate([[0], np.cumsum(counts)])

    def span(self, r0: int, r1: int) -> np.ndarray:
        """Positions of the documents whose vector rows are in ``[r0, r1)``."""
        return self.order[self.start[r0] : self.start[min(r1, len(self.start) - 1)]]

    def expand(self, vec_rows: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every document of the given vector rows, each with its row's score."""
        sizes = self.start[vec_rows + 1] - self.start[vec_rows]
        pos = np.concatenate([self.order[self.start[r] : self.start[r + 1]] for r in vec_rows]) if len(vec_rows) else np.empty(0, dtype=np.int64)
        return pos, np.repeat(scores, sizes)


def exact_search(
    corpus: Corpus,
    vectors: np.ndarray,
    q_vecs: np.ndarray,
    query_ids: Sequence[str],
    depth: int,
    *,
    rows: np.ndarray | None = None,
    seed: int = 0,
    exclude: Mapping[str, np.ndarray] | None = None,
    chunk_size: int = 65536,
    query_block: int = 256,
    on_block=None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Top ``depth`` documents per query by inner product.

    ``vectors`` holds one row per distinct document vector and ``rows[i]`` is the row of
    document ``i`` (default: one row per document). Documents sharing a row get bit-identical
    scores, so identical texts tie exactly and the tie rule, not floating-point noise, orders
    them. Scores are computed for ``query_block`` queries against ``chunk_size`` vectors at a
    time, merging a running top-k (the tie rule applied throughout, so the result equals a full
    sort).
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if rows is None:
        rows = np.arange(len(vectors), dtype=np.int64)
    groups = _Groups(rows)
    hashes = corpus.key_hashes()
    positions: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    n_vec = len(vectors)
    for qs in range(0, len(query_ids), query_block):
        block_ids = list(query_ids[qs : qs + query_block])
        block = np.asarray(q_vecs[qs : qs + query_block], dtype=np.float32)
        best_pos: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(block_ids)
        best_sc: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(block_ids)
        for cs in range(0, n_vec, chunk_size):
            ce = min(cs + chunk_size, n_vec)
            chunk_scores = block @ vectors[cs:ce].T
            chunk_pos = groups.span(cs, ce)
            chunk_cols = rows[chunk_pos] - cs
            for i, q in enumerate(block_ids):
                row, pos = chunk_scores[i][chunk_cols], chunk_pos
                if exclude is not None and q in exclude and len(exclude[q]):
                    keep = ~np.isin(pos, exclude[q])
                    row, pos = row[keep], pos[keep]
                keys = lambda p, q=q: tie_keys(hashes[p], q, seed)  # noqa: E731
                top = select_top(row, keys, pos, depth)
                if cs == 0:
                    best_pos[i], best_sc[i] = pos[top], row[top]
                else:
                    mpos = np.concatenate([best_pos[i], pos[top]])
                    msc = np.concatenate([best_sc[i], row[top]])
                    keep = select_top(msc, keys, mpos, depth)
                    best_pos[i], best_sc[i] = mpos[keep], msc[keep]
        for i, q in enumerate(block_ids):
            positions[q], scores[q] = best_pos[i], best_sc[i]
        if on_block is not None:
            on_block(len(block_ids))
    return positions, scores
