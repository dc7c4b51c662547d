"""Debiased training throughput: sourcebias' training path (TwinPositivesRankingLoss on the plan's
batches through sentence-transformers' trainer) against a bare sentence-transformers fit with
MultipleNegativesRankingLoss on the same tuples, same model, batch size and steps, same run.

Two comparisons (examples/s; an example is one (query, human, twin) tuple):
* "same tuples": the bare fit trains on (query, human) pairs of the same tuples — it encodes 2
  texts per example where ours encodes 3, so ours is expected near 2/3 of it;
* "same texts": the bare fit trains on (query, human, twin-as-negative) triplets — the same 3
  texts per example; this ratio is the cost of the loss and the plan itself (target >= 0.9).

    OMP_NUM_THREADS=1 python benchmarks/bench_training.py [--steps 20] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dataset", default=script_data.dataset("nfcorpus"), help="a dataset folder or a known name (default: nfcorpus, after `sourcebias download nfcorpus`)"
    )
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-seq-length", type=int, default=128)
    args = ap.parse_args()

    import torch
    from datasets import Dataset as HFDataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from sourcebias.data import load_dataset
    from sourcebias.mitigation.plan import build_plan
    from sourcebias.mitigation.training import plan_columns
    from sourcebias.mitigation.training import train as sb_train
    from sourcebias.models.hub import resolve_model

    ds = load_dataset(args.dataset, split="train")
    plan = build_plan(ds, batch_size=args.batch_size, epochs=1, seed=0, max_tuples=args.steps * args.batch_size)
    cols, sizes = plan_columns(plan, ds)
    n = len(cols["query"])
    print(f"{n} tuples in {len(sizes)} batches of up to {args.batch_size}; max_seq_length {args.max_seq_length}; torch threads {torch.get_num_threads()}")
    path = resolve_model("sentence-transformers/all-MiniLM-L6-v2")

    def bare(columns: dict) -> float:
        model = SentenceTransformer(path, device="cpu")
        model.max_seq_length = args.max_seq_length
        with tempfile.TemporaryDirectory() as tmp:
            a = SentenceTransformerTrainingArguments(
                output_dir=tmp,
                num_train_epochs=1,
                per_device_train_batch_size=args.batch_size,
                learning_rate=2e-5,
                warmup_steps=0.1,
                seed=0,
                report_to="none",
                save_strategy="no",
                disable_tqdm=True,
                logging_steps=10**6,
            )
            t = SentenceTransformerTrainer(model=model, args=a, train_dataset=HFDataset.from_dict(columns), loss=MultipleNegativesRankingLoss(model))
            t0 = time.perf_counter()
            t.train()
            return time.perf_counter() - t0

    def ours() -> float:
        from sourcebias.mitigation.training import read_training

        with tempfile.TemporaryDirectory() as tmp:
            model_dir = sb_train(ds, plan, "minilm", Path(tmp) / "run", alpha=1.0, max_seq_length=args.max_seq_length, save_steps=10**6, log_every=10**6)
            return float(read_training(model_dir)["seconds"])  # the trainer's train() only, as for the bare fits

    t_pairs = bare({"anchor": cols["query"], "positive": cols["human"]})
    t_triplets = bare({"anchor": cols["query"], "positive": cols["human"], "negative": cols["llm"]})
    t_ours = ours()
    print(f"bare MNRL, (query, human) pairs:          {t_pairs:7.1f} s  {n / t_pairs:6.2f} examples/s")
    print(f"bare MNRL, (query, human, twin) triplets: {t_triplets:7.1f} s  {n / t_triplets:6.2f} examples/s")
    print(f"sourcebias TwinPositivesRankingLoss:      {t_ours:7.1f} s  {n / t_ours:6.2f} examples/s  (trainer.train() only)")
    print(f"ratio, same texts per example (ours / bare triplets) = {t_triplets / t_ours:.2f}")
    print(f"ratio, same tuples (ours / bare pairs)               = {t_pairs / t_ours:.2f}")


if __name__ == "__main__":
    script_data.run(main)
