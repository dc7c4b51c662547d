"""The tables of an evaluation result and of a grid's cells, as :class:`~sourcebias.report.model.Report` s.

The papers' table (per retriever and measure: the mixed-corpus values per target in percent,
Relative Δ, the sole-corpus values), the statistics' tables with the captions the statistics
write, the notes on left-out judgements, and the grid's cells table. They build reports; the
renderer (:mod:`sourcebias.report.render`) writes them down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sourcebias.evaluation.measures import Measure
from sourcebias.evaluation.results import ALL, MIXED, EvaluationResult, Key
from sourcebias.evaluation.stats import Column, StatContext, StatisticsSet, compute_statistics, resolve_statistics
from sourcebias.evaluation.stats.base import P_BOUNDS, with_p_bounds
from sourcebias.report.model import Frame, Report, Table
from sourcebias.report.render import to_latex, to_markdown, to_rich

#: what ``evaluate`` computes by default (the means are the papers' table already)
EVALUATE_STATISTICS = ("relative_delta_ci", "paired_tests", "twin_preference", "delta_ndsr")


# -- a single evaluation ---------------------------------------------------------------------------
@dataclass
class SummaryTable:
    """Header and rows of the summary; cells are numbers (percent) or None (not computed).

    Attributes:
        columns: The headers.
        rows: One list of cells per (retriever, measure).
        delta_columns: The indices of the Relative Δ columns (coloured by sign).
    """

    columns: list[str]
    rows: list[list[object]]
    delta_columns: set[int]


def summary_table(result: Any, short: bool = False) -> SummaryTable:
    """The papers' summary of one evaluation, as header and rows.

    Per retriever and measure with labels: the mixed-corpus values per target (percent), Relative Δ
    per LLM source, and each source alone (when evaluated).

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        short: Head a single LLM source "LLM" (the papers' wording).

    Returns:
        The table.
    """
    human = result.human_source
    others = result.other_sources
    mixed = result.has_mixed
    label = {s: s for s in result.sources}
    if short and len(others) == 1:
        label[others[0]] = "LLM"
    cols = ["retriever", "metric"]
    if mixed:
        cols += ["all"] + [label[s] for s in [human] + others]
        cols += ["Rel Δ" if len(others) == 1 else f"Rel Δ {o}" for o in others]
    cols += [f"{label[s]} only" for s in result.sources] if (mixed and _has_sole(result)) or not mixed else []
    delta_cols = {i for i, c in enumerate(cols) if c.startswith("Rel Δ")}
    rows: list[list[object]] = []
    for r in result.retrievers:
        for m in result.target_measures:
            row: list[object] = [r, str(m)]
            if mixed:
                row += [_pct(result, r, MIXED, t, m) for t in [ALL, human] + others]
                row += [_delta(result, r, m, o) for o in others]
            if (mixed and _has_sole(result)) or not mixed:
                row += [_pct(result, r, s, s, m) for s in result.sources]
            rows.append(row)
    return SummaryTable(cols, rows, delta_cols)


def _has_sole(result: Any) -> bool:
    return any(k.setting != MIXED for k in result.per_query)


def _pct(result: EvaluationResult, r: str, corpus: str, target: str, m: str | Measure) -> float | None:
    key = Key(r, corpus, target, str(m))
    if key not in result.per_query:
        return None
    return result.mean(r, corpus, target, m) * 100.0


def _delta(result: EvaluationResult, r: str, m: str | Measure, other: str) -> float | None:
    if Key(r, MIXED, result.human_source, str(m)) not in result.per_query:
        return None
    return result.relative_delta(r, m, other)


def papers_table(result: Any, short: bool = False) -> Table:
    """The papers' layout as a :class:`Table`.

    Per retriever and measure, the mixed-corpus values per target (percent), Relative Δ per LLM
    source, and each source alone.

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        short: Head a single LLM source "LLM" (and name it in the caption).

    Returns:
        The ``source_bias`` table.
    """
    t = summary_table(result, short=short)
    cols = [Column(f"c{i}", name, "text" if i < 2 else ("delta" if i in t.delta_columns else "num"), 1) for i, name in enumerate(t.columns)]
    rows = [{f"c{i}": v for i, v in enumerate(row)} for row in t.rows]
    caption = "Percent; Rel Δ = (human − LLM) / mean × 100: > 0 human-written ranked higher, < 0 LLM-generated ranked higher."
    if short and len(result.other_sources) == 1:
        caption = f"LLM = {result.other_sources[0]}. " + caption
    return Table("source_bias", "Source bias", cols, rows, caption)


def _identity(several_sources: bool, per_measure: bool) -> list[Column]:
    cols = [Column("retriever", "retriever", "text")]
    if several_sources:
        cols.append(Column("llm_source", "LLM source", "text"))
    if per_measure:
        cols.append(Column("measure", "measure", "text"))
    return cols


def statistics_tables(stats: StatisticsSet, several_sources: bool) -> list[Table]:
    """The per-measure statistics and the per-pair ones (twin preference, ΔNDSR).

    Args:
        stats: The computed statistics.
        several_sources: Show the LLM source column (a result with several LLM sources).

    Returns:
        Up to two tables, each with the captions its statistics wrote.
    """
    out = []
    for per_measure, key, title in ((True, "statistics", "Statistics per measure"), (False, "pairs", "Twin preference and label-free preference")):
        rows = stats.rows(per_measure)
        if not rows or not stats.chosen(per_measure):
            continue
        out.append(Table(key, title, _identity(several_sources, per_measure) + stats.columns(per_measure), rows, " ".join(stats.captions(per_measure))))
    return out


def orphan_notes(dataset: dict[str, Any]) -> list[str]:
    """The orphan policy and counts of a result's dataset, when anything was left out (or kept).

    Args:
        dataset: The result's dataset record (``result.dataset``).

    Returns:
        One note, or none.
    """
    o = (dataset or {}).get("orphans") or {}
    per = ", ".join(f"{s}: {n}" for s, n in (o.get("missing_copies") or {}).items())
    if o.get("policy") == "keep" and o.get("judged_originals_without_copy"):
        return [
            f"Orphans (policy keep): {o['judged_originals_without_copy']} judged originals without a copy in "
            f"every source are scored ({o.get('judgements_without_copy', 0)} judgements; missing copies: {per})."
        ]
    if o.get("judged_originals_left_out"):
        return [
            f"Orphans (policy drop): the judgements of {o['judged_originals_left_out']} judged originals without a copy in every source were left out "
            f"({o.get('judgements_left_out', 0)} judgements, {o.get('queries_left_out', 0)} queries no longer evaluated; missing copies: {per})."
        ]
    return []


def statistics_measures(result: Any, measures: Sequence[str] | None = None) -> list[str]:
    """The measures of the per-measure statistics.

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        measures: The measures asked for (any spelling); ``None``: every cut-off of the result's first
            measure with labels (NDCG@1, NDCG@3, ...).

    Returns:
        The measures, canonically written.

    Raises:
        ConfigError: A measure asked for has no values in the result.
    """
    from sourcebias.core.errors import ConfigError
    from sourcebias.evaluation.measures import parse_measure

    targets = result.target_measures
    if measures:
        chosen = [parse_measure(m) for m in measures]
        missing = [str(m) for m in chosen if m not in targets]
        if missing:
            raise ConfigError(f"no values of {', '.join(missing)} in this result; measures with labels: {', '.join(map(str, targets))}")
        return [str(m) for m in chosen]
    return [str(m) for m in targets if targets and m.name == targets[0].name]


def result_report(
    result: Any,
    qrels: Any = None,
    *,
    statistics: Sequence[str] | None = EVALUATE_STATISTICS,
    measures: Sequence[str] | None = None,
    bootstrap_resamples: int = 2000,
    confidence: float = 0.95,
    significance_resamples: int = 10_000,
    correction: str = "holm",
    ndsr_k: int = 10,
    title: str | None = None,
) -> Report:
    """The report of one evaluation: the papers' table, then the chosen statistics.

    The statistics are computed here; twin preference needs ``qrels``, twin preference and ΔNDSR the
    mixed runs (without ``qrels`` the statistics that need them are left out).

    Args:
        result: An :class:`~sourcebias.evaluation.results.EvaluationResult`.
        qrels: The split's judgements (for twin preference).
        statistics: Statistics by name (``None`` or empty: none).
        measures: Measures of the per-measure statistics (see :func:`statistics_measures`).
        bootstrap_resamples: Resamples of the bootstrap CI of Relative Δ.
        confidence: Level of that CI.
        significance_resamples: Resamples of the paired randomization test.
        correction: Multiple-testing correction of the randomization tests.
        ndsr_k: Cut-off of ΔNDSR@k.
        title: The report's title (default: ``Source bias on <dataset> (<split>)``).

    Returns:
        The report (its ``data`` holds the statistics' rows).
    """
    name, split = result.dataset.get("name", "?"), result.dataset.get("split", "?")
    from sourcebias.evaluation.depth import result_depth_notes

    report = Report(
        title or f"Source bias on {name} ({split})", [papers_table(result, short=True)], notes=orphan_notes(result.dataset) + result_depth_notes(result)
    )
    chosen = [s.name for s in resolve_statistics(statistics)] if statistics else []
    if qrels is None:
        chosen = [s for s in chosen if not resolve_statistics([s])[0].needs_qrels]
    if chosen and result.has_mixed and result.other_sources:
        ctx = StatContext(
            qrels=qrels,
            measures=statistics_measures(result, measures),
            ndsr_k=ndsr_k,
            bootstrap_resamples=bootstrap_resamples,
            confidence=confidence,
            seed=int(result.parameters.get("seed", 0)),
            significance_resamples=significance_resamples,
            correction=correction,
        )
        stats = compute_statistics(result, ctx, chosen)
        report.tables += statistics_tables(stats, len(result.other_sources) > 1)
        report.notes += stats.notes()
        report.data["statistics"] = statistics_frame(stats)
    return report


def statistics_frame(stats: StatisticsSet) -> Frame:
    """``statistics.csv``'s table: every field of the statistics, and :data:`~sourcebias.evaluation.stats.base.P_BOUNDS`
    naming the p-values that underflowed to 0, written as the bound
    :data:`~sourcebias.evaluation.stats.base.P_UNDERFLOW` (never p = 0).

    Args:
        stats: The computed statistics.

    Returns:
        The table.
    """
    return Frame([*stats.fields(), P_BOUNDS], [with_p_bounds(r) for r in stats.rows()])


# -- a grid ------------------------------------------------------------------------------------------
GRID_STATISTICS = ("means", "relative_delta_ci", "paired_tests", "twin_preference", "delta_ndsr")


def grid_columns(several_sources: bool) -> list[Column]:
    """The columns of a grid's per-dataset table.

    Args:
        several_sources: Show the LLM source column.

    Returns:
        Identity, the primary measure per target, Relative Δ with its CI, p (adj.), twin preference,
        ΔNDSR and the sole corpora.
    """
    return _identity(several_sources, False) + [
        Column("all", "all", "pct"),
        Column("human", "human", "pct"),
        Column("llm", "LLM", "pct"),
        Column("rel_delta", "Rel Δ [CI]", "delta_ci", 1, low="rel_delta_ci_low", high="rel_delta_ci_high", mark="p_adjusted"),
        Column("p_adjusted", "p (adj.)", "p"),
        Column("twin_pref_rate", "twin pref.", "pct", mark="twin_pref_p_cluster"),
        Column("delta_ndsr", "ΔNDSR", "delta", 3),
        Column("human_only", "human only", "pct"),
        Column("llm_only", "LLM only", "pct"),
    ]


def grid_caption(ok: Any) -> str:
    """The captions the statistics write from the grid's finished rows.

    Args:
        ok: The grid's cells with status ``ok`` (a pandas DataFrame).

    Returns:
        Measure, the method, level and correction actually used, and what was left out.
    """
    parts = []
    if len(ok):
        parts.append(f"Measure: {ok['measure'].iloc[0]}.")
    for s in resolve_statistics(GRID_STATISTICS):
        if not set(s.record.field_names()) <= set(ok.columns):
            continue
        recs = [s.record.from_row(r) for r in ok.to_dict("records")]
        if c := s.caption(recs):
            parts.append(c)
    text = " ".join(parts).replace("across the table's tests", "across the grid's tests")
    return text + " The table shows p (adj.); every p-value and count is in cells.csv."


def grid_llm_notes(ok: Any) -> list[str]:
    """One note per grid cell whose LLM re-ranker needed repairs or missed answers (the counts of
    :func:`sourcebias.experiments.aggregate.llm_stage_counts`, in ``cells.csv`` too)."""
    notes: list[str] = []
    if "llm_answers" not in ok and "llm_choice_missing" not in ok:
        return notes
    for r in ok.drop_duplicates(["dataset", "retriever", *(["seed"] if "seed" in ok else [])]).to_dict("records"):
        where = f"{r['dataset']}/{r['retriever']}" + (f" (seed {r['seed']})" if "seed" in r else "")
        answers, repaired = r.get("llm_answers"), r.get("llm_repaired")
        if answers == answers and answers is not None and repaired:  # not NaN: the cell has a listwise stage
            notes.append(
                f"{where}: {int(repaired)} of {int(answers)} LLM re-ranker answers repaired "
                f"({int(r['llm_unparseable'])} with no ranking at all, kept in shown order)"
            )
        missing = r.get("llm_choice_missing")
        if missing == missing and missing:
            notes.append(f"{where}: {int(missing)} LLM yes/no answers outside the server's top tokens (bounded by the lowest listed log-probability)")
    return notes


def cells_report(cells: Any, title: str) -> Report:
    """The report of a grid's cells table (:func:`sourcebias.experiments.aggregate.aggregate_grid`).

    One table per dataset (failed and missing cells shown as such), stale cells listed apart.

    Args:
        cells: The cells table (a pandas DataFrame).
        title: The report's title.

    Returns:
        The report (its ``data`` holds the cells).
    """
    current = cells[cells["status"] != "stale"]
    stale = cells[cells["status"] == "stale"]
    ok = current[current["status"] == "ok"]
    several = ok["llm_source"].nunique() > 1 if len(ok) else False
    caption = grid_caption(ok)
    tables = []
    for ds, part in current.groupby("dataset", sort=False):
        tables.append(Table(f"dataset:{ds}", f"{ds} ({part['split'].iloc[0]})", grid_columns(several), part.to_dict("records"), caption))
    report = Report(title, tables, data={"cells": cells})
    report.notes.extend(grid_llm_notes(ok))
    failed = current[current["status"] != "ok"]
    listing = [
        Column("dataset", "dataset", "text"),
        Column("retriever", "retriever", "text"),
        Column("status", "status", "text"),
        Column("error", "error", "text"),
    ]
    if len(failed):
        report.sections.append(("Cells without results", Table("failed", "Cells without results", listing, failed.to_dict("records"), status_rows=False)))
    if len(stale):
        report.sections.append(
            ("Cells from an earlier configuration (stale, left out)", Table("stale", "Stale cells", listing, stale.to_dict("records"), status_rows=False))
        )
        report.notes.append(
            f"{len(stale)} cell(s) hold results of an earlier configuration and are left out: "
            + ", ".join(f"{r['dataset']}/{r['retriever']}" for r in stale.to_dict("records"))
            + "; rerun them."
        )
    return report


# -- the papers' table alone, rendered -------------------------------------------------------------
def rich_table(result: EvaluationResult, title: str | None = None):
    """The papers' table as a ``rich`` renderable; Relative Δ red when negative (LLM-generated
    ranked higher), green when positive."""
    return to_rich(Report(title or "Source bias", [papers_table(result, short=True)]))


def markdown_table(result: EvaluationResult) -> str:
    return to_markdown(Report("Source bias", [papers_table(result)]))


def latex_table(result: EvaluationResult) -> str:
    """A booktabs table for papers."""
    return to_latex(Report("Source bias", [papers_table(result)]))
