"""``sourcebias train``: debiased training of a dense retriever, one model per α, each evaluated."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from sourcebias.cli import options_mitigate as o
from sourcebias.cli.common import console, fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from sourcebias.evaluation.stats.paired_tests import PairedTestsRecord

STATE = "train.json"


def _alpha_dir(alpha: float) -> str:
    return f"alpha-{alpha:g}"


def train(
    dataset_dir: o.TrainDataset,
    output: o.SweepOutput,
    alpha: o.Alphas = [0.0, 1.0],  # noqa: B006
    base: o.Base = "minilm",
    split: o.TrainSplit = "train",
    negatives: o.Negatives = "in-batch",
    positives: o.Positives = "both",
    batch_size: o.BatchSize = 32,
    epochs: o.Epochs = 1,
    max_tuples: o.MaxTuples = None,
    lr: o.LearningRate = 2e-5,
    warmup: o.Warmup = 0.1,
    max_seq_length: o.MaxSeqLength = None,
    seed: o.TrainSeed = 42,
    save_steps: o.SaveSteps = 50,
    eval_split: o.EvalSplit = None,
    eval_dataset: o.EvalDataset = None,
    k: o.TableK = 3,
    evaluation: o.TrainEvaluation = True,
    device: o.Device = None,
    cache_dir: o.TrainCacheDir = None,
    overwrite: o.TrainOverwrite = False,
) -> None:
    """Train a retriever with the debiasing constraint (Dai et al., KDD 2024) for each α, on one saved plan.

    Every α sees the same batches in the same order; each model is a folder (--retriever st:DIR/alpha-A/model)
    evaluated on --eval-split; DIR/sweep.csv collects accuracy and Relative Δ by α.

    Example:  sourcebias train data/nfcorpus --base minilm --alpha 0 1 10 --max-tuples 2000 -o out/debias
    """
    from sourcebias.core.artifacts import hold_lock, release_lock
    from sourcebias.evaluation.protocol import json_safe

    pool = _positive_pool(negatives, positives)
    settings = _sweep_settings(dataset_dir, split, base, negatives, pool, batch_size, epochs, max_tuples, lr, warmup, max_seq_length, seed)
    out = Path(output)
    _prepare_output(out, json_safe(settings), overwrite)
    lock = hold_lock(out.parent / f".{out.name}.lock", out)
    t0 = time.perf_counter()
    try:
        training = {"learning_rate": lr, "warmup_ratio": warmup, "max_seq_length": max_seq_length, "save_steps": save_steps, "seed": seed, "device": device}
        evaluation_options = {"device": device, "cache_dir": cache_dir, "max_length": max_seq_length} if evaluation else None
        _train_sweep(
            out,
            dataset_dir,
            settings,
            list(dict.fromkeys(alpha)),
            training,
            target_dir=eval_dataset or dataset_dir,
            eval_split=eval_split,
            k=k,
            evaluation=evaluation_options,
            t0=t0,
        )
    finally:
        release_lock(lock)


def _sweep_settings(
    dataset_dir: Path,
    split: str,
    base: str,
    negatives: str,
    pool: str,
    batch_size: int,
    epochs: int,
    max_tuples: int | None,
    lr: float,
    warmup: float,
    max_seq_length: int | None,
    seed: int,
) -> dict[str, Any]:
    """The settings every α shares (recorded in train.json; a rerun into the folder must match them);
    ``pool``: the positives (:func:`_positive_pool`)."""
    return {
        "dataset": str(Path(dataset_dir).resolve()),
        "split": split,
        "base": base,
        "negatives": negatives,
        "positives": pool,
        "batch_size": batch_size,
        "epochs": epochs,
        "max_tuples": max_tuples,
        "lr": lr,
        "warmup": warmup,
        "max_seq_length": max_seq_length,
        "seed": seed,
    }


def _train_sweep(
    out: Path,
    dataset_dir: Path,
    settings: dict,
    alphas: list[float],
    training: dict,
    *,
    target_dir: Path,
    eval_split: str | None,
    k: int,
    evaluation: dict | None,
    t0: float,
) -> None:
    """The sweep in its (locked) folder: the plan, the base model's evaluation, one model per α
    (each evaluated on ``target_dir`` with the options ``evaluation``, unless it is None),
    sweep.csv and the manifest (timed from ``t0``)."""
    import pandas as pd

    from sourcebias.core.atomic import atomic_write_json
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset
    from sourcebias.evaluation.protocol import json_safe

    atomic_write_json(out / STATE, {"kind": "train", "settings": json_safe(settings)})
    ds = load_dataset(dataset_dir, split=settings["split"])
    plan_settings = {name: settings[name] for name in ("batch_size", "epochs", "seed", "max_tuples", "positives")}
    plan = _plan(out / "plan.jsonl", ds, strategy=settings["negatives"], **plan_settings)
    target = _evaluation_target(target_dir, eval_split) if evaluation is not None else None
    evaluate: Callable[..., dict] | None = None if target is None else functools.partial(_evaluate_model, target=target, k=k, **(evaluation or {}))
    base = settings["base"]
    rows = [] if evaluate is None else [{"positives": None, **evaluate(base, "base", None, folder=out / "base-evaluation")}]
    rows += _sweep(ds, plan, base, out, alphas, training, evaluate)
    if rows:
        table = pd.DataFrame(rows)  # positives first, then the evaluation's columns
        table.to_csv(out / "sweep.csv", index=False, lineterminator="\n")
        _print_sweep(table, k)
    manifest = build_manifest(
        command="train",
        inputs={"dataset": json_safe(ds.describe()), "eval_dataset": str(target_dir)},
        parameters={**settings, "alphas": alphas, "plan_digest": plan.digest()},
        timings={"total_s": round(time.perf_counter() - t0, 3)},
    )
    manifest["kind"] = "train"
    atomic_write_json(out / "manifest.json", manifest)
    console.print(f"Wrote the models and sweep.csv to [bold]{out}[/bold]")


def _positive_pool(negatives: str, positives: str) -> str:
    """The positive pool's canonical spec; a bad --negatives or --positives ends the command."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.mitigation.plan import STRATEGIES, parse_positives, positives_spec

    if negatives not in STRATEGIES:
        fail(f"--negatives must be one of {', '.join(STRATEGIES)}")
    try:
        return positives_spec(*parse_positives(positives))
    except ConfigError as e:
        fail(f"--positives: {e}")
        raise  # unreachable: fail exits


