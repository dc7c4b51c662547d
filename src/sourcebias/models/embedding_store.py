"""An on-disk cache of embeddings, keyed by the encoder and the text's content.

Layout::

    <root>/embeddings/<encoder fingerprint>/
        info.json                   what the fingerprint stands for (model, pooling, ...)
        shard-<time>-<pid>-<n>.npz  keys (n x 16 bytes, BLAKE2b of role + text) and vectors (n x dim)

Shards are written whole to a temporary name and renamed into place, so a crash or kill
during encoding loses at most the shard being encoded and never leaves a corrupt file; the
next run finds the finished shards and encodes only what is missing. Several processes can
write to the same cache (each writes its own shards; a duplicate key is harmless).

Why not a library: the sentence-transformers and FAISS caches are keyed by position, not by
text content, and would not let the human-only, LLM-only and mixed settings (and analyses)
share vectors for the same texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

KEY_BYTES = 16


def text_key(text: str, role: str) -> bytes:
    """The cache key of a text encoded in a role (``"query"`` or ``"document"``)."""
    h = hashlib.blake2b(digest_size=KEY_BYTES)
    h.update(role.encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8"))
    return h.digest()


class EmbeddingCache:
    """Vectors of one encoder (one fingerprint) under ``root``; loads lazily, appends shards."""

    def __init__(self, root: str | Path, fingerprint: str, info: dict[str, Any] | None = None):
        self.folder = Path(root) / "embeddings" / fingerprint
        self.folder.mkdir(parents=True, exist_ok=True)
        info_path = self.folder / "info.json"
        if info is not None and not info_path.exists():
            tmp = info_path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(info, indent=2, default=str))
            os.replace(tmp, info_path)
        self._index: dict[bytes, tuple[int, int]] | None = None
        self._shards: list[Path] = []
        self._loaded: dict[int, np.ndarray] = {}
        self._counter = 0

    def _load_index(self) -> dict[bytes, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            for path in sorted(self.folder.glob("shard-*.npz")):
                self._add_shard(path)
        return self._index

    def _add_shard(self, path: Path) -> None:
        try:
            with np.load(path) as z:
                keys = z["keys"]
        except Exception:  # unreadable (e.g. a file copied in half): ignore it, it will be re-encoded
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
        """Indices of ``keys`` not in the cache."""
        index = self._load_index()
        return [i for i, k in enumerate(keys) if k not in index]

    def get(self, keys: Sequence[bytes]) -> np.ndarray:
        """Vectors for ``keys`` (all must be present), in order."""
        index = self._load_index()
        locs = [index[k] for k in keys]
        if not locs:
            return np.empty((0, 0), dtype=np.float32)
        dim = self._vectors(locs[0][0]).shape[1]
        out = np.empty((len(keys), dim), dtype=np.float32)
        by_shard: dict[int, tuple[list[int], list[int]]] = {}
        for i, (sid, row) in enumerate(locs):
            dst, src = by_shard.setdefault(sid, ([], []))
            dst.append(i)
            src.append(row)
        for sid, (dst, src) in by_shard.items():
            out[dst] = self._vectors(sid)[src]
        return out

    def _vectors(self, sid: int) -> np.ndarray:
        if sid not in self._loaded:
            with np.load(self._shards[sid]) as z:
                self._loaded[sid] = z["vectors"]
        return self._loaded[sid]

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path:
        """Write one shard atomically and make it visible to :meth:`get`."""
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        self._load_index()
        self._counter += 1
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{self._counter}"
        tmp = self.folder / f".tmp-{name}.npz"  # not matched by the shard-*.npz glob
        final = self.folder / f"{name}.npz"
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        np.savez(tmp, keys=key_arr, vectors=np.asarray(vectors, dtype=np.float32))
        os.replace(tmp, final)
        self._add_shard(final)
        return final
