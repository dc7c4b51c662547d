"""The colours of sourcebias' figures (defined once, in :mod:`sourcebias.core.palette`)."""

from sourcebias.core.palette import HUMAN_COLOR, LLM_COLOR, LLM_COLORS, NULL_COLOR, PAIR_COLOR, UNDEFINED_COLOR

__all__ = ["HUMAN_COLOR", "LLM_COLOR", "LLM_COLORS", "NULL_COLOR", "PAIR_COLOR", "UNDEFINED_COLOR"]