def _evaluation_target(target_dir: Path, eval_split: str | None):
    """The dataset the models are evaluated on: --eval-split, else dev if it has one, else test."""
    from sourcebias.data import load_dataset
    from sourcebias.data.dataset import detect_layout

    splits = detect_layout(target_dir).splits()
    return load_dataset(target_dir, split=eval_split or ("dev" if "dev" in splits else "test"))


def _sweep(ds, plan, base: str, out: Path, alphas: list[float], training: dict, evaluate) -> list[dict]:
    """Train (or resume) one model per α on the plan; with ``evaluate``, each model's sweep row."""
    from sourcebias.mitigation.training import read_training
    from sourcebias.mitigation.training import train as train_one

    rows = []
    for a in alphas:
        folder = out / _alpha_dir(a)
        t1 = time.perf_counter()
        console.print(f"[bold]α = {a:g}[/bold]: training {base} ...")
        model_dir = train_one(ds, plan, base, folder, alpha=a, **training)
        info = read_training(model_dir)
        console.print(f"  {info['steps']} steps in {info['seconds']:.0f} s{' (resumed)' if info['resumed'] else ''}; model {model_dir}")
        if evaluate is not None:
            row = evaluate(f"st:{model_dir}", f"alpha={a:g}", a, folder=folder / "evaluation")
            row.update({"steps": info["steps"], "train_seconds": info["seconds"]})
            rows.append({"positives": plan.positives, **row})
        console.print(f"  done in {time.perf_counter() - t1:.0f} s")
    return rows


def _prepare_output(out: Path, settings: dict, overwrite: bool) -> None:
    """Create the sweep folder, or accept it when it holds this configuration's training; another
    configuration's (another positive pool included) is refused, or removed with ``overwrite``."""
    import shutil

    if out.exists() and not out.is_dir():
        fail(f"{out}: exists and is a file")
    if out.is_dir() and any(out.iterdir()):
        state = out / STATE
        if not state.is_file():
            fail(f"{out}: is not empty and is not a sourcebias training folder (no {STATE}); choose another --output")
        previous = json.loads(state.read_text(encoding="utf-8")).get("settings")
        if previous is not None:
            previous.setdefault("positives", "both")  # a folder from before the pools trained on both
        if previous != settings:
            if not overwrite:
                changed = sorted(k for k in settings if (previous or {}).get(k) != settings.get(k))
                fail(f"{out}: holds a training with other settings ({', '.join(changed)}); use --overwrite to start again, or another --output")
            shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _plan(plan_path: Path, ds, **settings):
    """The sweep's saved plan (refused if its pool is not ``settings['positives']``), or a new one."""
    from sourcebias.mitigation.plan import TrainingPlan, build_plan

    pool = settings["positives"]
    if plan_path.is_file():
        plan = TrainingPlan.load(plan_path, ds)
        if plan.positives != pool:
            fail(f"{plan_path}: a plan with positives {plan.positives}, not {pool}; use another --output")
        console.print(f"Plan: {plan_path} (reused: {len(plan.batches())} batches)")
        return plan
    with console.status("Building the training plan ..."):
        plan = build_plan(ds, **settings)
    plan.save(plan_path)
    counts = ", ".join(f"{n:,} {c}" for c, n in plan.header["positive_counts"].items() if n)
    console.print(
        f"Plan: {plan.header['tuples']:,} tuples in {len(plan.batches())} batches ({plan.strategy}; positives {pool}: {counts}), saved to {plan_path}"
    )
    if plan.header.get("left_out_without_negative"):
        console.print(
            f"  {len(plan.header['left_out_without_negative'])} tuples left out: BM25 "
            "found no non-relevant document for their query (listed in the plan's header)"
        )
    return plan


