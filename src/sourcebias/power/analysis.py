"""The power analysis of a pilot: for every statistic, retriever, LLM source and measure, the
minimum detectable effect at each n, the power at the target effect, the n that effect needs and
a power curve, by resampling and (where one exists) analytically, side by side.

The target effect of a statistic is the one given (``effects``) or else the pilot's own estimate:
"how many queries would a study need to find the difference this pilot saw?".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.power.base import ANALYTIC, METHODS, RESAMPLING, STAR, UNCORRECTED, PowerModel
from sourcebias.power.family import FamilyPower
from sourcebias.power.pilot import (
    DELTA_NDSR,
    JUDGE_TWIN,
    NDCG_DIFFERENCE,
    RELATIVE_DELTA,
    STATISTICS,
    TWIN_PREFERENCE,
    Pilot,
    ndsr_pilots,
    paired_pilots,
    statistic_name,
    twin_pilots,
)
from sourcebias.power.result import PowerResult

#: which method each statistic has
METHOD_NOTES = {
    RESAMPLING: "seeded resampling of the pilot's queries with the effect imposed; the analysis' test run on each simulated study "
    "(for Relative Δ and the difference: the whole family of paired tests on the same queries, corrected together)",
    ANALYTIC: "closed form: statsmodels TTestPower (paired t, effect size δ/sd of the pilot), for the corrected family the normal approximation "
    "of its randomization z-test at α/m (Bonferroni: a lower bound under Holm and Benjamini-Hochberg), for twin preference that of the "
    "query-clustered z-test",
}
#: which test a row is the power of
TEST_NOTES = {
    STAR: "the test and correction that mark * in evaluate (the figure to plan with)",
    UNCORRECTED: "the same statistic's paired t-test alone at α, without the correction evaluate applies: not what marks *",
}


@dataclass(frozen=True)
class PowerSettings:
    """What to compute: level ``alpha``, target ``power``, study sizes ``ns``, the target effect
    per statistic (``effects``; default the pilot's estimate), ``resamples`` simulated studies per
    n, the ``seed``, the largest n searched (``max_n``), ΔNDSR's cut-off, the curve's points and
    the multiple-testing ``correction`` of the paired tests (evaluate's ``--correction``)."""

    alpha: float = 0.05
    power: float = 0.8
    ns: tuple[int, ...] = (50, 100, 200, 500, 1000)
    effects: dict[str, float] = field(default_factory=dict)
    resamples: int = 2000
    seed: int = 0
    max_n: int = 20_000
    ndsr_k: int = 10
    curve_points: int = 16
    correction: str = "holm"

    def __post_init__(self) -> None:
        from sourcebias.evaluation.stats import CORRECTIONS

        if not 0 < self.alpha < 1:
            raise ConfigError(f"alpha must be between 0 and 1, got {self.alpha}")
        if not self.alpha < self.power < 1:
            raise ConfigError(f"power must be between alpha ({self.alpha}) and 1, got {self.power}")
        if not self.ns or any(n < 1 for n in self.ns):
            raise ConfigError(f"study sizes (--n) must be positive numbers of queries, got {list(self.ns)}")
        if self.resamples < 100:
            raise ConfigError(f"resamples must be at least 100, got {self.resamples}")
        if self.max_n < max(self.ns):
            raise ConfigError(f"max_n ({self.max_n}) is below the largest study size {max(self.ns)}")
        if self.correction not in CORRECTIONS:
            raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, got '{self.correction}'")
        if self.ndsr_k < 1:
            raise ConfigError(f"the ΔNDSR cut-off must be at least 1, got {self.ndsr_k}")
        effects = {k if k == JUDGE_TWIN else statistic_name(k): float(v) for k, v in self.effects.items()}
        for s, v in effects.items():
            if not math.isfinite(v):
                raise ConfigError(f"the effect of {s} must be a number, got {v}")
            if s == TWIN_PREFERENCE and not 0 <= v <= 1:
                raise ConfigError(f"the twin-preference effect is a share of pairs in [0, 1] (0.55 = 55%), got {v}")
            if s == JUDGE_TWIN and not -3 <= v <= 3:
                raise ConfigError(f"the judge's twin bias is a difference of 0-3 grades, in [-3, 3], got {v}")
        object.__setattr__(self, "effects", effects)
        object.__setattr__(self, "ns", tuple(sorted({int(n) for n in self.ns})))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ns"] = list(self.ns)
        return d


def pilots_of(
    result: Any,
    *,
    qrels: Any = None,
    settings: PowerSettings,
    statistics: Sequence[str] | None = None,
    measures: Sequence[str] | None = None,
    retrievers: Sequence[str] | None = None,
) -> tuple[list[Pilot], list[str]]:
    """The pilots of ``result`` (``statistics``, ``measures``: default every NDCG@k,
    ``retrievers``: default all) and notes on what could not be analysed."""
    chosen = {statistic_name(s) for s in (statistics or STATISTICS)}
    if retrievers:
        unknown = [r for r in retrievers if r not in result.retrievers]
        if unknown:
            raise ConfigError(f"no retriever {', '.join(unknown)} in the pilot; retrievers: {', '.join(result.retrievers)}")
    if DELTA_NDSR in chosen and result.runs:
        from sourcebias.evaluation.stats.delta_ndsr import check_ndsr_depth

        check_ndsr_depth(settings.ndsr_k, (result.parameters or {}).get("depth"), what="the pilot's --depth")
    names = pilot_measures(result, measures)
    common: dict[str, Any] = {"alpha": settings.alpha, "resamples": settings.resamples, "seed": settings.seed}
    notes: list[str] = []
    pilots = paired_pilots(result, names, statistics=chosen, retrievers=list(retrievers or result.retrievers), correction=settings.correction, **common)
    has_runs = bool(result.runs)
    if chosen & {TWIN_PREFERENCE, DELTA_NDSR} and not has_runs:
        notes.append("twin preference and ΔNDSR need the pilot's runs (this folder was written with --no-runs): left out")
    if TWIN_PREFERENCE in chosen and has_runs:
        if qrels is None:
            notes.append("twin preference needs the dataset's judgements (pass the dataset folder): left out")
        else:
            pilots += twin_pilots(result, qrels, **common)
    if DELTA_NDSR in chosen and has_runs:
        pilots += ndsr_pilots(result, settings.ndsr_k, **common)
    if retrievers:
        pilots = [p for p in pilots if p.retriever in retrievers]
    order = {s: i for i, s in enumerate(STATISTICS)}
    pilots.sort(key=lambda p: (list(result.retrievers).index(p.retriever), p.llm_source, order[p.statistic], p.measure))
    set_family_effects(pilots, settings)
    return pilots, notes


def pilot_measures(result: Any, measures: Sequence[str] | None) -> list[str]:
    """The measures of the paired statistics: those given (checked), else every NDCG@k (else every
    measure with labels)."""
    from sourcebias.evaluation.measures import parse_measure

    if not measures:
        return [str(m) for m in result.target_measures if str(m).startswith("NDCG@")] or [str(m) for m in result.target_measures]
    names = [str(parse_measure(m)) for m in measures]
    have = {str(m) for m in result.target_measures}
    missing = [m for m in names if m not in have]
    if missing:
        raise ConfigError(f"the pilot has no {', '.join(missing)}; its measures with labels: {', '.join(sorted(have))}")
    return names


def set_family_effects(pilots: Sequence[Pilot], settings: PowerSettings) -> None:
    """The truth of the other tests of a corrected family, per statistic: each test at the effect
    its own row is analysed at (the given one, else its pilot's estimate), as a mean difference."""
    for statistic in (RELATIVE_DELTA, NDCG_DIFFERENCE):
        members = [p.model for p in pilots if p.statistic == statistic and isinstance(p.model, FamilyPower)]
        if not members:
            continue
        base = members[0].family.means.copy()
        for m in members:
            effect = settings.effects.get(statistic, m.estimate) / m.scale
            base[m.index] = effect if math.isfinite(effect) else m.mean
        for m in members:
            m.base = base.copy()


def curve_sizes(model: PowerModel, settings: PowerSettings, needed: Sequence[int | None]) -> list[int]:
    """The n of a pilot's power curve: geometric from the smallest useful n to past the largest
    n needed (to the search's limit when a method does not reach the power), with the study
    sizes themselves."""
    lo = max(model.min_n, 5)
    reach = [n for n in needed if n is not None]
    hi = settings.max_n if len(reach) < len(needed) else min(settings.max_n, max([max(settings.ns), *(int(n * 1.5) for n in reach)]))
    grid = np.unique(np.round(np.geomspace(lo, max(hi, lo + 1), settings.curve_points)).astype(int))
    return sorted({*grid.tolist(), *(n for n in settings.ns if n >= model.min_n)})


def model_rows(
    model: PowerModel, base: dict[str, Any], method: str, settings: PowerSettings, effect: float, given: bool, problem: str
) -> tuple[list[dict[str, Any]], int | None]:
    """The ``mde``, ``power`` and ``n_needed`` rows of one model and method, and the n needed."""
    rows: list[dict[str, Any]] = []
    source = "given" if given else "pilot"
    for n in settings.ns:
        value, note = model.mde(method, n, settings.power)
        rows.append({**base, "quantity": "mde", "method": method, "n": n, "effect": math.nan, "effect_source": "", "value": value, "note": note})
    for n in settings.ns:
        value = math.nan if problem or n < model.min_n else model.power(method, n, effect)
        note = problem or ("" if n >= model.min_n else f"undefined: the test needs at least {model.min_n} queries")
        rows.append({**base, "quantity": "power", "method": method, "n": n, "effect": effect, "effect_source": source, "value": value, "note": note})
    n_req, note = model.n_needed(method, effect, settings.power, settings.max_n) if not problem else (None, problem)
    rows.append(
        {
            **base,
            "quantity": "n_needed",
            "method": method,
            "n": math.nan,
            "effect": effect,
            "effect_source": source,
            "value": float(n_req) if n_req is not None else math.nan,
            "note": note,
        }
    )
    return rows, n_req


def analyse_pilot(pilot: Pilot, settings: PowerSettings, emit: Callable[[str], None] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows (``mde``, ``power``, ``n_needed``) and the curve points of one pilot, for the test
    that marks ``*`` and, where it differs, the uncorrected one."""
    given = pilot.statistic in settings.effects
    effect = settings.effects[pilot.statistic] if given else pilot.model.estimate
    rows: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    for test, model in ((STAR, pilot.model), (UNCORRECTED, pilot.uncorrected)):
        if model is None:
            continue
        base = {"statistic": pilot.statistic, "retriever": pilot.retriever, "llm_source": pilot.llm_source, "measure": pilot.measure, "test": test}
        problem = model.check_effect(effect) if math.isfinite(effect) else (model.undefined or "undefined: the pilot's estimate is undefined")
        needed: list[int | None] = []
        for method in METHODS:
            if emit:
                emit(f"{pilot.statistic} {pilot.retriever} {pilot.measure}: {method} ({test})")
            r, n_req = model_rows(model, base, method, settings, effect, given, problem)
            rows += r
            needed.append(n_req)
        if not problem:
            curves += [
                {**base, "method": method, "n": n, "effect": effect, "power": model.power(method, n, effect)}
                for n in curve_sizes(model, settings, needed)
                for method in METHODS
            ]
    return rows, curves


def undefined_study_notes(pilots: Sequence[Pilot], settings: PowerSettings) -> list[str]:
    """Notes on the simulated studies whose t-test is undefined (every difference equal)."""
    notes = []
    for p in pilots:
        for model in (p.model, p.uncorrected):
            bad = {n: u for n in settings.ns if model is not None and hasattr(model, "undefined_studies") and (u := model.undefined_studies(n))}
            if bad:
                notes.append(
                    f"{p.statistic} {p.retriever} {p.measure}: "
                    + ", ".join(f"{u:,} of {settings.resamples:,} studies of n = {n}" for n, u in bad.items())
                    + " have every difference equal (t-test undefined, counted as not rejecting)"
                )
    return notes


def power_analysis(
    result: Any,
    *,
    qrels: Any = None,
    settings: PowerSettings | None = None,
    statistics: Sequence[str] | None = None,
    measures: Sequence[str] | None = None,
    retrievers: Sequence[str] | None = None,
    emit: Callable[[str], None] | None = None,
    source: dict[str, Any] | None = None,
) -> PowerResult:
    """The power analysis of an :class:`~sourcebias.evaluation.results.EvaluationResult` (see the
    module docstring); ``qrels`` (the dataset's judgements) enables twin preference.

    Raises:
        DataError: the pilot evaluated no query (no judgement of grade > 0), naming its qrels file.
        ConfigError: nothing of what was chosen can be analysed.
    """
    settings = settings or PowerSettings()
    check_evaluable(result)
    pilots, notes = pilots_of(result, qrels=qrels, settings=settings, statistics=statistics, measures=measures, retrievers=retrievers)
    if not pilots:
        raise ConfigError("nothing to analyse: the pilot has none of the chosen statistics (" + "; ".join(notes or ["no per-query values"]) + ")")
    rows: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    from sourcebias.core import progress

    with progress.task("Power analysis", total=len(pilots), unit="pilot") as task:
        for p in pilots:
            task.update(description=f"Power: {p.statistic} {p.retriever} {p.measure}".rstrip())
            r, c = analyse_pilot(p, settings, emit)
            rows += r
            curves += c
            if p.model.undefined:
                notes.append(f"{p.statistic} {p.retriever}/{p.llm_source} {p.measure}: {p.model.undefined}")
            task.advance()
    notes += undefined_study_notes(pilots, settings)
    dataset = dict(result.dataset or {})
    family = next((p.details["family"] for p in pilots if "family" in p.details), "")
    pilot_info = {
        "dataset": dataset.get("name"),
        "split": dataset.get("split"),
        "queries": len(result.query_ids),
        "human_source": result.human_source,
        "family": family,
        **(source or {}),
    }
    return PowerResult(
        settings=settings.to_dict(),
        pilot=pilot_info,
        pilots=[p.summary() for p in pilots],
        rows=rows,
        curves=curves,
        notes=notes,
        methods={**METHOD_NOTES, **TEST_NOTES},
    )


def check_evaluable(result: Any) -> None:
    """Refuse a pilot that evaluated no query: every statistic would be empty or undefined.

    Raises:
        DataError: naming the pilot's qrels file (no query has a judgement of grade > 0).
    """
    from sourcebias.data.qrels import require_evaluable

    ds = result.dataset or {}
    require_evaluable(list(result.query_ids), ds.get("qrels_file") or ds.get("path") or "the pilot's qrels", split=ds.get("split"))


__all__ = ["METHOD_NOTES", "NDCG_DIFFERENCE", "RELATIVE_DELTA", "PowerSettings", "analyse_pilot", "curve_sizes", "pilots_of", "power_analysis"]
