"""Causal-LM document perplexity: sourcebias (length-sorted, padded batches through the shared
scorer) against a bare transformers forward loop over the same texts, one document at a time.

Both compute the mean negative log-likelihood per token of each document's first 512 tokens,
the first token predicted from the start (or end-of-text) token. Prints the largest difference
between the two, the time of each, tokens per second and the ratio.

    OMP_NUM_THREADS=1 python benchmarks/bench_causal_perplexity.py [--docs 40] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    from sourcebias.analysis.perplexity import CausalPerplexity

    lines = script_data.records(args.dataset, "corpus/human.jsonl")
    rng = np.random.default_rng(args.seed)
    recs = [lines[i] for i in rng.choice(len(lines), size=min(args.docs, len(lines)), replace=False)]
    texts = [f"{r.get('title') or ''} {r['text']}".strip() for r in recs]

    ours = CausalPerplexity(args.model, batch_size=args.batch_size, device="cpu")
    model, tok = ours.scorer.model, ours.scorer.tokenizer  # loaded once, shared by both sides
    ctx = ours.context_token()
    ids = [[ctx] + tok(t, add_special_tokens=False)["input_ids"][:512] for t in texts]
    n_tokens = sum(len(x) - 1 for x in ids)
    print(f"{args.model}: {len(texts)} documents, {n_tokens} scored tokens; torch threads {torch.get_num_threads()}")

    # the bare loop: one unpadded forward pass per document, cross-entropy of the shifted logits
    t0 = time.perf_counter()
    bare = []
    with torch.inference_mode():
        for x in ids:
            inp = torch.tensor([x])
            logits = model(input_ids=inp).logits[0, :-1].float()
            bare.append(torch.nn.functional.cross_entropy(logits, inp[0, 1:]).item())
    t_bare = time.perf_counter() - t0

    t0 = time.perf_counter()
    got = ours.encode_documents(texts)
    t_ours = time.perf_counter() - t0

    diff = np.abs(got[:, 1] - np.array(bare)).max()
    print(f"bare transformers loop: {t_bare:7.1f} s  {n_tokens / t_bare:8.1f} tokens/s")
    print(f"sourcebias (batch {args.batch_size}):  {t_ours:7.1f} s  {n_tokens / t_ours:8.1f} tokens/s")
    print(f"max |difference| of the mean NLL: {diff:.2e}")
    print(f"ratio sourcebias / bare (throughput) = {t_bare / t_ours:.2f}")


if __name__ == "__main__":
    script_data.run(main)
