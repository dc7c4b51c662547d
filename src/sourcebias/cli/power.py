"""``sourcebias power PILOT``: how many queries a claim needs (power analysis from a pilot)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from sourcebias.cli import options, options_power
from sourcebias.cli.common import console, err_console, fail  # --n and --effect take several values: cli.common.GREEDY


def _statistic(name: str) -> str:
    """:func:`sourcebias.power.statistic_name`, its deprecation warning printed as one line."""
    import warnings

    from sourcebias.power import statistic_name

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FutureWarning)
        stat = statistic_name(name)
    for w in caught:
        err_console.print(f"[yellow]Warning:[/yellow] {escape(str(w.message))}", highlight=False, soft_wrap=True)
    return stat


def _parse_effects(items: list[str] | None, judge: bool = False) -> dict[str, float]:
    """``--effect`` values by statistic; a judge pilot's (``grade=0.1``) by its one statistic."""
    from sourcebias.judges.power import EFFECT_KEYS
    from sourcebias.power.pilot import JUDGE_TWIN

    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            fail(f"--effect expects STATISTIC=VALUE (e.g. rel_delta=10, difference=0.05, twin=0.55, ndsr=0.02; grade=0.1 for a judge pilot), got '{item}'")
        try:
            number = float(value)
        except ValueError:
            fail(f"--effect {item}: '{value}' is not a number")
        if judge and name.strip().lower() not in EFFECT_KEYS:
            fail(f"--effect {item}: a judge pilot plans its twin bias only: {' or '.join(EFFECT_KEYS)}=VALUE (grade points)")
        out[JUDGE_TWIN if judge else _statistic(name)] = number
    return out


def power(
    pilot: options_power.Pilot,
    alpha: options_power.Alpha = 0.05,
    power_: options_power.Power = 0.8,
    n: options_power.StudySizes = None,
    effect: options_power.Effects = None,
    statistic: options_power.PowerStatistics = None,
    measure: options_power.PowerMeasures = None,
    retriever: options_power.PilotRetrievers = None,
    resamples: options_power.PowerResamples = 2000,
    seed: options_power.PowerSeed = 0,
    max_n: options_power.MaxN = 20_000,
    ndsr_k: options_power.PowerNdsrK = 10,
    correction: options_power.PowerCorrection = "holm",
    dataset: options_power.PilotDataset = None,
    output: options_power.PowerOutput = None,
    overwrite: options.ReplaceResults = False,
) -> None:
    """How many queries a claim needs: minimum detectable effects and sample sizes from a pilot.

    For Relative Δ, the per-target NDCG difference (human − LLM), twin preference and ΔNDSR@k:
    the smallest effect a study of n queries detects with the given power at level α, and the n
    a target effect needs, for the test that marks * in evaluate (Relative Δ and the difference:
    the randomization test corrected across the report's tests, --correction), with the
    uncorrected figure beside it; by resampling the pilot's queries with the effect imposed
    (seeded) and analytically (paired t: statsmodels TTestPower, at α/m for the corrected family;
    twin preference: the normal approximation of its query-clustered z-test), side by side.

    Examples:

      sourcebias power out/nq-utd --n 50 100 200 -o out/nq-utd-power

      sourcebias power out/grid/cells/nq-utd/bm25 --effect rel_delta=10 twin=0.55 -o out/power-bm25

      sourcebias power out/judge-pilot --effect grade=0.1 --n 20 50 100 -o out/judge-power   # a judge pilot: its twin bias
    """
    from sourcebias.judges.power import is_judge_folder

    judge = is_judge_folder(pilot)
    if judge and (statistic or measure or retriever or dataset):
        fail("a judge pilot plans its twin bias only: --statistic, --measure, --retriever and --dataset apply to an evaluate pilot")
    statistic = [_statistic(s) for s in statistic] if statistic else statistic
    settings = _settings(alpha, power_, n, effect, judge, resamples, seed, max_n, ndsr_k, correction)
    result, path = _run(
        judge, pilot, output, settings, {"dataset_dir": dataset, "statistics": statistic, "measures": measure, "retrievers": retriever}, overwrite
    )
    _print(result, path)


def _settings(
    alpha: float,
    power_: float,
    n: list[int] | None,
    effect: list[str] | None,
    judge: bool,
    resamples: int,
    seed: int,
    max_n: int,
    ndsr_k: int,
    correction: str,
) -> Any:
    """The analysis settings (a bad option ends the command with its message); ``judge``: the pilot
    is a judge's, whose effects are its twin bias."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.power import PowerSettings

    try:
        return PowerSettings(
            alpha=alpha,
            power=power_,
            ns=tuple(n or (50, 100, 200, 500, 1000)),
            effects=_parse_effects(effect, judge),
            resamples=resamples,
            seed=seed,
            max_n=max_n,
            ndsr_k=ndsr_k,
            correction=correction,
        )
    except ConfigError as exc:
        fail(str(exc))


def _run(judge: bool, pilot: Any, output: Any, settings: Any, choices: dict[str, Any], overwrite: bool) -> tuple[Any, Any]:
    """The analysis of a judge pilot or an ``evaluate`` one, under a progress bar."""
    from sourcebias.core import progress
    from sourcebias.judges.power import run_judge_power
    from sourcebias.power import run_power

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        if judge:
            return run_judge_power(pilot, output, settings=settings, overwrite=overwrite)
        return run_power(pilot, output, settings=settings, overwrite=overwrite, **choices)


def _print(result: Any, path: Any) -> None:
    """The report, and where it was written (or how to write it)."""
    from sourcebias.power.report import power_report
    from sourcebias.report import to_rich

    console.print(to_rich(power_report(result)))
    if path is not None:
        console.print(
            "Wrote power.json, power.csv, pilots.csv, curves.csv, summary.md, summary.tex and "
            f"power_curves.png to [bold]{path}[/bold] (load them with sourcebias.power.load_power)"
        )
    else:
        console.print("[dim]Add --output DIR to save the results and the power-curve figure.[/dim]")


def register(app: typer.Typer) -> None:
    app.command()(power)
