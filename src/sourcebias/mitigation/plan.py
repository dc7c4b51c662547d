"""The training plan of debiased training: which (query, human document, twin[, negative]) tuples
form each batch, in which order — built once from a seed, saved, and reused, so that every α of a
sweep (and every rerun) trains on exactly the same batches.

* **Tuples.** Every relevant (query, document) pair of the training qrels whose document has both
  a human and an LLM copy gives (query, human copy, twin).
* **Negative strategies** (Huang et al., 2026, §RQ3):
  ``in-batch`` — no mined negatives, every other tuple's documents are negatives;
  ``hard`` — in-batch negatives plus one BM25-mined hard negative per tuple;
  ``hard-only`` — only the tuple's own mined negative counts (the loss masks in-batch columns).
  A mined negative is the highest-ranked BM25 document (on the query, over the mixed corpus)
  that is not relevant to the query, skipping every copy of every relevant document; it is used
  with **both** of its copies (human and LLM), so that negatives never teach the model which
  source to avoid. A tuple whose query has no non-relevant document in BM25's top ``mine_depth``
  cannot have one; it is left out and listed in the plan's header (``left_out_without_negative``).
* **Positive pool** (which copies of a tuple's relevant document are *positives*; Huang et al.,
  2026, ask whether twins as positives or the hinge term move the bias):
  ``both`` — human copy and twin are both positives (Dai et al.'s reference; the default);
  ``human`` — only the human copy; ``llm`` — only the twin;
  ``mix[:p]`` — per tuple one copy, the twin with probability ``p`` (default 0.5), drawn once per
  tuple with ``numpy.random.default_rng(SeedSequence([seed, MIX_STREAM]))`` over the tuples in
  their sorted order, and recorded on the tuple (``Tuple.positive``).
  The pool changes *only* which copy is a target of the ranking loss: the tuples, the batches
  and the negatives are the same for every pool (the mix has its own random stream, so it does
  not move the subset or the shuffle). A copy outside the pool is never a negative of its own
  query (its relevance label is copied from the original, Dai et al., KDD 2024, §2.2.2): the loss leaves it out of
  that query's softmax, and the hinge still compares both copies' scores
  (:class:`~sourcebias.mitigation.losses.TwinPositivesRankingLoss`).
* **Batches.** Tuples are shuffled with ``numpy.random.default_rng(seed + epoch)`` and packed in
  that order into batches in which no query and no document appears twice (a duplicate would be
  a false in-batch negative); the last batch may be short.

The plan file (JSON Lines) starts with a header (seed, strategy, positive pool and its ``p``, the
count of tuples per positive copy, batch size, epochs, the dataset's file checksums) and holds one
line per batch of ``[query_id, doc_id, negative_doc_id|null, positive]`` (``positive``: ``human``,
``llm`` or ``both``). The pool is part of the header and of every tuple, hence of the digest: a
plan with another pool is another plan. A plan written before pools existed (three-element rows,
no ``positives`` in the header) loads as ``both`` with its old digest.
Loading checks the checksums, so a plan cannot silently meet other data.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError

STRATEGIES = ("in-batch", "hard", "hard-only")
#: the positive pools (see the module docstring)
POOLS = ("human", "llm", "both", "mix")
#: the copies a single tuple can have as positives
POSITIVE_COPIES = ("human", "llm", "both")
#: the random stream of the ``mix`` draws (apart from the subset's and the shuffles' streams)
MIX_STREAM = 17


@dataclass(frozen=True, order=True)
class Tuple:
    query_id: str
    doc_id: str
    negative: str | None = None
    positive: str = "both"  # which copies are positives: human, llm or both


@dataclass
class TrainingPlan:
    """Batches of :class:`Tuple` per epoch, and how they were made."""

    header: dict[str, Any]
    epochs: list[list[list[Tuple]]] = field(default_factory=list)

    @property
    def strategy(self) -> str:
        return self.header["strategy"]

    @property
    def positives(self) -> str:
        """The pool as written on the command line: ``human``, ``llm``, ``both`` or ``mix:p``."""
        return positives_spec(self.header.get("positives", "both"), self.header.get("positives_p"))

    def _rows(self, batch: list[Tuple]) -> list[list[str | None]]:
        # a plan from before pools (no "positives" in its header) keeps its three-element rows
        if "positives" not in self.header:
            return [[t.query_id, t.doc_id, t.negative] for t in batch]
        return [[t.query_id, t.doc_id, t.negative, t.positive] for t in batch]

    def batches(self) -> list[list[Tuple]]:
        """Every batch of every epoch, in training order."""
        return [b for e in self.epochs for b in e]

    def digest(self) -> str:
        body = json.dumps(
            {"header": {k: v for k, v in self.header.items() if k != "created_utc"}, "epochs": [[self._rows(b) for b in e] for e in self.epochs]},
            sort_keys=True,
        )
        return hashlib.sha256(body.encode()).hexdigest()

    def save(self, path: str | Path) -> Path:
        from sourcebias.core.atomic import atomic_open

        with atomic_open(path, "w") as fh:
            fh.write(json.dumps({"header": self.header}) + "\n")
            for e, batches in enumerate(self.epochs):
                for b in batches:
                    fh.write(json.dumps({"epoch": e, "batch": self._rows(b)}) + "\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, dataset: Any | None = None) -> TrainingPlan:
        from sourcebias.data.jsonl import iter_jsonl

        path = Path(path)
        rows = list(iter_jsonl(path))
        if not rows or "header" not in rows[0][1]:
            raise DataError(path, "not a training plan (no header line)", 1)
        header = rows[0][1]["header"]
        n_epochs = int(header["epochs"])
        epochs: list[list[list[Tuple]]] = [[] for _ in range(n_epochs)]
        for lineno, rec in rows[1:]:
            try:
                epochs[int(rec["epoch"])].append([_tuple_from_row(row) for row in rec["batch"]])
            except (KeyError, ValueError, TypeError, IndexError):
                raise DataError(path, "malformed batch line", lineno) from None
        plan = cls(header, epochs)
        if dataset is not None and dataset_checksums(dataset) != header.get("checksums"):
            raise DataError(path, f"this plan was built on other data than {dataset.root} (file checksums differ); build a new plan")
        return plan


def _tuple_from_row(row: list) -> Tuple:
    q, d, n, *rest = row
    positive = str(rest[0]) if rest else "both"
    if len(rest) > 1 or positive not in POSITIVE_COPIES:
        raise ValueError(row)
    return Tuple(str(q), str(d), None if n is None else str(n), positive)


def parse_positives(spec: str) -> tuple[str, float | None]:
    """``human`` / ``llm`` / ``both`` / ``mix`` / ``mix:p`` → (pool, p); ``p`` (the probability
    that a tuple's positive is the twin) is 0.5 for a bare ``mix`` and None for the other pools."""
    pool, _, rest = spec.strip().partition(":")
    if pool not in POOLS or (rest and pool != "mix"):
        raise ConfigError(f"positive pool must be one of human, llm, both, mix[:p], got '{spec}'")
    if pool != "mix":
        return pool, None
    try:
        p = float(rest) if rest else 0.5
    except ValueError:
        raise ConfigError(f"mix:p needs a probability, got '{rest}'") from None
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"mix:p is the probability that a tuple's positive is the LLM copy (0 to 1), got {p:g}")
    return pool, p


