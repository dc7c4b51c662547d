"""The colours of sourcebias' figures: human text blue, LLM text vermillion (Okabe-Ito, readable
by colour-blind readers), an undefined value grey."""

HUMAN_COLOR = "#0072B2"  # Okabe-Ito blue (human text), as in the analysis figures
LLM_COLOR = "#D55E00"  # Okabe-Ito vermillion (LLM text)
UNDEFINED_COLOR = "#BBBBBB"  # an undefined Relative Δ is neither side
