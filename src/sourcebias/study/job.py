"""``sourcebias evaluate`` as a library call: checks, then load, rank, score, report and write.

:func:`run_evaluation_job` does the work of the command in the order that keeps a mistake cheap:
every option is checked (:meth:`~sourcebias.evaluation.plan.EvaluationPlan.check`, the dataset
options) before the output folder is claimed; the folder is claimed before the dataset is read;
the dataset must have a query to evaluate (:func:`~sourcebias.data.require_evaluable`) and the
run files must read before anything is retrieved. What the user must hear on the way (the
dataset read, what was skipped, runs read, self-matches removed, embeddings reused) goes to
``emit`` as ``(kind, text)`` with ``kind`` one of ``info``, ``note`` and ``detail``; the CLI
prints them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.data.options import DatasetOptions
from sourcebias.evaluation.plan import EvaluationPlan

Emit = Callable[[str, str], None]


@dataclass
class EvaluationJob:
    """What :func:`run_evaluation_job` made: the dataset, the result, its report, and the output
    folder (``None`` without one)."""

    dataset: Any
    result: Any
    report: Any
    path: Path | None


def run_evaluation_job(
    dataset: str | Path,
    options: DatasetOptions,
    plan: EvaluationPlan,
    output: str | Path | None = None,
    *,
    overwrite: bool = False,
    emit: Emit | None = None,
) -> EvaluationJob:
    """Evaluate ``plan`` on a dataset and (with ``output``) write the result folder.

    Args:
        dataset: A dataset folder, a known dataset's name or ``irds:<id>`` (see :func:`~sourcebias.data.load_dataset`).
        options: How to load it.
        plan: The systems, measures, settings and statistics; checked before any work.
        output: The output folder (claimed before the dataset is read), or ``None``.
        overwrite: Replace an earlier result in ``output``.
        emit: Receives ``(kind, text)`` messages for the user.

    Returns:
        The :class:`EvaluationJob`.

    Raises:
        ConfigError: an option that cannot be used (before any work).
        DataError: the dataset or a run file is wrong, or no query can be evaluated.
        OutputError: ``output`` cannot be used.
    """
    t_start = time.perf_counter()
    emit = emit or (lambda _kind, _text: None)
    plan.check()
    folder = _claim(output, overwrite, emit)
    try:
        systems = plan.build_systems()
        ds, t_load = _load(dataset, options, emit, plan.max_queries)
        runs = plan.load_runs(ds, systems)
        for run in runs.values():
            emit("detail", f"{run.name}: {run.info['lines']:,} lines from {run.info['source_file']} (documents named by {run.info['docnos']})")
        result = _evaluate(ds, systems, runs, plan, keep_runs=(folder is not None and plan.write_runs) or plan.statistics != ())
        for text in embedding_notes(result):
            emit("detail", text)
        t_stats = time.perf_counter()
        report = _report(result, ds, plan)
        notes = sample_notes(result) + spec_notes(result) + [text for _, text in run_notes(result)]
        report.notes += notes  # printed with the tables and written to summary.md alike
        timings = {"load_s": round(t_load, 3), "statistics_s": round(time.perf_counter() - t_stats, 3)}
        timings["total_s"] = round(time.perf_counter() - t_start, 3)
        path = _write(result, report, folder, plan, timings)
        _tell_figure_not_drawn(path, emit)
        return EvaluationJob(ds, result, report, path)
    finally:
        if folder is not None:
            folder.abort()  # no-op after a commit; otherwise releases the lock, keeps nothing half-written


def _claim(output: str | Path | None, overwrite: bool, emit: Emit) -> Any:
    """The output folder, claimed (``None`` without one); a note where it holds this same command's results."""
    from sourcebias.core.artifacts import OutputFolder

    folder = OutputFolder.claim(output, kind="evaluate", overwrite=overwrite) if output is not None else None
    if folder is not None and folder.same_run:
        emit("note", f"{folder.path} holds the results of this same command (same settings, input files and versions): they are replaced")
    return folder


