"""sourcebias: measure, explain and mitigate source bias in retrieval over human and LLM-written text."""

__version__ = "0.1.0"
