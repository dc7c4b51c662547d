"""Documents of one or more sources.

A document is identified by the pair ``(doc_id, source)``. An LLM-written twin keeps the
``doc_id`` of the human document it rewrites and differs in ``source``; the source is a field
of the document, never a part of its id string.

A :class:`Corpus` stores its documents column-wise (ids, source codes, titles, texts) so that
retrievers can work on positions ``0 .. len(corpus) - 1``; positions are internal to one
corpus object and never written to disk as document identifiers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError

_NO_TEXTS = (
    "this corpus holds document keys only (e.g. runs loaded from a results folder); "
    "load the dataset (sourcebias.load_dataset) and bind the run to it: run.bind(dataset.corpus)"
)


@dataclass(frozen=True)
class Document:
    """One document: its id, its source (e.g. ``human`` or ``llama-2-7b-chat-tmp0.2``) and text."""

    doc_id: str
    source: str
    title: str
    text: str
    metadata: dict[str, Any] | None = field(default=None, compare=False)

    def retrieval_text(self) -> str:
        """The text a retriever sees (:func:`join_title_text` of the title and text).

        Returns:
            ``title + " " + text``, or the text alone when the title is empty.
        """
        return join_title_text(self.title, self.text)


def join_title_text(title: str, text: str) -> str:
    """The text a retriever sees: the title and the text joined.

    Args:
        title: The document's title (may be empty).
        text: The document's text.

    Returns:
        ``title + " " + text`` (the title stripped), or just the text when the title is empty.
    """
    title = title.strip()
    return f"{title} {text}" if title else text


class Corpus:
    """An ordered, immutable collection of documents from one or more sources.

    ``(doc_id, source)`` pairs must be unique.

    Args:
        doc_ids: The documents' ids, one entry per document.
        sources: Their sources (parallel to ``doc_ids``).
        titles: Their titles (parallel to ``doc_ids``).
        texts: Their texts (parallel to ``doc_ids``).
        metadata: Optional parallel sequence of per-document metadata dicts (or ``None``).
        source_order: The order in which sources are listed (default: order of first appearance).
    """

    def __init__(
        self,
        doc_ids: Sequence[str],
        sources: Sequence[str],
        titles: Sequence[str],
        texts: Sequence[str],
        metadata: Sequence[dict[str, Any] | None] | None = None,
        source_order: Sequence[str] | None = None,
    ):
        n = len(doc_ids)
        if not (len(sources) == len(titles) == len(texts) == n):
            raise ValueError("doc_ids, sources, titles and texts must have the same length")
        if metadata is not None and len(metadata) != n:
            raise ValueError("metadata must have one entry per document")
        names = list(dict.fromkeys(source_order or [])) if source_order else []
        for s in sources:
            if s not in names:
                names.append(s)
        code_of = {s: i for i, s in enumerate(names)}
        self._source_names: tuple[str, ...] = tuple(names)
        self._codes = np.fromiter((code_of[s] for s in sources), dtype=np.int32, count=n)
        self._doc_ids = list(doc_ids)
        self._titles: list[str] | None = list(titles)  # None: a corpus of keys only (keys_only)
        self._texts: list[str] | None = list(texts)
        self._metadata = list(metadata) if metadata is not None else None
        self._position: dict[tuple[str, str], int] | None = None
        self._key_hashes: np.ndarray | None = None
        unique = len(set(zip(self._doc_ids, self._codes.tolist())))
        if unique != n:
            dup = _first_duplicate(zip(self._doc_ids, sources))
            raise ValueError(f"duplicate document (doc_id, source) = {dup}")

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_documents(cls, documents: Iterable[Document], source_order: Sequence[str] | None = None) -> Corpus:
        """A corpus of :class:`Document` objects, in their order.

        Args:
            documents: The documents.
            source_order: The order in which sources are listed (default: order of first appearance).

        Returns:
            The corpus (with metadata when any document has some).
        """
        docs = list(documents)
        return cls(
            [d.doc_id for d in docs],
            [d.source for d in docs],
            [d.title for d in docs],
            [d.text for d in docs],
            metadata=[d.metadata for d in docs] if any(d.metadata for d in docs) else None,
            source_order=source_order,
        )

    @classmethod
    def keys_only(cls, doc_ids: Sequence[str], sources: Sequence[str], source_order: Sequence[str] | None = None) -> Corpus:
        """A corpus of document keys without texts (e.g. the documents of runs loaded from a results folder).

        Asking it for texts raises a :class:`~sourcebias.core.errors.DataError` saying how to get them
        (load the dataset and ``run.bind(dataset.corpus)``).

        Args:
            doc_ids: The documents' ids.
            sources: Their sources (parallel to ``doc_ids``).
            source_order: The order in which sources are listed (default: order of first appearance).

        Returns:
            The corpus of keys.
        """
        c = cls(doc_ids, sources, [""] * len(doc_ids), [""] * len(doc_ids), source_order=source_order)
        c._titles = None
        c._texts = None
        return c

    @classmethod
    def concat(cls, parts: Sequence[Corpus]) -> Corpus:
        """Concatenate corpora (typically one per source) into one mixed corpus.

        Args:
            parts: The corpora, in order.

        Returns:
            One corpus of all their documents (sources listed in the order they first appear).
        """
        doc_ids: list[str] = []
        sources: list[str] = []
        titles: list[str] = []
        texts: list[str] = []
        metadata: list[dict[str, Any] | None] = []
        order: list[str] = []
        has_meta = any(p._metadata is not None for p in parts)
        for p in parts:
            doc_ids += p._doc_ids
            sources += p.source_list()
            titles += p.titles
            texts += p.texts
            metadata += p._metadata if p._metadata is not None else [None] * len(p)
            order += [s for s in p.sources if s not in order]
        return cls(doc_ids, sources, titles, texts, metadata if has_meta else None, source_order=order)

    # -- basic access -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._doc_ids)

    def __iter__(self) -> Iterator[Document]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, i: int) -> Document:
        return Document(
            self._doc_ids[i],
            self._source_names[self._codes[i]],
            self._titles[i] if self._titles is not None else "",
            self._texts[i] if self._texts is not None else "",
            self._metadata[i] if self._metadata is not None else None,
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{s}={n}" for s, n in self.source_counts().items())
        return f"Corpus({len(self)} documents: {counts})"

    @property
    def sources(self) -> tuple[str, ...]:
        """Names of the sources present, in listing order."""
        return self._source_names

    @property
    def doc_ids(self) -> list[str]:
        """The documents' ids, in corpus order."""
        return self._doc_ids

    @property
    def titles(self) -> list[str]:
        """The documents' titles (a keys-only corpus raises :class:`~sourcebias.core.errors.DataError`)."""
        if self._titles is None:
            raise DataError(None, _NO_TEXTS)
        return self._titles

    @property
    def texts(self) -> list[str]:
        """The documents' texts (a keys-only corpus raises :class:`~sourcebias.core.errors.DataError`)."""
        if self._texts is None:
            raise DataError(None, _NO_TEXTS)
        return self._texts

    @property
    def has_texts(self) -> bool:
        """Whether the corpus holds texts (False for :meth:`keys_only` corpora)."""
        return self._texts is not None

    @property
    def source_codes(self) -> np.ndarray:
        """Integer code of each document's source (an index into :attr:`sources`)."""
        return self._codes

    def source_of(self, i: int) -> str:
        """The source of the document at a position.

        Args:
            i: A position in the corpus.

        Returns:
            The source's name.
        """
        return self._source_names[int(self._codes[i])]

    def source_list(self) -> list[str]:
        """Every document's source, in corpus order.

        Returns:
            One source name per document.
        """
        names = self._source_names
        return [names[c] for c in self._codes.tolist()]

    def source_counts(self) -> dict[str, int]:
        """The number of documents of each source.

        Returns:
            ``{source: count}``, in listing order.
        """
        counts = np.bincount(self._codes, minlength=len(self._source_names))
        return {s: int(counts[i]) for i, s in enumerate(self._source_names)}

    def positions_of_source(self, source: str) -> np.ndarray:
        """The positions of one source's documents.

        Args:
            source: A source of the corpus.

        Returns:
            Their positions, ascending.

        Raises:
            ConfigError: The corpus has no such source.
        """
        return np.flatnonzero(self._codes == self._code(source))

    def _code(self, source: str) -> int:
        try:
            return self._source_names.index(source)
        except ValueError:
            raise ConfigError(f"unknown source '{source}'; this corpus has: {', '.join(self._source_names)}") from None

    def position(self, doc_id: str, source: str) -> int | None:
        """Position of the document ``(doc_id, source)``.

        Args:
            doc_id: The document's id.
            source: Its source.

        Returns:
            Its position, or ``None`` if absent.
        """
        if self._position is None:
            names = self._source_names
            self._position = {(d, names[c]): i for i, (d, c) in enumerate(zip(self._doc_ids, self._codes.tolist()))}
        return self._position.get((doc_id, source))

    def retrieval_texts(self) -> list[str]:
        """Per document, the text retrievers index: title and text joined.

        Returns:
            One text per document (:func:`join_title_text`).
        """
        return [join_title_text(t, x) for t, x in zip(self.titles, self.texts)]

    # -- derived corpora --------------------------------------------------------------------
    def take(self, positions: Sequence[int] | np.ndarray) -> Corpus:
        """The documents at the given positions, as a new corpus.

        Args:
            positions: Positions in this corpus, in the order wanted.

        Returns:
            The corpus of those documents (keys only when this one is).
        """
        pos = np.asarray(positions, dtype=np.int64)
        names = self._source_names
        codes = self._codes[pos]
        present = set(np.unique(codes).tolist())
        ids = [self._doc_ids[i] for i in pos]
        srcs = [names[c] for c in codes.tolist()]
        order = [s for c, s in enumerate(names) if c in present]
        if self._texts is None or self._titles is None:  # (both or neither: keys_only)
            return Corpus.keys_only(ids, srcs, source_order=order)
        return Corpus(
            ids,
            srcs,
            [self._titles[i] for i in pos],
            [self._texts[i] for i in pos],
            [self._metadata[i] for i in pos] if self._metadata is not None else None,
            source_order=order,
        )

    def subset(self, sources: Iterable[str]) -> Corpus:
        """The documents of the given sources only (e.g. the human-only "sole" corpus).

        Args:
            sources: Sources of this corpus.

        Returns:
            The corpus of their documents, in corpus order.

        Raises:
            ConfigError: A source is not in the corpus.
        """
        wanted = [self._code(s) for s in sources]
        return self.take(np.flatnonzero(np.isin(self._codes, wanted)))

    # -- tie-breaking support ---------------------------------------------------------------
    def key_hashes(self) -> np.ndarray:
        """A 64-bit hash of each document's ``(source, doc_id)``; see :mod:`sourcebias.retrieval.ties`.

        Returns:
            One ``uint64`` per document (:func:`hash64`), computed once.
        """
        if self._key_hashes is None:
            names = self._source_names
            self._key_hashes = np.fromiter(
                (hash64(names[c], d) for d, c in zip(self._doc_ids, self._codes.tolist())),
                dtype=np.uint64,
                count=len(self),
            )
        return self._key_hashes


