"""How the documents of a run file are named: a :class:`DocnoMap` between names and documents.

Document names in a run file are mapped to ``(doc_id, source)`` explicitly: the
``<source>/<doc_id>`` names that sourcebias writes, a ``docnos.tsv`` table, or a pattern the user
gives (``{doc_id}-{source}``). A map is built by *rendering* every document's name and inverting
the table — no name is ever taken apart — and it refuses names that two documents would share.
:func:`resolve_docnos` is the one rule that picks the map of a file; every reader (TREC and JSON
runs, feature files) says the same when a name maps to no document (:func:`unknown_docno`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import open_text

SOURCEBIAS_DOCNO = "{source}/{doc_id}"
WHITESPACE = re.compile(r"\s")  # a TREC run cannot hold a name or query id with whitespace
DOCNO_TABLE = "docnos.tsv"
COCKTAIL_DOCNO = "{doc_id}-{source}"


def unknown_docno(docno: str, docnos: DocnoMap) -> str:
    """The message for a run's (or feature file's) document name that maps to no document, with a hint at how to name the documents.

    Every reader of other tools' files says the same.

    Args:
        docno: the name read from the file.
        docnos: the map it was looked up in.

    Returns:
        ``document 'NAME' is not in the dataset (MAP)`` and, where it helps, a hint: a bare
        ``doc_id`` of a corpus of several sources cannot say which copy was ranked; with the
        default ``<source>/<doc_id>`` names, the Cocktail suffix is suggested.
    """
    message = f"document '{docno}' is not in the dataset ({docnos.describe()})"
    corpus = docnos.corpus
    how = f"a docno table (--docnos FILE, columns docno, doc_id, source) or a docno pattern (--docno-pattern, e.g. '{COCKTAIL_DOCNO}')"
    if len(corpus.sources) > 1 and docno in set(corpus.doc_ids):
        return (
            f"{message}; '{docno}' is a bare document id, which does not say which of the "
            f"{len(corpus.sources)} copies ({', '.join(corpus.sources)}) was ranked: name them with {how}"
        )
    if docnos.describe() == DocnoMap.SOURCEBIAS_DESCRIPTION:
        return f"{message}; the Cocktail code and the 2026 package name copies {COCKTAIL_DOCNO}: say how this file names documents with {how}"
    return message


def resolve_docnos(
    run_path: str | Path,
    corpus: Corpus,
    *,
    docnos: str | Path | None = None,
    docno_pattern: str | None = None,
    source_labels: Mapping[str, str] | None = None,
) -> DocnoMap:
    """How the document names of the run file ``run_path`` map to documents of ``corpus``.

    The one rule (``evaluate --run`` and a grid's ``[[runs]]`` both use it), first match wins:

    1. ``docno_pattern`` (with ``source_labels``): names rendered from the pattern;
    2. ``docnos``: that ``docno, doc_id, source`` table;
    3. a ``docnos.tsv`` beside the run file (sourcebias writes one next to the runs it saves);
    4. otherwise the names sourcebias writes, ``<source>/<doc_id>``.

    Args:
        run_path: The run file.
        corpus: The corpus it ranks.
        docnos: A ``docnos.tsv`` table.
        docno_pattern: A pattern with ``{doc_id}`` and ``{source}``.
        source_labels: How the pattern writes each source, when not by its name.

    Returns:
        The :class:`DocnoMap`.

    Raises:
        ConfigError: Both ``docnos`` and ``docno_pattern``, or ``source_labels`` without a pattern.
    """
    if docnos is not None and docno_pattern is not None:
        raise ConfigError("give a docno table or a docno pattern, not both")
    if source_labels and docno_pattern is None:
        raise ConfigError("source labels say how a docno pattern writes each source; give a docno pattern with them")
    if docno_pattern is not None:
        return DocnoMap.from_pattern(docno_pattern, corpus, source_labels)
    if docnos is not None:
        return DocnoMap.from_table(docnos, corpus)
    beside = Path(run_path).parent / DOCNO_TABLE
    if beside.is_file():
        return DocnoMap.from_table(beside, corpus)
    return DocnoMap.sourcebias(corpus)


def _position_lookup(corpus: Corpus) -> Callable[[str, str], int | None]:
    return corpus.position


class DocnoMap:
    """A one-to-one map between document names in run files and documents of one corpus.

    Build it with :meth:`sourcebias` (``<source>/<doc_id>``, what sourcebias writes),
    :meth:`from_pattern` (a template with ``{doc_id}`` and ``{source}``, e.g. Cocktail's
    ``{doc_id}-{source}``; ``source_labels`` says how each source is written when it is not its
    name), or :meth:`from_table` (a ``docnos.tsv`` with ``docno, doc_id, source`` columns).
    Whitespace in a rendered name becomes ``_`` (TREC names cannot contain it).
    """

    def __init__(self, corpus: Corpus, names: list[str], description: str):
        self.corpus = corpus
        self.names = names
        self._description = description
        self._position: dict[str, int] = {}
        for i, nm in enumerate(names):
            if WHITESPACE.search(nm):
                d = corpus[i]
                raise ConfigError(f"the name {nm!r} of ({d.doc_id}, {d.source}) under {description} contains whitespace, which a TREC run cannot hold")
            j = self._position.setdefault(nm, i)
            if j != i:
                a, b = corpus[j], corpus[i]
                raise ConfigError(f"two documents have the name '{nm}' under {description}: ({a.doc_id}, {a.source}) and ({b.doc_id}, {b.source})")

    def position(self, name: str) -> int | None:
        """The corpus position of a document name.

        Args:
            name: A document name as the run file writes it.

        Returns:
            Its position, or None when no document has that name.
        """
        return self._position.get(name)

    def describe(self) -> str:
        """How the names are made, for messages and manifests (``pattern '{doc_id}-{source}'``).

        Returns:
            The description.
        """
        return self._description

    def rows(self) -> Iterator[tuple[str, str, str]]:
        """The table of names.

        Yields:
            ``(docno, doc_id, source)`` for every document, in corpus order.
        """
        c = self.corpus
        for i, nm in enumerate(self.names):
            yield nm, c.doc_ids[i], c.source_of(i)

    def write_table(self, path: str | Path) -> None:
        """Write ``docnos.tsv`` (``docno, doc_id, source``).

        Args:
            path: The file to write (atomically).
        """
        from sourcebias.core.atomic import atomic_open

        with atomic_open(path, "w", newline="") as fh:
            w = csv.writer(fh, delimiter="\t", lineterminator="\n")
            w.writerow(["docno", "doc_id", "source"])
            w.writerows(self.rows())

    SOURCEBIAS_DESCRIPTION = "sourcebias names <source>/<doc_id>"

    @classmethod
    def sourcebias(cls, corpus: Corpus) -> DocnoMap:
        """The names sourcebias writes: ``<source>/<doc_id>``.

        Args:
            corpus: The corpus named.

        Returns:
            The map.
        """
        return cls.from_pattern(SOURCEBIAS_DOCNO, corpus, _description=cls.SOURCEBIAS_DESCRIPTION)

    @classmethod
    def from_pattern(cls, pattern: str, corpus: Corpus, source_labels: Mapping[str, str] | None = None, *, _description: str | None = None) -> DocnoMap:
        """Names rendered from ``pattern`` (fields ``{doc_id}`` and ``{source}``).

        With a single-source corpus the pattern may be just ``{doc_id}``.

        Args:
            pattern: E.g. Cocktail's ``{doc_id}-{source}``.
            corpus: The corpus named.
            source_labels: How the pattern writes a source when not by its name (e.g.
                ``{"llama-2-7b-chat-tmp0.2": "llama"}``).

        Returns:
            The map.

        Raises:
            ConfigError: The pattern has other fields, lacks ``{doc_id}``, or lacks ``{source}`` for a
                corpus of several sources; a label for an unknown source; two documents given one name.
        """
        fields = set(re.findall(r"{(\w*)}", pattern))
        if not fields <= {"doc_id", "source"} or "doc_id" not in fields:
            raise ConfigError(f"docno pattern '{pattern}' must contain {{doc_id}} and may contain {{source}} (and no other fields)")
        if "source" not in fields and len(corpus.sources) > 1:
            raise ConfigError(
                f"docno pattern '{pattern}' has no {{source}}: it cannot tell a document from its twin in a corpus of {len(corpus.sources)} sources"
            )
        labels = dict(source_labels or {})
        unknown = [s for s in labels if s not in corpus.sources]
        if unknown:
            raise ConfigError(f"source label given for unknown source(s) {', '.join(unknown)}; sources: {', '.join(corpus.sources)}")
        label_of = [labels.get(s, s) for s in corpus.sources]
        ws = re.compile(r"\s+")
        codes = corpus.source_codes.tolist()
        names = [ws.sub("_", pattern.format(doc_id=d, source=label_of[c])) for d, c in zip(corpus.doc_ids, codes)]
        desc = _description or f"pattern '{pattern}'" + (f" with labels {labels}" if labels else "")
        return cls(corpus, names, desc)

    @classmethod
    def from_table(cls, path: str | Path, corpus: Corpus) -> DocnoMap:
        """Names from a ``docnos.tsv`` (header ``docno doc_id source``, tab-separated).

        Every document of ``corpus`` must be listed; rows naming documents outside it are allowed (a
        table may cover a larger corpus) but never used.

        Args:
            path: The table.
            corpus: The corpus named.

        Returns:
            The map.

        Raises:
            DataError: A malformed header or row, a name with whitespace or given twice, a document
                listed twice, or documents of ``corpus`` without a name; with ``file:line``.
        """
        path = Path(path)
        name_of: dict[int, str] = {}
        line_of: dict[str, int] = {}
        with open_text(path) as fh:
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header is None or [h.strip() for h in header[:3]] != ["docno", "doc_id", "source"]:
                raise DataError(path, "expected the header 'docno<TAB>doc_id<TAB>source'", 1)
            for lineno, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != 3:
                    raise DataError(path, f"expected 3 tab-separated columns, got {len(row)}", lineno)
                docno, doc_id, source = row
                if WHITESPACE.search(docno):
                    raise DataError(path, f"the name {docno!r} contains whitespace, which a TREC run cannot hold", lineno)
                first = line_of.setdefault(docno, lineno)
                if first != lineno:
                    raise DataError(path, f"the name '{docno}' is given to two documents (first on line {first})", lineno)
                pos = corpus.position(doc_id, source)
                if pos is None:
                    continue
                if pos in name_of:
                    raise DataError(path, f"({doc_id}, {source}) is listed twice", lineno)
                name_of[pos] = docno
        missing = [i for i in range(len(corpus)) if i not in name_of]
        if missing:
            d = corpus[missing[0]]
            raise DataError(path, f"{len(missing)} documents of the dataset have no name here, e.g. ({d.doc_id}, {d.source})")
        return cls(corpus, [name_of[i] for i in range(len(corpus))], f"table {path.name}")
