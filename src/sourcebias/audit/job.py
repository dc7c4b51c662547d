"""``sourcebias audit`` as a library call: claim the output folder, read the audited runs (an
``evaluate`` folder or a TREC run), build and calibrate the detector, audit, write the folder."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.audit.analysis import AuditSettings, audit_run, document_scores, flags_of
from sourcebias.audit.correction import METHOD
from sourcebias.audit.detector import YOUDEN, CalibratedDetector, score_file_detector, train_detector
from sourcebias.audit.features import FeatureSpec
from sourcebias.audit.result import AuditResult
from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample

KIND = "audit"
ASSUMPTION = (
    "The correction assumes the detector's Se and Sp on the calibration twins hold for the audited documents (non-differential misclassification); "
    "a detector calibrated on another domain, or one whose errors depend on what a retriever ranks high, breaks it, and no interval can show that."
)


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
    """Which detector: ``train`` (a labelled twin dataset ``DIR[,split]`` for the built-in one),
    ``zero_shot`` (a :mod:`sourcebias.detect` spec, calibrated on the twins of ``calibrate``), or
    ``scores`` (a score file or a ``detect`` folder) with ``calibrate`` (a labelled dataset) and
    ``calibration_scores``."""

    train: str | None = None
    scores: Path | None = None
    calibrate: str | None = None
    calibration_scores: Path | None = None
    spec: FeatureSpec = field(default_factory=FeatureSpec)
    calibration_share: float = 0.5
    max_pairs: int | None = None
    threshold: str | float = YOUDEN
    seed: int = 0
    zero_shot: str | None = None

    def check(self) -> None:
        if sum(x is not None for x in (self.train, self.scores, self.zero_shot)) != 1:
            raise ConfigError(
                "give one detector: --detector TRAIN_DATASET_DIR[,split] (the built-in one), --detector "
                "SPEC (a zero-shot one, e.g. fast-detectgpt:lm:smollm2) or --scores FILE (your own scores)"
            )
        if self.scores is not None and (self.calibrate is None or self.calibration_scores is None):
            raise ConfigError("--scores needs --calibrate DIR[,split] (labelled twins) and --calibration-scores FILE (their scores) to estimate Se and Sp")
        if self.zero_shot is not None and (self.calibrate is None or self.calibration_scores is not None):
            raise ConfigError("a zero-shot --detector needs --calibrate DIR[,split] (labelled twins it is calibrated on) and no --calibration-scores")
        if self.train is not None and (self.calibrate is not None or self.calibration_scores is not None):
            raise ConfigError(
                "--calibrate and --calibration-scores go with --scores; the built-in detector is calibrated on held-out pairs of --detector's dataset"
            )


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
    if options.zero_shot is not None:
        from sourcebias.audit.calibrate import zero_shot_detector
        from sourcebias.detect import build_detector as zero_shot

        det = zero_shot(options.zero_shot, cache_dir=cache_dir)
        assert options.calibrate is not None  # check() requires it with a zero-shot detector
        return zero_shot_detector(
            det, _load(options.calibrate), max_pairs=options.max_pairs, threshold=options.threshold, seed=options.seed, field=options.spec.field
        )
    if options.train is not None:
        dataset = _load(options.train)
        return train_detector(
            dataset,
            options.spec,
            calibration_share=options.calibration_share,
            max_pairs=options.max_pairs,
            threshold=options.threshold,
            seed=options.seed,
            cache_dir=cache_dir,
            emit=emit,
        )
    assert options.scores is not None and options.calibration_scores is not None and options.calibrate is not None  # check(): --scores needs both
    scores, cal_scores = read_scores(options.scores), read_scores(options.calibration_scores)
    describe = {
        "scores": str(Path(options.scores).resolve()),
        "calibration_scores": str(Path(options.calibration_scores).resolve()),
        "calibration_dataset": str(options.calibrate),
    }
    return score_file_detector(scores, _load(options.calibrate), cal_scores, threshold=options.threshold, describe=describe)


@dataclass(frozen=True)
class AuditRuns:
    """Which runs of the audited target, over which dataset, and how many of their queries.

    Attributes:
        dataset: The dataset a TREC run ranks (``DIR``; for an ``evaluate`` folder it overrides the recorded path).
        retrievers: Audit only these runs of an ``evaluate`` folder (``None``: all its mixed runs).
        docnos: How a TREC file names documents: a docno map (``sourcebias.retrieval.run``).
        docno_pattern: Or a pattern of the names (``{doc_id}-{source}``).
        max_queries: Audit a seeded sample of this many queries common to the runs (``None``: all).
    """

    dataset: str | None = None
    retrievers: Sequence[str] | None = None
    docnos: Path | None = None
    docno_pattern: str | None = None
    max_queries: int | None = None


def load_audited_runs(target: str | Path, which: AuditRuns | None = None) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """``(runs, dataset, info)``: the mixed-corpus runs of an ``evaluate`` folder (bound to its
    dataset's texts; ``which.dataset`` overrides the recorded path) or one TREC run file over
    ``which.dataset`` (document names by the project's docno rule), all of their queries
    (:func:`sample_queries` draws ``which.max_queries``)."""
    which = which or AuditRuns()
    dataset, retrievers = which.dataset, which.retrievers
    target = Path(target)
    depth = None  # the depth the evaluation ranked to (a TREC run's rankings are as long as they are)
    if target.is_dir():
        runs, ds, depth = _evaluate_runs(target, dataset)
    elif target.is_file():
        if dataset is None:
            raise ConfigError(f"{target} is a run file: name the dataset it ranks with --dataset DIR")
        from sourcebias.retrieval.docnos import resolve_docnos
        from sourcebias.retrieval.run import Run

        ds = _load(dataset)
        run = Run.from_trec(target, ds.corpus, docnos=resolve_docnos(target, ds.corpus, docnos=which.docnos, docno_pattern=which.docno_pattern))
        runs = {run.name: run}
    else:
        raise ConfigError(f"{target}: neither an evaluate output folder nor a TREC run file")
    if retrievers:
        unknown = [r for r in retrievers if r not in runs]
        if unknown:
            raise ConfigError(f"no run named {', '.join(unknown)} in {target} (runs: {', '.join(runs)})")
        runs = {r: runs[r] for r in retrievers}
    info = {
        "target": str(target.resolve()),
        "runs": {n: {"queries": len(r), "depth": r.depth()} for n, r in runs.items()},
        "dataset": ds.describe().get("name"),
        "ranked_to": depth,
    }
    return runs, ds, info


def check_cutoffs(runs: dict[str, Any], ks: Sequence[int], depth: int | None) -> None:
    """Refuse a cut-off deeper than the audited rankings: a ranking cut at depth d holds only its
    top d, so its "Share@k" and "ΔNDSR@k" for k > d would be figures of the top d under k's name.

    Args:
        runs: the audited runs.
        ks: the audit's cut-offs.
        depth: the depth an ``evaluate`` folder's runs were ranked to (recorded there); None for
            a TREC run, whose longest ranking is its depth unless it ranks the whole corpus.

    Raises:
        ConfigError: naming the cut-off and the depth.
    """
    k = max(ks)
    if depth is not None:
        if k > depth:
            raise ConfigError(f"--k {k} is deeper than the audited rankings: the evaluation's --depth {depth} is smaller than the largest cut-off {k}")
        return
    for name, run in runs.items():
        d = run.depth()
        if k > d and d < len(run.corpus):
            raise ConfigError(
                f"--k {k} is deeper than the audited rankings: the run '{name}' ranks at most {d} documents per query, fewer than the largest cut-off {k}"
            )


def _evaluate_runs(folder: Path, dataset: str | None) -> tuple[dict[str, Any], Any, int | None]:
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
    depth = (head.parameters or {}).get("depth")
    return runs, ds, None if depth is None else int(depth)


def audit(
    runs: dict[str, Any],
    detector: CalibratedDetector,
    settings: AuditSettings,
    *,
    human_source: str | None = None,
    run_info: dict[str, Any] | None = None,
    reference: Sequence[tuple[str, str]] | None = None,
    reference_path: Any = None,
    calibration_domain: str = "auto",
) -> AuditResult:
    """Audit ``runs`` with a calibrated ``detector``: score the top-k documents, take Sp from the
    calibration or from a human reference set, check that the calibration fits the audited
    documents (the transfer check; a failure marks every corrected figure unreliable), correct.

    Args:
        runs: name -> :class:`~sourcebias.retrieval.run.Run`, all over one corpus.
        detector: the calibrated detector.
        settings: cut-offs, resamples, level, seed, the check's level and resamples.
        human_source: the source whose labels give the true values, where the corpus has them
            (the audit itself never reads the sources).
        run_info: what the runs are (recorded).
        reference: documents ``(doc_id, source)`` of the corpus known to be human, or None.
        reference_path: where they were read (recorded).
        calibration_domain: ``auto`` (decided from the documents), ``audited`` or ``other``: were the
            calibration twins drawn from the audited domain? Corrected figures calibrated on
            another domain are marked unreliable (:func:`~sourcebias.audit.calibrate.calibration_domain`).

    Returns:
        The :class:`~sourcebias.audit.AuditResult`.

    Raises:
        ConfigError: runs over different corpora, a document the detector cannot score, a bad
            reference set.
    """
    from sourcebias.audit.calibrate import calibration_domain as domain_of
    from sourcebias.audit.calibrate import in_domain_calibration

    corpus = next(iter(runs.values())).corpus
    domain = domain_of(detector, corpus, calibration_domain)
    positions, scores = document_scores(runs, detector, max(settings.ks))
    calibration, human, llm, in_domain = in_domain_calibration(detector, corpus, reference, reference_path)
    check = _transfer_check(detector, settings, corpus, positions, scores, human, llm)
    unreliable = "; ".join(x for x in (domain["reason"], check.reason()) if x)
    rows = _audit_rows(runs, flags_of(len(corpus), positions, scores, detector.threshold), detector, settings, human_source, unreliable, calibration)
    notes = _audit_notes(rows, unreliable, in_domain if reference else None)
    det = {**detector.info, **detector.summary(), "models": detector.models}
    return AuditResult(
        settings=settings.describe(),
        detector=det,
        runs=run_info or {},
        rows=rows,
        calibration=detector.calibration_table.reset_index(drop=True),
        documents=_documents_table(corpus, positions, scores, detector.threshold),
        notes=notes,
        method=_audit_method(settings, rows),
        diagnostic=check.describe(),
        in_domain=in_domain,
        domain=domain,
    )


def _transfer_check(detector: CalibratedDetector, settings: AuditSettings, corpus: Any, positions: Any, scores: Any, human: Any, llm: Any) -> Any:
    """The transfer check of :func:`audit`: do the audited documents fit the calibration's mixture
    of ``human`` and ``llm`` documents (:func:`~sourcebias.audit.diagnostic.transfer_check`)?"""
    from sourcebias.audit.calibrate import document_dimensions
    from sourcebias.audit.diagnostic import transfer_check

    return transfer_check(
        document_dimensions(detector, corpus, positions, scores),
        human,
        llm,
        detector.threshold,
        alpha=settings.check_alpha,
        resamples=settings.check_resamples,
        seed=settings.seed,
    )


def _audit_rows(
    runs: dict[str, Any],
    flags: Any,
    detector: CalibratedDetector,
    settings: AuditSettings,
    human_source: str | None,
    unreliable: str,
    calibration: Any,
) -> list[dict[str, Any]]:
    """The rows of :func:`audit`: :func:`~sourcebias.audit.analysis.audit_run` for every run, in order."""
    return [
        row
        for name, run in runs.items()
        for row in audit_run(name, run, flags, detector, settings, human_source, unreliable=unreliable, calibration=calibration)
    ]


def _documents_table(corpus: Any, positions: Any, scores: Any, threshold: float) -> Any:
    """The audited documents (the top-k of every run): id, source, detector score, flagged."""
    import pandas as pd

    return pd.DataFrame(
        {
            "doc_id": [corpus.doc_ids[p] for p in positions],
            "source": [corpus.source_of(int(p)) for p in positions],
            "score": scores,
            "flagged": scores >= threshold,
        }
    )


def _audit_notes(rows: list[dict[str, Any]], unreliable: str, in_domain: dict[str, Any] | None) -> list[str]:
    """The audit's notes: the assumption, why the corrected figures are unreliable (another
    domain, a failed transfer check), each row's note and, with a human reference set
    (``in_domain``), its note."""
    notes = (
        [ASSUMPTION]
        + ([f"UNRELIABLE corrected figures: {unreliable}."] if unreliable else [])
        + [f"{r['run']} {r['measure']}: {r['note']}" for r in rows if r["note"]]
    )
    if in_domain is not None:
        notes.append(f"In domain: {in_domain['note']}.")
    return notes


def _audit_method(settings: AuditSettings, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How the audit's intervals and corrections were computed (recorded with the result)."""
    truth = "source labels of the run's corpus (never read by the audit itself)" if any(r["true"] is not None for r in rows) else None
    return {
        "ci": METHOD,
        "level": settings.level,
        "resamples": settings.resamples,
        "seed": settings.seed,
        "correction": "Rogan & Gladen (1978): p = (p̂ + Sp − 1) / (Se + Sp − 1), clipped to [0, 1] with a flag",
        "truth": truth,
    }


def sample_queries(runs: dict[str, Any], max_queries: int | None, seed: int) -> dict[str, Any]:
    """The runs restricted to a seeded sample of ``max_queries`` of their queries (the same
    queries in every run; all when None)."""
    from sourcebias.retrieval.run import Run

    if max_queries is None:
        return runs
    common = sorted(set.intersection(*(set(r.query_ids) for r in runs.values())))
    if max_queries >= len(common):
        return runs
    keep = seeded_sample(common, max_queries, seed)  # common is sorted: so is the sample
    return {n: Run(r.corpus, r.name, {q: r.positions[q] for q in keep}, {q: r.scores[q] for q in keep}, dict(r.info)) for n, r in runs.items()}


def run_audit(
    target: str | Path,
    output: str | Path | None,
    *,
    detector: DetectorOptions,
    settings: AuditSettings,
    runs: AuditRuns | None = None,
    human_reference: Path | None = None,
    calibration_domain: str = "auto",
    cache_dir: Any = None,
    overwrite: bool = False,
    emit: Callable[[str], None] | None = None,
) -> tuple[AuditResult, Path | None]:
    """Audit ``target`` and write the folder ``output`` (claimed before any work; ``None``:
    nothing written). Returns the result and the folder's path.

    Args:
        target: An ``evaluate`` output folder or a TREC run file.
        output: The output folder (``None``: nothing written).
        detector: Which detector, and how it is calibrated (:class:`DetectorOptions`).
        settings: Cut-offs, resamples, CI level, seed, the transfer check.
        runs: Which runs, over which dataset, and a seeded sample of their queries (:class:`AuditRuns`).
        human_reference: A file naming documents of the audited corpus known to be human.
        calibration_domain: See :func:`audit`.
        cache_dir: Where a zero-shot detector stores its scores (default: the sourcebias cache).
        overwrite: Replace an earlier result in ``output``.
        emit: Receives progress messages.
    """
    from sourcebias.audit.calibrate import DOMAINS
    from sourcebias.audit.scores import read_keys
    from sourcebias.core.artifacts import OutputFolder

    detector.check()
    if calibration_domain not in DOMAINS:
        raise ConfigError(f"--calibration-domain must be one of {', '.join(DOMAINS)}, got '{calibration_domain}'")
    reference = read_keys(human_reference) if human_reference is not None else None
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    try:
        t0 = time.perf_counter()
        which = runs or AuditRuns()
        audited, ds, info = load_audited_runs(target, which)
        check_cutoffs(audited, settings.ks, info["ranked_to"])  # before the detector is built
        audited = sample_queries(audited, which.max_queries, settings.seed)
        info = {**info, "max_queries": which.max_queries, "runs": {n: {"queries": len(r), "depth": r.depth()} for n, r in audited.items()}}
        det = build_detector(detector, cache_dir=cache_dir, emit=emit)
        (emit or (lambda _m: None))("labelling the audited documents")
        reference_of: dict[str, Any] = {"reference": reference, "reference_path": human_reference, "calibration_domain": calibration_domain}
        result = audit(audited, det, settings, human_source=ds.human_source, run_info=info, **reference_of)
        if folder is None:
            return result, None
        return result, write_audit(result, folder, seconds=time.perf_counter() - t0)
    finally:
        if folder is not None:
            folder.abort()  # no-op after the commit


def write_audit(result: AuditResult, folder: Any, *, seconds: float) -> Path:
    """Write ``result``, its report, its figure and the manifest into a claimed output folder and commit it."""
    from sourcebias.audit.figure import plot_audit
    from sourcebias.audit.report import audit_report
    from sourcebias.study import Study, write_study

    d = result.detector
    parameters = {
        **result.settings,
        "features": d.get("features"),
        "detector": d.get("kind"),
        "detector_spec": d.get("spec"),
        "threshold": d.get("threshold"),
        "threshold_rule": d.get("threshold_rule"),
        "detector_seed": d.get("seed"),
        "max_queries": result.runs.get("max_queries"),
        "in_domain": result.in_domain,
        "calibration_domain": result.domain,
        "ci": result.method,
    }
    inputs = {
        "target": result.runs.get("target"),
        "detector": {k: d.get(k) for k in ("dataset", "scores", "calibration_scores", "calibration_dataset", "spec") if d.get(k)},
    }
    extra = {"figure": "audit.png", "transfer_check": {k: result.diagnostic.get(k) for k in ("passed", "p_value", "alpha", "p_values", "reason")}}
    figure = "audit.png"
    study = Study(audit_report(result), lambda target: plot_audit(result, target), figure, inputs, parameters, d.get("models") or {}, extra)
    return write_study(folder, result, study, seconds=seconds)
