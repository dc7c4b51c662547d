"""``sourcebias train``: debiased training of a dense retriever, one model per α, each evaluated."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console, fail

STATE = "train.json"


def _alpha_dir(alpha: float) -> str:
    return f"alpha-{alpha:g}"


def train(
    dataset_dir: Annotated[Path, typer.Argument(help="Mixed dataset whose training qrels give (query, human document, twin) tuples.", show_default=False, metavar="DATASET_DIR")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="DIR", help="Sweep folder: plan.jsonl, one model per α, sweep.csv. Rerunning into it resumes.", show_default=False)],
    alpha: Annotated[list[float], typer.Option("--alpha", metavar="A...", help="Weights of the debiasing constraint, e.g. --alpha 0 1 10 (a sweep; 0 = no constraint).")] = [0.0, 1.0],  # noqa: B006
    base: Annotated[str, typer.Option(metavar="SPEC", help="Model to start from: a preset (minilm, tas-b, ...), a sentence-transformers name or a folder.")] = "minilm",
    split: Annotated[str, typer.Option(help="Training split.")] = "train",
    negatives: Annotated[str, typer.Option(help="Negative strategy: in-batch, hard (in-batch + BM25-mined), hard-only.")] = "in-batch",
    positives: Annotated[str, typer.Option(metavar="POOL", help="Positive pool: both (human copy and twin, the reference), human, llm, or mix[:p] (per tuple the twin with probability p, default 0.5, seeded). A copy outside the pool is never a negative of its query; the hinge still compares both.")] = "both",
    batch_size: Annotated[int, typer.Option(help="Tuples per batch (papers: 64).", min=2)] = 32,
    epochs: Annotated[int, typer.Option(help="Epochs (papers: 10).", min=1)] = 1,
    max_tuples: Annotated[int | None, typer.Option(help="Train on a seeded subset of this many tuples (a short budget).", min=2)] = None,
    lr: Annotated[float, typer.Option(help="Learning rate (AdamW).")] = 2e-5,
    warmup: Annotated[float, typer.Option(help="Warm-up, as a share of the steps.")] = 0.1,
    max_seq_length: Annotated[int | None, typer.Option(help="Tokens per text while training (default: the model's).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the plan and of training.")] = 42,
    save_steps: Annotated[int, typer.Option(help="Checkpoint every this many steps.", min=1)] = 50,
    eval_split: Annotated[str | None, typer.Option(metavar="SPLIT", help="Evaluate each model on this split (default: dev, else test).")] = None,
    eval_dataset: Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate on another dataset.")] = None,
    k: Annotated[int, typer.Option("--k", help="Cut-off of the table (NDCG@k).", min=1)] = 3,
    evaluation: Annotated[bool, typer.Option("--eval/--no-eval", help="Evaluate the base model and each trained model.")] = True,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: cuda if available).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding store for the evaluations.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Start again in a folder that holds another configuration's training.")] = False,
) -> None:
    """Train a retriever with the debiasing constraint (Dai et al., KDD 2024) for each α, on one saved plan.

    Every α sees the same batches in the same order; each model is a folder (--retriever st:DIR/alpha-A/model)
    evaluated on --eval-split; DIR/sweep.csv collects accuracy and Relative Δ by α.

    Example:  sourcebias train data/nfcorpus --base minilm --alpha 0 1 10 --max-tuples 2000 -o out/debias
    """
    import pandas as pd

    from sourcebias.core.artifacts import _lock, _unlock
    from sourcebias.core.atomic import atomic_write_json
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset
    from sourcebias.evaluation.protocol import json_safe
    from sourcebias.core.errors import ConfigError
    from sourcebias.mitigation.plan import STRATEGIES, parse_positives, positives_spec
    from sourcebias.mitigation.training import read_training
    from sourcebias.mitigation.training import train as train_one

    if negatives not in STRATEGIES:
        fail(f"--negatives must be one of {', '.join(STRATEGIES)}")
    try:
        pool = positives_spec(*parse_positives(positives))
    except ConfigError as e:
        fail(f"--positives: {e}")
    alphas = list(dict.fromkeys(alpha))
    settings = {"dataset": str(Path(dataset_dir).resolve()), "split": split, "base": base, "negatives": negatives, "positives": pool, "batch_size": batch_size, "epochs": epochs, "max_tuples": max_tuples, "lr": lr, "warmup": warmup, "max_seq_length": max_seq_length, "seed": seed}
    out = Path(output)
    _prepare_output(out, json_safe(settings), overwrite)
    lock = _lock(out.parent / f".{out.name}.lock", out)
    t0 = time.perf_counter()
    try:
        atomic_write_json(out / STATE, {"kind": "train", "settings": json_safe(settings)})
        ds = load_dataset(dataset_dir, split=split)
        plan = _plan(out / "plan.jsonl", ds, batch_size=batch_size, epochs=epochs, seed=seed, strategy=negatives, max_tuples=max_tuples, positives=pool)
        target_dir = eval_dataset or dataset_dir
        rows = []
        target = None
        if evaluation:
            from sourcebias.data.dataset import detect_layout

            splits = detect_layout(target_dir).splits()
            es = eval_split or ("dev" if "dev" in splits else "test")
            target = load_dataset(target_dir, split=es)
        if target is not None:
            rows.append({"positives": None, **_evaluate_model(base, "base", None, target, out / "base-evaluation", k, device, cache_dir, max_seq_length)})
        for a in alphas:
            folder = out / _alpha_dir(a)
            t1 = time.perf_counter()
            console.print(f"[bold]α = {a:g}[/bold]: training {base} ...")
            model_dir = train_one(ds, plan, base, folder, alpha=a, learning_rate=lr, warmup_ratio=warmup, max_seq_length=max_seq_length, save_steps=save_steps, seed=seed, device=device)
            info = read_training(model_dir)
            console.print(f"  {info['steps']} steps in {info['seconds']:.0f} s{' (resumed)' if info['resumed'] else ''}; model {model_dir}")
            if target is not None:
                row = _evaluate_model(f"st:{model_dir}", f"alpha={a:g}", a, target, folder / "evaluation", k, device, cache_dir, max_seq_length)
                row.update({"steps": info["steps"], "train_seconds": info["seconds"]})
                rows.append({"positives": plan.positives, **row})
            console.print(f"  done in {time.perf_counter() - t1:.0f} s")
        if rows:
            table = pd.DataFrame(rows)  # positives first, then the evaluation's columns
            table.to_csv(out / "sweep.csv", index=False, lineterminator="\n")
            _print_sweep(table, k)
        manifest = build_manifest(command="train", inputs={"dataset": json_safe(ds.describe()), "eval_dataset": str(target_dir)}, parameters={**settings, "alphas": alphas, "plan_digest": plan.digest()}, timings={"total_s": round(time.perf_counter() - t0, 3)})
        manifest["kind"] = "train"
        atomic_write_json(out / "manifest.json", manifest)
        console.print(f"Wrote the models and sweep.csv to [bold]{out}[/bold]")
    finally:
        _unlock(lock)


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
    console.print(f"Plan: {plan.header['tuples']:,} tuples in {len(plan.batches())} batches ({plan.strategy}; positives {pool}: {counts}), saved to {plan_path}")
    if plan.header.get("left_out_without_negative"):
        console.print(f"  {len(plan.header['left_out_without_negative'])} tuples left out: BM25 found no non-relevant document for their query (listed in the plan's header)")
    return plan


def _evaluate_model(spec: str, label: str, alpha: float | None, target, folder: Path, k: int, device, cache_dir, max_length: int | None = None) -> dict:
    """Evaluate one model on the target split (cached in ``folder``) and return its sweep row;
    with ``max_length`` (the training's), the base model is evaluated on as many tokens."""
    from sourcebias.core import progress
    from sourcebias.evaluation import evaluate, load_result
    from sourcebias.evaluation.artifact import write_result
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
        write_result(result, folder, overwrite=True, command="train evaluation")
    name = result.retriever_names[0]
    human, other = result.human_source, result.other_sources[0]
    m = f"NDCG@{k}"
    ctx = StatContext(measures=[m], seed=int(result.parameters.get("seed", 0)), significance_resamples=10_000, correction="none")
    test = next((r for r in compute_statistics(result, ctx, ["paired_tests"], correct=False).records["paired_tests"] if r.retriever == name and r.llm_source == other), None)
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
    from rich.table import Table

    t = Table(title=f"Debiased training: NDCG@{k} (percent) and Relative Δ by α", caption="Rel Δ > 0: human-written ranked higher; < 0: LLM-generated ranked higher")
    for c in ("model", "positives", "all", "human", "LLM", f"Rel Δ @{k}", "Rel Δ @1", "human only", "LLM only"):
        t.add_column(c, justify="left" if c == "model" else "right")
    for r in table.to_dict("records"):
        d = r[f"rel_delta@{k}"]
        t.add_row(
            str(r["model"]),
            "—" if not isinstance(r.get("positives"), str) else r["positives"],
            f"{r[f'ndcg@{k}_all'] * 100:.1f}",
            f"{r[f'ndcg@{k}_human'] * 100:.1f}",
            f"{r[f'ndcg@{k}_llm'] * 100:.1f}",
            f"[{'red' if d < 0 else 'green'}]{d:.1f}[/]",
            f"{r['rel_delta@1']:.1f}",
            f"{r[f'ndcg@{k}_human_only'] * 100:.1f}",
            f"{r[f'ndcg@{k}_llm_only'] * 100:.1f}",
        )
    console.print(t)


def register(app: typer.Typer) -> None:
    app.command()(train)
