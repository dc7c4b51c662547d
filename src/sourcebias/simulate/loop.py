"""The feedback loop: rank, let readers write from what they saw, add it to the corpus, repeat.

Folder layout (``sourcebias simulate CONFIG -o DIR``)::

    DIR/config.toml, simulation.json        the configuration and the run's state
    DIR/loops/<retriever>/round-000/        the starting corpus ranked (no documents written)
    DIR/loops/<retriever>/round-001/        documents.jsonl (every document written, with its
                                            provenance and whether it was added), run.trec (the
                                            ranking readers saw after the round), metrics.json,
                                            manifest.json (committed atomically, last)
    DIR/loops/<retriever>/index/            the BM25 segments (a resumed run re-analyses nothing)
    DIR/simulation.csv, sources.csv, report.md, report.html, curves.png, manifest.json

**Resumable per round.** A round's folder appears complete or not at all; a rerun replays the
finished rounds' documents into the corpus (their vectors come from the embedding store, BM25
from its saved segments) and goes on from the first unfinished round, so a kill loses at most the
round in flight. A run asked for more rounds continues an earlier one; a finished round made
with other settings (its hash) is refused unless ``overwrite``.

**Seeded.** Round r's queries are drawn with ``numpy.random.default_rng([seed, r])`` from the
evaluation queries; each document's generation seed is derived from the seed and its id; the tie
rule takes the seed. Given a deterministic generator (greedy, or a seeded local model), a rerun
gives identical folders.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sourcebias.core.artifacts import spelling
from sourcebias.core.errors import OutputError
from sourcebias.core.sampling import seeded_sample
from sourcebias.data.corpus import Corpus, Document
from sourcebias.simulate.config import SimulationConfig

if TYPE_CHECKING:
    from sourcebias.simulate.indexes import LoopIndex

STATE_FILE = "simulation.json"
ROUND_KIND = "simulate:round"


def round_dir(root: Path, retriever: str, r: int) -> Path:
    return root / "loops" / retriever / f"round-{r:03d}"


def round_queries(cfg: SimulationConfig, eval_qids: list[str], r: int) -> list[str]:
    """The queries readers write from in round ``r`` (drawn anew each round, seeded)."""
    return seeded_sample(eval_qids, cfg.queries_per_round, [cfg.seed, r], draw="choice")


def evaluation_queries(cfg: SimulationConfig, dataset: Any) -> list[str]:
    qids = dataset.evaluation_queries()
    return seeded_sample(qids, cfg.eval_queries or None, [cfg.seed, 0], draw="choice")  # 0: all


def claim_simulation_folder(root: Path, cfg: SimulationConfig, overwrite: bool):
    """Check and lock the folder: new, empty, or this same simulation (by name); refused otherwise
    (the lock is released and its file removed when the claim is refused)."""
    from sourcebias.core.artifacts import hold_lock, release_lock

    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: exists and is a file; the output of a simulation is a folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    lock = hold_lock(root.parent / f".{root.name}.lock", root)
    try:
        _check_simulation_folder(root, cfg, overwrite)
    except BaseException:
        release_lock(lock)
        raise
    return lock


def _check_simulation_folder(root: Path, cfg: SimulationConfig, overwrite: bool) -> None:
    """Refuse a folder that holds something else; clear it for ``--overwrite``; create it."""
    if root.is_dir() and any(root.iterdir()):
        state = root / STATE_FILE
        previous = json.loads(state.read_text(encoding="utf-8")).get("name") if state.is_file() else None
        if state.is_file() and previous == cfg.name:  # this simulation: rounds reused or (overwrite) replaced per loop
            return
        if not state.is_file():
            raise OutputError(f"{root}: is not empty and is not a sourcebias simulation folder (no {STATE_FILE}); choose another {spelling('output')}")
        if not overwrite:
            raise OutputError(
                f"{root}: holds the simulation '{previous}', not '{cfg.name}'; pass "
                f"{spelling('overwrite')} to replace it, or choose another {spelling('output')}"
            )
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)


def finished_round(folder: Path, settings_hash: str) -> bool | None:
    """True: finished with these settings; None: not finished; False: made with other settings."""
    m = folder / "manifest.json"
    if not m.is_file():
        return None
    return json.loads(m.read_text(encoding="utf-8")).get("parameters", {}).get("settings_hash") == settings_hash


def added_documents(records: list[dict[str, Any]], source: str) -> list[Document]:
    return [Document(r["_id"], source, r.get("title", ""), r["text"], r.get("metadata")) for r in records if r["metadata"].get("added")]


def extend(corpus: Corpus, docs: list[Document]) -> Corpus:
    if not docs:
        return corpus
    return Corpus.concat([corpus, Corpus.from_documents(docs)])


def read_records(folder: Path) -> list[dict[str, Any]]:
    path = folder / "documents.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()] if path.is_file() else []


class Loop:
    """One retriever's loop over the rounds (see the module docstring)."""

    def __init__(
        self,
        cfg: SimulationConfig,
        root: Path,
        name: str,
        dataset: Any,
        eval_qids: list[str],
        writer: Callable[[], Any],
        emit: Callable[[str, dict], None],
        overwrite: bool,
    ):
        self.cfg, self.root, self.name, self.dataset, self.eval_qids = cfg, root, name, dataset, eval_qids
        self.writer, self.emit, self.overwrite = writer, emit, overwrite
        self.hash = cfg.settings_hash(name)
        self.corpus = dataset.corpus
        self.generated: list[str] = []
        self.index: LoopIndex | None = None  # built by run()
        self._last = None  # the view after the last round (what readers see next)

    def _index(self) -> LoopIndex:
        if self.index is None:
            raise RuntimeError(f"{self.name}: the loop's index is built by run()")
        return self.index

    def _check(self, r: int) -> bool | None:
        """As :func:`finished_round`; a round of other settings is refused, or with ``overwrite``
        its whole loop is removed (``False``)."""
        state = finished_round(round_dir(self.root, self.name, r), self.hash)
        if state is False:
            if not self.overwrite:
                raise OutputError(
                    f"{round_dir(self.root, self.name, r)}: made with other settings than this configuration's; pass "
                    f"{spelling('overwrite')} to run the loop of {self.name} again, or choose another {spelling('output')}"
                )
            shutil.rmtree(self.root / "loops" / self.name)
        return state

    def run(self) -> None:
        from sourcebias.simulate.indexes import loop_index

        done = self._replay()
        spec = dict(self.cfg.retrievers)[self.name]
        self.index = loop_index(
            self.name,
            spec,
            state=self.root / "loops" / self.name / "index",
            n_docs=len(self.corpus),
            cache_dir=self.cfg.cache_dir,
            device=self.cfg.generator.device,
        )
        for r in range(self.cfg.rounds + 1):
            if r < done:
                self.emit("cached", {"retriever": self.name, "round": r})
                continue
            self.emit("start", {"retriever": self.name, "round": r})
            t0 = time.perf_counter()
            records = self._write(r) if r else []
            view = self._view()
            self._commit(r, records, view, time.perf_counter() - t0)
            self._last = view
            self.emit("ok", {"retriever": self.name, "round": r, "seconds": round(time.perf_counter() - t0, 1)})

    def _replay(self) -> int:
        """Put the finished rounds' documents back into the corpus; returns how many rounds are
        finished. A loop with a round of other settings starts again (with ``overwrite``)."""
        done = 0
        while done <= self.cfg.rounds:
            state = self._check(done)
            if state is None:
                break
            if state is False:  # the loop's folder was removed: start from the human corpus
                self.corpus, self.generated = self.dataset.corpus, []
                return 0
            if done:
                self.generated.append(self.cfg.source_name(done))
                self.corpus = extend(self.corpus, added_documents(read_records(round_dir(self.root, self.name, done)), self.cfg.source_name(done)))
            done += 1
        return done

    def _view(self) -> Any:
        """The ranking readers see: the retriever's, with exposure parity when that is the intervention."""
        run = self._index().rank(self.corpus, {q: self.dataset.queries[q] for q in self.eval_qids}, self.cfg.depth, self.cfg.seed)
        if self.cfg.intervention.kind == "fair":
            from sourcebias.simulate.intervene import fair_view

            run = fair_view(run, self.cfg, self.dataset.human_source)
        return run

    def _write(self, r: int) -> list[dict[str, Any]]:
        from sourcebias.core import progress
        from sourcebias.simulate.writer import plan_tasks, write_documents

        w = self.writer()
        view = (self._last if self._last is not None else self._view()).cut(self.cfg.k)
        tasks = plan_tasks(
            view,
            round_queries(self.cfg, self.eval_qids, r),
            self.dataset.queries,
            write=self.cfg.generator.write,
            k=self.cfg.k,
            context=self.cfg.generator.context,
            round_=r,
        )
        with progress.task(f"{self.name}: round {r}, writing", total=len(tasks), unit="docs") as t:
            records = write_documents(
                tasks, self.corpus, w.backend, self.cfg.generator, w.template, seed=self.cfg.seed, round_=r, retriever=self.name, on_done=t.advance
            )
        for rec in records:
            rec["metadata"]["added"] = rec["metadata"]["rewrite_status"] == "ok"
        if self.cfg.intervention.kind == "detector":
            from sourcebias.simulate.intervene import filter_by_detector

            filter_by_detector(records, self.corpus, self.cfg.source_name(r), w.detector)
        source = self.cfg.source_name(r)
        old = len(self.corpus)
        self.corpus = extend(self.corpus, added_documents(records, source))
        self.generated.append(source)
        self._index().add(self.corpus, range(old, len(self.corpus)))
        return records

    def _commit(self, r: int, records: list[dict[str, Any]], view: Any, seconds: float) -> None:
        from sourcebias.core.artifacts import OutputFolder, json_plain
        from sourcebias.core.atomic import atomic_open, atomic_write_json
        from sourcebias.core.manifest import build_manifest
        from sourcebias.simulate.metrics import round_metrics

        metrics = round_metrics(view, self.dataset.qrels, self.eval_qids, k=self.cfg.k, human_source=self.dataset.human_source, generated=self.generated)
        metrics.update(
            round=r,
            retriever=self.name,
            documents=len(self.corpus),
            source=self.cfg.source_name(r) if r else None,
            written=len(records),
            added=sum(1 for x in records if x["metadata"]["added"]),
            statuses=_statuses(records),
            seconds=round(seconds, 3),
            index=self._index().config(),
        )
        folder = OutputFolder.claim(round_dir(self.root, self.name, r), kind=ROUND_KIND, overwrite=True)
        try:
            with atomic_open(folder.staging / "documents.jsonl") as fh:
                for rec in records:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            view.write_trec(folder.staging / "run.trec", tag=self.name)
            atomic_write_json(folder.staging / "metrics.json", json_plain(metrics))
            params = {"settings_hash": self.hash, "round": r, "retriever": self.name, "seed": self.cfg.seed}
            folder.commit(
                build_manifest(command=ROUND_KIND, inputs={"config": str(self.cfg.path.resolve())}, parameters=params, timings={"round_s": round(seconds, 3)})
            )
        finally:
            folder.abort()
        self._index().save(self.root / "loops" / self.name / "index")


def _statuses(records: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rec in records:
        key = rec["metadata"]["rewrite_status"] if rec["metadata"]["added"] or rec["metadata"]["rewrite_status"] != "ok" else "filtered by detector"
        out[key] = out.get(key, 0) + 1
    return out
