"""Run an experiment grid: every (dataset, retriever) and (dataset, run) cell into its own result
folder, resumably, in this process or as tasks on a Ray cluster.

Layout of a grid folder::

    DIR/config.toml                      the configuration this folder's cells were made with
    DIR/grid.json                        per cell: status (ok / cached / failed), hash, seconds, error
    DIR/cells/<dataset>/<system>/        an ``evaluate`` output folder (load_result reads it)
    DIR/cells/<dataset>/<system>.seed-<N>/   the same, per seed, in a grid of several ``seeds``

**Seeds.** With ``seeds = [42, 100, 2026]`` each (cell, seed) is its own cell run: key
``dataset/system@seed=N``, its own folder and record, the seed in its hash (settings' ``seed``),
resumed and made stale exactly as a cell is. A grid of one seed has the keys, folders and hashes
it always had.

**Resumable.** A cell whose folder's manifest carries the cell's hash (see
:func:`~sourcebias.experiments.config.cell_hash`) is never run again; a cell whose inputs or
settings changed is run again and replaces its folder; a failing cell is recorded with its error
and traceback in ``grid.json`` and the other cells go on (a rerun retries it). Each cell folder is
written atomically (:class:`~sourcebias.core.artifacts.OutputFolder`), so a kill loses at most the
cells in flight. Embeddings are shared through the embedding store, so a retriever's vectors are
computed once for all its cells and reruns.

**Ray.** With ``ray_address`` (``"local"`` for a cluster on this machine, or an existing
cluster's address), cells are Ray tasks that declare their resources (``cpus``, ``gpus`` of the
retriever entry) and write to the same grid folder and embedding store, which must be on storage
every node sees. A dense retriever with ``encode_workers = N`` has its corpus encoded first by N
tasks, each filling its own shards of the store (:mod:`sourcebias.experiments.encode`), so one
large corpus is not bound to one worker. A cell whose worker or node dies is run again on
another node (Ray's task retries, up to ``CELL_RETRIES``): its folder is locked and committed
atomically, a retry of a cell that was committed before its node died keeps that folder, and
finished cells are recorded by this process as they arrive, so a lost node loses only the cells
it had in flight; ``grid.json`` names the node of each cell. Ray is an optional dependency (``pip install ray``);
without it the grid runs here, one cell after another.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import MANIFEST, OutputFolder, spelling
from sourcebias.core.errors import ConfigError, OutputError
from sourcebias.evaluation.results import slug
from sourcebias.experiments.config import DatasetEntry, GridConfig, RetrieverEntry, RunEntry, cell_hash, entry_dict

GRID_FILE = "grid.json"
CELL_RETRIES = 3  # Ray reruns of a cell whose worker process or node died


@dataclass(frozen=True)
class Cell:
    """One (dataset, system) pair of a grid, and in a grid of several seeds one of its seeds
    (``seed`` None: the grid's only seed, named in neither the key nor the folder)."""

    dataset: DatasetEntry
    system: RetrieverEntry | RunEntry
    seed: int | None = None

    @property
    def base_key(self) -> str:
        """``dataset/system``, whatever the seed."""
        return f"{self.dataset.name}/{self.system.name}"

    @property
    def key(self) -> str:
        return self.base_key if self.seed is None else f"{self.base_key}@seed={self.seed}"

    @property
    def is_run(self) -> bool:
        return isinstance(self.system, RunEntry)

    def folder(self, root: Path) -> Path:
        name = slug(self.system.name) + ("" if self.seed is None else f".seed-{self.seed}")
        return root / "cells" / slug(self.dataset.name) / name


def plan_cells(cfg: GridConfig) -> list[Cell]:
    """Every cell of the grid, datasets outer, retrievers then runs inner (the config's order),
    each once per seed (innermost) in a grid of several seeds."""
    cells: list[Cell] = []
    seeds: list[int | None] = list(cfg.seeds) if cfg.several_seeds else [None]
    for d in cfg.datasets:
        cells += [Cell(d, r, s) for r in cfg.retrievers if r.datasets is None or d.name in r.datasets for s in seeds]
        cells += [Cell(d, r, s) for r in cfg.runs if r.dataset == d.name for s in seeds]
    folders = [c.folder(Path("/")) for c in cells]
    if len(set(folders)) != len(folders):
        raise ConfigError("two cells map to the same folder: give datasets and retrievers names that differ in letters and digits")
    return cells


_DIGESTS: dict[tuple, str] = {}


def _digest(path: Path) -> str | None:
    """SHA-256 of a file, remembered per (path, size, modification time) within the process."""
    from sourcebias.core.manifest import file_digest

    path = Path(path)
    if not path.is_file():
        return None
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_digest(path)
    return _DIGESTS[key]


def dataset_fingerprint(entry: DatasetEntry) -> dict[str, Any]:
    """The dataset's identity for cell hashes: its settings and the SHA-256 of the files a cell
    reads (corpus files of the chosen sources, queries, the split's qrels)."""
    from sourcebias.data.dataset import detect_layout
    from sourcebias.data.irds import is_irds, twin_files

    if is_irds(str(entry.path)):
        # the human side is ir_datasets' (named by its id and ir_datasets' version, which decide
        # its content); the twins are files, digested like a folder's
        import ir_datasets

        twins = twin_files(entry.twins, entry.human_source) if entry.twins is not None else {}
        chosen = list(entry.sources) if entry.sources else [entry.human_source, *twins]
        ident = {"irds": str(entry.path), "ir_datasets": ir_datasets.__version__}
        return {
            "split": entry.split,
            "sources": chosen,
            "human_source": entry.human_source,
            **ident,
            "files": {f"twins:{s}": _digest(p) for s, p in sorted(twins.items())},
        }
    layout = detect_layout(entry.path, entry.human_source)
    chosen = list(entry.sources) if entry.sources else list(layout.source_files)
    files = {f"corpus:{s}": layout.source_files[s] for s in sorted(set(chosen) | {entry.human_source}) if s in layout.source_files}
    files["queries"] = layout.queries_file
    files["qrels"] = layout.qrels_file(entry.split)
    return {"split": entry.split, "sources": chosen, "human_source": entry.human_source, "files": {k: _digest(p) for k, p in files.items()}}


def system_identity(cell: Cell) -> dict[str, Any]:
    run = cell.system
    if isinstance(run, RunEntry):  # (cell.is_run)
        ident = entry_dict(run)
        ident["path"] = None  # the run's content, not where it lies, decides the results
        ident["sha256"] = _digest(run.path)
        if run.docnos is not None:
            ident["docnos"] = None
            ident["docnos_sha256"] = _digest(run.docnos)
        return ident
    return {"spec": run.spec, "name": run.name}


def expected_hash(cfg: GridConfig, cell: Cell) -> str:
    return cell_hash(cfg.settings(cell.seed), dataset_fingerprint(cell.dataset), system_identity(cell))


def cell_settings_json(cfg: GridConfig, cell: Cell) -> str:
    """The settings a cell runs with (its seed among them), as :func:`run_cell` takes them."""
    return json.dumps(cfg.settings(cell.seed), default=str)


def finished_hash(folder: Path) -> str | None:
    """The cell hash recorded in a finished cell folder, if any."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (manifest.get("grid") or {}).get("cell_hash")


def _cell_system(cell_spec: dict[str, Any], ds: Any, settings: dict[str, Any], cache_dir: str | None) -> tuple[list[Any], dict[str, Any]]:
    """The cell's retriever (built with the grid's options) or its external run (its document
    names resolved by :func:`~sourcebias.retrieval.docnos.resolve_docnos`, as ``evaluate --run``
    does): ``(systems, runs)`` for :func:`~sourcebias.evaluation.evaluate`."""
    from sourcebias.retrieval import Run, build_retriever
    from sourcebias.retrieval.docnos import resolve_docnos

    s = cell_spec["system"]
    if cell_spec["is_run"]:
        mapping = resolve_docnos(
            s["path"], ds.corpus, docnos=s.get("docnos"), docno_pattern=s.get("docno_pattern"), source_labels=dict(s.get("source_labels") or [])
        )
        return [], {s["name"]: Run.from_trec(s["path"], ds.corpus, docnos=mapping, name=s["name"], seed=settings["seed"])}
    r = build_retriever(s["spec"], **{**settings["options"], "cache_dir": cache_dir})
    r.name = s["name"]
    return [r], {}


def run_cell(cell_json: str, settings_json: str, root: str, cache_dir: str | None, expected: str) -> dict[str, Any]:
    """Evaluate one cell into its folder (the in-process and the Ray path run this same code).

    Arguments are JSON strings and paths so that a Ray worker on another machine can take them.
    Returns the cell's status record; exceptions become a ``failed`` record, not a crash.
    """
    t0 = time.perf_counter()
    started = time.time()
    cell_spec = json.loads(cell_json)
    settings = json.loads(settings_json)
    key = cell_spec.get("key") or f"{cell_spec['dataset']['name']}/{cell_spec['system']['name']}"
    folder_path = Path(cell_spec["folder"])
    try:
        _evaluate_cell(cell_spec, folder_path, settings, cache_dir, expected, key, t0)
        return _cell_record(key, "ok", expected, t0, started)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return _cell_record(key, "failed", expected, t0, started, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


def _evaluate_cell(cell_spec: dict[str, Any], folder_path: Path, settings: dict[str, Any], cache_dir: str | None, expected: str, key: str, t0: float) -> None:
    """Evaluate the cell and commit its result folder, unless the folder holds this cell's finished
    result already."""
    from sourcebias.evaluation import evaluate
    from sourcebias.evaluation.measures import measure_grid
    from sourcebias.experiments.config import load_grid_dataset

    folder = OutputFolder.claim(folder_path, kind="evaluate", overwrite=True)
    if finished_hash(folder_path) == expected:  # a retry after its node died past the commit
        folder.abort()
        return
    try:
        ds = load_grid_dataset(cell_spec["dataset"], settings.get("orphans", "drop"))
        systems, runs = _cell_system(cell_spec, ds, settings, cache_dir)
        measures = measure_grid(settings["measures"], settings["cutoffs"])
        result = evaluate(ds, systems, runs=runs, measures=measures, depth=settings["depth"], seed=settings["seed"], sole=settings["sole"])
        extra = {"grid": {"cell_hash": expected, "cell": key}}
        result.save(folder, timings={"cell_s": round(time.perf_counter() - t0, 3)}, command="bench", manifest_extra=extra)
    finally:
        folder.abort()  # no-op after the commit


def _cell_record(key: str, status: str, expected: str, t0: float, started: float, **failure: str) -> dict[str, Any]:
    """A cell's status record for ``grid.json`` (``failure``: its error and traceback)."""
    return {
        "cell": key,
        "status": status,
        "hash": expected,
        "seconds": round(time.perf_counter() - t0, 3),
        **failure,
        "started": started,
        "finished": time.time(),
        "pid": os.getpid(),
        **_node(),
    }


