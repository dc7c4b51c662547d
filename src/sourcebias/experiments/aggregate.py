"""The grid's cells table: one row per (dataset, system, LLM source) with the registered
statistics (:mod:`sourcebias.evaluation.stats`) of the grid's ``primary`` measure, the
randomization tests' p-values corrected across the whole grid.

Columns (:data:`COLUMNS`): dataset, split, then every field of the statistics' records
(retriever, llm_source, measure, means, Relative Δ with its CI and the method used, the paired
tests, twin preference, ΔNDSR), then ``status`` and ``error``. ``status`` is ``ok``,
``failed``, ``missing`` (not run yet) or ``stale`` (the cell folder holds results of an earlier
configuration: its recorded hash is not the one the current configuration expects; such rows
carry no statistics and are left out of tables and figures). Means are fractions (0–1),
Relative Δ in percent.

In a grid of several ``seeds`` there is one row per (cell, seed, LLM source), with two more
columns: ``seed`` and ``mean_abs_delta_ndsr`` (the mean over queries of |NDSR_human − NDSR_LLM|
within that seed, the rule of ΔNDSR for unpaired documents), and the p-values are corrected
across the cells of each seed (each seed is one replicate of the grid, so a seed's rows equal a
one-seed grid's with that seed); :func:`seed_summary` gives, per
(dataset, system, LLM source), the mean, sample SD, min and max of each quantity across seeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import DataError
from sourcebias.evaluation.stats import CORRECTIONS, DEFAULT_STATISTICS, StatContext, adjust_pvalues, compute_statistics, resolve_statistics
from sourcebias.evaluation.stats.delta_ndsr import check_ndsr_depth
from sourcebias.experiments.config import GridConfig
from sourcebias.experiments.grid import GRID_FILE, expected_hash, finished_hash, plan_cells

TEXT_COLUMNS = (
    "dataset",
    "split",
    "retriever",
    "llm_source",
    "measure",
    "ci_method",
    "ttest_note",
    "correction",
    "delta_ndsr_ttest_note",
    "delta_ndsr_rule",
    "status",
    "error",
)


def columns(statistics: list[str] | tuple[str, ...] = DEFAULT_STATISTICS) -> tuple[str, ...]:
    out = ["dataset", "split", "retriever", "llm_source", "measure"]
    for s in resolve_statistics(statistics):
        out += [f for f in s.record.field_names() if f not in out]
    return tuple(out + ["status", "error"])


COLUMNS = columns()


def cell_rows(
    cfg: GridConfig, root: Path, cell: Any, rec: dict[str, Any], datasets: dict[str, Any], measure: str, ndsr_k: int, statistics
) -> list[dict[str, Any]]:
    """The rows of one cell: its statistics when finished with the expected hash, else one
    status row (failed / missing / stale)."""
    from sourcebias.evaluation.results import load_result

    base = {"dataset": cell.dataset.name, "split": cell.dataset.split, "retriever": cell.system.name, "measure": measure}
    seed = cfg.seed if cell.seed is None else cell.seed
    if cell.seed is not None:
        base["seed"] = cell.seed
    folder = cell.folder(root)
    if rec.get("status") == "failed":
        return [{**base, "status": "failed", "error": rec.get("error", "")}]
    if not (folder / "result.json").is_file():
        return [{**base, "status": "missing", "error": "not run"}]
    if finished_hash(folder) != expected_hash(cfg, cell):
        return [{**base, "status": "stale", "error": "results of an earlier configuration (its hash differs); rerun the cell"}]
    d = cell.dataset
    if d.name not in datasets:
        datasets[d.name] = cfg.load_dataset(d)
    ds = datasets[d.name]
    result = load_result(folder, dataset=ds)
    # the grid's statistics settings (declared in experiments.settings); p-values are corrected across the grid afterwards
    ctx = StatContext(qrels=ds.qrels, measures=[measure], **{**cfg.statistics_settings(), "ndsr_k": ndsr_k}, seed=seed, correction="none")
    rows = compute_statistics(result, ctx, statistics, correct=False).rows()
    if not rows:
        raise DataError(
            folder / "result.json",
            f"cell {cell.key} is finished but holds no {measure} values of a human and an LLM target on the mixed corpus; its report row cannot be made",
        )
    llm = llm_stage_counts(result)  # only cells with an LLM re-ranker get these columns
    out = [{**base, **row, **llm, "status": "ok", "error": ""} for row in rows]
    if cell.seed is not None:  # a grid of several seeds: mean |ΔNDSR| of this seed, per row
        for row in out:
            row["mean_abs_delta_ndsr"] = mean_abs_delta_ndsr(result, row["retriever"], row["llm_source"], ndsr_k, cfg.orphans)
    return out


#: the counts :func:`llm_stage_counts` adds to the cells of an LLM re-ranker
LLM_COLUMNS = ("llm_answers", "llm_repaired", "llm_unparseable", "llm_choice_missing")


def llm_stage_counts(result: Any) -> dict[str, int]:
    """What the LLM re-rankers of a cell's mixed-corpus ranking report, summed over its stages.

    ``llm_answers``, ``llm_repaired`` and ``llm_unparseable`` (listwise answers, those that needed a
    repair, those with no ranking at all) and ``llm_choice_missing`` (pointwise pairs whose Yes/No
    answer was outside a server's top tokens); empty when the cell has no LLM stage. A grid whose
    re-ranker ignored the prompt must say so beside its figures (the report's notes).
    """
    from sourcebias.evaluation.keys import MIXED
    from sourcebias.retrieval.rerankers.diagnostics import stage_diagnostics

    out: dict[str, int] = {}
    for key, info in result.run_info.items():
        if key.setting != MIXED:
            continue
        for st in stage_diagnostics(info):
            if (a := st.llm_answers) is not None:
                for name, count in (("llm_answers", a.answers), ("llm_repaired", a.repaired), ("llm_unparseable", a.unparseable)):
                    out[name] = out.get(name, 0) + count
            if st.choice_missing is not None:
                out["llm_choice_missing"] = out.get("llm_choice_missing", 0) + st.choice_missing
    return out


def mean_abs_delta_ndsr(result: Any, retriever: str, llm: str, k: int = 10, orphans: str = "drop") -> float:
    """The mean over queries of |NDSR_human − NDSR_LLM|@k on the mixed ranking of ``retriever``
    (queries with an empty ranking left out, unpaired documents removed first with the orphan
    policy ``drop``, as ΔNDSR does); NaN without a mixed run, and where k lies beyond every ranking
    of the run (as ΔNDSR@k is refused there)."""
    from sourcebias.evaluation.depth import beyond, depth_summary
    from sourcebias.evaluation.measures import NDSR
    from sourcebias.evaluation.results import MIXED, RunKey
    from sourcebias.evaluation.stats.delta_ndsr import without_unpaired

    run = result.runs.get(RunKey(retriever, MIXED))
    if run is None or beyond(depth_summary(run, result.query_ids, ()), k):
        return float("nan")
    if orphans == "drop":
        run = without_unpaired(run, k)[0]
    sources = list(run.corpus.sources)
    mat = NDSR().per_query(run, result.query_ids, k)
    d = np.abs(mat[:, sources.index(result.human_source)] - mat[:, sources.index(llm)])
    d = d[np.isfinite(d)]
    return float(d.mean()) if len(d) else float("nan")


def aggregate_grid(cfg: GridConfig, root: str | Path, *, measure: str | None = None, ndsr_k: int | None = None, statistics: list[str] | None = None):
    """The cells table of a grid folder.

    Args:
        cfg: the grid's configuration.
        root: the grid folder.
        measure: the measure of the statistics (any spelling); default the grid's ``primary``.
        ndsr_k: the cut-off of ΔNDSR@k; default the grid's ``ndsr_k``.
        statistics: the registered statistics to compute; default :data:`DEFAULT_STATISTICS`.

    Returns:
        A pandas DataFrame with :data:`COLUMNS` (or the columns of ``statistics``), and
        :data:`LLM_COLUMNS` where a cell has an LLM re-ranker.
    """
    import pandas as pd

    from sourcebias.evaluation.measures import parse_measure

    root = Path(root)
    measure = str(parse_measure(measure or cfg.primary))
    ndsr_k = cfg.ndsr_k if ndsr_k is None else ndsr_k
    if any(s.name == "delta_ndsr" for s in resolve_statistics(statistics or DEFAULT_STATISTICS)):
        check_ndsr_depth(ndsr_k, cfg.depth, what="the grid's depth", option="ndsr_k")
    names = list(statistics or DEFAULT_STATISTICS)
    state_path = root / GRID_FILE
    records = json.loads(state_path.read_text(encoding="utf-8")).get("cells", {}) if state_path.is_file() else {}
    rows: list[dict[str, Any]] = []
    datasets: dict[str, Any] = {}
    for cell in plan_cells(cfg):
        rows += cell_rows(cfg, root, cell, records.get(cell.key, {}), datasets, measure, ndsr_k, names)
    table = pd.DataFrame(rows)
    cols = columns(names)
    if cfg.several_seeds:
        cols = (*cols[:3], "seed", *cols[3:-2], "mean_abs_delta_ndsr", *cols[-2:])
    llm = [c for c in LLM_COLUMNS if c in table]  # only a grid with an LLM re-ranker has them
    cols = (*cols[:-2], *llm, *cols[-2:])
    for c in cols:
        if c not in table:
            table[c] = "" if c in TEXT_COLUMNS else np.nan
    ok = table["status"] == "ok"
    if "p_randomization" in table:
        table["correction"] = np.where(ok, CORRECTIONS[cfg.correction], "")
        table["p_adjusted"] = np.nan
        for seed in cfg.seeds if cfg.several_seeds else [None]:  # within a seed: each seed is one replicate of the grid
            rows = ok if seed is None else ok & (table["seed"] == seed)
            table.loc[rows, "p_adjusted"] = adjust_pvalues(table.loc[rows, "p_randomization"].astype(float).to_numpy(), cfg.correction)
    return table[list(cols)]


#: the quantities :func:`seed_summary` summarises across seeds (cells-table columns)
SEED_QUANTITIES = ("all", "human", "llm", "rel_delta", "delta_ndsr", "mean_abs_delta_ndsr", "twin_pref_rate")


def seed_summary(cells: Any) -> Any:
    """Per (dataset, split, retriever, llm_source, measure) of a cells table of several seeds:
    ``n_seeds`` (the finished seeds), ``seeds``, and for each of :data:`SEED_QUANTITIES`
    ``<q>_mean``, ``<q>_sd`` (sample SD, ddof = 1; NaN with one seed), ``<q>_min``, ``<q>_max``
    across the seeds. Cells without a finished seed are left out."""
    import pandas as pd

    ok = cells[cells["status"] == "ok"]
    keys = ["dataset", "split", "retriever", "llm_source", "measure"]
    rows = []
    for ident, part in ok.groupby(keys, sort=False):
        row: dict[str, Any] = dict(zip(keys, ident))
        row["n_seeds"] = len(part)
        row["seeds"] = " ".join(str(int(s)) for s in part["seed"]) if "seed" in part else ""
        for q in SEED_QUANTITIES:
            v = part[q].astype(float).to_numpy() if q in part else np.array([np.nan])
            fin = v[np.isfinite(v)]
            row[f"{q}_mean"] = float(fin.mean()) if len(fin) else float("nan")
            row[f"{q}_sd"] = (0.0 if fin.min() == fin.max() else float(fin.std(ddof=1))) if len(fin) > 1 else float("nan")  # equal values: exactly 0
            row[f"{q}_min"] = float(fin.min()) if len(fin) else float("nan")
            row[f"{q}_max"] = float(fin.max()) if len(fin) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=keys + ["n_seeds", "seeds"] + [f"{q}_{s}" for q in SEED_QUANTITIES for s in ("mean", "sd", "min", "max")])
