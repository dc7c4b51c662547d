"""Mixed-source retrieval datasets: layouts, source selection, validation.

Three folder layouts are recognised:

``cocktail``  (the Cocktail benchmark)::

    corpus/human.jsonl  corpus/<llm-source>.jsonl ...  queries.jsonl  qrels/<split>.tsv

``kdd``  (the source-bias paper, KDD 2024)::

    corpus-human.jsonl  <temperature>/corpus-<llm>.jsonl ...  queries.jsonl  qrels/<split>.tsv

  A twin file ``0.2/corpus-llama-2-7b-chat.jsonl`` becomes the source
  ``llama-2-7b-chat-tmp0.2`` (Cocktail's naming); ``corpus-<name>.jsonl`` at the top level
  becomes the source ``<name>``.

``beir``  (a plain one-source BEIR folder)::

    corpus.jsonl  queries.jsonl  qrels/<split>.tsv

  Its single source is the human source (named ``human`` unless told otherwise).

One source is the *original* (``human`` by default): every other source is a set of twins,
each keeping the ``_id`` of the original it rewrites. Qrels are given on original ids and hold
for every twin.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import strip_compression
from sourcebias.data.options import HUMAN, DatasetOptions
from sourcebias.data.pairing import apply_orphan_rule, orphan_note
from sourcebias.data.qrels import Qrels
from sourcebias.data.readers import LoadReport, OnProblem, read_corpus, read_qrels, read_queries


@dataclass
class DatasetLayout:
    """Where a dataset's files are: its layout name and one corpus file per source.

    Every data file may be gzip-compressed (``corpus/llm.jsonl.gz``, ``queries.jsonl.gz``,
    ``qrels/test.tsv.gz``). ``notes`` lists files that were passed over (only with
    ``unknown_files="note"``; by default such a file is an error).
    """

    root: Path
    layout: str
    source_files: dict[str, Path]
    notes: list[str] = field(default_factory=list)

    @property
    def queries_file(self) -> Path:
        """The queries file (``queries.jsonl``, or its ``.gz``)."""
        return _one_of(self.root, "queries.jsonl")

    def qrels_file(self, split: str) -> Path:
        """The judgements file of a split.

        Args:
            split: The split's name (``test``).

        Returns:
            ``qrels/<split>.tsv`` (or its ``.gz``), whether it exists or not.
        """
        return _one_of(self.root / "qrels", f"{split}.tsv")

    def splits(self) -> list[str]:
        """The splits that have a judgements file.

        Returns:
            Their names, sorted (empty without a ``qrels`` folder).
        """
        qdir = self.root / "qrels"
        if not qdir.is_dir():
            return []
        return sorted({strip_compression(p.name)[: -len(".tsv")] for p in qdir.iterdir() if strip_compression(p.name).endswith(".tsv")})


def _one_of(folder: Path, name: str) -> Path:
    """``folder/name`` or ``folder/name.gz`` (an error if both exist); the plain path if neither."""
    plain, gz = folder / name, folder / f"{name}.gz"
    if plain.exists() and gz.exists():
        raise DataError(gz, f"both {name} and {name}.gz exist; keep one")
    return gz if gz.exists() else plain


def _data_files(folder: Path, suffix: str) -> dict[str, Path]:
    """``stem -> path`` of ``*<suffix>`` and ``*<suffix>.gz`` files in ``folder``."""
    out: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        name = strip_compression(p.name)
        if p.is_file() and name.endswith(suffix) and not p.name.startswith("."):
            stem = name[: -len(suffix)]
            if stem in out:
                raise DataError(p, f"both {out[stem].name} and {p.name} exist; keep one")
            out[stem] = p
    return out


@dataclass
class Dataset:
    """A loaded dataset: the chosen sources' documents, the queries, and one split's qrels."""

    name: str
    root: Path
    layout: str
    split: str
    human_source: str
    corpus: Corpus
    queries: dict[str, str]
    qrels: Qrels
    source_files: dict[str, Path]
    qrels_file: Path | None
    queries_file: Path
    report: LoadReport = field(default_factory=LoadReport)
    orphans: dict[str, Any] = field(default_factory=lambda: {"policy": "drop"})
    options: DatasetOptions = field(default_factory=DatasetOptions)
    registered: str | None = None  # the registered name it was loaded by (``nq-utd``), if any

    @property
    def sources(self) -> tuple[str, ...]:
        """The loaded sources, in listing order."""
        return self.corpus.sources

    @property
    def other_sources(self) -> list[str]:
        """The loaded sources other than the human one (the LLM twins)."""
        return [s for s in self.sources if s != self.human_source]

    def sole_corpus(self, source: str) -> Corpus:
        """The corpus of one source alone (the papers' "sole corpus" setting).

        Args:
            source: One of :attr:`sources`.

        Returns:
            The documents of that source.
        """
        return self.corpus.subset([source])

    def evaluation_queries(self) -> list[str]:
        """Queries of the split with at least one relevant document, in qrels order.

        Returns:
            Their ids.
        """
        return self.qrels.queries_with_relevant()

    def describe(self) -> dict[str, Any]:
        """What was loaded, as a JSON record (written into results and manifests).

        Returns:
            Name, path, layout, split, human source, each source's file and document count, the queries
            and qrels files, the counts of queries and judgements, the orphan rule's counts, the loading
            report, the loading options and the registered name.
        """
        return {
            "name": self.name,
            "path": str(self.root),
            "layout": self.layout,
            "split": self.split,
            "human_source": self.human_source,
            "sources": {s: {"file": str(self.source_files[s]), "documents": n} for s, n in self.corpus.source_counts().items()},
            "queries_file": str(self.queries_file),
            "qrels_file": str(self.qrels_file) if self.qrels_file is not None else None,
            "queries_in_split": len(self.qrels),
            "queries_evaluated": len(self.evaluation_queries()),
            "judgements": self.qrels.n_judgements,
            "orphans": dict(self.orphans),
            "load_report": self.report.to_dict(),
            "options": self.options.to_dict(),
            "registered": self.registered,
        }


_TEMP_DIR = re.compile(r"^\d+(\.\d+)?$")


def detect_layout(root: str | Path, human_source: str = HUMAN, *, unknown_files: str = "error") -> DatasetLayout:
    """Find the corpus files of a dataset folder and name its sources.

    A file where corpus files live (``corpus/``, ``corpus-*``) that is not a corpus file
    (``<source>.jsonl`` or ``.jsonl.gz``) nor one sourcebias writes there (``<source>.manifest.json``,
    hidden state folders) stops with an error naming it — so a twin stored as, say,
    ``llm.json`` is never silently left out; with ``unknown_files="note"`` it is listed in
    ``layout.notes`` instead.

    Args:
        root: The dataset folder.
        human_source: The source name of a BEIR folder's single corpus.
        unknown_files: ``"error"`` or ``"note"``, for a file that is not a corpus file.

    Returns:
        The :class:`DatasetLayout`: layout name and one corpus file per source.

    Raises:
        DataError: no such folder, no corpus, two files for one source, or an unknown file.
    """
    root = Path(root)
    if not root.exists():
        raise DataError(root, "dataset folder not found")
    if not root.is_dir():
        raise DataError(root, "not a folder: a dataset is a folder with queries.jsonl, qrels/ and corpus files")
    notes: list[str] = []

    def unknown(p: Path, expected: str) -> None:
        msg = f"not a corpus file (expected {expected}); rename it, move it out of the folder, or pass --allow-unknown-files to go on without it"
        if unknown_files == "error":
            raise DataError(p, msg)
        notes.append(f"{p}: ignored, {msg.split(';')[0]}")

    if (root / "corpus").is_dir():
        return DatasetLayout(root, "cocktail", _cocktail_files(root / "corpus", unknown), notes)
    kdd = _kdd_files(root, unknown)
    if kdd:
        return DatasetLayout(root, "kdd", kdd, notes)
    beir = _one_of(root, "corpus.jsonl")
    if beir.is_file():
        return DatasetLayout(root, "beir", {human_source: beir}, notes)
    raise DataError(
        root,
        "no corpus found: expected corpus/<source>.jsonl (Cocktail), corpus-human.jsonl with "
        "<temperature>/corpus-<llm>.jsonl (KDD), or corpus.jsonl (BEIR); .jsonl.gz files too",
    )


def _cocktail_files(corpus_dir: Path, unknown: Callable[[Path, str], None]) -> dict[str, Path]:
    """``source -> file`` of a Cocktail ``corpus/`` folder; anything else there goes to ``unknown``."""
    files = _data_files(corpus_dir, ".jsonl")
    for p in sorted(corpus_dir.iterdir()):
        if p.name.startswith(".") or (p.is_file() and (strip_compression(p.name).endswith(".jsonl") or p.name.endswith(".manifest.json"))):
            continue
        unknown(p, "<source>.jsonl or <source>.jsonl.gz")
    if not files:
        raise DataError(corpus_dir, "no corpus files (<source>.jsonl or .jsonl.gz) in this folder")
    return files


def _kdd_files(root: Path, unknown: Callable[[Path, str], None]) -> dict[str, Path]:
    """``source -> file`` of the KDD layout.

    ``corpus-<name>.jsonl`` at the top, and ``<T>/corpus-<llm>.jsonl`` as ``<llm>-tmp<T>`` (empty when
    the folder has neither).
    """
    kdd: dict[str, Path] = {}
    folders = [root] + [f for f in sorted(root.iterdir()) if f.is_dir() and _TEMP_DIR.match(f.name)]
    for folder in folders:
        for p in sorted(folder.iterdir()):
            if not (p.is_file() and p.name.startswith("corpus-")):
                continue
            name = strip_compression(p.name)
            if not name.endswith(".jsonl"):
                unknown(p, "corpus-<source>.jsonl or .jsonl.gz" if folder == root else "corpus-<llm>.jsonl or .jsonl.gz")
                continue
            stem = name[len("corpus-") : -len(".jsonl")]
            src = stem if folder == root else f"{stem}-tmp{folder.name}"
            if src in kdd:
                clash = f"both {kdd[src].name} and {p.name} exist; keep one" if folder == root else f"source name '{src}' is used by {kdd[src]} too"
                raise DataError(p, clash)
            kdd[src] = p
    return kdd


def load_dataset(path: str | Path, options: DatasetOptions | None = None, **overrides: Any) -> Dataset:
    """Load a mixed-source dataset (any of the three layouts, by folder or by name) and validate it.

    Args:
        path: The dataset folder; or a known dataset's name (``"nq-utd"`` ships with sourcebias,
            the other Cocktail datasets after ``sourcebias download NAME``; see ``sourcebias
            datasets``) — a local folder of that name wins over the registered dataset; or
            ``"irds:<id>"``: the human side through ir_datasets and the twins from ``twins``
            (:mod:`sourcebias.data.irds`; same validation, orphan rule and report).
        options: How to load it (:class:`~sourcebias.data.options.DatasetOptions`: split,
            sources, human source, what to do with unknown judgements, empty texts and unknown
            files, the orphan rule, twins); default: its defaults.
        **overrides: Any of those options by name (``split="dev"``, ``empty_text="skip"``, ...),
            over ``options``.

    Returns:
        The dataset; ``dataset.options`` are the options it was loaded with (written into every
        result, so that later commands reload it the same way).

    Raises:
        DataError: a file that is missing or wrong (with file and line).
        ConfigError: an option that cannot be used (unknown source, twins without ``irds:``).
    """
    opts = (options or DatasetOptions()).with_changes(**overrides)
    if opts.twins is not None:  # a folder, or a known dataset's name (its folder holds the twins)
        opts = opts.with_changes(twins=str(resolve_dataset(opts.twins)[0].resolve()))
    if str(path).startswith("irds:"):
        return _load_irds(str(path), opts)
    if opts.twins is not None:
        raise ConfigError(f"twins= is for irds:<id> datasets; the folder {path} holds its own twins (corpus/<source>.jsonl)")
    root, registered = resolve_dataset(path)
    layout = detect_layout(root, opts.human_source, unknown_files=opts.unknown_files)
    chosen = _chosen_sources(layout, opts)
    qrels_path = _qrels_path(layout, opts.split)
    report = LoadReport()
    corpus, human_lines, skipped = _read_sources(layout, chosen, opts, report)
    queries = read_queries(layout.queries_file, report=report)
    qrels = _read_judgements(qrels_path, human_lines, queries, skipped, opts, report)
    qrels, orphan_summary = apply_orphan_rule(corpus, qrels, opts.orphans)
    report.notes_extra += [n for n in [orphan_note(orphan_summary), *layout.notes] if n]
    return Dataset(
        name=registered or layout.root.resolve().name,
        root=layout.root,
        layout=layout.layout,
        split=opts.split or "",
        human_source=opts.human_source,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        source_files={s: layout.source_files[s] for s in corpus.sources},
        qrels_file=qrels_path,
        queries_file=layout.queries_file,
        report=report,
        orphans=orphan_summary,
        options=opts,
        registered=registered,
    )


def _load_irds(spec: str, opts: DatasetOptions) -> Dataset:
    from sourcebias.data.irds import load_irds

    fields = load_irds(
        spec,
        twins=opts.twins,
        split=opts.split,
        sources=opts.sources,
        human_source=opts.human_source,
        unknown_qrels=_on_problem(opts.unknown_qrels),
        empty_text=_on_problem(opts.empty_text),
        orphans=opts.orphans,
    )
    return Dataset(**fields, options=opts)


def dataset_path(text: str | Path) -> tuple[Path, str | None]:
    """``DIR`` or ``DIR,split`` -> ``(path, split)``.

    A comma that is part of an existing path is kept; without a split, a command reads its default
    split (or only the corpus and queries, where it needs no judgements).
    """
    text = str(text)
    head, sep, tail = text.rpartition(",")
    if sep and not Path(text).exists() and tail and "/" not in tail:
        return Path(head), tail.strip()
    return Path(text), None


def resolve_dataset(path: str | Path) -> tuple[Path, str | None]:
    """Where a dataset given by folder or by name is.

    Args:
        path: A folder, or a known dataset's name (see :mod:`sourcebias.data.registry`).

    Returns:
        ``(folder, registered name or None)``: a folder that exists wins over a registered name.

    Raises:
        DataError: neither a folder nor a known name.
        ConfigError: a known dataset that has not been downloaded yet (says how).
    """
    folder = Path(path).expanduser()
    if folder.exists():
        return folder, None
    from sourcebias.data.registry import resolve_name

    found = resolve_name(str(path))
    if found is None:
        head, split = dataset_path(path)
        if split is not None and (head.expanduser().exists() or resolve_name(str(head)) is not None):
            raise DataError(folder, f"dataset folder not found: '{path}' reads as DIR,split; this command takes the split as an option (--split {split})")
        raise DataError(folder, "dataset folder not found (datasets known by name: `sourcebias datasets`)")
    return found, str(path)


def resolve_in(given: str, base: Path) -> tuple[Path, str | None]:
    """A dataset named in a configuration file: a folder beside it, or a known dataset's name.

    ``given`` is taken relative to the file's folder ``base`` if such a folder exists there, else
    as a known dataset's name (``nq-utd``), as on the command line.

    Args:
        given: The path or name written in the file.
        base: The folder of the file.

    Returns:
        ``(folder, registered name or None)``; a path that is neither comes back resolved, for the
        loader to name as missing.

    Raises:
        ConfigError: a known dataset that has not been downloaded yet (says how).
    """
    from sourcebias.data.registry import resolve_name

    p = Path(given).expanduser()
    p = (p if p.is_absolute() else base / p).resolve()
    if p.exists() or "/" in given:
        return p, None
    found = resolve_name(given)
    return (found, given) if found is not None else (p, None)


def _chosen_sources(layout: DatasetLayout, opts: DatasetOptions) -> list[str]:
    """The sources to load, checked against the folder's (the human one must be there)."""
    available = list(layout.source_files)
    if opts.human_source not in layout.source_files:
        raise DataError(
            layout.root,
            f"no source named '{opts.human_source}' (the human-written original); sources found: {', '.join(available)}. "
            "Name the original with --human-source.",
        )
    chosen = list(opts.sources) if opts.sources else available
    unknown = [s for s in chosen if s not in layout.source_files]
    if unknown:
        raise ConfigError(f"unknown source(s) {', '.join(unknown)} in {layout.root}; available: {', '.join(available)}")
    return chosen