def _node() -> dict[str, str]:
    """The Ray node a cell ran on (``{}`` outside Ray), for ``grid.json``."""
    import sys

    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return {}
    return {"node": ray.get_runtime_context().get_node_id()}


def _cell_json(cell: Cell, root: Path) -> str:
    return json.dumps(
        {
            "dataset": entry_dict(cell.dataset),
            "system": entry_dict(cell.system),
            "is_run": cell.is_run,
            "folder": str(cell.folder(root)),
            "key": cell.key,
            "seed": cell.seed,
        }
    )


@dataclass
class GridRun:
    """What :func:`run_grid` did: the status record of each cell it dealt with (with ``only``,
    those cells alone; ``grid.json`` keeps every cell's). A record's ``reused`` says whether the
    cell was finished earlier and kept."""

    root: Path
    records: dict[str, dict[str, Any]]
    seconds: float

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records.values():
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out


def claim_grid_folder(root: Path, cfg: GridConfig, *, overwrite: bool = False):
    """Check the grid folder before any work and lock it for this process.

    Accepted: a new or empty folder, or the folder of this same grid (by ``[grid].name``), whose
    finished cells are reused. Refused: a file, a folder of another grid or of anything else
    (unless ``overwrite``, and never a folder without a grid file of sourcebias).
    """
    import shutil

    from sourcebias.core.artifacts import hold_lock

    root = Path(root)
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: exists and is a file; the output of a grid is a folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    if root.is_dir() and any(root.iterdir()):
        state = root / GRID_FILE
        if not state.is_file():
            raise OutputError(f"{root}: is not empty and is not a sourcebias grid folder (no {GRID_FILE}); choose another {spelling('output')}")
        try:
            previous = json.loads(state.read_text(encoding="utf-8")).get("name")
        except ValueError:
            previous = None
        if previous != cfg.name:
            if not overwrite:
                raise OutputError(
                    f"{root}: holds the grid '{previous}', not '{cfg.name}'; pass {spelling('overwrite')} to replace it, or choose another {spelling('output')}"
                )
            lock = hold_lock(root.parent / f".{root.name}.lock", root)
            shutil.rmtree(root)
            root.mkdir()
            return lock
    root.mkdir(parents=True, exist_ok=True)
    return hold_lock(root.parent / f".{root.name}.lock", root)


