"""Datasets by name through ``ir_datasets``, both ways.

**In** — ``load_dataset("irds:<id>", twins=DIR)``: the human side (documents, queries, qrels)
comes from ``ir_datasets`` with its own field names (``doc_id``, ``title`` and ``text``, or the
document's ``default_text()``; ``query_id`` and ``text``; ``query_id, doc_id, relevance``), and the
LLM twins from ``DIR`` (``<source>.jsonl`` files, or a Cocktail folder's ``corpus/``: every file
there but the human one). The same validation as a folder: a twin without an original is
refused with ``file:line``, the orphan rule applies, and what was skipped is counted in the
:class:`~sourcebias.data.readers.LoadReport`. The split is the id's (``beir/nfcorpus/dev``); for
an id without qrels, ``<id>/<split>`` is used.

ir_datasets downloads a dataset the first time it is read. Here that download gets one try and
a short timeout (``IR_DATASETS_DL_TRIES=1``, ``IR_DATASETS_DL_TIMEOUT`` = 10 s, unless you set
them), and a dataset that is neither under ``$IR_DATASETS_HOME`` nor reachable stops with its
id and how to fetch it — it never waits on the network.

**Out** — our folders as ir_datasets datasets: :func:`sourcebias.irds.register`.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import strip_compression
from sourcebias.data.pairing import apply_orphan_rule, check_policy, orphan_note
from sourcebias.data.qrels import Qrels
from sourcebias.data.readers import LoadReport, OnProblem, read_corpus

PREFIX = "irds:"
#: seconds without data before a download is abandoned (ir_datasets' own default is 15, with 3 tries)
DOWNLOAD_TIMEOUT = "10"


def is_irds(path: Any) -> bool:
    return isinstance(path, str) and path.startswith(PREFIX)


def require_ir_datasets():
    try:
        import ir_datasets
    except ImportError as e:
        raise ConfigError(f'ir_datasets is not installed ({e}); install the ecosystem extra: pip install "sourcebias[ecosystem]"') from None
    return ir_datasets


@contextlib.contextmanager
def bounded_downloads() -> Iterator[None]:
    """ir_datasets' downloads get one try and a short timeout (unless the user set them)."""
    saved = {k: os.environ.get(k) for k in ("IR_DATASETS_DL_TRIES", "IR_DATASETS_DL_TIMEOUT")}
    os.environ.setdefault("IR_DATASETS_DL_TRIES", "1")
    os.environ.setdefault("IR_DATASETS_DL_TIMEOUT", DOWNLOAD_TIMEOUT)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class HeldOutput(io.TextIOBase):
    """A stand-in for ``sys.stderr`` that holds what is written until :meth:`release`, then writes
    it (and everything after) to the real stream; dropped if never released."""

    def __init__(self, stream: Any) -> None:
        self._stream, self._held, self._released = stream, io.StringIO(), False

    def write(self, text: str) -> int:
        return (self._stream if self._released else self._held).write(text)

    def flush(self) -> None:
        if self._released:
            self._stream.flush()

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._stream.write(self._held.getvalue())


@contextlib.contextmanager
def held_output() -> Iterator[HeldOutput]:
    """ir_datasets logs (``[INFO] [starting] ...``, ``[WARNING] Download failed ...``) and draws
    tqdm bars on ``sys.stderr`` while it looks for a dataset. They are held until the first
    document arrives (the data is there: from then on they pass through, the held part first);
    a dataset that cannot be had leaves only sourcebias' own error, which says what to fetch."""
    held = HeldOutput(sys.stderr)
    with contextlib.redirect_stderr(held):
        yield held


def not_available(dataset_id: str, error: BaseException) -> ConfigError:
    home = os.environ.get("IR_DATASETS_HOME", "~/.ir_datasets")
    return ConfigError(
        f"ir_datasets dataset '{dataset_id}' is not under {home} and could not be downloaded ({type(error).__name__}: {str(error)[:200]}). "
        f"On a machine with network run `ir_datasets export {dataset_id} docs > /dev/null`, then the same with queries and with qrels "
        f"(this fills IR_DATASETS_HOME, default ~/.ir_datasets), copy that folder here and set IR_DATASETS_HOME to it. "
        f"Datasets that need a licence or a manual download say how on https://ir-datasets.com/"
    )


