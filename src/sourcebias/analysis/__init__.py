"""Explaining source bias: the numerical cores of ``sourcebias analyze``, and its analyses.

Each analysis is registered (:mod:`~sourcebias.analysis.base`: :class:`~sourcebias.analysis.base.Analysis`,
:func:`~sourcebias.analysis.base.register_analysis`) by the module that computes it, with its
runner, options and tables; what they share is in :mod:`~sourcebias.analysis.common`.

* :mod:`~sourcebias.analysis.effects` — descriptive statistics, Cohen's d / Hedges' g (independent
  and paired), Welch t, Mann-Whitney U, paired t, Wilcoxon signed-rank;
* :mod:`~sourcebias.analysis.quality` — twin quality: term Jaccard/overlap, lengths, matched vs
  random-pair cosine, t-SNE map (Dai et al., KDD 2024, §2.3; Cocktail, Appendix A.3);
* :mod:`~sourcebias.analysis.spectrum` — singular-value spectra of embedded corpora and their
  LLM/human ratio (Dai et al., KDD 2024, §4.1, the compression view);
* :mod:`~sourcebias.analysis.direction` — the mean LLM - human embedding direction, its
  consistency, sign-flip tests, and the share of score gaps along it (Huang et al., 2026, arXiv 2604.06163);
* :mod:`~sourcebias.analysis.pseudo_perplexity` — batched masked-LM pseudo-log-perplexity
  (Dai et al., KDD 2024, §4.2, the perplexity view), with the naive reference loop;
* :mod:`~sourcebias.analysis.length` — words and model tokens per source, per twin pair (ratio
  LLM / human) and per query, with paired effect sizes and Wilcoxon tests;
* :mod:`~sourcebias.analysis.decompose` — one joint regression of the twin score gap on Δ
  perplexity, Δ length, Δ median IDF and the cross-fitted direction projection, with
  query-clustered SEs, shares of the mean gap and a held-out half;
* :mod:`~sourcebias.analysis.artifacts` — perplexity, length and median term IDF per document,
  compared across sources, and their correlation with a retriever's scores (Huang et al. 2026);
* :mod:`~sourcebias.analysis.figures` — the PNG figures of all of the above.

Every function works on arrays, texts and models passed in; heavy libraries (torch,
transformers, scikit-learn's t-SNE, matplotlib) are imported only inside the functions that
need them, so importing this package is cheap.
"""

from sourcebias.analysis.direction import Direction, direction_cosine, estimate_direction, pair_differences, score_gap_decomposition, sign_flip_null
from sourcebias.analysis.effects import (
    cohens_d,
    compare_independent,
    compare_paired,
    describe,
    describe_groups,
    hedges_correction,
    hedges_g,
    paired_d,
    paired_g,
)
from sourcebias.analysis.length import load_tokenizer, token_lengths, word_lengths
from sourcebias.analysis.pseudo_perplexity import PseudoPerplexity, load_masked_lm, pseudo_log_perplexity, pseudo_log_perplexity_naive
from sourcebias.analysis.quality import pair_cosines, random_pair_cosines, random_pair_indices, term_similarity, token_counts, tsne_map, word_counts
from sourcebias.analysis.spectrum import ratio_summary, singular_values, spectrum_table

__all__ = [
    "Direction",
    "PseudoPerplexity",
    "cohens_d",
    "compare_independent",
    "compare_paired",
    "describe",
    "describe_groups",
    "direction_cosine",
    "estimate_direction",
    "hedges_correction",
    "hedges_g",
    "load_masked_lm",
    "load_tokenizer",
    "pair_cosines",
    "pair_differences",
    "paired_d",
    "paired_g",
    "pseudo_log_perplexity",
    "pseudo_log_perplexity_naive",
    "random_pair_cosines",
    "random_pair_indices",
    "ratio_summary",
    "score_gap_decomposition",
    "sign_flip_null",
    "singular_values",
    "spectrum_table",
    "term_similarity",
    "token_counts",
    "token_lengths",
    "tsne_map",
    "word_counts",
    "word_lengths",
]
