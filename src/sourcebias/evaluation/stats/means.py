"""The means the papers' table shows, per measure: all targets, human and LLM target on the mixed
corpus, and each source ranked alone (when the result has the sole settings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, register_statistic, result_pairs


@dataclass
class MeansRecord(Record):
    all: float = float("nan")
    human: float = float("nan")
    llm: float = float("nan")
    human_only: float = float("nan")
    llm_only: float = float("nan")

    columns: ClassVar[tuple[Column, ...]] = (
        Column("all", "all", "pct"),
        Column("human", "human", "pct"),
        Column("llm", "LLM", "pct"),
        Column("human_only", "human only", "pct"),
        Column("llm_only", "LLM only", "pct"),
    )


class Means(Statistic):
    """Means (fractions; shown in percent) of each measure per target and setting."""

    name = "means"
    aliases = ("mean",)
    description = "means on the mixed corpus (all, human, LLM target) and on each source alone"
    record = MeansRecord

    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        from sourcebias.evaluation.results import ALL, MIXED, Key

        def mean(*key: str) -> float:
            return result.mean(*key) if Key(*key) in result.per_query else float("nan")

        out: list[Record] = []
        for name, llm in result_pairs(result):
            for m in ctx.measures:
                if Key(name, MIXED, result.human_source, m) not in result.per_query:
                    continue
                h = result.human_source
                out.append(
                    MeansRecord(
                        name,
                        llm,
                        m,
                        mean(name, MIXED, ALL, m),
                        mean(name, MIXED, h, m),
                        mean(name, MIXED, llm, m),
                        mean(name, h, h, m),
                        mean(name, llm, llm, m),
                    )
                )
        return out

    def caption(self, records: Sequence[Record]) -> str:
        if not records:
            return ""
        return "Means in percent on the mixed corpus (all targets, human target, LLM target) and with each source ranked alone (human only, LLM only)."


register_statistic(Means())
