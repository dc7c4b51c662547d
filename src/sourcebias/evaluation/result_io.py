"""An :class:`~sourcebias.evaluation.results.EvaluationResult`'s files: written by
:func:`save_result` (the files part of :meth:`EvaluationResult.save`) and read back by :func:`read_result`
(:meth:`EvaluationResult.load`), apart from the model so that the model reads as what a result *is*.
The model imports this module (its ``save`` and ``load`` call it), so a result is typed ``Any``
here and the class to build is passed in.

Folder contents::

    result.json          dataset, sources, measures, query ids, parameters, retriever configs,
                         timings, run info, and which file holds which run
    metrics.csv          retriever,corpus,target,metric,value (means; Relative Δ in percent)
    per_query.csv        retriever,corpus,target,query_id,metric,value (the values loaded back)
    per_query.parquet    the same table as Parquet, instead of the CSV, when saved with format="parquet"
    runs/<name>.<setting>.trec, runs/docnos.tsv

Values are written with as many digits as they need to be read back exactly.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from sourcebias.core.atomic import csv_cell, write_csv
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.evaluation.keys import FORMAT_VERSION, METRIC_COLUMNS, MIXED, PER_QUERY_COLUMNS, Key, RunKey, slug
from sourcebias.evaluation.measures import parse_measure
from sourcebias.retrieval.run import Run


class WriteOptions(TypedDict, total=False):
    """How :meth:`EvaluationResult.save` writes a result (its keyword arguments besides the folder's).

    Attributes:
        write_runs: write the runs as TREC files (default True).
        timings: timings for the manifest (seconds, by name).
        command: the command the manifest names (default ``evaluate``).
        manifest_extra: more fields for the manifest.
        format: of the per-query values, ``csv`` (``per_query.csv``, the default) or ``parquet``
            (``per_query.parquet``); :meth:`EvaluationResult.load` reads either.
    """

    write_runs: bool
    timings: dict[str, Any] | None
    command: str
    manifest_extra: dict[str, Any] | None
    format: str


def save_result(result: Any, folder: str | Path, *, write_runs: bool = True, format: str = "csv") -> dict[str, Path]:
    """Write ``result``'s own files into ``folder`` (no manifest, no claim): the files part of
    :meth:`EvaluationResult.save`, which claims the folder and writes the manifest
    (:mod:`sourcebias.evaluation.artifact`). A result is duck-typed here (the model imports this module).

    Args:
        result: The evaluation.
        folder: Where to write (created if need be).
        write_runs: Also write the runs (``runs/*.trec`` and ``runs/docnos.tsv``).
        format: ``csv`` (``per_query.csv``) or ``parquet`` (``per_query.parquet``).

    Returns:
        What was written, ``{"result": path, "metrics": path, "per_query": path, ...}``.

    Raises:
        ConfigError: An unknown ``format``.
    """
    from sourcebias.core.atomic import atomic_write_json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    paths["metrics"] = write_csv(folder / "metrics.csv", METRIC_COLUMNS, result.metric_rows())
    paths["per_query"] = _write_per_query(result, folder, format)
    run_entries: list[dict[str, Any]] = []
    if write_runs and result.runs:
        paths["runs"] = folder / "runs"
        run_entries = _write_runs(result, paths["runs"])
    body = {
        "format": FORMAT_VERSION,
        "kind": "evaluate",
        "dataset": result.dataset,
        "human_source": result.human_source,
        "sources": result.sources,
        "measures": [str(m) for m in result.measures],
        "query_ids": result.query_ids,
        "parameters": result.parameters,
        "retrievers": result.retrievers,
        "timings": [{"retriever": k.retriever, "setting": k.setting, **v} for k, v in result.timings.items()],
        "run_info": [{"retriever": k.retriever, "setting": k.setting, "info": v} for k, v in result.run_info.items()],
        "runs": run_entries,
        "per_query_file": paths["per_query"].name,
    }
    paths["result"] = atomic_write_json(folder / "result.json", body)
    return paths


def _write_runs(result: Any, rdir: Path) -> list[dict[str, Any]]:
    """Every run as ``rdir/<retriever>.<setting>.trec`` with one ``docnos.tsv``; their entries in ``result.json``."""
    from sourcebias.retrieval.docnos import DocnoMap

    rdir.mkdir(exist_ok=True)
    run_entries: list[dict[str, Any]] = []
    corpora: list[Any] = []
    used: set[str] = set()
    for key, run in result.runs.items():
        docnos = DocnoMap.sourcebias(run.corpus)
        if not any(run.corpus is c for c in corpora):
            corpora.append(run.corpus)
        base = f"{slug(key.retriever)}.{slug(key.setting)}"
        fname, n = f"{base}.trec", 1
        while fname in used:
            n += 1
            fname = f"{base}-{n}.trec"
        used.add(fname)
        run.write_trec(rdir / fname, docnos, tag=key.retriever)
        run_entries.append(
            {
                "retriever": key.retriever,
                "setting": key.setting,
                "file": f"runs/{fname}",
                "name": run.name,
                "score_dtype": str(run._score_dtype()),
                "queries": len(run),
                "query_ids": run.query_ids,
            }
        )
    _write_docnos(rdir / "docnos.tsv", corpora)
    return run_entries


def _write_per_query(result: Any, folder: Path, format: str) -> Path:
    if format == "csv":
        return _write_per_query_csv(result, folder / "per_query.csv")
    if format == "parquet":
        from sourcebias.evaluation.columnar import PARQUET_FILE, write_per_query_parquet

        return write_per_query_parquet(folder / PARQUET_FILE, PER_QUERY_COLUMNS, list(result.per_query), list(result.per_query.values()), result.query_ids)
    raise ConfigError(f"per-query format must be 'csv' or 'parquet', got '{format}'")


def _write_per_query_csv(result: Any, path: Path) -> Path:
    """``per_query.csv``: the rows of :meth:`EvaluationResult.per_query_rows`, written a measure at a time.

    The text is what :func:`~sourcebias.core.atomic.write_csv` writes for the same rows (no dict per row here).
    """
    from itertools import repeat

    from sourcebias.core.atomic import atomic_open

    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(PER_QUERY_COLUMNS)
        for k, values in result.per_query.items():
            # a float's cell is its repr ("nan" for NaN): csv_cell's, without its checks per value
            texts = map(repr if values.dtype.kind == "f" else csv_cell, values.tolist())
            w.writerows(zip(repeat(k.retriever), repeat(k.setting), repeat(k.target), result.query_ids, repeat(k.measure), texts))
    return path


def read_result(cls: Any, folder: str | Path, *, dataset: Any = None, runs: bool = True) -> Any:
    """Build ``cls`` from the files :func:`save_result` wrote: what :meth:`EvaluationResult.load` does
    (its arguments, what it returns and raises)."""
    folder = Path(folder)
    rpath = folder / "result.json"
    if not rpath.is_file():
        from sourcebias.core.artifacts import read_manifest

        read_manifest(folder)  # a clear error if this is not a sourcebias folder at all
        raise DataError(rpath, "missing: this output folder holds no evaluation result")
    try:
        body = json.loads(rpath.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(rpath, f"not valid JSON ({exc})") from None
    if body.get("format") != FORMAT_VERSION:
        raise DataError(rpath, f"result format {body.get('format')!r} is not supported (this sourcebias reads format {FORMAT_VERSION})")
    query_ids = list(body["query_ids"])
    result = cls(
        dataset=body["dataset"],
        human_source=body["human_source"],
        sources=list(body["sources"]),
        measures=[parse_measure(m) for m in body["measures"]],
        query_ids=query_ids,
        parameters=body["parameters"],
        retrievers=body["retrievers"],
        timings={RunKey(t["retriever"], t["setting"]): {k: v for k, v in t.items() if k not in ("retriever", "setting")} for t in body["timings"]},
        run_info={RunKey(t["retriever"], t["setting"]): t["info"] for t in body["run_info"]},
    )
    result.per_query = _load_per_query(folder, body.get("per_query_file", "per_query.csv"), query_ids)
    if runs and body.get("runs"):
        result.runs = _read_runs(folder, body["runs"], result, dataset)
    return result


def _load_per_query(folder: Path, name: str, query_ids: list[str]) -> dict[Key, np.ndarray]:
    if name not in ("per_query.csv", "per_query.parquet"):
        raise DataError(folder / "result.json", f"per_query_file '{name}' is neither per_query.csv nor per_query.parquet")
    if name.endswith(".parquet"):
        from sourcebias.evaluation.columnar import read_per_query_parquet

        return {Key(*k): v for k, v in read_per_query_parquet(folder / name, PER_QUERY_COLUMNS, query_ids).items()}
    return _read_per_query(folder / name, query_ids)


def _write_docnos(path: Path, corpora: Sequence[Any]) -> None:
    """``docnos.tsv``: every document of the runs' corpora once, in order of first appearance."""
    from sourcebias.core.atomic import atomic_open

    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["docno", "doc_id", "source"])
        w.writerows(_docno_rows(corpora))


def _docno_rows(corpora: Sequence[Any]) -> Iterator[tuple[str, str, str]]:
    """``(docno, doc_id, source)`` of each document of ``corpora`` not named before.

    A corpus each of whose sources lists the same ids, in the same order, as a corpus already
    written (a sole corpus cut from the mixed one) adds nothing and is passed over with one list
    comparison a source; any other is checked document by document against the ids written per
    source. (It replaces a dict of every ``(doc_id, source)`` key with its name, filled run by
    run while every run was held.)"""
    from sourcebias.retrieval.docnos import DocnoMap

    listed: dict[str, list[str]] = {}  # the ids written per source, in order, while each corpus is a new source's
    seen: dict[str, set[str]] = {}  # ... and as sets once a corpus has to be checked id by id
    for corpus in corpora:
        ids = corpus.doc_ids
        per_source = {s: [ids[i] for i in corpus.positions_of_source(s).tolist()] for s in corpus.sources}
        if all(listed.get(s) == these for s, these in per_source.items()):
            continue
        for s, these in per_source.items():
            if s in listed and s not in seen:
                seen[s] = set(listed[s])
            listed.setdefault(s, these)
        del per_source
        for docno, d, s in DocnoMap.sourcebias(corpus).rows():
            if s in seen:
                if d in seen[s]:
                    continue
                seen[s].add(d)
            yield docno, d, s


def read_metrics_csv(path: str | Path) -> list[dict[str, Any]]:
    """Read a ``metrics.csv`` back.

    Args:
        path: The file.

    Returns:
        Its rows, values as floats.
    """
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return [{**r, "value": float(r["value"])} for r in csv.DictReader(fh)]


def _read_per_query(path: Path, query_ids: list[str]) -> dict[Key, np.ndarray]:
    if not path.is_file():
        raise DataError(path, "missing: the per-query values of this result")
    index = {q: i for i, q in enumerate(query_ids)}
    out: dict[Key, np.ndarray] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or tuple(header) != PER_QUERY_COLUMNS:
            raise DataError(path, f"expected the header {','.join(PER_QUERY_COLUMNS)}", 1)
        for lineno, row in enumerate(reader, start=2):
            if len(row) != len(PER_QUERY_COLUMNS):
                raise DataError(path, f"expected {len(PER_QUERY_COLUMNS)} columns, got {len(row)}", lineno)
            retriever, setting, target, qid, metric, value = row
            key = Key(retriever, setting, target, metric)
            vec = out.get(key)
            if vec is None:
                vec = out[key] = np.full(len(query_ids), np.nan)
            if qid not in index:
                raise DataError(path, f"query '{qid}' is not among the result's queries", lineno)
            try:
                vec[index[qid]] = float(value)
            except ValueError:
                raise DataError(path, f"value '{value}' is not a number", lineno) from None
    return out


def _read_runs(folder: Path, entries: list[dict[str, Any]], result: Any, dataset: Any) -> dict[RunKey, Run]:
    from sourcebias.data.corpus import Corpus
    from sourcebias.retrieval.docnos import DocnoMap

    table = folder / "runs" / "docnos.tsv"
    if dataset is not None:
        mixed = dataset.corpus
    else:
        doc_ids, sources = [], []
        with table.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                doc_ids.append(row["doc_id"])
                sources.append(row["source"])
        present = set(sources)
        order = [s for s in result.sources if s in present]
        mixed = Corpus.keys_only(doc_ids, sources, source_order=order)
    corpora: dict[str, tuple[Corpus, DocnoMap | None]] = {}  # per setting: its corpus and docno map, read once
    out: dict[RunKey, Run] = {}
    for e in entries:
        setting = e["setting"]
        if setting not in corpora:
            corpora[setting] = (mixed if setting == MIXED or len(result.sources) == 1 else mixed.subset([setting]), None)
        corpus, docnos = corpora[setting]
        path = folder / e["file"]
        if e.get("query_ids") is not None and path.is_file() and path.stat().st_size == 0:
            run = Run(corpus, e["name"], {}, {})  # every query retrieved nothing: no line to read
        else:
            if docnos is None:
                docnos = DocnoMap.from_table(table, corpus)
                corpora[setting] = (corpus, docnos)
            run = Run.from_trec(path, corpus, docnos=docnos, name=e["name"], order="rank")
        dtype = np.dtype(e.get("score_dtype", "float64"))
        run.scores = {q: s.astype(dtype) for q, s in run.scores.items()}
        run.info = dict(result.run_info.get(RunKey(e["retriever"], setting), {}))
        _restore_query_order(run, e.get("query_ids"), folder / e["file"])
        out[RunKey(e["retriever"], setting)] = run
    return out


def _restore_query_order(run: Run, query_ids: list[str] | None, path: Path) -> None:
    """Put back the run's queries in their saved order, with the empty rankings that a TREC file cannot hold (a query that retrieved nothing has no line)."""
    if query_ids is None:  # written before the query list was stored
        return
    saved = set(query_ids)  # once: built inside the comprehension it was built per query (quadratic; 2.7 s a run at 6,979 queries)
    extra = [q for q in run.positions if q not in saved]
    if extra:
        raise DataError(path, f"query '{extra[0]}' is not among the run's saved queries in result.json")
    empty_pos, empty_scores = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=run._score_dtype())
    run.positions = {q: run.positions.get(q, empty_pos) for q in query_ids}
    run.scores = {q: run.scores.get(q, empty_scores) for q in query_ids}