def _qrels_path(layout: DatasetLayout, split: str | None) -> Path | None:
    """The split's qrels file (``None`` without a split); a missing split names those there are."""
    if split is None:
        return None
    path = layout.qrels_file(split)
    if not path.is_file():
        splits = layout.splits()
        raise DataError(path, f"split '{split}' not found; available splits: {', '.join(splits) if splits else 'none (no qrels/*.tsv)'}")
    return path


def _on_problem(value: str) -> OnProblem:
    """An option DatasetOptions has checked (``"error"`` or ``"skip"``), typed as the readers take it."""
    return "skip" if value == "skip" else "error"


def _read_sources(layout: DatasetLayout, chosen: list[str], opts: DatasetOptions, report: LoadReport) -> tuple[Corpus, dict[str, int], set[str]]:
    """``(corpus, line of each original, originals skipped for empty text)``.

    The chosen sources, human first; a twin without an original stops with its file and line.
    """
    human_source, files = opts.human_source, layout.source_files
    human, human_lines = read_corpus(files[human_source], human_source, empty_text=_on_problem(opts.empty_text), report=report)
    skipped = set(human_lines).difference(human.doc_ids)  # empty text, skipped on request
    parts: list[Corpus] = [human] if human_source in chosen else []
    for s in (s for s in chosen if s != human_source):
        twin, twin_lines = read_corpus(files[s], s, empty_text=_on_problem(opts.empty_text), report=report)
        for doc_id in twin.doc_ids:
            if doc_id not in human_lines:
                raise DataError(files[s], f"twin '{doc_id}' has no original in {files[human_source].name} (source '{human_source}')", twin_lines[doc_id])
        parts.append(_without(twin, skipped, twin_lines, files[s], report))
    return Corpus.concat(parts), human_lines, skipped


