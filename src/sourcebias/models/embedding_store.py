"""Embeddings computed once: an on-disk store keyed by the encoder and the text's content, and
the :class:`Embedder` that every capability (dense retrieval, analyses, projection) encodes through.

Layout::

    <root>/embeddings/<encoder fingerprint>/
        info.json                   what the fingerprint stands for (model, pooling, ...)
        shard-<time>-<pid>-<n>.npz  keys (n x 16 bytes, BLAKE2b of role + text) and vectors (n x dim)

Shards are written whole to a temporary name and renamed into place, so a crash or kill never
leaves a corrupt file; the :class:`Embedder` writes a shard every ``shard_size`` vectors or
``flush_seconds`` (whichever comes first) and on an interruption (Ctrl-C, an error), so an
interruption loses at most the batch being encoded, a ``kill -9`` at most the shard being filled,
and the next run encodes only what is missing. Encoding streams: the process holds the vectors
kept (the embedder's in-memory copy and the matrix returned) plus one shard being filled; reading
the store holds one shard at a time. Several processes can write to the same store at once (each writes
its own shards, named by time, process and counter; a key written twice is harmless: the first
shard that has it is used) and each picks up the others' finished shards before it encodes.

Why not a library: the sentence-transformers and FAISS caches are keyed by position, not by
text content, and would not let the human-only, LLM-only and mixed settings (and analyses)
share vectors for the same texts.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.atomic import atomic_open, atomic_write_json

KEY_BYTES = 16


def text_key(text: str, role: str) -> bytes:
    """The cache key of a text encoded in a role (``"query"`` or ``"document"``)."""
    h = hashlib.blake2b(digest_size=KEY_BYTES)
    h.update(role.encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8"))
    return h.digest()


class EmbeddingStore:
    """Vectors of one encoder (one fingerprint) under ``root``; loads lazily, appends shards."""

    def __init__(self, root: str | Path, fingerprint: str, info: dict[str, Any] | None = None):
        self.folder = Path(root) / "embeddings" / fingerprint
        self.folder.mkdir(parents=True, exist_ok=True)
        info_path = self.folder / "info.json"
        if info is not None and not info_path.exists():
            atomic_write_json(info_path, info)
        self._index: dict[bytes, tuple[int, int]] | None = None
        self._shards: list[Path] = []
        self._counter = 0
        self._unreadable: set[Path] = set()

    def _load_index(self) -> dict[bytes, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            self.refresh()
        return self._index

    def refresh(self) -> int:
        """Index shards written since the last look (e.g. by another process); returns how many."""
        if self._index is None:
            self._index = {}
        known = set(self._shards) | self._unreadable
        new = [p for p in sorted(self.folder.glob("shard-*.npz")) if p not in known]
        for path in new:
            self._add_shard(path)
        return len(new)

    def _add_shard(self, path: Path) -> None:
        try:
            with np.load(path) as z:
                keys = z["keys"]
        except Exception:  # unreadable (e.g. a file copied in half): ignore it, it will be re-encoded
            self._unreadable.add(path)
            return
        sid = len(self._shards)
        self._shards.append(path)
        assert self._index is not None
        for row, k in enumerate(keys):
            self._index.setdefault(bytes(k), (sid, row))

    def __len__(self) -> int:
        return len(self._load_index())

    def __contains__(self, key: bytes) -> bool:
        return key in self._load_index()

    def missing(self, keys: Sequence[bytes]) -> list[int]:
        """Indices of ``keys`` not in the store (after looking for other writers' new shards)."""
        if self._index is not None:
            self.refresh()
        index = self._load_index()
        return [i for i, k in enumerate(keys) if k not in index]

    def get(self, keys: Sequence[bytes]) -> np.ndarray:
        """Vectors for ``keys`` (all must be present), in order.

        Each shard is read once per call and released after its rows are copied out, so reading a
        store holds the result plus one shard, never the whole store twice."""
        index = self._load_index()
        locs = [index[k] for k in keys]
        if not locs:
            return np.empty((0, 0), dtype=np.float32)
        by_shard: dict[int, tuple[list[int], list[int]]] = {}
        for i, (sid, row) in enumerate(locs):
            dst, src = by_shard.setdefault(sid, ([], []))
            dst.append(i)
            src.append(row)
        out: np.ndarray | None = None
        for sid, (dst, src) in by_shard.items():
            vectors = self._vectors(sid)
            if out is None:
                out = np.empty((len(keys), vectors.shape[1]), dtype=np.float32)
            out[dst] = vectors[src]
            del vectors
        assert out is not None
        return out

    def _vectors(self, sid: int) -> np.ndarray:
        with np.load(self._shards[sid]) as z:
            return z["vectors"]

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path:
        """Write one shard atomically and make it visible to :meth:`get`."""
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        self._load_index()
        self._counter += 1
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{self._counter}"
        final = self.folder / f"{name}.npz"
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        with atomic_open(final, "wb") as fh:  # the temporary name (".shard-...tmpPID") is not matched by the shard-*.npz glob
            np.savez(fh, keys=key_arr, vectors=np.asarray(vectors, dtype=np.float32))
        self._add_shard(final)
        return final


class Embedder:
    """Encode texts through an encoder, each distinct text once, reusing the on-disk store.

    Parameters
    ----------
    encoder:
        An :class:`~sourcebias.models.encoders.Encoder` (``encode_queries``/``encode_documents``;
        with a ``fingerprint`` the vectors are stored on disk).
    cache_dir:
        Root of the store (default ``$SOURCEBIAS_CACHE`` or ``~/.cache/sourcebias``); ``False``
        keeps vectors in memory only.
    batch_size:
        Texts per call to the encoder (the progress bar advances per batch; an interruption loses
        at most one batch).
    shard_size, flush_seconds:
        A shard is written when this many new vectors are pending or this many seconds have
        passed since the last write (default ``$SOURCEBIAS_FLUSH_SECONDS`` or 10), and whenever
        encoding stops (normally or not).
    """

    def __init__(
        self,
        encoder: Any,
        *,
        cache_dir: str | Path | bool | None = None,
        batch_size: int | None = None,
        shard_size: int = 2048,
        flush_seconds: float | None = None,
        name: str | None = None,
    ):
        self.encoder = encoder
        if cache_dir is None or cache_dir is True:
            from sourcebias.core.cache import default_cache_dir

            cache_dir = default_cache_dir()
        self.cache_dir = None if cache_dir is False else Path(cache_dir)
        self.batch_size = int(batch_size or getattr(encoder, "batch_size", 32) or 32)
        self.shard_size = shard_size
        if flush_seconds is None:
            from sourcebias.core.cache import default_flush_seconds

            flush_seconds = default_flush_seconds()
        self.flush_seconds = flush_seconds
        self.name = name or getattr(encoder, "name", type(encoder).__name__)
        self._memory: dict[str, dict[bytes, np.ndarray]] = {}
        self._disk: dict[str, EmbeddingStore] = {}
        self.stats = {"encoded": 0, "from_disk": 0, "from_memory": 0}

    def fingerprint(self, role: str) -> str | None:
        fp = getattr(self.encoder, "fingerprint", None)
        return fp(role) if fp is not None else None

    def store(self, role: str) -> EmbeddingStore | None:
        """The on-disk store of this encoder's ``role`` vectors (None without fingerprint or cache)."""
        fp = self.fingerprint(role)
        if fp is None or self.cache_dir is None:
            return None
        if fp not in self._disk:
            info = self.encoder.config() if hasattr(self.encoder, "config") else {}
            self._disk[fp] = EmbeddingStore(self.cache_dir, fp, {**info, "role": role})
        return self._disk[fp]

    def embed_unique(self, texts: Sequence[str], role: str = "document") -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, inverse)``: one vector per distinct text and, for each text, the row of its
        vector. Each distinct text is encoded at most once, and only if no store has it."""
        from sourcebias.core import progress

        fp = self.fingerprint(role)
        memory = self._memory.setdefault(fp or f"{id(self.encoder)}:{role}", {})
        disk = self.store(role)
        keys = [text_key(t, role) for t in texts]
        row_of: dict[bytes, int] = {}
        inverse = np.fromiter((row_of.setdefault(k, len(row_of)) for k in keys), dtype=np.int64, count=len(keys))
        distinct = list(row_of)
        text_of = dict(zip(keys, texts))
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
            pending.sort(key=lambda k: len(text_of[k]))  # similar lengths together: less padding
            encode = self.encoder.encode_queries if role == "query" else self.encoder.encode_documents
            unit = "queries" if role == "query" else "docs"
            unsaved: list[bytes] = []
            last_flush = time.monotonic()

            def flush() -> None:
                nonlocal unsaved, last_flush
                if disk is not None and unsaved:
                    disk.put(unsaved, np.stack([memory[k] for k in unsaved]))
                unsaved = []
                last_flush = time.monotonic()

            with progress.task(f"{self.name}: encoding {len(pending):,} {unit}", total=len(pending), unit=unit) as t:
                try:
                    for start in range(0, len(pending), self.batch_size):
                        chunk = pending[start : start + self.batch_size]
                        vecs = np.asarray(encode([text_of[k] for k in chunk]), dtype=np.float32)
                        if vecs.ndim != 2 or len(vecs) != len(chunk):
                            raise ValueError(f"encoder returned shape {vecs.shape} for {len(chunk)} texts")
                        for k, v in zip(chunk, vecs):
                            memory[k] = v
                        unsaved += chunk
                        self.stats["encoded"] += len(chunk)
                        t.advance(len(chunk))
                        if len(unsaved) >= self.shard_size or time.monotonic() - last_flush >= self.flush_seconds:
                            flush()
                finally:
                    flush()  # also on Ctrl-C or an error: keep every finished batch
        vectors = np.stack([memory[k] for k in distinct]) if distinct else np.empty((0, 0), dtype=np.float32)
        return vectors, inverse

    def embed(self, texts: Sequence[str], role: str = "document") -> np.ndarray:
        """Vectors of ``texts`` in order (``role``: ``"document"`` or ``"query"``)."""
        vectors, inverse = self.embed_unique(texts, role)
        return vectors[inverse] if len(inverse) else vectors
