"""ΔNDSR@k (Huang et al., 2026): per query NDSR_human − NDSR_LLM (the discounted share of each
source in the top k, :class:`~sourcebias.evaluation.measures.NDSR`), averaged over the queries
with a non-empty ranking (the others are counted), with a one-sample t-test against 0 and the
exact sign test beside it; < 0 means the retriever prefers LLM text. Needs no relevance labels.

A document whose copy is missing in some source (:func:`sourcebias.data.corpus.unpaired_positions`)
takes a place in the top k that its missing twin cannot contest. With the orphan policy ``drop``
(the default) such documents are removed from each ranking before NDSR is computed, and how many
were removed is reported; with ``keep`` the ranking is used as it is (the earlier rule), and the
output names the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.evaluation.depth import beyond, depth_summary, refusal, short_count
from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, known, register_statistic, result_pairs, total
from sourcebias.evaluation.stats.paired_tests import one_sample_t_test, sign_test, undefined_caption

DROP_RULE = "unpaired documents removed from the rankings"
KEEP_RULE = "rankings as retrieved (unpaired documents kept)"


def check_ndsr_depth(k: int, depth: Any, *, what: str = "--depth", option: str = "--ndsr-k") -> None:
    """Refuse ΔNDSR@k over rankings cut at a smaller ``depth``: they hold only their top ``depth``
    documents, so the figure would be ΔNDSR@depth under the name ΔNDSR@k (``depth`` None: not
    recorded, nothing to check).

    Raises:
        ConfigError: naming the depth (``what``) and the cut-off (``option``).
    """
    if depth is not None and int(k) > int(depth):
        raise ConfigError(
            f"{what} {int(depth)} is smaller than the ΔNDSR cut-off {option} {int(k)} (ΔNDSR@{int(k)} needs rankings of at least {int(k)} documents)"
        )


def without_unpaired(run: Any, k: int) -> tuple[Any, int, int]:
    """``run`` with every unpaired document removed, the number of ranked entries removed, and
    how many of them were within a top ``k``."""
    from sourcebias.data.corpus import unpaired_positions
    from sourcebias.retrieval.run import Run

    mask = unpaired_positions(run.corpus)
    if not mask.any():
        return run, 0, 0
    positions, scores = {}, {}
    removed = in_top = 0
    for q, pos in run.positions.items():
        drop = mask[pos]
        removed += int(drop.sum())
        in_top += int(drop[:k].sum())
        positions[q], scores[q] = pos[~drop], run.scores[q][~drop]
    return Run(run.corpus, run.name, positions, scores, dict(run.info)), removed, in_top


def ndsr_differences(run: Any, query_ids: Sequence[str], human: str, llm: str, k: int = 10, *, orphans: str = "drop") -> tuple[np.ndarray, int, int]:
    """Per query of ``query_ids``: NDSR_human − NDSR_LLM at ``k`` (NaN for an empty ranking);
    with ``orphans="drop"`` unpaired documents are removed first. Returns the differences, the
    ranked entries removed and how many of them were in a top ``k``."""
    from sourcebias.evaluation.measures import NDSR

    sources = list(run.corpus.sources)
    if human not in sources or llm not in sources:
        raise ConfigError(f"the run ranks {', '.join(sources)}; ΔNDSR needs {human} and {llm}")
    if orphans not in ("drop", "keep"):
        raise ConfigError(f"orphans must be 'drop' or 'keep', got '{orphans}'")
    removed = in_top = 0
    if orphans == "drop":
        run, removed, in_top = without_unpaired(run, k)
    mat = NDSR().per_query(run, query_ids, k)
    return mat[:, sources.index(human)] - mat[:, sources.index(llm)], removed, in_top


def delta_ndsr(run: Any, query_ids: Sequence[str], human: str, llm: str, k: int = 10, *, orphans: str = "drop") -> dict[str, Any]:
    """ΔNDSR@k: mean over queries of NDSR_human − NDSR_LLM (:func:`ndsr_differences`), its t-test
    (NaN with a reason when undefined) and sign test; ``orphans="drop"`` removes unpaired
    documents first."""
    d, removed, in_top = ndsr_differences(run, query_ids, human, llm, k, orphans=orphans)
    ok = np.isfinite(d)
    d = d[ok]
    p, note = one_sample_t_test(d)
    return {
        "k": k,
        "delta": float(d.mean()) if len(d) else float("nan"),
        "std": float(d.std(ddof=1)) if len(d) > 1 else float("nan"),
        "p_ttest": p,
        "ttest_note": note,
        "p_sign": sign_test(d) if len(d) else float("nan"),
        "queries": len(d),
        "empty_rankings": int((~ok).sum()),
        "unpaired_removed": removed,
        "unpaired_in_top_k": in_top,
        "rule": DROP_RULE if orphans == "drop" else KEEP_RULE,
    }


@dataclass
class DeltaNDSRRecord(Record):
    delta_ndsr: float = float("nan")
    delta_ndsr_k: int = 10
    delta_ndsr_std: float = float("nan")
    delta_ndsr_p: float = float("nan")
    delta_ndsr_ttest_note: str = ""
    delta_ndsr_p_sign: float = float("nan")
    delta_ndsr_queries: int = 0
    delta_ndsr_empty_rankings: int = 0
    delta_ndsr_unpaired_removed: int = 0
    delta_ndsr_unpaired_in_top_k: int = 0
    delta_ndsr_rule: str = ""
    delta_ndsr_depth_note: str = ""  # refused (k beyond the run's rankings), or the queries short of k

    columns: ClassVar[tuple[Column, ...]] = (
        Column("delta_ndsr", "ΔNDSR", "delta", 3, mark="delta_ndsr_p"),
        Column("delta_ndsr_p", "ΔNDSR p (t)", "p"),
        Column("delta_ndsr_p_sign", "ΔNDSR p (sign)", "p"),
    )


def result_orphan_policy(result: Any, ctx: StatContext) -> str:
    """The orphan policy the result was made with (``drop`` when it does not say: the rule of
    :func:`sourcebias.data.load_dataset`'s default)."""
    if ctx.orphans:
        return ctx.orphans
    policy = (result.parameters or {}).get("orphans") or ((result.dataset or {}).get("orphans") or {}).get("policy")
    return str(policy or "drop")


class DeltaNDSR(Statistic):
    """Per retriever and LLM source: ΔNDSR@k on the mixed ranking (label-free)."""

    name = "delta_ndsr"
    aliases = ("ndsr", "dndsr")
    description = "ΔNDSR@k: label-free discounted source preference (Huang et al. 2026), t-test and sign test"
    per_measure = False
    record = DeltaNDSRRecord

    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        from sourcebias.evaluation.results import MIXED, RunKey

        check_ndsr_depth(ctx.ndsr_k, (result.parameters or {}).get("depth"), what="the result's depth", option="ndsr_k")
        policy = result_orphan_policy(result, ctx)
        out: list[Record] = []
        for name, llm in result_pairs(result):
            run = result.runs.get(RunKey(name, MIXED))
            if run is None:
                continue
            depth = depth_summary(run, result.query_ids, [ctx.ndsr_k])
            if beyond(depth, ctx.ndsr_k):  # every ranking is shorter than k: the figure would be ΔNDSR at the run's depth
                reason = refusal(ctx.ndsr_k, depth, "ΔNDSR")
                out.append(
                    DeltaNDSRRecord(
                        name, llm, "", delta_ndsr_k=ctx.ndsr_k, delta_ndsr_rule=DROP_RULE if policy == "drop" else KEEP_RULE, delta_ndsr_depth_note=reason
                    )
                )
                continue
            r = delta_ndsr(run, result.query_ids, result.human_source, llm, ctx.ndsr_k, orphans=policy)
            short = short_count(depth, ctx.ndsr_k)
            note = (
                f"{short:,} of {depth['queries']:,} queries rank fewer than {ctx.ndsr_k} documents "
                f"(the shortest {depth['shortest']:,}): their NDSR is over the documents they rank"
                if short
                else ""
            )
            out.append(
                DeltaNDSRRecord(
                    name,
                    llm,
                    "",
                    r["delta"],
                    r["k"],
                    r["std"],
                    r["p_ttest"],
                    r["ttest_note"],
                    r["p_sign"],
                    r["queries"],
                    r["empty_rankings"],
                    r["unpaired_removed"],
                    r["unpaired_in_top_k"],
                    r["rule"],
                    note,
                )
            )
        return out

    def caption(self, records: Sequence[Record]) -> str:
        recs = cast("list[DeltaNDSRRecord]", list(records))  # this statistic's own records
        if not recs:
            return ""
        ks = ", ".join(str(k) for k in known(r.delta_ndsr_k for r in recs)) or "k"
        rules = "; ".join(known(r.delta_ndsr_rule for r in recs)) or "rule not recorded"
        text = f"ΔNDSR@{ks}: mean over queries of NDSR_human − NDSR_LLM (label-free; < 0: prefers LLM text; * t-test p < 0.05, uncorrected; {rules})."
        removed, in_top = total(r.delta_ndsr_unpaired_removed for r in recs), total(r.delta_ndsr_unpaired_in_top_k for r in recs)
        where = "" if len(recs) == 1 else " (all rows together)"
        if removed:
            text += f" Unpaired documents removed from the rankings{where}: {removed:,}, of which {in_top:,} were in a top {ks}."
        empty = total(r.delta_ndsr_empty_rankings for r in recs)
        if empty:
            text += f" Queries with an empty ranking left out{where}: {empty:,}."
        refused = sum(1 for r in recs if r.delta_ndsr_depth_note.startswith("ΔNDSR@"))
        if refused:
            text += f" Refused (–) for {refused} row{'s' if refused > 1 else ''} whose run ranks fewer than k documents for every query (see the notes)."
        return text + undefined_caption([r.delta_ndsr_ttest_note for r in recs], "every query has the same ΔNDSR")

    def notes(self, records: Sequence[Record]) -> list[str]:
        recs = cast("Sequence[DeltaNDSRRecord]", records)  # this statistic's own records
        undefined = [
            f"{r.retriever} / {r.llm_source}: ΔNDSR t-test {r.delta_ndsr_ttest_note}" for r in recs if (r.delta_ndsr_ttest_note or "").startswith("undefined")
        ]
        return undefined + [f"{r.retriever} / {r.llm_source}: {r.delta_ndsr_depth_note}" for r in recs if r.delta_ndsr_depth_note]


register_statistic(DeltaNDSR())
