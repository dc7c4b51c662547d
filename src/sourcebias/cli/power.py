"""``sourcebias power PILOT``: how many queries a claim needs (power analysis from a pilot)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from sourcebias.cli.common import console, fail  # --n and --effect take several values: cli.common.GREEDY

LABELS = {"relative_delta": "Relative Δ", "ndcg_difference": "difference", "twin_preference": "twin pref.", "delta_ndsr": "ΔNDSR"}


def _parse_effects(items: list[str] | None) -> dict[str, float]:
    from sourcebias.power import statistic_name

    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            fail(f"--effect expects STATISTIC=VALUE (e.g. rel_delta=10, ndcg=0.05, twin=0.55, ndsr=0.02), got '{item}'")
        try:
            number = float(value)
        except ValueError:
            fail(f"--effect {item}: '{value}' is not a number")
        out[statistic_name(name)] = number
    return out


def power(
    pilot: Annotated[Path, typer.Argument(help="An `evaluate` output folder, or a grid cell (DIR/cells/<dataset>/<retriever>): the pilot whose per-query values are resampled.", show_default=False, metavar="PILOT")],
    alpha: Annotated[float, typer.Option(help="Level of the tests.")] = 0.05,
    power_: Annotated[float, typer.Option("--power", help="Target power.")] = 0.8,
    n: Annotated[list[int] | None, typer.Option("--n", metavar="N...", help="Study sizes (queries) for the minimum detectable effects, e.g. --n 50 100 200. \\[default: 50 100 200 500 1000]")] = None,
    effect: Annotated[list[str] | None, typer.Option("--effect", metavar="STAT=VALUE...", help="Target effects for the power and the n needed: rel_delta=10 (percent), ndcg=0.05 (human − LLM), twin=0.55 (share of pairs, LLM copy first), ndsr=0.02. \\[default: each pilot's own estimate]")] = None,
    statistic: Annotated[list[str] | None, typer.Option("--statistic", metavar="NAME", help="Statistics to analyse (repeat): relative_delta, ndcg_difference, twin_preference, delta_ndsr. \\[default: all]")] = None,
    measure: Annotated[list[str] | None, typer.Option("--measure", "-m", metavar="MEASURE", help="Measures of Relative Δ and the difference (repeat), e.g. NDCG@3. \\[default: every NDCG@k of the pilot]")] = None,
    retriever: Annotated[list[str] | None, typer.Option("--retriever", "-r", metavar="NAME", help="Retrievers of the pilot to analyse (repeat). \\[default: all]")] = None,
    resamples: Annotated[int, typer.Option(help="Simulated studies per study size (resampling method).", min=100)] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    max_n: Annotated[int, typer.Option(help="Largest number of queries searched for the n needed.", min=2)] = 20_000,
    ndsr_k: Annotated[int, typer.Option(help="Cut-off of ΔNDSR@k.", min=1)] = 10,
    dataset: Annotated[Path | None, typer.Option(metavar="DIR", help="The pilot's dataset folder, for the judgements twin preference needs (default: the path the pilot recorded; its qrels are checked against the pilot's manifest).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", help="Folder for the results (power.json, power.csv, pilots.csv, curves.csv, power_curves.png, manifest.json); checked before any work.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")] = False,
) -> None:
    """How many queries a claim needs: minimum detectable effects and sample sizes from a pilot.

    For Relative Δ, the per-target NDCG difference (human − LLM), twin preference and ΔNDSR@k:
    the smallest effect a study of n queries detects with the given power at level α, and the n
    a target effect needs, by resampling the pilot's queries with the effect imposed (seeded; the
    analysis' own test on each simulated study) and analytically (paired t: statsmodels
    TTestPower; sign test: exact binomial, independent pairs), side by side.

    Examples:

      sourcebias power out/nq-utd --n 50 100 200 -o out/nq-utd-power

      sourcebias power out/grid/cells/nq-utd/bm25 --effect rel_delta=10 twin=0.55 -o out/power-bm25
    """
    from sourcebias.core.errors import ConfigError
    from sourcebias.power import PowerSettings, run_power

    try:
        settings = PowerSettings(alpha=alpha, power=power_, ns=tuple(n or (50, 100, 200, 500, 1000)), effects=_parse_effects(effect), resamples=resamples, seed=seed, max_n=max_n, ndsr_k=ndsr_k)
    except ConfigError as exc:
        fail(str(exc))
    with console.status("Power analysis ...") as status:
        result, path = run_power(pilot, output, settings=settings, dataset_dir=dataset, statistics=statistic, measures=measure, retrievers=retriever, overwrite=overwrite, emit=lambda m: status.update(f"Power analysis: {m} ..."))
    _print(result)
    if path is not None:
        console.print(f"Wrote power.json, power.csv, pilots.csv, curves.csv and power_curves.png to [bold]{path}[/bold] (load them with sourcebias.power.load_power)")
    else:
        console.print("[dim]Add --output DIR to save the results and the power-curve figure.[/dim]")


def _cell(result: Any, pilot: dict[str, Any], quantity: str, n: int | None = None) -> str:
    """``resampling / analytic`` of one quantity."""
    from sourcebias.power import format_effect

    parts = []
    for method in ("resampling", "analytic"):
        v = result.value(pilot["statistic"], pilot["retriever"], quantity, method, measure=pilot["measure"], n=n, llm_source=pilot["llm_source"])
        if quantity == "n_needed":
            parts.append(f"{int(v):,}" if math.isfinite(v) else _needed_note(result, pilot, method))
        else:
            parts.append(format_effect(pilot["statistic"], v))
    return " / ".join(parts)


def _needed_note(result: Any, pilot: dict[str, Any], method: str) -> str:
    for r in result.rows:
        if r["quantity"] == "n_needed" and r["method"] == method and all(r[k] == pilot[k] for k in ("statistic", "retriever", "llm_source", "measure")):
            return f"> {result.settings['max_n']:,}" if r["note"].startswith("more than") else "–"
    return "–"


def _print(result: Any) -> None:
    from rich.table import Table

    from sourcebias.power import format_effect

    s = result.settings
    several = len({p["llm_source"] for p in result.pilots}) > 1
    table = Table(title=f"Power on {result.pilot.get('dataset')} ({result.pilot.get('split')}, pilot of {result.pilot.get('queries')} queries): α = {s['alpha']:g}, power = {s['power']:g}", title_justify="left")
    for col in ("statistic", "retriever", "measure", "pilot", "p"):
        table.add_column(col, justify="right" if col in ("pilot", "p") else "left")
    for n in s["ns"]:
        table.add_column(f"MDE n={n:,}", justify="right")
    table.add_column("effect", justify="right")
    table.add_column("n needed", justify="right")
    for p in result.pilots:
        effect_row = next(r for r in result.rows if r["quantity"] == "n_needed" and all(r[k] == p[k] for k in ("statistic", "retriever", "llm_source", "measure")))
        name = p["retriever"] + (f"/{p['llm_source']}" if several else "")
        pval = "–" if not math.isfinite(p["p_value"]) else f"{p['p_value']:.3g}"
        cells = [_cell(result, p, "mde", n) for n in s["ns"]]
        table.add_row(LABELS[p["statistic"]], name, p["measure"], format_effect(p["statistic"], p["estimate"]), pval, *cells, format_effect(p["statistic"], effect_row["effect"]), _cell(result, p, "n_needed"))
    console.print(table)
    console.print(
        "[dim]Each cell: resampling / analytic. MDE: smallest effect (in the pilot's direction) detected with the target power by a study of n queries; "
        "n needed: queries for the effect (the pilot's own estimate unless --effect). Relative Δ in percent, differences human − LLM, twin pref. = share of pairs "
        "with the LLM copy first (unit: a relevant pair; queries resampled as clusters with their pairs). "
        "Tests: paired t (Relative Δ, difference, ΔNDSR); twin pref.: the query-clustered sign-flip test of evaluate, simulated and approximated in its "
        "large-sample form z = (|Σd| − 1)/√Σd² (d = LLM-first − human-first pairs per query; the exact test is more conservative with about 10 queries). "
        "p: the pilot's own test. – : undefined (see power.csv notes).[/dim]"
    )
    for note in result.notes:
        console.print(f"[yellow]Note:[/yellow] {note}")


def register(app: typer.Typer) -> None:
    app.command()(power)