def _evaluate_model(spec: str, label: str, alpha: float | None, *, target, folder: Path, k: int, device, cache_dir, max_length: int | None = None) -> dict:
    """Evaluate one model on the target split (cached in ``folder``) and return its sweep row;
    with ``max_length`` (the training's), the base model is evaluated on as many tokens."""
    from sourcebias.core import progress
    from sourcebias.evaluation import evaluate, load_result
    from sourcebias.evaluation.measures import measure_grid
    from sourcebias.evaluation.results import MIXED
    from sourcebias.evaluation.stats import StatContext, compute_statistics
    from sourcebias.retrieval import build_retriever

    if (folder / "result.json").is_file():
        result = load_result(folder, runs=False)
    else:
        r = build_retriever(spec, device=device, cache_dir=cache_dir, max_length=max_length)
        r.name = label
        with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
            result = evaluate(target, [r], measures=measure_grid(["NDCG", "MAP", "Share"], [1, 3, 5, 10]))
        result.save(folder, overwrite=True, command="train evaluation")
    name = result.retriever_names[0]
    human, other = result.human_source, result.other_sources[0]
    m = f"NDCG@{k}"
    ctx = StatContext(measures=[m], seed=int(result.parameters.get("seed", 0)), significance_resamples=10_000, correction="none")
    test = next(
        (
            cast("PairedTestsRecord", r)
            for r in compute_statistics(result, ctx, ["paired_tests"], correct=False).records["paired_tests"]
            if r.retriever == name and r.llm_source == other
        ),
        None,
    )
    return {
        "model": label,
        "alpha": alpha,
        f"ndcg@{k}_all": result.mean(name, MIXED, "all", m),
        f"ndcg@{k}_human": result.mean(name, MIXED, human, m),
        f"ndcg@{k}_llm": result.mean(name, MIXED, other, m),
        f"rel_delta@{k}": result.relative_delta(name, m, other),
        "rel_delta@1": result.relative_delta(name, "NDCG@1", other),
        f"ndcg@{k}_human_only": result.mean(name, human, human, m),
        f"ndcg@{k}_llm_only": result.mean(name, other, other, m),
        "p_randomization": test.p_randomization if test is not None else None,
        "evaluation": str(folder),
    }


def _print_sweep(table, k: int) -> None:
    """The sweep by α through the one report (:func:`sourcebias.report.render.to_rich`)."""
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Report, Table
    from sourcebias.report.render import to_rich

    pct = [f"ndcg@{k}_all", f"ndcg@{k}_human", f"ndcg@{k}_llm", f"ndcg@{k}_human_only", f"ndcg@{k}_llm_only"]
    rows = [
        {**r, "positives": r.get("positives") if isinstance(r.get("positives"), str) else "—", **{c: r[c] * 100 for c in pct}} for r in table.to_dict("records")
    ]
    cols = [Column("model", "model", "text"), Column("positives", "positives", "text")]
    cols += [Column(pct[0], "all", "num"), Column(pct[1], "human", "num"), Column(pct[2], "LLM", "num"), Column(f"rel_delta@{k}", f"Rel Δ @{k}", "delta")]
    cols += [Column("rel_delta@1", "Rel Δ @1", "num"), Column(pct[3], "human only", "num"), Column(pct[4], "LLM only", "num")]
    title = f"Debiased training: NDCG@{k} (percent) and Relative Δ by α"
    caption = "Rel Δ > 0: human-written ranked higher; < 0: LLM-generated ranked higher"
    console.print(to_rich(Report(title, [Table("sweep", title, cols, rows, caption, identity=2)])))


def register(app: typer.Typer) -> None:
    app.command()(train)