def _read_judgements(
    path: Path | None, human_lines: dict[str, int], queries: dict[str, str], skipped: set[str], opts: DatasetOptions, report: LoadReport
) -> Qrels:
    """The split's judgements less those of skipped originals (counted); empty without a split."""
    if path is None:
        return Qrels({})
    qrels = read_qrels(path, known_docs=human_lines, known_queries=queries, unknown=_on_problem(opts.unknown_qrels), report=report)
    qrels = _without_judgements(qrels, skipped, report)
    no_rel = len(qrels) - len(qrels.queries_with_relevant())
    if no_rel:
        report.skipped["queries without a relevant document (not evaluated)"] = no_rel
    return qrels


def require_evaluable(dataset: Dataset) -> list[str]:
    """The queries the split can evaluate (those with at least one relevant document).

    None is an error naming the qrels file, since every measure with labels would be undefined
    (NaN) and every test meaningless.

    Args:
        dataset: A dataset loaded with a split.

    Returns:
        :meth:`Dataset.evaluation_queries`.

    Raises:
        DataError: no query has a document judged relevant (grade > 0), naming the qrels file
            and what its judgements hold.
    """
    queries = dataset.evaluation_queries()
    if queries:
        return queries
    qrels = dataset.qrels
    grades = sorted({g for q in qrels for g in qrels[q].values()})
    held = f"{qrels.n_judgements} judgements of {len(qrels)} queries, grades {', '.join(map(str, grades))}" if grades else "no judgements"
    left = [f"{reason}: {n}" for reason, n in dataset.report.skipped.items() if "judgement" in reason or "original" in reason]
    left += [f"judgements left out by the orphan rule: {dataset.orphans['judgements_left_out']}"] if dataset.orphans.get("judgements_left_out") else []
    why = f" after loading ({'; '.join(left)})" if left else ""
    raise DataError(
        dataset.qrels_file or dataset.root, f"no query can be evaluated: none has a document judged relevant (grade > 0); the split holds {held}{why}"
    )


