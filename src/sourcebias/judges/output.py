"""The judge's qrels as files, and as a dataset the evaluate command reads.

``qrels/<variant>.tsv`` in BEIR's format (``query-id corpus-id score``); ``dataset/`` is the
judged dataset in the Cocktail layout with those qrels as its splits: its corpus and queries are
gzip-compressed copies of the files the judge read (a folder never points outside itself), so
``sourcebias evaluate OUT/dataset --split judge-human -r bm25`` evaluates any retriever with the judge's
judgements (load it with the options the judged dataset was loaded with)."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_qrels(labels: Mapping[str, Mapping[str, int]], path: Path) -> Path:
    """One qrels file, ``query-id corpus-id score`` with a header, in query and document order."""
    from sourcebias.core.atomic import atomic_write_text

    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{int(g)}" for q, docs in labels.items() for d, g in docs.items()]
    return atomic_write_text(path, "\n".join(lines) + "\n")


def _gzip_copy(src: Path, dest: Path) -> Path:
    """``src`` copied to ``dest`` (``.gz``), compressed unless it already is."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.name.endswith(".gz"):
        shutil.copyfile(src, dest)
    else:
        with open(src, "rb") as fin, open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as fout:
            shutil.copyfileobj(fin, fout)  # mtime 0: the same input gives the same bytes
    return dest


def write_outputs(folder: Path, dataset: Any, variants: Mapping[str, Mapping[str, Mapping[str, int]]]) -> list[str]:
    """``qrels/`` and ``dataset/`` (see the module docstring) under ``folder``.

    Returns:
        Notes: why the dataset copy was not written (a source read through ir_datasets, not from a file).
    """
    for name, labels in variants.items():
        write_qrels(labels, folder / "qrels" / f"{name}.tsv")
    files = {s: Path(p) for s, p in dataset.source_files.items()}
    if not all(p.is_file() for p in files.values()) or not Path(dataset.queries_file).is_file():
        return ["dataset/ not written: the judged dataset's corpus is not read from files (ir_datasets); use qrels/ with your own copy"]
    root = folder / "dataset"
    for source, path in files.items():
        _gzip_copy(path, root / "corpus" / f"{source}.jsonl.gz")
    _gzip_copy(Path(dataset.queries_file), root / "queries.jsonl.gz")
    (root / "qrels").mkdir(exist_ok=True)
    for name in variants:
        shutil.copyfile(folder / "qrels" / f"{name}.tsv", root / "qrels" / f"{name}.tsv")
    return []
