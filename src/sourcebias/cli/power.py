"""``sourcebias power PILOT``: how many queries a claim needs (power analysis from a pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sourcebias.cli.common import console, fail  # --n and --effect take several values: cli.common.GREEDY


def _parse_effects(items: list[str] | None) -> dict[str, float]:
    from sourcebias.power import statistic_name

    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            fail(f"--effect expects STATISTIC=VALUE (e.g. rel_delta=10, difference=0.05, twin=0.55, ndsr=0.02), got '{item}'")
        try:
            number = float(value)
        except ValueError:
            fail(f"--effect {item}: '{value}' is not a number")
        out[statistic_name(name)] = number
    return out


def power(
    pilot: Annotated[
        Path,
        typer.Argument(
            help="An `evaluate` output folder, or a grid cell (DIR/cells/<dataset>/<retriever>): the pilot whose per-query values are resampled.",
            show_default=False,
            metavar="PILOT",
        ),
    ],
    alpha: Annotated[float, typer.Option(help="Level of the tests.")] = 0.05,
    power_: Annotated[float, typer.Option("--power", help="Target power.")] = 0.8,
    n: Annotated[
        list[int] | None,
        typer.Option(
            "--n", metavar="N...", help="Study sizes (queries) for the minimum detectable effects, e.g. --n 50 100 200. \\[default: 50 100 200 500 1000]"
        ),
    ] = None,
    effect: Annotated[
        list[str] | None,
        typer.Option(
            "--effect",
            metavar="STAT=VALUE...",
            help="Target effects for the power and the n needed: rel_delta=10 (percent), difference=0.05 (human − LLM), twin=0.55 (share of pairs, LLM copy first), ndsr=0.02; any --statistics name or alias of evaluate. \\[default: each pilot's own estimate]",
        ),
    ] = None,
    statistic: Annotated[
        list[str] | None,
        typer.Option(
            "--statistic",
            metavar="NAME",
            help="Statistics to analyse (repeat), as evaluate's --statistics names them: relative_delta_ci (rel_delta), paired_tests (difference), twin_preference (twin), delta_ndsr (ndsr). \\[default: all]",
        ),
    ] = None,
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure", "-m", metavar="MEASURE", help="Measures of Relative Δ and the difference (repeat), e.g. NDCG@3. \\[default: every NDCG@k of the pilot]"
        ),
    ] = None,
    retriever: Annotated[
        list[str] | None, typer.Option("--retriever", "-r", metavar="NAME", help="Retrievers of the pilot to analyse (repeat). \\[default: all]")
    ] = None,
    resamples: Annotated[int, typer.Option(help="Simulated studies per study size (resampling method).", min=100)] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    max_n: Annotated[int, typer.Option(help="Largest number of queries searched for the n needed.", min=2)] = 20_000,
    ndsr_k: Annotated[int, typer.Option(help="Cut-off of ΔNDSR@k.", min=1)] = 10,
    correction: Annotated[
        str,
        typer.Option(
            metavar="holm|fdr_bh|bonferroni|none",
            help="The correction evaluate applies to the paired tests across the report (evaluate's --correction): the power of * is that of the corrected test.",
        ),
    ] = "holm",
    dataset: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The pilot's dataset folder, for the judgements twin preference needs (default: the path the pilot recorded; its qrels are checked against the pilot's manifest).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="Folder for the results (power.json, power.csv, pilots.csv, curves.csv, summary.md, summary.tex, power_curves.png, manifest.json); checked before any work.",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")] = False,
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
    """
    from sourcebias.core.errors import ConfigError
    from sourcebias.power import PowerSettings, run_power

    try:
        settings = PowerSettings(
            alpha=alpha,
            power=power_,
            ns=tuple(n or (50, 100, 200, 500, 1000)),
            effects=_parse_effects(effect),
            resamples=resamples,
            seed=seed,
            max_n=max_n,
            ndsr_k=ndsr_k,
            correction=correction,
        )
    except ConfigError as exc:
        fail(str(exc))
    from sourcebias.core import progress

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_power(
            pilot, output, settings=settings, dataset_dir=dataset, statistics=statistic, measures=measure, retrievers=retriever, overwrite=overwrite
        )
    _print(result)
    if path is not None:
        console.print(
            f"Wrote power.json, power.csv, pilots.csv, curves.csv, summary.md, summary.tex and power_curves.png to [bold]{path}[/bold] (load them with sourcebias.power.load_power)"
        )
    else:
        console.print("[dim]Add --output DIR to save the results and the power-curve figure.[/dim]")


def _print(result: Any) -> None:
    from sourcebias.power.report import power_report
    from sourcebias.reporting import to_rich

    console.print(to_rich(power_report(result)))


def register(app: typer.Typer) -> None:
    app.command()(power)
