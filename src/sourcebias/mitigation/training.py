"""Debiased training (Dai et al., KDD 2024, §5.1, Eqs. 1–2): fine-tune a dense retriever with
:class:`~sourcebias.mitigation.losses.TwinPositivesRankingLoss` through sentence-transformers'
trainer, on the batches of a saved :class:`~sourcebias.mitigation.plan.TrainingPlan`.

* **Same batches for every α.** The trainer reads the plan's batches in order
  (:class:`PlanBatchSamplerFactory`: no shuffling, batch boundaries as planned), so a sweep over α
  differs only in α.
* **Resumable.** Checkpoints every ``save_steps`` steps under ``OUT/checkpoints``; a rerun into the
  same folder resumes from the last one (the trainer skips the batches already trained). The folder
  records the plan's digest and α (``OUT/run.json``): resuming — or reusing a finished model — with
  another plan (another positive pool, seed, strategy, ...) or another α is refused.
* **Positive pool.** Each tuple's positive copies (the plan's ``Tuple.positive``) reach the loss as
  the ``label`` column (:data:`~sourcebias.mitigation.losses.POSITIVE_LABELS`), so a ``mix`` plan
  trains on its recorded per-tuple draws.
* **The result** is a sentence-transformers model folder (``--retriever st:OUT/model``) with
  ``training.json``: the plan's digest, α, the hyper-parameters, steps, the loss curve and the
  package versions.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.mitigation.plan import TrainingPlan, positives_spec


def plan_columns(plan: TrainingPlan, dataset: Any) -> tuple[dict[str, list], list[int]]:
    """The plan's tuples as text columns (query, human, llm[, negative_human, negative_llm]) and
    the ``label`` column (each tuple's positive copies as a
    :data:`~sourcebias.mitigation.losses.POSITIVE_LABELS` code), in training order, and the sizes
    of the batches."""
    from sourcebias.mitigation.losses import POSITIVE_LABELS

    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    human, llm = plan.header["human_source"], plan.header["llm_source"]
    hard = plan.strategy != "in-batch"
    cols: dict[str, list[Any]] = {"query": [], "human": [], "llm": []}  # texts, and "label" ints
    if hard:
        cols.update({"negative_human": [], "negative_llm": []})
    sizes = []
    for batch in plan.batches():
        sizes.append(len(batch))
        for t in batch:
            cols["query"].append(dataset.queries[t.query_id])
            cols["human"].append(texts[corpus.position(t.doc_id, human)])
            cols["llm"].append(texts[corpus.position(t.doc_id, llm)])
            if hard:
                cols["negative_human"].append(texts[corpus.position(t.negative, human)])
                cols["negative_llm"].append(texts[corpus.position(t.negative, llm)])
    cols["label"] = [POSITIVE_LABELS[t.positive] for b in plan.batches() for t in b]
    return cols, sizes


def check_folder(out: Path, plan: TrainingPlan, alpha: float) -> bool:
    """Refuse a folder that holds (or began) a training on another plan or α; record this one's.
    True when the folder already holds the finished model."""
    from sourcebias.core.atomic import atomic_write_json

    mine = {"plan_digest": plan.digest(), "positives": plan.positives, "alpha": float(alpha)}
    final = out / "model" / "training.json"
    marker = out / "run.json"
    if final.is_file():
        info = json.loads(final.read_text(encoding="utf-8"))
        before = {
            "plan_digest": info["plan"]["digest"],
            "positives": positives_spec(info["plan"].get("positives", "both"), info["plan"].get("positives_p")),
            "alpha": float(info["alpha"]),
        }
    elif marker.is_file():
        before = json.loads(marker.read_text(encoding="utf-8"))
    else:
        before = None
    if before is not None and before != mine:
        what = ", ".join(f"{k} {before.get(k)} (now {v})" for k, v in mine.items() if before.get(k) != v)
        raise ConfigError(f"{out}: holds a training on another plan or α ({what}); train into another folder, or remove it to start again")
    if not final.is_file():
        atomic_write_json(marker, mine)
    return final.is_file()


def _sampler_base():
    from sentence_transformers.base.sampler import DefaultBatchSampler

    return DefaultBatchSampler


class PlanBatchSamplerFactory:
    """Makes the batch sampler of the trainer: consecutive index ranges of the plan's batch sizes,
    in order, never shuffled. (A picklable object: the trainer saves its arguments in checkpoints.)"""

    def __init__(self, sizes: list[int]):
        self.sizes = list(sizes)

    def __call__(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
        sizes = self.sizes

        class PlanBatchSampler(_sampler_base()):
            def __iter__(self):
                start = 0
                for n in sizes:
                    yield list(range(start, start + n))
                    start += n

            def __len__(self) -> int:
                return len(sizes)

        return PlanBatchSampler(dataset, batch_size=batch_size, drop_last=False, valid_label_columns=valid_label_columns, generator=generator, seed=seed)


def training_arguments(
    ckpt: Path, sizes: list[int], *, learning_rate: float, warmup_ratio: float, seed: int, fp16: bool, save_steps: int, log_every: int, pin_memory: bool = False
) -> Any:
    """The trainer's arguments: one pass over the plan's batches (``sizes``, in order), AdamW
    with a linear schedule and warm-up, checkpoints every ``save_steps`` steps in ``ckpt``.
    Pinned host memory only helps copies to a GPU (``pin_memory``; torch warns on a CPU)."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(ckpt),
        num_train_epochs=1,  # the plan already holds every epoch's batches
        per_device_train_batch_size=max(sizes),
        learning_rate=learning_rate,
        warmup_steps=float(warmup_ratio),  # a float is a ratio of the total steps
        weight_decay=0.01,
        optim="adamw_torch",
        lr_scheduler_type="linear",
        seed=seed,
        data_seed=seed,
        fp16=fp16,
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=2,
        logging_steps=log_every,
        report_to="none",
        batch_sampler=PlanBatchSamplerFactory(sizes),
        dataloader_drop_last=False,
        dataloader_pin_memory=pin_memory,
        disable_tqdm=True,
    )


