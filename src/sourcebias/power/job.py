"""``sourcebias power`` as a library call: claim the output folder, read the pilot (an
``evaluate`` folder or a grid cell) and its dataset's judgements, analyse, write the folder."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.power.analysis import PowerSettings, power_analysis
from sourcebias.power.base import METHODS
from sourcebias.power.pilot import STATISTICS, TWIN_PREFERENCE, statistic_name
from sourcebias.power.result import PowerResult

KIND = "power"


def load_pilot(folder: str | Path) -> Any:
    """The :class:`~sourcebias.evaluation.results.EvaluationResult` of a pilot folder; a grid's
    root is refused with the cells it holds."""
    from sourcebias.evaluation import load_result

    folder = Path(folder)
    if (folder / "grid.json").is_file() and not (folder / "result.json").is_file():
        cells = sorted(p.parent.relative_to(folder).as_posix() for p in folder.glob("cells/*/*/result.json"))
        raise ConfigError(f"{folder} is a grid; pass one of its cells: " + (", ".join(f"{folder}/{c}" for c in cells) or "(none finished)"))
    return load_result(folder)


def pilot_qrels(result: Any, pilot: Path, dataset_dir: str | Path | None) -> tuple[Any, str]:
    """``(qrels, note)``: the judgements of the pilot's dataset (orphan rule as in the pilot),
    checked against the digest the pilot's manifest recorded; ``None`` with the reason when the
    dataset cannot be read."""
    from sourcebias.core.manifest import file_digest
    from sourcebias.data import load_dataset

    ds = result.dataset or {}
    path = Path(dataset_dir) if dataset_dir is not None else (Path(ds["path"]) if ds.get("path") else None)
    if path is None or not path.is_dir():
        return None, f"the pilot's dataset folder {path} is not here; pass --dataset DIR for twin preference"
    dataset = load_dataset(path, result.dataset_options()[0])  # as the pilot loaded it (split, sources, empty texts, orphan rule, ...)
    recorded = _recorded_qrels_digest(pilot)
    if recorded and dataset.qrels_file is not None and file_digest(dataset.qrels_file) != recorded:
        raise DataError(
            dataset.qrels_file, "differs from the judgements the pilot was evaluated with (SHA-256 in its manifest); pass the pilot's dataset with --dataset"
        )
    return dataset.qrels, ""


def _recorded_qrels_digest(pilot: Path) -> str | None:
    from sourcebias.core.artifacts import read_manifest

    try:
        files = ((read_manifest(pilot).get("inputs") or {}).get("files")) or {}
    except Exception:
        return None
    return (files.get("qrels") or {}).get("sha256")


def run_power(
    pilot: str | Path,
    output: str | Path | None,
    *,
    settings: PowerSettings,
    dataset_dir: str | Path | None = None,
    statistics: Sequence[str] | None = None,
    measures: Sequence[str] | None = None,
    retrievers: Sequence[str] | None = None,
    overwrite: bool = False,
    emit: Callable[[str], None] | None = None,
) -> tuple[PowerResult, Path | None]:
    """Analyse ``pilot`` and write the folder ``output`` (claimed before any work; ``None``:
    nothing written). Returns the result and the folder's path."""
    from sourcebias.core.artifacts import OutputFolder

    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    try:
        t0 = time.perf_counter()
        pilot = Path(pilot)
        result = load_pilot(pilot)
        chosen = [statistic_name(s) for s in (statistics or STATISTICS)]
        qrels, note = pilot_qrels(result, pilot, dataset_dir) if TWIN_PREFERENCE in chosen and result.runs else (None, "")
        res = power_analysis(
            result,
            qrels=qrels,
            settings=settings,
            statistics=chosen,
            measures=measures,
            retrievers=retrievers,
            emit=emit,
            source={"folder": str(pilot.resolve())},
        )
        if note:
            res.notes.insert(0, note)
        if folder is None:
            return res, None
        return res, write_power(res, folder, pilot=pilot, seconds=time.perf_counter() - t0)
    finally:
        if folder is not None:
            folder.abort()  # no-op after the commit


def write_power(result: PowerResult, folder: Any, *, pilot: Path, seconds: float) -> Path:
    """Write ``result``, its table (``summary.md``, ``summary.tex``: the one Report's renderer, as
    ``evaluate`` writes its summary), its figure and the manifest into a claimed output folder
    and commit it."""
    from sourcebias.core.atomic import atomic_write_text
    from sourcebias.core.manifest import build_manifest, describe_file
    from sourcebias.power.figure import plot_power_curves
    from sourcebias.power.report import power_report
    from sourcebias.report.render import to_latex, to_markdown

    result.save(folder.staging)
    report = power_report(result)
    atomic_write_text(folder.staging / "summary.md", to_markdown(report))
    atomic_write_text(folder.staging / "summary.tex", to_latex(report))
    figure = plot_power_curves(result, folder.staging / "power_curves.png")
    inputs: dict[str, Any] = {"pilot": str(pilot.resolve())}
    if (pilot / "manifest.json").is_file():
        inputs["pilot_manifest"] = describe_file(pilot / "manifest.json")
    parameters = {
        **result.settings,
        "methods": list(METHODS),
        "method_notes": result.methods,
        "statistics": sorted({p["statistic"] for p in result.pilots}),
        "family": result.pilot.get("family"),
    }
    manifest = build_manifest(
        command=KIND, inputs=inputs, parameters=parameters, timings={"total_s": round(seconds, 3)}, extra={"figure": figure.name if figure else None}
    )
    return folder.commit(manifest)