def open_irds(dataset_id: str, split: str | None):
    """The ir_datasets dataset for ``dataset_id`` (``<id>/<split>`` when the id has no qrels)."""
    irds = require_ir_datasets()
    try:
        ds = irds.load(dataset_id)
    except KeyError:
        raise ConfigError(f"unknown ir_datasets id '{dataset_id}' (see https://ir-datasets.com/ for the catalogue)") from None
    if split and not ds.has_qrels():
        try:
            return irds.load(f"{dataset_id}/{split}"), f"{dataset_id}/{split}"
        except KeyError:
            pass
    if split and not ds.has_qrels():
        raise ConfigError(
            f"ir_datasets dataset '{dataset_id}' has no qrels and '{dataset_id}/{split}' does not exist; give an id with qrels (e.g. beir/nfcorpus/test)"
        )
    return ds, dataset_id


def _doc_text(doc: Any) -> tuple[str, str]:
    """``(title, text)`` of an ir_datasets document, by its field names."""
    fields = type(doc)._fields
    title = (getattr(doc, "title", "") or "") if "title" in fields else ""
    if "text" in fields:
        return title, doc.text or ""
    return "", doc.default_text() if hasattr(doc, "default_text") else ""


def read_irds_docs(
    ds: Any, where: Path, source: str, *, empty_text: OnProblem, report: LoadReport, on_first: Callable[[], None] | None = None
) -> tuple[Corpus, dict[str, int]]:
    """The human corpus from ``ds.docs_iter()``, validated as :func:`read_corpus` validates a file
    (record numbers stand for line numbers); ``on_first`` is called once the first document is read."""
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    record_of: dict[str, int] = {}
    for n, doc in enumerate(ds.docs_iter(), start=1):
        if n == 1 and on_first is not None:
            on_first()
        doc_id = str(doc.doc_id)
        if not doc_id or any(ch.isspace() for ch in doc_id):
            raise DataError(where, f"document id {doc_id!r} is empty or contains whitespace, which TREC run files cannot hold", n)
        if doc_id in record_of:
            raise DataError(where, f"duplicate document id '{doc_id}' (first seen at record {record_of[doc_id]})", n)
        record_of[doc_id] = n
        title, text = _doc_text(doc)
        if not text.strip():
            if empty_text == "error":
                raise DataError(where, f"document '{doc_id}' has empty text", n)
            report.skip("documents with empty text", f"{where}:{n}")
            continue
        ids.append(doc_id)
        titles.append(title)
        texts.append(text)
    if not ids:
        raise DataError(
            where,
            "empty corpus: the dataset holds no documents (if ir_datasets just downloaded it, "
            "the download failed: delete its files under IR_DATASETS_HOME and fetch it again)",
        )
    report.files[str(where)] = len(ids)
    return Corpus(ids, [source] * len(ids), titles, texts), record_of


