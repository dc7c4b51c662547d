"""The colours of every sourcebias figure, defined once (Okabe-Ito, readable by colour-blind
readers): human text blue, LLM text vermillion (several LLM sources: vermillion, then orange,
purple, sky blue, yellow, in order), pair-level measures bluish green, baselines and null
distributions grey, an undefined value light grey. It lives in ``core`` so that both the
analyses' figures and the reports' figures (which sit above them) read the same colours."""

from __future__ import annotations

HUMAN_COLOR = "#0072B2"  # Okabe-Ito blue (human text)
LLM_COLORS = ("#D55E00", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442")  # LLM sources, in order
LLM_COLOR = LLM_COLORS[0]  # Okabe-Ito vermillion (LLM text)
PAIR_COLOR = "#009E73"  # pair-level measures
NULL_COLOR = "#8C8C8C"  # baselines and null distributions
UNDEFINED_COLOR = "#BBBBBB"  # an undefined Relative Δ is neither side