def run_grid(
    cfg: GridConfig,
    root: str | Path,
    *,
    ray_address: str | None = None,
    overwrite: bool = False,
    only: list[str] | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> GridRun:
    """Run every cell of ``cfg`` that is not finished into ``root``.

    ``on_event(kind, record)`` is called with ``kind`` in ``start``, ``cached``, ``ok``, ``failed``
    (the CLI prints progress from it). ``only`` restricts the grid to cells whose key
    (``dataset/system``, or ``dataset/system@seed=N`` for one seed of it) is listed.
    """
    from sourcebias.core.artifacts import release_lock
    from sourcebias.core.atomic import atomic_write_json, atomic_write_text
    from sourcebias.core.cache import default_cache_dir

    t0 = time.perf_counter()
    root = Path(root)
    cells = _selected_cells(cfg, only)
    _validate_systems(cfg)
    lock = claim_grid_folder(root, cfg, overwrite=overwrite)
    try:
        atomic_write_text(root / "config.toml", cfg.text)
        cache_dir = str(cfg.cache_dir or default_cache_dir())
        state_path = root / GRID_FILE
        records = _read_records(state_path)
        emit = on_event or (lambda kind, rec: None)

        def save_state() -> None:
            atomic_write_json(state_path, {"name": cfg.name, "config_sha256": cfg.digest(), "cells": records, "order": [c.key for c in plan_cells(cfg)]})

        todo = _reuse_finished(cfg, cells, root, records, emit)
        _remove_stale_cells(root, plan_cells(cfg))
        records = {k: v for k, v in records.items() if k in {c.key for c in plan_cells(cfg)}}
        save_state()

        def finish(rec: dict[str, Any]) -> None:
            records[rec["cell"]] = {**rec, "reused": False}
            save_state()
            emit(rec["status"], rec)

        if ray_address is None:
            for cell, h in todo:
                emit("start", {"cell": cell.key})
                finish(run_cell(_cell_json(cell, root), cell_settings_json(cfg, cell), str(root), cache_dir, h))
        else:
            _run_on_ray(cfg, todo, root, cache_dir, ray_address, emit, finish)
        save_state()
        return GridRun(root, {c.key: records[c.key] for c in cells if c.key in records}, round(time.perf_counter() - t0, 3))
    finally:
        release_lock(lock)


def _selected_cells(cfg: GridConfig, only: list[str] | None) -> list[Cell]:
    cells = plan_cells(cfg)
    if not only:
        return cells
    unknown = set(only) - {c.key for c in cells} - {c.base_key for c in cells}
    if unknown:
        raise ConfigError(f"no cell(s) {', '.join(sorted(unknown))} in this grid; cells: {', '.join(c.key for c in cells)}")
    return [c for c in cells if c.key in only or c.base_key in only]


def _read_records(state_path: Path) -> dict[str, dict[str, Any]]:
    """The cell records of ``grid.json`` (none if it is missing or unreadable)."""
    try:
        state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else {}
    except ValueError:
        state = {}
    return dict(state.get("cells") or {})


def _reuse_finished(cfg: GridConfig, cells: list[Cell], root: Path, records: dict[str, dict[str, Any]], emit) -> list[tuple[Cell, str]]:
    """Mark the cells whose folder holds their expected hash as reused (``ok``; the earlier
    record's details are kept only when it was an ``ok`` of the same hash, so an old failure's
    ``error`` never stays on an ok cell); returns the others, with their hash, to run."""
    todo: list[tuple[Cell, str]] = []
    for cell in cells:
        h = expected_hash(cfg, cell)
        if finished_hash(cell.folder(root)) != h:
            todo.append((cell, h))
            continue
        old = records.get(cell.key) or {}
        earlier = old if old.get("status") == "ok" and old.get("hash") == h else {}
        rec = {"cell": cell.key, "status": "cached", "hash": h, "seconds": earlier.get("seconds")}
        records[cell.key] = {**earlier, **rec, "status": "ok", "reused": True}
        emit("cached", rec)
    return todo


def _validate_systems(cfg: GridConfig) -> None:
    """Every retriever specification builds (typos, unknown options and missing offline models
    are reported before any cell runs)."""
    from sourcebias.retrieval import build_retriever

    for r in cfg.retrievers:
        try:
            build_retriever(r.spec, **cfg.options)
        except ConfigError as exc:
            raise ConfigError(f"{cfg.path}: retriever '{r.name}': {exc}") from None
    for run in cfg.runs:
        if not run.path.is_file():
            raise ConfigError(f"{cfg.path}: run '{run.name}': file {run.path} not found")


def _remove_stale_cells(root: Path, cells: list[Cell]) -> None:
    """Cell folders of systems or datasets no longer in the grid are results of another
    configuration: removed, so the folder never mixes two grids."""
    import shutil

    keep = {c.folder(root) for c in cells}
    base = root / "cells"
    if not base.is_dir():
        return
    for ds_dir in base.iterdir():
        if not ds_dir.is_dir():
            continue
        for cell_dir in ds_dir.iterdir():
            if cell_dir.is_dir() and cell_dir not in keep and not cell_dir.name.startswith("."):
                shutil.rmtree(cell_dir)
        if not any(ds_dir.iterdir()):
            ds_dir.rmdir()


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None) or exc  # a Ray task error carries the worker's exception
    return f"{type(cause).__name__}: {cause}"


