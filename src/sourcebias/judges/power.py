"""How many queries a judge study needs: the power of its twin bias (the grade of the LLM twin −
the human original's, per twin pair, query-clustered), from a pilot ``judge`` folder.

The pilot's pairs are those the analysis used (both copies graded; a pair with an unparseable
answer on either side is left out and counted), the model is
:class:`~sourcebias.power.clustered_mean.ClusteredMeanPower` (resampling the pilot's queries with
the effect imposed, and statsmodels' ``TTestPower`` on the query means), and the result is a
:class:`~sourcebias.power.result.PowerResult` that ``sourcebias power`` writes and prints as it
does an ``evaluate`` pilot's. The target effect is the one given (``--effect grade=0.1``: a
tenth of a grade) or else the pilot's own estimate.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.power.analysis import METHOD_NOTES, PowerSettings, analyse_pilot
from sourcebias.power.clustered_mean import ClusteredMeanPower
from sourcebias.power.pilot import JUDGE_TWIN, Pilot
from sourcebias.power.result import PowerResult

#: the names ``--effect`` takes for the judge's twin bias
EFFECT_KEYS = ("grade", "twin_bias", JUDGE_TWIN)


def is_judge_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a ``judge`` result (its ``judge.json``)."""
    return (Path(folder) / "judge.json").is_file()


def judge_pilots(result: Any, settings: PowerSettings) -> tuple[list[Pilot], list[str]]:
    """One pilot per LLM source of a :class:`~sourcebias.judges.result.JudgeResult`: its twin bias
    on the parsed grades; and notes (items left out, an approximate analytic figure)."""
    from sourcebias.judges.analysis import twin_differences
    from sourcebias.retrieval.registry import short_name

    human = result.dataset["human_source"]
    name = short_name(str(result.judge.get("spec") or result.judge.get("identity", {}).get("model", "judge")))  # no server address
    pilots, notes = [], []
    for llm in [s for s in result.dataset.get("sources", []) if s != human]:
        found = twin_differences(result.grades, human, llm)
        if found is None:
            continue
        d, queries = found
        model = ClusteredMeanPower(d, queries, alpha=settings.alpha, resamples=settings.resamples, seed=settings.seed, key=f"judge:{llm}", limit=3.0)
        try:
            p = float(result.twin_bias(llm)["p"])
        except (KeyError, TypeError, ValueError):
            p = math.nan
        pilots.append(Pilot(JUDGE_TWIN, str(name), llm, "grade", model, p if p == p else math.nan, {"items": model.items, "left_out": model.left_out}))
        notes += [f"{llm}: {n}" for n in model.notes()]
    return pilots, notes


def judge_power(folder: str | Path, settings: PowerSettings | None = None) -> PowerResult:
    """The power analysis of the judge pilot in ``folder`` (see the module docstring).

    Raises:
        ConfigError: the folder holds no grade-mode twin pairs (a judge run without ``--mode grade``).
    """
    from sourcebias.judges.result import load_judge

    settings = settings or PowerSettings()
    result = load_judge(folder)
    pilots, notes = judge_pilots(result, settings)
    if not pilots:
        raise ConfigError(f"{folder}: no twin pair graded in the grade mode: nothing to plan from (judge --mode grade)")
    rows: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    for p in pilots:
        r, c = analyse_pilot(p, settings)
        rows, curves = rows + r, curves + c
        if p.model.undefined:
            notes.append(f"{p.llm_source}: {p.model.undefined}")
    info = {"dataset": result.dataset.get("name"), "split": result.dataset.get("split"), "queries": max(p.model.queries for p in pilots)}
    info |= {"human_source": result.dataset["human_source"], "family": "", "folder": str(Path(folder).resolve()), "kind": "judge"}
    methods = {
        "resampling": "seeded resampling of the pilot's queries (with their graded pairs) with the effect imposed; the CR1 t interval run on each study",
        "analytic": METHOD_NOTES["analytic"].split(",")[0] + " on the per-query mean differences",
    }
    return PowerResult(settings=settings.to_dict(), pilot=info, pilots=[p.summary() for p in pilots], rows=rows, curves=curves, notes=notes, methods=methods)


def run_judge_power(pilot: str | Path, output: str | Path | None, *, settings: PowerSettings, overwrite: bool = False) -> tuple[PowerResult, Path | None]:
    """:func:`judge_power` of ``pilot``, written into the folder ``output`` as ``sourcebias power``
    writes an ``evaluate`` pilot's (claimed before any work; ``None``: nothing written)."""
    import time

    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.power.job import KIND, write_power

    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    try:
        t0 = time.perf_counter()
        result = judge_power(pilot, settings)
        if folder is None:
            return result, None
        return result, write_power(result, folder, pilot=Path(pilot), seconds=time.perf_counter() - t0)
    finally:
        if folder is not None:
            folder.abort()  # no-op after the commit