def positives_spec(pool: str, p: float | None = None) -> str:
    """The inverse of :func:`parse_positives` (``mix:0.5`` for a mix)."""
    return f"mix:{p:g}" if pool == "mix" else pool


def assign_positives(tuples: list[Tuple], pool: str, p: float | None, seed: int) -> list[Tuple]:
    """The tuples with their positive copy: the pool itself, or for ``mix`` a seeded draw per
    tuple (the twin with probability ``p``), in the given order."""
    if pool != "mix":
        return [replace(t, positive=pool) for t in tuples]
    if p is None:
        raise ConfigError("positive pool 'mix' needs p, the probability that a tuple's positive is the LLM copy")
    llm = np.random.default_rng(np.random.SeedSequence([seed, MIX_STREAM])).random(len(tuples)) < p
    return [replace(t, positive="llm" if x else "human") for t, x in zip(tuples, llm.tolist())]


def dataset_checksums(dataset: Any) -> dict[str, str]:
    from sourcebias.core.manifest import file_digest

    files = {f"corpus:{s}": p for s, p in dataset.source_files.items()}
    files["queries"] = dataset.queries_file
    if dataset.qrels_file is not None:
        files["qrels"] = dataset.qrels_file
    return {k: file_digest(v) for k, v in sorted(files.items())}


def training_tuples(dataset: Any, llm_source: str | None = None) -> list[Tuple]:
    """(query, document) pairs of the training qrels with both copies, sorted."""
    llm = llm_source or _single_llm(dataset)
    c = dataset.corpus
    out = sorted(
        Tuple(q, d)
        for q in dataset.evaluation_queries()
        for d, g in dataset.qrels[q].items()
        if g > 0 and c.position(d, dataset.human_source) is not None and c.position(d, llm) is not None
    )
    if not out:
        raise ConfigError(f"no relevant pair with both copies in split '{dataset.split}'")
    return out


def _single_llm(dataset: Any) -> str:
    if len(dataset.other_sources) != 1:
        raise ConfigError(f"several LLM sources ({', '.join(dataset.other_sources)}); name one")
    return dataset.other_sources[0]


