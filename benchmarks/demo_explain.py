"""Demo: the "explain the bias" analyses on the twin pairs of a dataset, with one encoder.

For every human document and its LLM twin (``(doc_id, human)`` and ``(doc_id, LLM source)``),
the document text is ``title + " " + text``; the encoder is a sentence-transformers model
(default all-MiniLM-L6-v2, which ships offline), embeddings unit-normalised. Computes and
prints: term Jaccard/overlap (the BM25 analyzer), lengths (words, model tokens) with paired
effect sizes, matched-pair vs random-pair cosine, the singular-value spectra (uncentred, as the
paper; centred for comparison), the LLM - human direction (consistency, sign-flip p-values) and
the share of the relevant (query, human, twin) score gaps along it (u from all pairs, and u
from the pairs outside the relevant triples); writes the figures and ``summary.json`` to
``--out``.

    OMP_NUM_THREADS=1 python benchmarks/demo_explain.py --dataset nq-utd --out out/explain-nq-utd
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--out", default="out/explain")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--permutations", type=int, default=1000)
    ap.add_argument("--tsne-perplexity", type=float, default=30.0)
    ap.add_argument("--embeddings", help="an .npz file: embeddings are read from it when it exists, else written to it")
    args = ap.parse_args()

    from sentence_transformers import SentenceTransformer

    from sourcebias.analysis import direction, effects, figures, quality, spectrum
    from sourcebias.data import load_dataset
    from sourcebias.models.hub import resolve_model
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ds = load_dataset(args.dataset, split=args.split)
    human, llm = ds.human_source, ds.other_sources[0]
    corpus = ds.corpus
    ids = [d.doc_id for d in corpus if d.source == human and corpus.position(d.doc_id, llm) is not None]
    text_h = [corpus[corpus.position(i, human)].retrieval_text() for i in ids]
    text_l = [corpus[corpus.position(i, llm)].retrieval_text() for i in ids]
    summary: dict = {"dataset": str(ds.root), "human": human, "llm": llm, "pairs": len(ids), "model": args.model, "seed": args.seed}

    t0 = time.perf_counter()
    model = SentenceTransformer(resolve_model(args.model), device="cpu")
    cache = Path(args.embeddings) if args.embeddings else None
    if cache is not None and cache.is_file():
        z = np.load(cache, allow_pickle=False)
        if z["ids"].tolist() != ids or str(z["model"]) != args.model:
            raise SystemExit(f"{cache} holds other documents or another model's embeddings")
        e_h, e_l = z["human"], z["llm"]
    else:
        e_h = model.encode(text_h, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        e_l = model.encode(text_l, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        if cache is not None:
            np.savez(cache, ids=np.array(ids), model=np.array(args.model), human=e_h, llm=e_l)
    summary["encode_seconds"] = round(time.perf_counter() - t0, 1)

    # term level and lengths
    terms = quality.term_similarity(text_l, text_h, EnglishAnalyzer())
    summary["jaccard"] = effects.describe(terms["jaccard"])
    summary["overlap"] = effects.describe(terms["overlap"])
    words = {human: quality.word_counts(text_h), llm: quality.word_counts(text_l)}
    toks = {human: quality.token_counts(text_h, model.tokenizer.tokenize), llm: quality.token_counts(text_l, model.tokenizer.tokenize)}
    summary["words"] = effects.compare_paired(words[llm], words[human], names=(llm, human))
    summary["model_tokens"] = effects.compare_paired(toks[llm], toks[human], names=(llm, human))

    # semantic level
    matched = quality.pair_cosines(e_l, e_h)
    rand = quality.random_pair_cosines(e_l, e_h, seed=args.seed)["cosine"]
    summary["cosine_matched"] = effects.describe(matched)
    summary["cosine_random"] = effects.describe(rand)
    coords, srcs = quality.tsne_map({human: e_h, llm: e_l}, perplexity=args.tsne_perplexity, seed=args.seed)

    # spectra
    rows = spectrum.spectrum_table({human: e_h, llm: e_l}, reference=human)
    rel = [r["relative"] for r in rows if r["source"] == llm]
    summary["spectrum"] = spectrum.ratio_summary(rel)
    rows_c = spectrum.spectrum_table({human: e_h, llm: e_l}, reference=human, center=True)
    summary["spectrum_centred"] = spectrum.ratio_summary([r["relative"] for r in rows_c if r["source"] == llm])

    # direction and score gaps of relevant triples
    t0 = time.perf_counter()
    dirn = direction.estimate_direction(e_l, e_h, n_permutations=args.permutations, seed=args.seed)
    summary["direction"] = dirn.summary()
    summary["direction_seconds"] = round(time.perf_counter() - t0, 2)
    row_of = {i: k for k, i in enumerate(ids)}
    # relevant (query, human document) judgements; the twin shares the human document's label
    triples = [(q, row_of[d]) for q in ds.evaluation_queries() for d in ds.qrels.relevant(q) if d in row_of]
    qids = sorted({q for q, _ in triples})
    e_q = model.encode([ds.queries[q] for q in qids], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    q_of = {q: k for k, q in enumerate(qids)}
    qi = np.array([q_of[q] for q, _ in triples])
    pi = np.array([p for _, p in triples])
    gaps = direction.score_gap_decomposition(e_q[qi], e_l[pi], e_h[pi], dirn.unit)
    summary["gap_in_sample"] = {k: v for k, v in gaps.items() if not isinstance(v, np.ndarray)}
    summary["gap_share_llm_higher"] = float(np.mean(gaps["gap"] > 0))
    held = np.setdiff1d(np.arange(len(ids)), pi)
    u_out = direction.estimate_direction(e_l[held], e_h[held], n_permutations=0).unit
    gaps_out = direction.score_gap_decomposition(e_q[qi], e_l[pi], e_h[pi], u_out)
    summary["gap_out_of_sample"] = {k: v for k, v in gaps_out.items() if not isinstance(v, np.ndarray)}
    summary["gap_out_of_sample"]["u_pairs"] = len(held)
    summary["u_in_vs_out_cosine"] = direction.direction_cosine(dirn.unit, u_out)

    # figures
    figs = {
        "spectrum": figures.plot_spectrum(
            rows, out / "spectrum.png", human_source=human, title=f"{ds.name}: {args.model.split('/')[-1]} embeddings (uncentred SVD)"
        ),
        "terms": figures.plot_term_similarity(
            terms["jaccard"], terms["overlap"], out / "term_similarity.png", title=f"{ds.name}: {llm} twin vs human original"
        ),
        "cosine": figures.plot_pair_cosines(matched, rand, out / "pair_cosine.png", title=f"{ds.name}: twin vs random pairs"),
        "lengths": figures.plot_lengths(words, out / "lengths_words.png", human_source=human),
        "tsne": figures.plot_tsne(coords, srcs, out / "tsne.png", human_source=human, perplexity=args.tsne_perplexity),
        "direction": figures.plot_direction(
            dirn.projections,
            dirn.null_projections,
            out / "direction.png",
            null_statistic=dirn.null_norm,
            observed_statistic=dirn.norm,
            p_value=dirn.p_norm,
            title=f"{ds.name}: e_LLM − e_human, {len(ids)} twin pairs",
        ),
    }
    summary["figures"] = {k: str(v) for k, v in figs.items()}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float), encoding="utf-8")

    d = summary["direction"]
    print(f"{ds.name}: {len(ids)} twin pairs ({human} / {llm}), {args.model}, embeddings in {summary['encode_seconds']} s")
    print(
        f"term Jaccard {summary['jaccard']['mean']:.3f} ± {summary['jaccard']['std']:.3f}, overlap {summary['overlap']['mean']:.3f} ± {summary['overlap']['std']:.3f}"
    )
    w = summary["words"]
    print(f"words: human {w['mean_b']:.1f}, LLM {w['mean_a']:.1f} (d_z {w['d_z']:.2f}, paired t p = {w['paired_p']:.2g}, Wilcoxon p = {w['wilcoxon_p']:.2g})")
    print(
        f"cosine: matched {summary['cosine_matched']['mean']:.4f} ± {summary['cosine_matched']['std']:.4f}; random {summary['cosine_random']['mean']:.4f} ± {summary['cosine_random']['std']:.4f}"
    )
    for key in ("spectrum", "spectrum_centred"):
        s = summary[key]
        print(
            f"{key}: LLM/human at rank 1 {s['ratio_rank1']:.3f}; head (10) {s['head_geomean']:.3f}, tail (10) {s['tail_geomean']:.3f}; {s['ranks_above_1']} of {s['ranks']} ranks above 1, first below 1 at rank {s['first_rank_below_1']}"
        )
    print(
        f"direction: ||mean diff|| {d['mean_difference_norm']:.4f} (null mean {d['null_norm_mean']:.4f}), consistency {d['consistency']:.3f} (null mean {d['null_consistency_mean']:.3f}), p_norm {d['p_norm']:.4g}, p_consistency {d['p_consistency']:.4g} ({d['permutations']} flips, {summary['direction_seconds']} s)"
    )
    for key in ("gap_in_sample", "gap_out_of_sample"):
        g = summary[key]
        print(
            f"{key}: {g['triples']} triples, mean gap {g['mean_gap']:.4f} = along u {g['mean_along']:.4f} + residual {g['mean_residual']:.4f}; share along u {g['share_along']:.2f}"
        )
    print(
        f"LLM twin scored higher in {summary['gap_share_llm_higher']:.0%} of relevant triples; cos(u all pairs, u held-out pairs) = {summary['u_in_vs_out_cosine']:.3f}"
    )
    print(f"figures and summary.json in {out}")


if __name__ == "__main__":
    script_data.run(main)