def _load(dataset: str | Path, options: DatasetOptions, emit: Emit, max_queries: int | None = None) -> tuple[Any, float]:
    """The dataset, loaded and checked to have a query to evaluate, and the seconds it took
    (told: how many queries are evaluated, and of how many when ``max_queries`` samples them)."""
    from sourcebias.core import progress
    from sourcebias.data import load_dataset, require_evaluable

    t0 = time.perf_counter()
    with progress.task(f"Loading {dataset}"):
        ds = load_dataset(dataset, options)
    seconds = time.perf_counter() - t0
    counts = ", ".join(f"{s} {n:,}" for s, n in ds.corpus.source_counts().items())
    n = len(ds.evaluation_queries())
    evaluated = (
        f"{n} quer{'y' if n == 1 else 'ies'} evaluated"
        if max_queries is None or max_queries >= n
        else f"a seeded sample of {max_queries} of {n} queries evaluated"
    )
    emit("info", f"{ds.name} ({ds.layout} layout), split {ds.split}: {counts} documents; {evaluated}")
    for note in ds.report.notes():
        emit("note", note)
    require_evaluable(ds)
    return ds, seconds


def _write(result: Any, report: Any, folder: Any, plan: EvaluationPlan, timings: dict[str, float]) -> Path | None:
    """Write the output folder (``None`` without one)."""
    if folder is None:
        return None
    from sourcebias.study.outputs import write_evaluation

    return write_evaluation(result, folder, report=report, figure=plan.draw_figure, write_runs=plan.write_runs, timings=timings, format=plan.format)


def _tell_figure_not_drawn(path: Path | None, emit: Emit) -> None:
    """The user hears why the folder has no figure (the note the folder keeps, e.g. matplotlib missing)."""
    from sourcebias.study.figure import FIGURE_FILE

    note = None if path is None else path / FIGURE_FILE.parent / "not-drawn.txt"
    if note is not None and note.is_file():
        emit("note", note.read_text(encoding="utf-8").strip())


def _evaluate(ds: Any, systems: list[Any], runs: dict[str, Any], plan: EvaluationPlan, *, keep_runs: bool) -> Any:
    from sourcebias.evaluation import evaluate

    result = evaluate(
        ds,
        systems,
        runs=runs,
        measures=plan.measure_list(),
        depth=plan.depth,
        seed=plan.seed,
        sole=plan.sole,
        exclude_self=plan.exclude_self,
        keep_runs=keep_runs,
        max_queries=plan.max_queries,
    )
    for system, spec in zip(systems, plan.named_specs().values()):  # the full specification beside the name the tables use
        if system.name in result.retrievers:
            result.retrievers[system.name]["spec"] = spec
    return result


def sample_notes(result: Any) -> list[str]:
    """What a seeded query sample left out (none without a sample): the sample, its seed, and
    where its ids are."""
    p = result.parameters
    if p.get("max_queries") is None:
        return []
    n, of = len(result.query_ids), p.get("queries_evaluable", len(result.query_ids))
    return [
        f"evaluated on a seeded sample of {n} of the {of} queries the split can evaluate (max-queries "
        f"{p['max_queries']}, seed {p.get('seed', 0)}; their ids are in result.json and the manifest)"
    ]


def spec_notes(result: Any) -> list[str]:
    """One note per retriever whose name is not its whole specification (a label, or the
    specification without its servers' addresses): the name, then the specification in full."""
    return [f"{name} = {cfg['spec']}" for name, cfg in result.retrievers.items() if cfg.get("spec") and cfg["spec"] != name]


def _report(result: Any, ds: Any, plan: EvaluationPlan) -> Any:
    from sourcebias.core import progress
    from sourcebias.report.tables import EVALUATE_STATISTICS, result_report

    statistics = list(EVALUATE_STATISTICS if plan.statistics is None else plan.statistics)
    with progress.task("Statistics"):
        return result_report(
            result,
            ds.qrels,
            statistics=statistics,
            measures=list(plan.statistics_measures) or None,
            bootstrap_resamples=plan.bootstrap_resamples,
            confidence=plan.confidence,
            significance_resamples=plan.resamples,
            correction=plan.correction,
            ndsr_k=plan.ndsr_k,
        )


