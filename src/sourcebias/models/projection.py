"""Removing a direction from document vectors: d' = d − (d·u) u (Huang et al., 2026).

A :class:`DirectionRemoval` holds a unit vector ``u`` (the LLM-minus-human direction fitted by
:mod:`sourcebias.mitigation.projection`) and the fingerprint of the encoder whose vectors it was
fitted on. Applied to document vectors only (queries unchanged), without renormalising, it is
passed to a dense retriever as its document transform: ``--retriever "minilm,project=FIT.json"``.
Vectors come from the embedding store, so nothing is encoded again. It refuses vectors of another
dimension, and a retriever whose encoder has another fingerprint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError


class DirectionRemoval:
    """``d − (d·u) u`` for each row ``d`` (float32 in, float32 out)."""

    def __init__(self, direction: Any, *, fingerprint: str | None = None, source: str | None = None, details: dict[str, Any] | None = None):
        u = np.asarray(direction, dtype=np.float64).reshape(-1)
        norm = np.linalg.norm(u)
        if u.size == 0 or not np.isfinite(norm) or norm == 0:
            raise ConfigError("a projection needs a non-zero, finite direction")
        self.u = u / norm
        self.fingerprint = fingerprint
        self.source = source
        self.details = dict(details or {})

    @property
    def dim(self) -> int:
        return int(self.u.size)

    def __call__(self, vectors: np.ndarray) -> np.ndarray:
        v = np.asarray(vectors)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise ConfigError(f"projection of dimension {self.dim} applied to vectors of shape {v.shape} (another encoder?)")
        v64 = v.astype(np.float64)
        return (v64 - np.outer(v64 @ self.u, self.u)).astype(np.float32)

    def check_encoder(self, fingerprint: str | None) -> None:
        if self.fingerprint and fingerprint and fingerprint != self.fingerprint:
            raise ConfigError(
                f"the projection {self.source or ''} was fitted on vectors of encoder {self.fingerprint}, not {fingerprint}: fit it for this encoder"
            )

    def config(self) -> dict[str, Any]:
        return {
            "class": "DirectionRemoval",
            "file": self.source,
            "dim": self.dim,
            "encoder_fingerprint": self.fingerprint,
            **{k: v for k, v in self.details.items() if k != "direction"},
        }

    # -- files -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"kind": "direction-removal", "direction": self.u.tolist(), "encoder_fingerprint": self.fingerprint, **self.details}

    def save(self, path: str | Path) -> Path:
        from sourcebias.core.atomic import atomic_write_json

        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> DirectionRemoval:
        from sourcebias.core.atomic import read_json_file

        path, body = read_json_file(path, default_name="projection.json", missing="projection not found (fit one with: sourcebias project fit ...)")
        if body.get("kind") != "direction-removal" or "direction" not in body:
            raise DataError(path, "not a projection file (no direction-removal direction)")
        details = {k: v for k, v in body.items() if k not in ("kind", "direction", "encoder_fingerprint")}
        return cls(body["direction"], fingerprint=body.get("encoder_fingerprint"), source=str(path), details=details)