def require_twins(dataset: Dataset, study: str) -> list[str]:
    """The LLM sources of a dataset that a study compares with its human source.

    A study of source bias (a citation study, a judge's twin bias) compares how the human original
    and its LLM twins are treated: a corpus of one source, or without its human source, has
    nothing to compare, and is refused before any model is loaded or any call made.

    Args:
        dataset: A loaded dataset.
        study: What needs the twins, as the message names it (``"a citation study"``).

    Returns:
        :attr:`Dataset.other_sources`.

    Raises:
        ConfigError: no human source, or no other source.
    """
    has = ", ".join(f"{s} ({n:,} documents)" for s, n in dataset.corpus.source_counts().items()) or "no documents"
    if dataset.human_source not in dataset.sources:
        raise ConfigError(
            f"{dataset.name}: no human source '{dataset.human_source}' (its corpus has {has}); {study} compares the human original with its LLM twins"
        )
    if not dataset.other_sources:
        raise ConfigError(
            f"{dataset.name}: its corpus has one source only, {has}; {study} compares the human original with its LLM twins, so it needs "
            "an LLM source beside the human one (a dataset with twins, e.g. nq-utd, or a twin made with `sourcebias generate`)"
        )
    return dataset.other_sources


def _without(corpus: Corpus, doc_ids: set[str], lines: dict[str, int], path: Path, report: LoadReport) -> Corpus:
    """``corpus`` less the twins of originals that were skipped (each counted, with its line)."""
    if not doc_ids:
        return corpus
    keep = [i for i, d in enumerate(corpus.doc_ids) if d not in doc_ids]
    for d in corpus.doc_ids:
        if d in doc_ids:
            report.skip("twins of originals skipped for empty text", f"{path}:{lines[d]}")
    return corpus.take(keep)


def _without_judgements(qrels: Qrels, doc_ids: set[str], report: LoadReport) -> Qrels:
    """``qrels`` less the judgements of skipped originals (counted)."""
    if not doc_ids:
        return qrels
    n = sum(1 for q in qrels for d in qrels[q] if d in doc_ids)
    if n:
        report.skipped["judgements of originals skipped for empty text"] = n
    return Qrels({q: {d: g for d, g in qrels[q].items() if d not in doc_ids} for q in qrels})