def read_irds_queries(ds: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for q in ds.queries_iter():
        text = q.text if "text" in type(q)._fields else q.default_text()
        out[str(q.query_id)] = text
    return out


def read_irds_qrels(ds: Any, where: Path, *, known_docs: dict[str, int], known_queries: dict[str, str], unknown: OnProblem, report: LoadReport) -> Qrels:
    """``query_id, doc_id, relevance`` records, validated as :func:`read_qrels` validates a file."""
    labels: dict[str, dict[str, int]] = {}
    record_of: dict[tuple[str, str], int] = {}
    for n, r in enumerate(ds.qrels_iter(), start=1):
        qid, did, grade = str(r.query_id), str(r.doc_id), int(r.relevance)
        for known, key, what in ((known_queries, qid, "query"), (known_docs, did, "document")):
            if key not in known:
                if unknown == "error":
                    raise DataError(where, f"{what} '{key}' of a judgement is not in the dataset's {what}s", n)
                report.skip(f"judgements for unknown {what}s", f"{where}:{n}")
                break
        else:
            if (qid, did) in record_of:
                raise DataError(where, f"duplicate judgement for ({qid}, {did}) (first at record {record_of[(qid, did)]})", n)
            record_of[(qid, did)] = n
            labels.setdefault(qid, {})[did] = grade
    if not record_of:
        raise DataError(where, "no judgements in the dataset's qrels")
    return Qrels(labels)


def twin_files(folder: str | Path, human_source: str) -> dict[str, Path]:
    """``source -> file`` of the twins in ``folder``: its ``<source>.jsonl[.gz]`` files, or those of
    its ``corpus/`` (a Cocktail folder), less the human one."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ConfigError(f"twins folder '{folder}' does not exist")
    base = root / "corpus" if (root / "corpus").is_dir() else root
    files: dict[str, Path] = {}
    for p in sorted(base.iterdir()):
        name = strip_compression(p.name)
        if p.is_file() and name.endswith(".jsonl") and not name.startswith("."):
            source = name[: -len(".jsonl")]
            if source in files:
                raise DataError(p, f"both {files[source].name} and {p.name} exist; keep one")
            if source != human_source:
                files[source] = p
    if not files:
        raise DataError(base, "no twin corpus here (expected <source>.jsonl files keeping the _id of the originals)")
    return files


def read_twins(
    files: dict[str, Path], chosen: Sequence[str], originals: dict[str, int], skipped: set[str], *, empty_text: OnProblem, report: LoadReport
) -> list[Corpus]:
    """The chosen twin corpora; a twin without an original stops with ``file:line``; twins of
    skipped originals are left out (counted)."""
    parts = []
    for s in chosen:
        twin, lines = read_corpus(files[s], s, empty_text=empty_text, report=report)
        for doc_id in twin.doc_ids:
            if doc_id not in originals:
                raise DataError(files[s], f"twin '{doc_id}' has no original in the ir_datasets dataset", lines[doc_id])
        if skipped:
            for d in twin.doc_ids:
                if d in skipped:
                    report.skip("twins of originals skipped for empty text", f"{files[s]}:{lines[d]}")
            twin = twin.take([i for i, d in enumerate(twin.doc_ids) if d not in skipped])
        parts.append(twin)
    return parts


def judgements_to_evaluate(corpus: Corpus, qrels: Qrels, skipped: set[str], orphans: str, report: LoadReport) -> tuple[Qrels, dict[str, Any]]:
    """The qrels less the judgements of skipped originals, after the orphan rule (all counted)."""
    if skipped:
        n = sum(1 for q in qrels for d in qrels[q] if d in skipped)
        if n:
            report.skipped["judgements of originals skipped for empty text"] = n
        qrels = Qrels({q: {d: g for d, g in qrels[q].items() if d not in skipped} for q in qrels})
    no_rel = len(qrels) - len(qrels.queries_with_relevant())
    if no_rel:
        report.skipped["queries without a relevant document (not evaluated)"] = no_rel
    qrels, summary = apply_orphan_rule(corpus, qrels, orphans)
    note = orphan_note(summary)
    if note:
        report.notes_extra.append(note)
    return qrels, summary


def load_irds(
    spec: str,
    *,
    twins: str | Path | None,
    split: str | None,
    sources: Sequence[str] | None,
    human_source: str,
    unknown_qrels: OnProblem,
    empty_text: OnProblem,
    orphans: str,
) -> dict[str, Any]:
    """The fields of a :class:`~sourcebias.data.dataset.Dataset` for ``irds:<id>`` (see the module
    docstring); :func:`sourcebias.data.load_dataset` builds it."""
    check_policy(orphans)
    dataset_id = spec[len(PREFIX) :].strip()
    files = twin_files(twins, human_source) if twins is not None else {}
    available = [human_source, *files]
    chosen = list(dict.fromkeys(sources)) if sources else available
    unknown = [s for s in chosen if s not in available]
    if unknown:
        raise ConfigError(
            f"unknown source(s) {', '.join(unknown)} for {spec}; available: {', '.join(available)}" + ("" if files else " (give the twins folder: --twins DIR)")
        )
    report = LoadReport()
    with bounded_downloads(), held_output() as held:
        ds, dataset_id = open_irds(dataset_id, split)
        where = Path(PREFIX + dataset_id)
        try:
            human, originals = read_irds_docs(ds, where, human_source, empty_text=empty_text, report=report, on_first=held.release)
            queries = read_irds_queries(ds)
            qrels = (
                read_irds_qrels(ds, where, known_docs=originals, known_queries=queries, unknown=unknown_qrels, report=report)
                if split is not None
                else Qrels({})
            )
        except (DataError, ConfigError):
            raise
        except Exception as e:  # a download that failed or timed out: say what to fetch
            raise not_available(dataset_id, e) from None
    skipped = set(originals).difference(human.doc_ids)
    twins_chosen = [s for s in chosen if s != human_source]
    parts = ([human] if human_source in chosen else []) + read_twins(files, twins_chosen, originals, skipped, empty_text=empty_text, report=report)
    corpus = Corpus.concat(parts)
    qrels, summary = judgements_to_evaluate(corpus, qrels, skipped, orphans, report)
    source_files = {human_source: where, **files}
    return {
        "name": dataset_id,
        "root": Path(twins).expanduser() if twins is not None else where,
        "layout": "irds",
        "split": split or "",
        "human_source": human_source,
        "corpus": corpus,
        "queries": queries,
        "qrels": qrels,
        "source_files": {s: source_files[s] for s in corpus.sources},
        "qrels_file": where if split is not None else None,
        "queries_file": where,
        "report": report,
        "orphans": summary,
    }
