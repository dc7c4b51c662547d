"""Benchmark: batched masked-LM pseudo-perplexity against the naive one-copy-per-pass loop.

Both compute -(1/S) Σ_s log P(d_s | d without d_s) for the same documents with one loaded model:

* ``naive``: :func:`sourcebias.analysis.pseudo_perplexity.pseudo_log_perplexity_naive` — one
  forward pass of plain transformers ``BertForMaskedLM`` per masked copy, full logits, as the
  Perplexity-Trap reference does;
* ``batched``: :func:`...pseudo_log_perplexity` — masked copies packed into batches of about
  ``--batch-tokens`` tokens, the MLM head only at the masked positions.

The model is a ``BertForMaskedLM`` with random weights (seeded) and the real bert-base-uncased
WordPiece vocabulary (30,522 tokens, the tokenizer of all-MiniLM-L6-v2, which ships offline);
no pre-trained masked LM ships offline, and the timing does not depend on the weights. The
documents are ``--docs`` nq-utd documents (half human, half their Llama-2 twins, seeded),
their ``text`` cut to ``--tokens`` tokens. Prints the largest absolute difference between the
two (per token and per document), each time, and the ratio.

    OMP_NUM_THREADS=1 python benchmarks/bench_pseudo_perplexity.py [--hidden 256 --layers 4 --docs 20 --tokens 128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch-tokens", type=int, default=None, help="default: the function's (4,096 on a CPU)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from sourcebias.analysis.pseudo_perplexity import pseudo_log_perplexity, pseudo_log_perplexity_naive
    from sourcebias.data import load_dataset
    from sourcebias.models.hub import resolve_model

    torch.set_num_threads(args.threads)
    ds = load_dataset(args.dataset, split="test")
    llm = ds.other_sources[0]
    rng = np.random.default_rng(args.seed)
    human_ids = sorted({d.doc_id for d in ds.corpus if d.source == ds.human_source})
    chosen = rng.choice(human_ids, size=args.docs // 2, replace=False).tolist()
    texts = [ds.corpus[ds.corpus.position(i, src)].text for i in chosen for src in (ds.human_source, llm)]

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("sentence-transformers/all-MiniLM-L6-v2"))
    torch.manual_seed(args.seed)
    cfg = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_position_embeddings=512,
    )
    model = BertForMaskedLM(cfg).float().eval()
    n_params = sum(p.numel() for p in model.parameters())

    t0 = time.perf_counter()
    batched = pseudo_log_perplexity(texts, model, tokenizer, max_length=args.tokens, batch_tokens=args.batch_tokens, per_token=True)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    naive = pseudo_log_perplexity_naive(texts, model, tokenizer, max_length=args.tokens, per_token=True)
    t_naive = time.perf_counter() - t0

    n_tok = sum(r.tokens for r in naive)
    tok_diff = max(float(np.max(np.abs(a.token_nll - b.token_nll))) for a, b in zip(naive, batched) if a.tokens)
    doc_diff = max(abs(a.value - b.value) for a, b in zip(naive, batched) if a.tokens)
    print(
        f"model: random BertForMaskedLM, hidden {args.hidden}, {args.layers} layers, {args.heads} heads, vocab {cfg.vocab_size} "
        f"({n_params / 1e6:.1f} M parameters), float32, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    print(f"documents: {len(texts)} nq-utd texts ({args.docs // 2} human + their {llm} twins), cut to {args.tokens} tokens: {n_tok} masked copies")
    print(f"max |naive - batched|: per token {tok_diff:.2e} nats, per document {doc_diff:.2e} nats")
    print(f"naive loop (transformers, one copy per pass): {t_naive:8.1f} s  ({n_tok / t_naive:7.1f} copies/s)")
    print(f"batched (batch_tokens {args.batch_tokens or 'default'}):   {t_batched:8.1f} s  ({n_tok / t_batched:7.1f} copies/s)")
    print(f"speed-up: {t_naive / t_batched:.1f}x")
    means = {src: np.mean([r.value for r, t in zip(naive[i::2], texts[i::2]) if r.tokens]) for i, src in enumerate((ds.human_source, llm))}
    print("mean pseudo-log-perplexity (random weights, so not meaningful): " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))


if __name__ == "__main__":
    script_data.run(main)
