"""Readers for the files of a BEIR-style dataset, with located errors.

Each reader validates as it goes and raises :class:`~sourcebias.core.errors.DataError` naming the
file, the line and the problem. Records skipped on purpose (only when the caller asks for it)
are counted in a :class:`LoadReport`, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sourcebias.core.errors import DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import iter_lines
from sourcebias.data.jsonl import iter_jsonl, require_str
from sourcebias.data.qrels import Qrels

OnProblem = Literal["error", "skip"]


def require_id(rec: dict, key: str, path: Path, lineno: int, what: str) -> str:
    """A non-empty id without whitespace: runs are written as TREC files, whose columns are
    separated by whitespace, so such an id could not be written and read back."""
    value = require_str(rec, key, path, lineno, allow_empty=False)
    if value.split() != [value]:  # str.split breaks at exactly the characters str.isspace is true for
        raise DataError(path, f"{what} id {value!r} contains whitespace, which TREC run files cannot hold; rename it", lineno)
    return value


@dataclass
class LoadReport:
    """What was read, and what was skipped on purpose (with why and how many)."""

    files: dict[str, int] = field(default_factory=dict)  # path -> records read
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> a few "path:line" examples
    notes_extra: list[str] = field(default_factory=list)  # other things the user must hear about

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(where)

    def notes(self) -> list[str]:
        out = []
        for reason, n in self.skipped.items():
            ex = self.examples.get(reason)
            out.append(f"skipped {n} {reason}" + (f" (e.g. {', '.join(ex)})" if ex else ""))
        return out + list(self.notes_extra)

    def to_dict(self) -> dict:
        return {
            "files": dict(self.files),
            "skipped": dict(self.skipped),
            "examples": {k: list(v) for k, v in self.examples.items()},
            "notes": list(self.notes_extra),
        }


def read_corpus(
    path: str | Path,
    source: str,
    *,
    empty_text: OnProblem = "error",
    report: LoadReport | None = None,
) -> tuple[Corpus, dict[str, int]]:
    """Read one source's corpus file (``{"_id", "title", "text"}`` per line).

    Returns the corpus and a map ``doc_id -> line number`` (used to locate later problems,
    such as a twin without its original).
    """
    path = Path(path)
    report = report if report is not None else LoadReport()
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    metadata: list[dict | None] = []
    line_of: dict[str, int] = {}
    _read_records(path, ids, titles, texts, metadata, line_of, empty_text, report)
    if not ids:
        raise DataError(path, "empty corpus: the file holds no documents")
    report.files[str(path)] = len(ids)
    has_meta = any(m is not None for m in metadata)
    return Corpus(ids, [source] * len(ids), titles, texts, metadata if has_meta else None), line_of


def _read_records(
    path: Path,
    ids: list[str],
    titles: list[str],
    texts: list[str],
    metadata: list[dict | None],
    line_of: dict[str, int],
    empty_text: OnProblem,
    report: LoadReport,
) -> None:
    """The documents of a corpus file, appended to the given lists (see :func:`read_corpus`)."""
    for lineno, rec in iter_jsonl(path):
        doc_id = require_id(rec, "_id", path, lineno, "document")
        text = require_str(rec, "text", path, lineno, allow_empty=True)
        title = require_str(rec, "title", path, lineno, allow_empty=True) if "title" in rec else ""
        if doc_id in line_of:
            raise DataError(path, f"duplicate document id '{doc_id}' (first seen on line {line_of[doc_id]})", lineno)
        line_of[doc_id] = lineno
        if not text.strip():
            what = "no text (null)" if rec.get("text") is None else "empty text"
            if empty_text == "error":
                raise DataError(path, f"document '{doc_id}' has {what}", lineno)
            report.skip("documents with empty text", f"{path}:{lineno}")
            continue
        ids.append(doc_id)
        titles.append(title)
        texts.append(text)
        meta = rec.get("metadata")
        metadata.append(meta if isinstance(meta, dict) else None)


def read_queries(path: str | Path, *, report: LoadReport | None = None) -> dict[str, str]:
    """Read ``queries.jsonl`` (``{"_id", "text"}`` per line) into ``query_id -> text``."""
    path = Path(path)
    report = report if report is not None else LoadReport()
    queries: dict[str, str] = {}
    line_of: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path):
        qid = require_id(rec, "_id", path, lineno, "query")
        text = require_str(rec, "text", path, lineno, allow_empty=False)
        if qid in line_of:
            raise DataError(path, f"duplicate query id '{qid}' (first seen on line {line_of[qid]})", lineno)
        line_of[qid] = lineno
        queries[qid] = text
    if not queries:
        raise DataError(path, "no queries in file")
    report.files[str(path)] = len(queries)
    return queries


def read_qrels(
    path: str | Path,
    *,
    known_docs: set[str] | dict[str, int] | None,
    known_queries: set[str] | dict[str, str] | None,
    unknown: OnProblem = "error",
    report: LoadReport | None = None,
) -> Qrels:
    """Read a qrels file: BEIR TSV ``query-id corpus-id score`` (header optional) or TREC
    ``qid iter docno rel``. Grades are integers.

    Judgements naming a document outside ``known_docs`` or a query outside ``known_queries``
    are an error, or, with ``unknown="skip"``, skipped and counted in ``report``.
    """
    path = Path(path)
    report = report if report is not None else LoadReport()
    if not path.is_file():
        raise DataError(path, "qrels file not found")
    labels: dict[str, dict[str, int]] = {}
    line_of: dict[tuple[str, str], int] = {}
    n = 0
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) not in (3, 4):
            parts = line.split()
        if len(parts) == 3:
            qid, did, grade_s = parts
        elif len(parts) == 4:
            qid, _, did, grade_s = parts
        else:
            raise DataError(path, f"expected 3 columns (query-id, corpus-id, score), got {len(parts)}", lineno)
        qid, did, grade_s = qid.strip(), did.strip(), grade_s.strip()
        grade = _parse_grade(grade_s)
        if grade is None:
            if lineno == 1 and n == 0:
                continue  # header line, e.g. "query-id corpus-id score"
            raise DataError(path, f"score '{grade_s}' is not an integer", lineno)
        if not qid or not did:
            raise DataError(path, "empty query id or document id", lineno)
        if known_queries is not None and qid not in known_queries:
            if unknown == "error":
                raise DataError(path, f"query '{qid}' is not in the queries file", lineno)
            report.skip("judgements for unknown queries", f"{path}:{lineno}")
            continue
        if known_docs is not None and did not in known_docs:
            if unknown == "error":
                raise DataError(path, f"document '{did}' is not in the corpus", lineno)
            report.skip("judgements for unknown documents", f"{path}:{lineno}")
            continue
        if (qid, did) in line_of:
            raise DataError(path, f"duplicate judgement for ({qid}, {did}) (first on line {line_of[(qid, did)]})", lineno)
        line_of[(qid, did)] = lineno
        labels.setdefault(qid, {})[did] = grade
        n += 1
    if n == 0:
        raise DataError(path, "no judgements in qrels file")
    report.files[str(path)] = n
    return Qrels(labels)


def _parse_grade(s: str) -> int | None:
    try:
        return int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            return None
        return int(f) if f.is_integer() else None