def train(
    dataset: Any,
    plan: TrainingPlan,
    base: str,
    out: str | Path,
    *,
    alpha: float,
    learning_rate: float = 2e-5,
    warmup_ratio: float = 0.1,
    scale: float = 20.0,
    max_seq_length: int | None = None,
    save_steps: int = 50,
    seed: int = 42,
    device: str | None = None,
    fp16: bool | None = None,
    log_every: int = 10,
) -> Path:
    """Train ``base`` (a sentence-transformers name, preset or path) on ``plan`` with weight
    ``alpha`` into ``out`` (``out/model`` is the result); resumes from ``out/checkpoints``."""
    from datasets import Dataset as HFDataset
    from sentence_transformers import SentenceTransformerTrainer
    from transformers import set_seed

    from sourcebias.mitigation.losses import TwinPositivesRankingLoss

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    final = out / "model"
    if check_folder(out, plan, alpha):
        return final  # finished earlier, on this plan with this α
    set_seed(seed)
    model, name, device = _base_model(base, device, max_seq_length)
    cols, sizes = plan_columns(plan, dataset)
    data = HFDataset.from_dict(cols)
    pool = plan.header.get("positives", "both")
    loss = TwinPositivesRankingLoss(model, alpha=alpha, scale=scale, in_batch_negatives=plan.strategy != "hard-only", positives=None if pool == "mix" else pool)
    ckpt = out / "checkpoints"
    args = training_arguments(
        ckpt,
        sizes,
        learning_rate=learning_rate,
        warmup_ratio=warmup_ratio,
        seed=seed,
        fp16=bool(fp16) if fp16 is not None else device.startswith("cuda"),
        save_steps=save_steps,
        log_every=log_every,
        pin_memory=device.startswith("cuda"),
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss)
    resume = ckpt.is_dir() and any(p.name.startswith("checkpoint-") for p in ckpt.iterdir())
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=bool(resume))
    info = {
        **_model_record(base, name, alpha, plan, loss, model, args, learning_rate=learning_rate, warmup_ratio=warmup_ratio, seed=seed),
        **_run_record(trainer, len(data), bool(resume), time.perf_counter() - t0, device),
    }
    return save_model(model, info, final)


def _model_record(
    base: str, name: str, alpha: float, plan: TrainingPlan, loss: Any, model: Any, args: Any, *, learning_rate: float, warmup_ratio: float, seed: int
) -> dict[str, Any]:
    """What a trained model is (saved beside it): its base, α, positive pool, loss, plan and
    hyperparameters."""
    return {
        "kind": "debiased-training",
        "base": base,
        "resolved": name,
        "alpha": alpha,
        "positives": plan.positives,
        "loss": loss.get_config_dict(),
        "plan": {"digest": plan.digest(), **{k: v for k, v in plan.header.items() if k != "checksums"}, "checksums": plan.header.get("checksums")},
        "hyperparameters": {
            "learning_rate": learning_rate,
            "warmup_ratio": warmup_ratio,
            "optimizer": "AdamW (weight decay 0.01), linear schedule",
            "max_seq_length": model.max_seq_length,
            "seed": seed,
            "fp16": args.fp16,
        },
    }


def _base_model(base: str, device: str | None, max_seq_length: int | None) -> tuple[Any, str, str]:
    """The sentence-transformers model to start from (a preset, a name or a folder), the name it
    resolved to, and the device it is on."""
    from sentence_transformers import SentenceTransformer

    from sourcebias.models.encoders import PRESETS
    from sourcebias.models.hub import resolve_device, resolve_model

    name = PRESETS[base].model if base in PRESETS else base
    device = resolve_device(device)
    model = SentenceTransformer(resolve_model(name, what="encoder", flag="--base PATH"), device=device)
    if max_seq_length:
        model.max_seq_length = int(max_seq_length)
    return model, name, device


def _run_record(trainer: Any, examples: int, resumed: bool, seconds: float, device: str) -> dict[str, Any]:
    """What the training run did, for ``training.json``: steps, examples, time, loss log, versions."""
    import torch

    from sourcebias.core.manifest import package_versions

    return {
        "steps": trainer.state.global_step,
        "examples": examples,
        "resumed": resumed,
        "seconds": round(seconds, 1),
        "log": [e for e in trainer.state.log_history if "loss" in e],
        "versions": package_versions(),
        "device": device,
        "threads": torch.get_num_threads(),
    }


def save_model(model: Any, info: dict[str, Any], final: Path) -> Path:
    """Write the model and its ``training.json`` beside ``final``, then move them into place (a
    model folder is complete or absent)."""
    import shutil

    from sourcebias.core.atomic import atomic_write_json

    tmp = final.parent / ".model.tmp"
    model.save(str(tmp))
    atomic_write_json(tmp / "training.json", info)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def read_training(model_dir: str | Path) -> dict[str, Any]:
    path = Path(model_dir) / "training.json"
    if not path.is_file():
        raise ConfigError(f"{model_dir}: not a model trained by sourcebias (no training.json)")
    return json.loads(path.read_text(encoding="utf-8"))
