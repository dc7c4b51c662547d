"""The grid's cells table: one row per (dataset, system, LLM source) with the statistics of
:mod:`sourcebias.evaluation.statistics`, p-values corrected across the whole grid.

Columns (:data:`COLUMNS`): dataset, split, retriever, llm_source, measure, all, human, llm,
rel_delta, rel_delta_ci_low, rel_delta_ci_high, ci_level, ci_method, mean_difference, p_ttest,
p_randomization, p_adjusted (of the randomization test), correction, n_queries, twin_pref_rate,
twin_pref_pairs, twin_pref_ties, twin_pref_p, delta_ndsr, delta_ndsr_k, delta_ndsr_p, human_only, llm_only,
status (ok / failed / missing), error. Means are fractions (0–1), Relative Δ in percent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.experiments.config import GridConfig
from sourcebias.experiments.grid import GRID_FILE, plan_cells

COLUMNS = (
    "dataset", "split", "retriever", "llm_source", "measure", "all", "human", "llm", "rel_delta", "rel_delta_ci_low", "rel_delta_ci_high",
    "ci_level", "ci_method", "mean_difference", "p_ttest", "p_randomization", "p_adjusted", "correction", "n_queries",
    "twin_pref_rate", "twin_pref_pairs", "twin_pref_ties", "twin_pref_p", "delta_ndsr", "delta_ndsr_k", "delta_ndsr_p", "human_only", "llm_only", "status", "error",
)  # fmt: skip


def aggregate_grid(cfg: GridConfig, root: str | Path, *, measure: str | None = None, ndsr_k: int = 10):
    """The cells table of a grid folder (a pandas DataFrame with :data:`COLUMNS`)."""
    import pandas as pd

    from sourcebias.data import load_dataset
    from sourcebias.evaluation.results import load_result
    from sourcebias.evaluation.statistics import CORRECTIONS, adjust_pvalues, cell_statistics

    root = Path(root)
    measure = measure or cfg.primary
    state_path = root / GRID_FILE
    records = json.loads(state_path.read_text(encoding="utf-8")).get("cells", {}) if state_path.is_file() else {}
    rows: list[dict[str, Any]] = []
    datasets: dict[str, Any] = {}
    for cell in plan_cells(cfg):
        rec = records.get(cell.key, {})
        base = {"dataset": cell.dataset.name, "split": cell.dataset.split, "retriever": cell.system.name, "measure": measure}
        folder = cell.folder(root)
        if rec.get("status") == "failed" or not (folder / "result.json").is_file():
            rows.append({**base, "status": "failed" if rec.get("status") == "failed" else "missing", "error": rec.get("error", "not run")})
            continue
        d = cell.dataset
        if d.name not in datasets:
            datasets[d.name] = load_dataset(d.path, split=d.split, sources=d.sources, human_source=d.human_source)
        ds = datasets[d.name]
        result = load_result(folder, dataset=ds)
        for row in cell_statistics(result, ds.qrels, measure=measure, ndsr_k=ndsr_k, bootstrap_resamples=cfg.bootstrap_resamples, confidence=cfg.confidence, seed=cfg.seed):
            row.pop("retriever", None)
            rows.append({**base, **row, "status": "ok", "error": ""})
    table = pd.DataFrame(rows)
    for c in COLUMNS:
        if c not in table:
            table[c] = np.nan if c not in ("status", "error", "llm_source", "ci_method", "correction") else ""
    ok = table["status"] == "ok"
    table["correction"] = CORRECTIONS[cfg.correction]
    table["p_adjusted"] = np.nan
    table.loc[ok, "p_adjusted"] = adjust_pvalues(table.loc[ok, "p_randomization"].astype(float).to_numpy(), cfg.correction)
    return table[list(COLUMNS)]