def mine_negatives(dataset: Any, query_ids: list[str], depth: int = 100) -> dict[str, list[str]]:
    """Per query, BM25's candidates over the mixed corpus (doc ids, best first, each once) that
    are not relevant to it; no copy of a relevant document is a candidate."""
    from sourcebias.retrieval import BM25

    run = BM25().retrieve(dataset.corpus, {q: dataset.queries[q] for q in query_ids}, depth)
    out: dict[str, list[str]] = {}
    for q in query_ids:
        relevant = {d for d, g in dataset.qrels.get(q, {}).items() if g > 0}
        seen: list[str] = []
        for d, _ in run.keys(q):
            if d not in relevant and d not in seen:
                seen.append(d)
        out[q] = seen
    return out


def pack(tuples: list[Tuple], batch_size: int) -> list[list[Tuple]]:
    """Batches in the given order with no query and no document twice per batch."""
    pending = list(tuples)
    batches: list[list[Tuple]] = []
    while pending:
        batch: list[Tuple] = []
        used_q: set[str] = set()
        used_d: set[str] = set()
        rest: list[Tuple] = []
        for t in pending:
            docs = {t.doc_id} | ({t.negative} if t.negative else set())
            if len(batch) < batch_size and t.query_id not in used_q and not (docs & used_d):
                batch.append(t)
                used_q.add(t.query_id)
                used_d |= docs
            else:
                rest.append(t)
        batches.append(batch)
        pending = rest
    return batches


def with_mined_negatives(dataset: Any, tuples: list[Tuple], mine_depth: int) -> tuple[list[Tuple], list[list[str]]]:
    """Each tuple with its mined negative, and the (query, doc) tuples left out for want of one."""
    cands = mine_negatives(dataset, sorted({t.query_id for t in tuples}), mine_depth)
    mined, without_negative = [], []
    for t in tuples:
        negs = cands.get(t.query_id) or []
        if not negs:  # BM25 found no non-relevant document for this query: no negative to pair
            without_negative.append([t.query_id, t.doc_id])
            continue
        mined.append(Tuple(t.query_id, t.doc_id, negs[0]))
    if not mined:
        raise ConfigError(
            f"BM25 found no non-relevant document in its top {mine_depth} for any query: no hard negatives; raise the mining depth or use in-batch"
        )
    return mined, without_negative


def build_plan(
    dataset: Any,
    *,
    batch_size: int = 32,
    epochs: int = 1,
    seed: int = 42,
    strategy: str = "in-batch",
    max_tuples: int | None = None,
    mine_depth: int = 100,
    llm_source: str | None = None,
    positives: str = "both",
) -> TrainingPlan:
    """Build the plan (see the module docstring). ``max_tuples`` keeps a seeded subset (a short
    training budget); ``positives`` is the pool (``human``, ``llm``, ``both``, ``mix[:p]``)."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"negative strategy must be one of {', '.join(STRATEGIES)}, got '{strategy}'")
    if batch_size < 2:
        raise ConfigError("batch size must be at least 2")
    pool, p = parse_positives(positives)
    tuples = training_tuples(dataset, llm_source)
    if max_tuples is not None and max_tuples < len(tuples):
        keep = np.sort(np.random.default_rng(seed).choice(len(tuples), size=max_tuples, replace=False))
        tuples = [tuples[i] for i in keep.tolist()]
    without_negative: list[list[str]] = []
    if strategy != "in-batch":
        tuples, without_negative = with_mined_negatives(dataset, tuples, mine_depth)
    tuples = assign_positives(tuples, pool, p, seed)
    epochs_out = []
    for e in range(epochs):
        order = np.random.default_rng(seed + e).permutation(len(tuples))
        epochs_out.append(pack([tuples[i] for i in order.tolist()], batch_size))
    import datetime as _dt

    header = {
        "kind": "training-plan",
        "seed": seed,
        "strategy": strategy,
        "positives": pool,
        "positives_p": p,  # mix: the probability that a tuple's positive is the LLM copy
        "positive_counts": {c: sum(t.positive == c for t in tuples) for c in POSITIVE_COPIES},
        "batch_size": batch_size,
        "epochs": epochs,
        "tuples": len(tuples),
        "max_tuples": max_tuples,
        "mine_depth": mine_depth if strategy != "in-batch" else None,
        "left_out_without_negative": without_negative,  # (query, doc) tuples with no mined negative
        "dataset": str(dataset.root),
        "split": dataset.split,
        "human_source": dataset.human_source,
        "llm_source": llm_source or _single_llm(dataset),
        "checksums": dataset_checksums(dataset),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return TrainingPlan(header, epochs_out)
