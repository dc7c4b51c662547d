"""An MTEB run of source bias: ``mteb.evaluate`` on ``sourcebias.mteb.tasks`` for nq-utd (test) and
nfcorpus (dev), with all-MiniLM-L6-v2 offline; prints MTEB's main score beside sourcebias' figures
from the result files MTEB wrote, as a Markdown table (the README's).

    python benchmarks/mteb_source_bias_run.py [--results DIR] [--model sentence-transformers/all-MiniLM-L6-v2]

nq-utd ships with sourcebias; nfcorpus is fetched by ``sourcebias download nfcorpus`` (see
``benchmarks/script_data.py``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path("out/mteb-results"))
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import mteb

    import sourcebias.mteb as sbm

    model = sbm.get_model(args.model)
    nfcorpus = script_data.folder("nfcorpus")  # checked before MTEB starts: one line if it is not downloaded
    tasks = sbm.tasks(script_data.dataset("nq-utd")) + sbm.tasks(nfcorpus, split="dev")
    mteb.evaluate(model, tasks=tasks, cache=mteb.ResultCache(args.results), show_progress_bar=False)
    print("| task | split | ndcg_at_10 (MTEB) | NDCG@10 human / LLM | Rel Δ NDCG@1 [CI] | Rel Δ NDCG@3 [CI] | Rel Δ NDCG@10 [CI] | ΔNDSR@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for task in tasks:
        name, split = task.metadata.name, task.metadata.eval_splits[0]
        s = json.loads(next(args.results.rglob(f"{name}.json")).read_text())["scores"][split][0]
        llm = next(k.removeprefix("sourcebias_ndcg_at_10_") for k in s if k.startswith("sourcebias_ndcg_at_10_") and not k.endswith(("_human", "_all")))

        def delta(k: int, s=s) -> str:
            key = f"sourcebias_relative_delta_ndcg_at_{k}"
            return f"{s[key]:.1f} [{s[key + '_ci_low']:.1f}, {s[key + '_ci_high']:.1f}]"

        ndcg = f"{s['sourcebias_ndcg_at_10_human'] * 100:.1f} / {s[f'sourcebias_ndcg_at_10_{llm}'] * 100:.1f}"
        print(f"| {name} | {split} | {s['ndcg_at_10'] * 100:.1f} | {ndcg} | {delta(1)} | {delta(3)} | {delta(10)} | {s['sourcebias_delta_ndsr_at_10']:.3f} |")
    print(f"\nResult files: {args.results}")


if __name__ == "__main__":
    script_data.run(main)
