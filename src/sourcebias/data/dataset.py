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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sourcebias.data.corpus import Corpus
from sourcebias.data.qrels import Qrels
from sourcebias.data.readers import LoadReport, OnProblem, read_corpus, read_qrels, read_queries
from sourcebias.core.errors import ConfigError, DataError

HUMAN = "human"


@dataclass
class DatasetLayout:
    """Where a dataset's files are: its layout name and one corpus file per source."""

    root: Path
    layout: str
    source_files: dict[str, Path]

    @property
    def queries_file(self) -> Path:
        return self.root / "queries.jsonl"

    def qrels_file(self, split: str) -> Path:
        return self.root / "qrels" / f"{split}.tsv"

    def splits(self) -> list[str]:
        qdir = self.root / "qrels"
        return sorted(p.stem for p in qdir.glob("*.tsv")) if qdir.is_dir() else []


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
    qrels_file: Path
    queries_file: Path
    report: LoadReport = field(default_factory=LoadReport)

    @property
    def sources(self) -> tuple[str, ...]:
        return self.corpus.sources

    @property
    def other_sources(self) -> list[str]:
        """The loaded sources other than the human one (the LLM twins)."""
        return [s for s in self.sources if s != self.human_source]

    def sole_corpus(self, source: str) -> Corpus:
        """The corpus of one source alone (the papers' "sole corpus" setting)."""
        return self.corpus.subset([source])

    def evaluation_queries(self) -> list[str]:
        """Queries of the split with at least one relevant document, in qrels order."""
        return self.qrels.queries_with_relevant()

    def describe(self) -> dict:
        return {
            "name": self.name,
            "path": str(self.root),
            "layout": self.layout,
            "split": self.split,
            "human_source": self.human_source,
            "sources": {s: {"file": str(self.source_files[s]), "documents": n} for s, n in self.corpus.source_counts().items()},
            "queries_file": str(self.queries_file),
            "qrels_file": str(self.qrels_file),
            "queries_in_split": len(self.qrels),
            "queries_evaluated": len(self.evaluation_queries()),
            "judgements": self.qrels.n_judgements,
            "load_report": self.report.to_dict(),
        }


_TEMP_DIR = re.compile(r"^\d+(\.\d+)?$")


def detect_layout(root: str | Path, human_source: str = HUMAN) -> DatasetLayout:
    """Find the corpus files of a dataset folder and name its sources."""
    root = Path(root)
    if not root.exists():
        raise DataError(root, "dataset folder not found")
    if not root.is_dir():
        raise DataError(root, "not a folder: a dataset is a folder with queries.jsonl, qrels/ and corpus files")
    corpus_dir = root / "corpus"
    if corpus_dir.is_dir():
        files = sorted(corpus_dir.glob("*.jsonl"))
        if not files:
            raise DataError(corpus_dir, "no corpus files (*.jsonl) in this folder")
        return DatasetLayout(root, "cocktail", {p.stem: p for p in files})
    kdd: dict[str, Path] = {}
    for p in sorted(root.glob("corpus-*.jsonl")):
        kdd[p.stem[len("corpus-") :]] = p
    for p in sorted(root.glob("*/corpus-*.jsonl")):
        if not _TEMP_DIR.match(p.parent.name):
            continue
        name = f"{p.stem[len('corpus-'):]}-tmp{p.parent.name}"
        if name in kdd:
            raise DataError(p, f"source name '{name}' is used by {kdd[name]} too")
        kdd[name] = p
    if kdd:
        return DatasetLayout(root, "kdd", kdd)
    if (root / "corpus.jsonl").is_file():
        return DatasetLayout(root, "beir", {human_source: root / "corpus.jsonl"})
    raise DataError(
        root,
        "no corpus found: expected corpus/<source>.jsonl (Cocktail), corpus-human.jsonl with "
        "<temperature>/corpus-<llm>.jsonl (KDD), or corpus.jsonl (BEIR)",
    )


def load_dataset(
    path: str | Path,
    *,
    split: str = "test",
    sources: Sequence[str] | None = None,
    human_source: str = HUMAN,
    unknown_qrels: OnProblem = "error",
    empty_text: OnProblem = "error",
) -> Dataset:
    """Load a mixed-source dataset folder (any of the three layouts) and validate it.

    Parameters
    ----------
    path:
        The dataset folder.
    split:
        Which ``qrels/<split>.tsv`` to use.
    sources:
        Sources to load (default: all). The human source is read for validation even when
        not chosen.
    human_source:
        Name of the original (human-written) source; other sources must be its twins.
    unknown_qrels:
        ``"error"`` (default) or ``"skip"`` judgements naming unknown documents/queries
        (skipped ones are counted in ``dataset.report``).
    empty_text:
        ``"error"`` (default) or ``"skip"`` documents with empty text (counted).
    """
    layout = detect_layout(path, human_source)
    root = layout.root
    available = list(layout.source_files)
    if human_source not in layout.source_files:
        raise DataError(
            root,
            f"no source named '{human_source}' (the human-written original); sources found: {', '.join(available)}. "
            "Name the original with --human-source.",
        )
    chosen = list(dict.fromkeys(sources)) if sources else available
    unknown = [s for s in chosen if s not in layout.source_files]
    if unknown:
        raise ConfigError(f"unknown source(s) {', '.join(unknown)} in {root}; available: {', '.join(available)}")
    qrels_path = layout.qrels_file(split)
    if not qrels_path.is_file():
        splits = layout.splits()
        raise DataError(
            qrels_path,
            f"split '{split}' not found; available splits: {', '.join(splits) if splits else 'none (no qrels/*.tsv)'}",
        )

    report = LoadReport()
    human, human_lines = read_corpus(layout.source_files[human_source], human_source, empty_text=empty_text, report=report)
    parts: list[Corpus] = []
    if human_source in chosen:
        parts.append(human)
    for s in chosen:
        if s == human_source:
            continue
        twin, twin_lines = read_corpus(layout.source_files[s], s, empty_text=empty_text, report=report)
        for doc_id in twin.doc_ids:
            if doc_id not in human_lines:
                raise DataError(
                    layout.source_files[s],
                    f"twin '{doc_id}' has no original in {layout.source_files[human_source].name} (source '{human_source}')",
                    twin_lines[doc_id],
                )
        parts.append(twin)
    order = [human_source] + [s for s in chosen if s != human_source]
    parts.sort(key=lambda c: order.index(c.sources[0]))
    corpus = Corpus.concat(parts)

    queries = read_queries(layout.queries_file, report=report)
    qrels = read_qrels(qrels_path, known_docs=human_lines, known_queries=queries, unknown=unknown_qrels, report=report)
    no_rel = len(qrels) - len(qrels.queries_with_relevant())
    if no_rel:
        report.skipped["queries without a relevant document (not evaluated)"] = no_rel
    return Dataset(
        name=root.resolve().name,
        root=root,
        layout=layout.layout,
        split=split,
        human_source=human_source,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        source_files={s: layout.source_files[s] for s in corpus.sources},
        qrels_file=qrels_path,
        queries_file=layout.queries_file,
        report=report,
    )