def llm_stage_notes(where: str, info: dict[str, Any]) -> list[tuple[str, str]]:
    """What the LLM re-rankers of a run report: answers repaired or unparseable (a re-ranker that
    ignored the prompt must say so), answers outside a server's top tokens, and the position and
    source coefficients of the listwise answers (each stage named without its server's address,
    which :func:`spec_notes` gives once)."""
    from sourcebias.llmcalls.client import call_notes
    from sourcebias.retrieval.registry import short_name
    from sourcebias.retrieval.rerankers.diagnostics import stage_diagnostics

    out: list[tuple[str, str]] = []
    for st in stage_diagnostics(info):
        name = short_name(st.name)
        if (a := st.llm_answers) is not None:
            out.append(
                (
                    "note" if a.repaired else "detail",
                    f"{where}: {name}: {a.repaired} of {a.answers} LLM answers repaired ({a.unparseable} with no ranking at all, kept in shown order; "
                    f"{a.ids_missing} ids appended, {a.ids_duplicates} repeated, {a.ids_unknown} unknown; {a.length_cut} cut at max_tokens)",
                )
            )
        if st.position_source:
            out.append(position_source_note(where, name, st.position_source))
        if st.expected_grade_missing:
            why = ", ".join(f"{reason}: {n}" for reason, n in (st.no_expected_grade or {}).items())
            out.append(("note", f"{where}: {name}: {st.expected_grade_missing} pairs have no expected grade ({why}): scored -1, below every graded pair"))
        out += [("note", n) for n in call_notes(st.client or {}, f"{where}: {name}: ")]
        if st.choice_missing:
            answers = "/".join(st.choices if st.choices is not None else ["Yes", "No"])
            out.append(("note", f"{where}: {name}: {st.choice_missing} pairs had an answer ({answers}) outside the server's top tokens ({st.missing_rule})"))
    return out


def position_source_note(where: str, name: str, fit: dict[str, Any]) -> tuple[str, str]:
    """The listwise fit's line: its coefficients on the complete answers (how many, how many left
    out, the design's balance), or why it was refused (a note then, never a coefficient)."""
    answers = fit.get("answers") or {}
    used = f"{answers.get('complete', 0)} complete answers, {answers.get('left_out', 0)} repaired left out" if answers else f"{fit.get('rows', 0)} rows"
    head = f"{where}: {name}: answered position on shown position and source (window fraction; {used}; design {fit.get('balance', '?')})"
    if fit.get("refused"):
        return "note", f"{head}: refused: {fit['refused']}"
    level = f"{fit.get('level', 0.95):.0%} CI"
    parts = [f"{k} {v['estimate']:+.3f}" + (f" [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}]" if v.get("ci") else "") for k, v in fit.get("coefficients", {}).items()]
    tail = f" (no CI or p: {fit['interval_refused']})" if fit.get("interval_refused") else ""
    return "detail", f"{head}, {level}: " + "; ".join(parts) + tail


def run_notes(result: Any) -> list[tuple[str, str]]:
    """What the user must read about the rankings (the report's notes): self-matches removed,
    run queries not evaluated or without a ranking, what the LLM re-rankers report."""
    out: list[tuple[str, str]] = []
    split = result.dataset.get("split")
    for key, info in result.run_info.items():
        if info.get("self_matches_removed"):
            out.append(("note", f"{key.retriever}/{key.setting}: removed {info['self_matches_removed']} self-matches (document id = query id)"))
        if info.get("queries_not_evaluated"):
            out.append(
                (
                    "note",
                    f"{key.retriever}: {info['queries_not_evaluated']} queries of the run are "
                    f"not evaluated (not in split '{split}', or without a relevant document)",
                )
            )
        if info.get("evaluated_queries_without_ranking"):
            out.append(("note", f"{key.retriever}: {info['evaluated_queries_without_ranking']} evaluated queries have no ranking in the run (they score 0)"))
        out += llm_stage_notes(f"{key.retriever}/{key.setting}", info)
    return out


def embedding_notes(result: Any) -> list[str]:
    """How many texts each dense retriever encoded and reused (what this run cost, not a figure
    of the result: told on the way, not written into the summary)."""
    out = []
    for name in result.retrievers:
        infos = [i for k, i in result.run_info.items() if k.retriever == name and "embeddings" in i]
        if infos:
            e = infos[-1]["embeddings"]
            out.append(f"{name}: {e['encoded']:,} texts encoded, {e['from_disk']:,} read from the embedding cache, {e['from_memory']:,} reused in memory")
    return out
