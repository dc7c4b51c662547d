"""sourcebias datasets and ir_datasets (``pip install "sourcebias[ecosystem]"``).

* ``sourcebias.irds.register(DIR)`` registers a dataset folder as ir_datasets datasets
  ``cocktail/<name>/<split>`` (documents named ``<source>/<doc_id>`` with a ``source`` field,
  queries, qrels on every copy), so ``ir_datasets.load``, ``ranx.Qrels.from_ir_datasets`` and
  ``pt.get_dataset("irds:cocktail/<name>/<split>")`` work on it.
* ``sourcebias.irds.load("beir/nfcorpus/test", twins=DIR)`` — the same as
  ``sourcebias.load_dataset("irds:beir/nfcorpus/test", twins=DIR)``: the human side from
  ir_datasets, the LLM twins from a folder.

Loading is done in :mod:`sourcebias.data.irds`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset
from sourcebias.data.dataset import detect_layout
from sourcebias.data.irds import require_ir_datasets
from sourcebias.data.pairing import check_policy

_irds = require_ir_datasets()
from ir_datasets import formats as _formats  # noqa: E402


class CocktailDoc(NamedTuple):
    """A document of a registered Cocktail folder: ``doc_id`` is ``<source>/<original_id>``."""

    doc_id: str
    title: str
    text: str
    source: str
    original_id: str

    def default_text(self) -> str:
        return f"{self.title} {self.text}".strip()


class _Split:
    """One split of a dataset folder, loaded (and validated) by :func:`sourcebias.data.load_dataset`
    the first time ir_datasets reads it."""

    def __init__(self, folder: Path, split: str, orphans: str):
        self.folder, self.split, self.orphans = folder, split, orphans
        self.namespace = f"cocktail/{folder.name}"
        self._ds = None

    @property
    def ds(self):
        if self._ds is None:
            self._ds = load_dataset(str(self.folder), split=self.split, orphans=self.orphans)
        return self._ds


class _Docs(_formats.BaseDocs):
    def __init__(self, split: _Split):
        self._split = split

    def docs_iter(self):
        for d in self._split.ds.corpus:
            yield CocktailDoc(f"{d.source}/{d.doc_id}", d.title, d.text, d.source, d.doc_id)

    def docs_count(self):
        return len(self._split.ds.corpus)

    def docs_cls(self):
        return CocktailDoc

    def docs_namespace(self):
        return self._split.namespace

    def docs_lang(self):
        return None


class _Queries(_formats.BaseQueries):
    """The split's evaluated queries (those with a relevant document)."""

    def __init__(self, split: _Split):
        self._split = split

    def queries_iter(self):
        ds = self._split.ds
        for q in ds.evaluation_queries():
            yield _formats.GenericQuery(q, ds.queries[q])

    def queries_cls(self):
        return _formats.GenericQuery

    def queries_namespace(self):
        return self._split.namespace


class _Qrels(_formats.BaseQrels):
    """The split's judgements on every copy: each copy carries its original's grade."""

    def __init__(self, split: _Split):
        self._split = split

    def qrels_iter(self):
        ds = self._split.ds
        for q in ds.qrels:
            for doc_id, grade in ds.qrels[q].items():
                for s in ds.sources:
                    if ds.corpus.position(doc_id, s) is not None:
                        yield _formats.TrecQrel(q, f"{s}/{doc_id}", grade, "0")

    def qrels_cls(self):
        return _formats.TrecQrel

    def qrels_defs(self):
        return {}


def register(folder: str | Path, name: str | None = None, *, orphans: str = "drop") -> list[str]:
    """Register a dataset folder (any sourcebias layout) or a known dataset's name as ``cocktail/<name>/<split>``, one
    ir_datasets dataset per qrels split; returns the ids. Registering the same folder again is a
    no-op; another folder under a taken name is refused."""
    check_policy(orphans)
    from sourcebias.data.dataset import resolve_dataset

    found, registered = resolve_dataset(folder)  # a folder, or a known dataset's name
    layout = detect_layout(found)
    root = layout.root.resolve()
    name = name or registered or root.name
    ids = []
    for split in layout.splits():
        ds_id = f"cocktail/{name}/{split}"
        existing = _irds.registry[ds_id] if ds_id in _irds.registry else None  # noqa: SIM401 - ir_datasets' Registry has no .get()
        if existing is not None:
            if getattr(existing, "_sourcebias_root", None) != (root, orphans):
                raise ConfigError(f"ir_datasets id '{ds_id}' is already registered for another folder; pass name=")
        else:
            part = _Split(root, split, orphans)
            dataset = _irds.Dataset(_Docs(part), _Queries(part), _Qrels(part))
            dataset._sourcebias_root = (root, orphans)
            _irds.registry.register(ds_id, dataset)
        ids.append(ds_id)
    if not ids:
        raise DataError(root, "no qrels split to register (qrels/<split>.tsv)")
    return ids


def load(dataset_id: str, *, twins: Any = None, **kwargs: Any):
    """``load_dataset("irds:" + dataset_id, twins=twins, **kwargs)``: the human side from
    ir_datasets, the LLM twins from the folder ``twins``."""
    return load_dataset(dataset_id if dataset_id.startswith("irds:") else f"irds:{dataset_id}", twins=twins, **kwargs)
