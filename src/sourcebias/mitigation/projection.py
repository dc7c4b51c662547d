"""Projection debiasing (Huang et al., 2026): remove the LLM-minus-human direction from document
embeddings at inference.

From every calibration dataset (leave the target out), a seeded sample of twin pairs (100 per
dataset by default); u = unit(mean over all sampled pairs of e_LLM − e_human), each dataset
contributing the same number of pairs; at search time each document vector becomes
d' = d − (d·u) u (not renormalised; queries unchanged) — a
:class:`~sourcebias.models.projection.DirectionRemoval` for the dense retriever's ``project=``
option. Vectors come from the embedding store, so fitting and searching encode nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.projection import DirectionRemoval


def sample_pairs(dataset: Any, n: int, seed: int, llm_source: str | None = None) -> list[str]:
    """``n`` doc ids with both a human and an LLM copy, drawn with ``default_rng(seed)`` from the
    sorted ids (all of them when fewer)."""
    llm = llm_source or (dataset.other_sources[0] if len(dataset.other_sources) == 1 else None)
    if llm is None:
        raise ConfigError(f"{dataset.name}: several LLM sources; name the one to use")
    corpus = dataset.corpus
    ids = sorted({d for d in corpus.doc_ids if corpus.position(d, dataset.human_source) is not None and corpus.position(d, llm) is not None})
    if not ids:
        raise ConfigError(f"{dataset.name}: no twin pairs")
    if n >= len(ids):
        return ids
    pick = np.sort(np.random.default_rng(seed).choice(len(ids), size=n, replace=False))
    return [ids[i] for i in pick.tolist()]


def fit_direction(retriever: Any, datasets: Sequence[Any], *, pairs_per_dataset: int = 100, seed: int = 42) -> DirectionRemoval:
    """The direction to remove, from the calibration ``datasets`` (loaded datasets) and a dense
    ``retriever`` (its embedder and encoder fingerprint)."""
    embedder = getattr(retriever, "embedder", None)
    if embedder is None:
        raise ConfigError("projection needs a dense retriever (minilm, st:NAME, a preset)")
    diffs = []
    per: dict[str, int] = {}
    for k, ds in enumerate(datasets):
        llm = ds.other_sources[0]
        ids = sample_pairs(ds, pairs_per_dataset, seed + k)
        texts = ds.corpus.retrieval_texts()
        e_h = retriever.embed([texts[ds.corpus.position(d, ds.human_source)] for d in ids], "document").astype(np.float64)
        e_l = retriever.embed([texts[ds.corpus.position(d, llm)] for d in ids], "document").astype(np.float64)
        diffs.append(e_l - e_h)
        per[ds.name] = len(ids)
    d = np.concatenate(diffs)
    mean = d.mean(axis=0)
    if not np.isfinite(mean).all() or np.linalg.norm(mean) == 0:
        raise ConfigError("the pair differences average to zero: no direction to remove")
    fp = getattr(retriever.encoder, "fingerprint", None)
    details = {
        "calibration": per,
        "pairs": len(d),
        "seed": seed,
        "pairs_per_dataset": pairs_per_dataset,
        "mean_difference_norm": float(np.linalg.norm(mean)),
        "encoder": getattr(retriever, "name", ""),
    }
    return DirectionRemoval(mean, fingerprint=fp("document") if fp else None, details=details)


def projected(retriever: Any, projection: DirectionRemoval, *, source: str | None = None, name: str | None = None) -> Any:
    """``retriever`` (a dense retriever, not shared with the "before" system) with ``projection``
    applied to its document vectors, renamed ``name`` (default: its name + "+projection")."""
    if source is not None:
        projection.source = source
    retriever.doc_transform = projection
    retriever.name = name or f"{retriever.name}+projection"
    return retriever
