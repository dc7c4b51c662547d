"""``sourcebias simulate`` as a library call: check the configuration and the folder, run every
retriever's loop (resuming finished rounds), write the report files, return the result."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.simulate.config import SimulationConfig
from sourcebias.simulate.result import KIND, SimulationResult


@dataclass
class Writer:
    """What writes each round, built once on first use (a resumed, finished run loads no model)."""

    backend: Any
    template: Any
    detector: Any = None


def _writer_factory(cfg: SimulationConfig, notes: list[str]) -> Callable[[], Writer]:
    cache: dict[str, Writer] = {}

    def get() -> Writer:
        if "w" not in cache:
            from sourcebias.simulate.writer import make_backend, make_template

            detector = None
            if cfg.intervention.kind == "detector":
                from sourcebias.simulate.intervene import build_detector

                detector = build_detector(cfg)
                s = detector.summary()
                notes.append(
                    f"Detector filter: trained on {cfg.intervention.detector}; held-out calibration Se = {s['sensitivity']:.3f}, Sp = {s['specificity']:.3f} "
                    f"(threshold {s['threshold']:.3g}): about {100 * (1 - s['sensitivity']):.0f}% of generated documents are expected to pass it"
                )
            cache["w"] = Writer(make_backend(cfg.generator), make_template(cfg.generator, cfg.path.parent), detector)
        return cache["w"]

    return get


def run_simulation(
    cfg: SimulationConfig, root: str | Path, *, overwrite: bool = False, on_event: Callable[[str, dict], None] | None = None, ray_address: str | None = None
) -> tuple[SimulationResult, Path]:
    """Run (or resume) the simulation into ``root``; returns the result and the folder.

    ``ray_address`` (``"local"`` or a cluster's address): each retriever's loop is one Ray task
    (its rounds run in order on one worker, which loads the generator itself); the folder must be
    on storage every node sees. A task whose node dies is retried by Ray and resumes from the
    loop's last finished round."""
    from sourcebias.core.artifacts import release_lock
    from sourcebias.core.atomic import atomic_write_json, atomic_write_text
    from sourcebias.simulate.loop import STATE_FILE, claim_simulation_folder

    t0 = time.perf_counter()
    root = Path(root).expanduser().resolve()
    dataset, eval_qids = _dataset(cfg)
    lock = claim_simulation_folder(root, cfg, overwrite)
    try:
        atomic_write_text(root / "config.toml", cfg.text)
        settings = {**cfg.loop_settings(), "rounds": cfg.rounds, "eval_queries_n": len(eval_qids), "dataset_name": dataset.name}
        state: dict[str, Any] = {
            "name": cfg.name,
            "config_sha256": cfg.digest(),
            "retrievers": [n for n, _ in cfg.retrievers],
            "settings": settings,
            "notes": [],
        }
        atomic_write_json(root / STATE_FILE, state)
        emit = on_event or (lambda kind, rec: None)
        if ray_address is None:
            writer = _writer_factory(cfg, state["notes"])
            for name, _ in cfg.retrievers:
                run_loop(cfg, root, name, dataset, eval_qids, writer, emit, overwrite)
                atomic_write_json(root / STATE_FILE, state)
        else:
            state["notes"] += _run_on_ray(cfg, root, overwrite, ray_address, emit)
            state["ray"] = ray_address
            atomic_write_json(root / STATE_FILE, state)
        result = SimulationResult.load(root)
        write_report(result, root, cfg, seconds=time.perf_counter() - t0)
        return result, root
    finally:
        release_lock(lock)


def _dataset(cfg: SimulationConfig) -> tuple[Any, list[str]]:
    from sourcebias.data import load_dataset
    from sourcebias.simulate.loop import evaluation_queries

    dataset = load_dataset(cfg.dataset, split=cfg.split, sources=list(cfg.sources or [cfg.human_source]), human_source=cfg.human_source)
    return dataset, evaluation_queries(cfg, dataset)


def run_loop(
    cfg: SimulationConfig,
    root: Path,
    name: str,
    dataset: Any,
    eval_qids: list[str],
    writer: Callable[[], Writer],
    emit: Callable[[str, dict], None],
    overwrite: bool,
) -> None:
    from sourcebias.simulate.loop import Loop

    Loop(cfg, root, name, dataset, eval_qids, writer, emit, overwrite).run()


def loop_task(config_path: str, root: str, name: str, overwrite: bool) -> dict[str, Any]:
    """One retriever's loop in a Ray worker: reads the configuration and dataset itself (from
    shared storage), runs the loop, returns its notes and the rounds it ran or reused."""
    from sourcebias.simulate.config import load_simulation_config

    cfg = load_simulation_config(config_path)
    dataset, eval_qids = _dataset(cfg)
    notes: list[str] = []
    events: list[tuple[str, dict]] = []
    run_loop(cfg, Path(root), name, dataset, eval_qids, _writer_factory(cfg, notes), lambda k, r: events.append((k, r)), overwrite)
    return {"retriever": name, "notes": notes, "events": events}


def _run_on_ray(cfg: SimulationConfig, root: Path, overwrite: bool, address: str, emit: Callable[[str, dict], None]) -> list[str]:
    try:
        import ray
    except ImportError:
        from sourcebias.core.errors import ConfigError

        raise ConfigError("--ray needs the 'ray' extra, which is not installed: pip install 'sourcebias[ray]' (or run the simulation without --ray)") from None
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        ray.init(**({"include_dashboard": False} if address == "local" else {"address": address}), **kwargs)
    try:
        task = ray.remote(num_cpus=1, max_retries=2, retry_exceptions=False)(loop_task)
        refs = {task.remote(str(cfg.path.resolve()), str(root), name, overwrite): name for name, _ in cfg.retrievers}
        notes: list[str] = []
        pending = dict(refs)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                pending.pop(ref)
                out = ray.get(ref)  # a loop that failed raises here, with the worker's error
                notes += out["notes"]
                for kind, rec in out["events"]:
                    emit(kind, rec)
        return notes
    finally:
        if started_here:
            ray.shutdown()


def write_report(result: SimulationResult, root: Path, cfg: SimulationConfig, *, seconds: float) -> None:
    """``simulation.csv``, ``sources.csv``, ``report.md``, ``report.html``, ``curves.png`` and the
    root ``manifest.json`` (kind ``simulate``), each written atomically."""
    from sourcebias.core.artifacts import MANIFEST, list_files
    from sourcebias.core.atomic import atomic_write_json, atomic_write_text
    from sourcebias.core.manifest import build_manifest
    from sourcebias.report.render import to_csv, to_html, to_markdown
    from sourcebias.simulate.report import plot_curves

    figure = plot_curves(result, root / "curves.png")
    report = result.report(figure)
    to_csv(report, root)
    atomic_write_text(root / "report.md", to_markdown(report))
    atomic_write_text(root / "report.html", to_html(report))
    files = {k: v for k, v in list_files(root).items() if k != MANIFEST and not k.startswith("loops/")}
    manifest = build_manifest(
        command=KIND,
        inputs={"config": str(cfg.path.resolve()), "dataset": str(cfg.dataset)},
        parameters={"name": cfg.name, **result.settings},
        timings={"total_s": round(seconds, 3)},
    )
    manifest.update(kind=KIND, outputs={"files": files, "rounds": {r: len(result.rounds(r)) for r in result.retrievers}})
    atomic_write_json(root / MANIFEST, manifest)