def _failed_record(key: str, h: str | None, error: str, tb: str) -> dict[str, Any]:
    """The record of a cell that failed outside :func:`run_cell` (its Ray task, or its encoding)."""
    now = time.time()
    return {"cell": key, "status": "failed", "hash": h, "seconds": 0.0, "error": error, "traceback": tb, "started": now, "finished": now}


def _encode_first(ray: Any, cfg: GridConfig, r: RetrieverEntry, dataset: DatasetEntry, cache_dir: str) -> tuple[str, str] | None:
    """Encode the dataset's corpus into the store with ``r.encode_workers`` Ray tasks; on failure,
    the error and traceback (for the cells that needed it), else None."""
    from sourcebias.experiments.encode import encode_tasks

    try:
        ray.get(encode_tasks(ray, r, dataset, cfg.options, cache_dir))
    except Exception as exc:
        return f"encoding the corpus with {r.encode_workers} workers failed: {_describe(exc)}", traceback.format_exc()
    return None


def _submit_on_ray(ray: Any, cfg: GridConfig, todo, root: Path, cache_dir: str, emit, finish) -> dict[Any, str]:
    """Submit every cell as a Ray task (after its corpus is encoded, for ``encode_workers``);
    returns the pending tasks. A cell whose encoding failed is recorded as failed and not
    submitted, and so is every other cell that needs the same encoding; the rest go on."""
    # a cell whose worker or node dies is run again elsewhere (Ray retries system failures:
    # NodeDiedError, WorkerCrashedError); the lock and atomic commit of its folder make a retry safe
    remote_cell = ray.remote(max_retries=CELL_RETRIES)(run_cell)
    pending: dict[Any, str] = {}
    encoded: dict[tuple[str, str], tuple[str, str] | None] = {}
    for cell, h in todo:
        options: dict[str, Any] = {"num_cpus": 1.0, "num_gpus": 0.0}
        if not cell.is_run:
            r: RetrieverEntry = cell.system
            options = {"num_cpus": r.cpus, "num_gpus": r.gpus}
            prep = (cell.dataset.name, r.spec)
            if r.encode_workers > 1:
                if prep not in encoded:  # the corpus is in the store before the cell starts
                    encoded[prep] = _encode_first(ray, cfg, r, cell.dataset, cache_dir)
                failure = encoded[prep]
                if failure is not None:
                    finish(_failed_record(cell.key, h, *failure))
                    continue
        # cells are coarse: spread over the nodes rather than queued behind the driver's node
        ref = remote_cell.options(**options, scheduling_strategy="SPREAD").remote(
            _cell_json(cell, root), cell_settings_json(cfg, cell), str(root), cache_dir, h
        )
        pending[ref] = cell.key
        emit("start", {"cell": cell.key})
    return pending


def _run_on_ray(cfg: GridConfig, todo, root: Path, cache_dir: str, address: str, emit, finish) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs the 'ray' extra, which is not installed: pip install 'sourcebias[ray]' (or run the grid without --ray)") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        pending = _submit_on_ray(ray, cfg, todo, root, cache_dir, emit, finish)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                key = pending.pop(ref)
                try:
                    rec = ray.get(ref)
                except Exception as exc:
                    rec = _failed_record(key, None, _describe(exc), traceback.format_exc())
                finish(rec)
    finally:
        if started_here:
            ray.shutdown()
