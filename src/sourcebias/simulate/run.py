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
                notes.append(f"Detector filter: trained on {cfg.intervention.detector}; held-out calibration Se = {s['sensitivity']:.3f}, Sp = {s['specificity']:.3f} "
                             f"(threshold {s['threshold']:.3g}): about {100 * (1 - s['sensitivity']):.0f}% of generated documents are expected to pass it")
            cache["w"] = Writer(make_backend(cfg.generator), make_template(cfg.generator, cfg.path.parent), detector)
        return cache["w"]

    return get


def run_simulation(cfg: SimulationConfig, root: str | Path, *, overwrite: bool = False, on_event: Callable[[str, dict], None] | None = None) -> tuple[SimulationResult, Path]:
    """Run (or resume) the simulation into ``root``; returns the result and the folder."""
    from sourcebias.core.artifacts import _unlock
    from sourcebias.core.atomic import atomic_write_json, atomic_write_text
    from sourcebias.data import load_dataset
    from sourcebias.simulate.loop import STATE_FILE, Loop, claim_simulation_folder, evaluation_queries

    t0 = time.perf_counter()
    root = Path(root).expanduser().resolve()
    dataset = load_dataset(cfg.dataset, split=cfg.split, sources=list(cfg.sources or [cfg.human_source]), human_source=cfg.human_source)
    eval_qids = evaluation_queries(cfg, dataset)
    lock = claim_simulation_folder(root, cfg, overwrite)
    try:
        atomic_write_text(root / "config.toml", cfg.text)
        notes: list[str] = []
        settings = {**cfg.loop_settings(), "rounds": cfg.rounds, "eval_queries_n": len(eval_qids), "dataset_name": dataset.name}
        state = {"name": cfg.name, "config_sha256": cfg.digest(), "retrievers": [n for n, _ in cfg.retrievers], "settings": settings, "notes": notes}
        atomic_write_json(root / STATE_FILE, state)
        writer = _writer_factory(cfg, notes)
        emit = on_event or (lambda kind, rec: None)
        for name, _ in cfg.retrievers:
            Loop(cfg, root, name, dataset, eval_qids, writer, emit, overwrite).run()
            atomic_write_json(root / STATE_FILE, state)
        result = SimulationResult.load(root)
        write_report(result, root, cfg, seconds=time.perf_counter() - t0)
        return result, root
    finally:
        _unlock(lock)


def write_report(result: SimulationResult, root: Path, cfg: SimulationConfig, *, seconds: float) -> None:
    """``simulation.csv``, ``sources.csv``, ``report.md``, ``report.html``, ``curves.png`` and the
    root ``manifest.json`` (kind ``simulate``), each written atomically."""
    from sourcebias.core.artifacts import MANIFEST, list_files
    from sourcebias.core.atomic import atomic_write_json, atomic_write_text
    from sourcebias.core.manifest import build_manifest
    from sourcebias.reporting.render import to_csv, to_html, to_markdown
    from sourcebias.simulate.report import plot_curves

    figure = plot_curves(result, root / "curves.png")
    report = result.report(figure)
    to_csv(report, root)
    atomic_write_text(root / "report.md", to_markdown(report))
    atomic_write_text(root / "report.html", to_html(report))
    files = {k: v for k, v in list_files(root).items() if k != MANIFEST and not k.startswith("loops/")}
    manifest = build_manifest(command=KIND, inputs={"config": str(cfg.path.resolve()), "dataset": str(cfg.dataset)}, parameters={"name": cfg.name, **result.settings}, timings={"total_s": round(seconds, 3)})
    manifest.update(kind=KIND, outputs={"files": files, "rounds": {r: len(result.rounds(r)) for r in result.retrievers}})
    atomic_write_json(root / MANIFEST, manifest)
