"""``sourcebias audit`` as a library call: claim the output folder, read the audited runs (an
``evaluate`` folder or a TREC run), build and calibrate the detector, audit, write the folder."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.audit.analysis import AuditSettings, audit_run, document_labels
from sourcebias.audit.correction import METHOD
from sourcebias.audit.detector import YOUDEN, CalibratedDetector, score_file_detector, train_detector
from sourcebias.audit.features import FeatureSpec
from sourcebias.audit.result import AuditResult
from sourcebias.core.errors import ConfigError

KIND = "audit"
ASSUMPTION = ("The correction assumes the detector's Se and Sp on the calibration twins hold for the audited documents (non-differential misclassification); "
              "a detector calibrated on another domain, or one whose errors depend on what a retriever ranks high, breaks it, and no interval can show that.")  # fmt: skip


def parse_dataset_arg(text: str | Path) -> tuple[Path, str | None]:
    """``DIR`` or ``DIR,split`` -> ``(path, split)`` (a comma that is part of an existing path is
    kept)."""
    text = str(text)
    head, sep, tail = text.rpartition(",")
    if sep and not Path(text).exists() and tail and "/" not in tail:
        return Path(head), tail.strip()
    return Path(text), None


@dataclass
class DetectorOptions:
    """Which detector: ``train`` (a labelled twin dataset ``DIR[,split]`` for the built-in one) or
    ``scores`` (a score file) with ``calibrate`` (a labelled dataset) and ``calibration_scores``."""

    train: str | None = None
    scores: Path | None = None
    calibrate: str | None = None
    calibration_scores: Path | None = None
    spec: FeatureSpec = field(default_factory=FeatureSpec)
    calibration_share: float = 0.5
    max_pairs: int | None = None
    threshold: str | float = YOUDEN
    seed: int = 0

    def check(self) -> None:
        if (self.train is None) == (self.scores is None):
            raise ConfigError("give one detector: --detector TRAIN_DATASET_DIR[,split] (the built-in one) or --scores FILE (your own scores)")
        if self.scores is not None and (self.calibrate is None or self.calibration_scores is None):
            raise ConfigError("--scores needs --calibrate DIR[,split] (labelled twins) and --calibration-scores FILE (their scores) to estimate Se and Sp")
        if self.train is not None and (self.calibrate is not None or self.calibration_scores is not None):
            raise ConfigError("--calibrate and --calibration-scores go with --scores; the built-in detector is calibrated on held-out pairs of --detector's dataset")


def _load(arg: str | Path):
    """A dataset ``DIR[,split]``; without a split only its corpus and queries (the audit and the
    detector need no judgements)."""
    from sourcebias.data import load_dataset

    path, split = parse_dataset_arg(arg)
    return load_dataset(path, split=split)


def build_detector(options: DetectorOptions, *, cache_dir: Any = None, emit: Callable[[str], None] | None = None) -> CalibratedDetector:
    """The calibrated detector ``options`` describe."""
    from sourcebias.audit.scores import read_scores

    options.check()
    if options.train is not None:
        dataset = _load(options.train)
        return train_detector(dataset, options.spec, calibration_share=options.calibration_share, max_pairs=options.max_pairs, threshold=options.threshold, seed=options.seed, cache_dir=cache_dir, emit=emit)
    scores, cal_scores = read_scores(options.scores), read_scores(options.calibration_scores)
    describe = {"scores": str(Path(options.scores).resolve()), "calibration_scores": str(Path(options.calibration_scores).resolve()), "calibration_dataset": str(options.calibrate)}
    return score_file_detector(scores, _load(options.calibrate), cal_scores, threshold=options.threshold, describe=describe)


def load_audited_runs(target: str | Path, *, dataset: str | None = None, retrievers: Sequence[str] | None = None, docnos: Path | None = None, docno_pattern: str | None = None) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """``(runs, dataset, info)``: the mixed-corpus runs of an ``evaluate`` folder (bound to its
    dataset's texts; ``dataset`` overrides the recorded path) or one TREC run file over
    ``dataset`` (document names by the project's docno rule)."""
    target = Path(target)
    if target.is_dir():
        runs, ds = _evaluate_runs(target, dataset)
    elif target.is_file():
        if dataset is None:
            raise ConfigError(f"{target} is a run file: name the dataset it ranks with --dataset DIR")
        from sourcebias.retrieval.run import Run, resolve_docnos

        ds = _load(dataset)
        run = Run.from_trec(target, ds.corpus, docnos=resolve_docnos(target, ds.corpus, docnos=docnos, docno_pattern=docno_pattern))
        runs = {run.name: run}
    else:
        raise ConfigError(f"{target}: neither an evaluate output folder nor a TREC run file")
    if retrievers:
        unknown = [r for r in retrievers if r not in runs]
        if unknown:
            raise ConfigError(f"no run named {', '.join(unknown)} in {target} (runs: {', '.join(runs)})")
        runs = {r: runs[r] for r in retrievers}
    info = {"target": str(target.resolve()), "runs": {n: {"queries": len(r), "depth": r.depth()} for n, r in runs.items()}, "dataset": ds.describe().get("name")}
    return runs, ds, info


def _evaluate_runs(folder: Path, dataset: str | None) -> tuple[dict[str, Any], Any]:
    from sourcebias.evaluation import load_result

    head = load_result(folder, runs=False)
    recorded = head.dataset or {}
    path = dataset if dataset is not None else recorded.get("path")
    if path is None or not parse_dataset_arg(path)[0].is_dir():
        raise ConfigError(f"the dataset of {folder} ({path}) is not here; pass it with --dataset DIR (the audit needs the documents' texts)")
    options = head.dataset_options()[0]  # as the evaluation loaded it (split, sources, empty texts, orphan rule, ...)
    from sourcebias.data import load_dataset

    ds = load_dataset(parse_dataset_arg(path)[0], options, split=parse_dataset_arg(path)[1] or options.split)
    result = load_result(folder, dataset=ds)
    runs = {k.retriever: r for k, r in result.runs.items() if k.setting == "mixed"}
    if not runs:
        raise ConfigError(f"{folder} holds no run of the mixed corpus to audit")
    return runs, ds


def audit(runs: dict[str, Any], detector: CalibratedDetector, settings: AuditSettings, *, human_source: str | None = None, run_info: dict[str, Any] | None = None) -> AuditResult:
    """Audit ``runs`` (over one corpus) with a calibrated ``detector``."""
    import pandas as pd

    positions, scores, flags = document_labels(runs, detector, max(settings.ks))
    corpus = next(iter(runs.values())).corpus
    rows = [row for name, run in runs.items() for row in audit_run(name, run, flags, detector, settings, human_source)]
    documents = pd.DataFrame({"doc_id": [corpus.doc_ids[p] for p in positions], "source": [corpus.source_of(int(p)) for p in positions], "score": scores, "flagged": scores >= detector.threshold})
    notes = [ASSUMPTION] + [f"{r['run']} {r['measure']}: {r['note']}" for r in rows if r["note"]]
    truth = "source labels of the run's corpus (never read by the audit itself)" if any(r["true"] is not None for r in rows) else None
    method = {"ci": METHOD, "level": settings.level, "resamples": settings.resamples, "seed": settings.seed, "correction": "Rogan & Gladen (1978): p = (p̂ + Sp − 1) / (Se + Sp − 1), clipped to [0, 1] with a flag", "truth": truth}
    det = {**detector.info, **detector.summary(), "models": detector.models}
    return AuditResult(settings=settings.describe(), detector=det, runs=run_info or {}, rows=rows, calibration=detector.calibration_table.reset_index(drop=True), documents=documents, notes=notes, method=method)


def run_audit(target: str | Path, output: str | Path | None, *, detector: DetectorOptions, settings: AuditSettings, dataset: str | None = None, retrievers: Sequence[str] | None = None, docnos: Path | None = None,
              docno_pattern: str | None = None, overwrite: bool = False, cache_dir: Any = None, emit: Callable[[str], None] | None = None) -> tuple[AuditResult, Path | None]:  # fmt: skip
    """Audit ``target`` and write the folder ``output`` (claimed before any work; ``None``:
    nothing written). Returns the result and the folder's path."""
    from sourcebias.core.artifacts import OutputFolder

    detector.check()
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    try:
        t0 = time.perf_counter()
        runs, ds, info = load_audited_runs(target, dataset=dataset, retrievers=retrievers, docnos=docnos, docno_pattern=docno_pattern)
        det = build_detector(detector, cache_dir=cache_dir, emit=emit)
        (emit or (lambda _m: None))("labelling the audited documents")
        result = audit(runs, det, settings, human_source=ds.human_source, run_info=info)
        if folder is None:
            return result, None
        return result, write_audit(result, folder, seconds=time.perf_counter() - t0)
    finally:
        if folder is not None:
            folder.abort()  # no-op after the commit


def write_audit(result: AuditResult, folder: Any, *, seconds: float) -> Path:
    """Write ``result``, its figure and the manifest into a claimed output folder and commit it."""
    from sourcebias.audit.figure import plot_audit
    from sourcebias.core.manifest import build_manifest

    result.save(folder.staging)
    plot_audit(result, folder.staging / "audit.png")
    d = result.detector
    parameters = {**result.settings, "features": d.get("features"), "detector": d.get("kind"), "threshold": d.get("threshold"), "threshold_rule": d.get("threshold_rule"), "detector_seed": d.get("seed"), "ci": result.method}
    manifest = build_manifest(command=KIND, inputs={"target": result.runs.get("target"), "detector": {k: d.get(k) for k in ("dataset", "scores", "calibration_scores", "calibration_dataset") if d.get(k)}},
                              parameters=parameters, models=d.get("models") or {}, timings={"total_s": round(seconds, 3)}, extra={"figure": "audit.png"})  # fmt: skip
    return folder.commit(manifest)
