"""What a judge job grades and measures besides the judged documents (:class:`JudgePlan`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import check_sample_size

__all__ = ["JudgePlan"]


@dataclass(frozen=True)
class JudgePlan:
    """The sample, the runs' depth and the statistics of a judge job.

    How the judge is asked is :class:`~sourcebias.judges.grading.JudgeSettings`; how it is reached
    :class:`~sourcebias.llmcalls.ModelAccess`.

    Attributes:
        top_k: How many top documents of each run to grade besides the judged ones (0: none).
        max_queries: Judge a seeded sample of this many queries (the settings' seed; ``None``: all).
        max_docs: Grade a seeded sample of this many judged documents of each query, every copy
            of each (:func:`~sourcebias.judges.items.judged_documents`; ``None``: all). The
            assessors' qrels of the protocol are then restricted to the same documents, so that
            every qrels variant judges the same ones.
        measure: The measure of Relative Δ under each qrels.
        resamples: Bootstrap resamples of the protocol's Relative Δ CI (the judge's own are closed-form).
        confidence: The level of every CI.
    """

    top_k: int = 0
    max_queries: int | None = None
    max_docs: int | None = None
    measure: str = "NDCG@10"
    resamples: int = 2000
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.top_k < 0:
            raise ConfigError(f"--top-k must be 0 or more, got {self.top_k}")
        check_sample_size(self.max_queries)
        check_sample_size(self.max_docs)
        if not 0 < self.confidence < 1:
            raise ConfigError(f"the CI level must be in (0, 1), got {self.confidence}")

    def describe(self) -> dict[str, Any]:
        """The plan as the manifest records it."""
        return asdict(self)