def unpaired_positions(corpus: Corpus) -> np.ndarray:
    """Which documents lack a twin in some source.

    ``True`` for each document whose ``doc_id`` is not held by every source of ``corpus``: an
    original whose twin is missing in some source (a failed rewrite, a filtered twin corpus). Such a
    document has no counterpart to be compared with, so the source-bias protocol leaves its
    judgements out (:func:`sourcebias.data.load_dataset`, ``orphans="drop"``) and the label-free
    statistics leave it out of the ranking (ΔNDSR).

    Args:
        corpus: A mixed corpus.

    Returns:
        One boolean per document (all False for a corpus of one source).
    """
    n_sources = len(corpus.sources)
    if n_sources < 2:
        return np.zeros(len(corpus), dtype=bool)
    counts: dict[str, int] = {}
    for d in corpus.doc_ids:
        counts[d] = counts.get(d, 0) + 1
    return np.fromiter((counts[d] < n_sources for d in corpus.doc_ids), dtype=bool, count=len(corpus))


def hash64(*parts: str) -> int:
    """A stable (process- and platform-independent) 64-bit hash of a tuple of strings.

    Args:
        *parts: The strings (each length-prefixed, so ``("ab", "c")`` and ``("a", "bc")`` differ).

    Returns:
        The first 8 bytes of their BLAKE2b digest, as an integer.
    """
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        b = p.encode("utf-8")
        h.update(len(b).to_bytes(4, "little"))
        h.update(b)
    return int.from_bytes(h.digest(), "little")


def _first_duplicate(pairs: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    seen: set[tuple[str, str]] = set()
    for p in pairs:
        if p in seen:
            return p
        seen.add(p)
    return None
