"""What the judge's answers say: its twin bias (LLM twin's grade minus the human original's, per
twin pair, query-clustered), the same on the expected grade where the backend gave
log-probabilities, the disclosed author's effect, the pairwise source preference and position
effect, its agreement with the assessors, and how many answers could not be read.

Every estimate is :func:`sourcebias.judges.stats.clustered_mean`'s (the registered
``mean_difference`` estimator); each row says how many items it rests on and how many were left out
(an unparseable answer on either side of a pair leaves the pair out), and, where too few queries
leave it without interval and p, why (``refused``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.judges.stats import clustered_mean, kappa, pairwise_effects
from sourcebias.llmcalls.grades import GRADES


def _wide(frame: Any, index: list[str], columns: str, values: str) -> Any:
    """``frame`` with one row per ``index`` combination present (NaN values kept) and one column per value of ``columns``."""
    return frame.set_index([*index, columns])[values].astype(float).unstack(columns)


def _row(quantity: str, llm_source: str, stat: dict[str, Any], **extra: Any) -> dict[str, Any]:
    keys = ("estimate", "low", "high", "ci_method", "p", "p_method", "items", "queries", "missing", "confidence", "refused", "note")
    return {"quantity": quantity, "llm_source": llm_source, **{k: stat[k] for k in keys}, **extra}


def twin_differences(grades: Any, human: str, llm: str, column: str = "grade") -> tuple[np.ndarray, list[str]] | None:
    """Per twin pair with both copies graded: the LLM twin's ``column`` (``grade`` or ``expected``)
    minus the human original's (NaN where either answer was unparseable: left out, counted), and
    the pair's query; ``None`` when the grades hold no such copies."""
    g = grades[grades["mode"] == "grade"]
    wide = _wide(g, ["query_id", "doc_id"], "source", column)
    present = _wide(g.assign(present=1.0), ["query_id", "doc_id"], "source", "present")  # the copies graded (answered or not)
    if human not in wide or llm not in wide:
        return None
    pairs = wide[(present[human] == 1) & (present[llm] == 1)]  # both copies in the corpus
    return (pairs[llm] - pairs[human]).to_numpy(dtype=float), pairs.index.get_level_values(0).tolist()


def twin_bias(grades: Any, human: str, llm_sources: Sequence[str], **kw: Any) -> list[dict[str, Any]]:
    """Per LLM source: the paired grade difference (LLM twin − human original), from the parsed
    grade and from the expected grade (quantities ``grade`` and ``expected grade``)."""
    out = []
    for column, quantity in (("grade", "grade"), ("expected", "expected grade")):
        for llm in llm_sources:
            found = twin_differences(grades, human, llm, column)
            if found is None:
                continue
            d, queries = found
            if quantity == "expected grade" and not np.isfinite(d).any():
                continue  # no log-probabilities: the grade row says all there is
            out.append(_row(quantity, llm, clustered_mean(d, queries, **kw)))
    return out


def disclosure_effect(grades: Any, sources: Sequence[str], **kw: Any) -> list[dict[str, Any]]:
    """The grade with the author disclosed as an AI minus as a human, same passage; over every
    copy (``llm_source`` ``all``) and per true source."""
    g = grades[grades["mode"] == "disclosure"]
    if g.empty:
        return []
    wide = _wide(g, ["query_id", "doc_id", "source"], "label", "grade")
    if "ai" not in wide or "human" not in wide:
        return []
    d = (wide["ai"] - wide["human"]).to_numpy(dtype=float)
    q = wide.index.get_level_values(0).to_numpy()
    src = wide.index.get_level_values(2).to_numpy()
    out = [_row("disclosed AI − human", "all", clustered_mean(d, q.tolist(), **kw))]
    for s in sources:
        m = src == s
        if m.any():
            out.append(_row("disclosed AI − human", f"copies of {s}", clustered_mean(d[m], q[m].tolist(), **kw)))
    return out


def pairwise_rows(pairs: Any, **kw: Any) -> list[dict[str, Any]]:
    """Per LLM source: the source preference and the position effect (both orders)."""
    out = []
    for llm, p in pairs.groupby("llm_source", sort=False):
        pick_llm = np.where(p["picked"] == "", np.nan, (p["picked"] == llm).astype(float))
        frame = _wide(p.assign(pick_llm=pick_llm), ["query_id", "doc_id"], "order", "pick_llm")
        hf = frame.get("human_first", np.full(len(frame), np.nan))
        lf = frame.get("llm_first", np.full(len(frame), np.nan))
        eff = pairwise_effects(np.asarray(hf, dtype=float), np.asarray(lf, dtype=float), frame.index.get_level_values(0).tolist(), **kw)
        out.append(_row("pairwise: LLM copy preferred", str(llm), eff["source"], consistent=eff["consistent"]))
        out.append(_row("pairwise: first passage preferred", str(llm), eff["position"], consistent=eff["consistent"]))
    return out


def parse_counts(grades: Any, pairs: Any) -> list[dict[str, Any]]:
    """Per mode: answers, unparseable ones, and expected grades that could not be computed (by reason)."""
    out = []
    for mode, g in grades.groupby("mode", sort=False):
        notes = g.loc[g["expected_note"] != "", "expected_note"].value_counts().to_dict()
        out.append(
            {"mode": str(mode), "answers": len(g), "unparseable": int(g["grade"].isna().sum()), "no_expected_grade": {str(k): int(v) for k, v in notes.items()}}
        )
    if len(pairs):
        out.append({"mode": "pairwise", "answers": len(pairs), "unparseable": int((pairs["pick"] == "").sum()), "no_expected_grade": {}})
    return out


def agreement(grades: Any, sources: Sequence[str]) -> list[dict[str, Any]]:
    """Cohen's κ between the assessors' grades and the judge's grade of each source's copies
    (the split's judged documents): binarised at grade > 0 always, graded only when the assessors'
    grades reach the judge's top grade (NQ-UTD's assessors grade 0–2, the judge 0–3: then the
    note says so, ``scales`` names both)."""
    g = grades[(grades["mode"] == "grade") & (grades["origin"] == "qrels")]
    seen = g["assessor_grade"].dropna()
    top = int(seen.max()) if len(seen) else max(GRADES)
    scales = f"assessors 0–{top}, judge {min(GRADES)}–{max(GRADES)}"
    out = []
    for s in sources:
        part = g[g["source"] == s]
        if len(part):
            k = kappa(part["assessor_grade"].to_numpy(dtype=float), part["grade"].to_numpy(dtype=float), same_scale=top == max(GRADES))
            out.append({"source": s, **k, "scales": scales})
    return out


def grade_table(grades: Any, sources: Sequence[str]) -> list[dict[str, Any]]:
    """Per source: how often the judge gave each grade (parsed answers of the ``grade`` mode)."""
    g = grades[grades["mode"] == "grade"]
    out = []
    for s in sources:
        v = g.loc[g["source"] == s, "grade"].dropna()
        out.append(
            {"source": s, "graded": len(v), "mean": float(v.mean()) if len(v) else float("nan"), **{f"grade_{k}": int((v == k).sum()) for k in range(4)}}
        )
    return out


def analyse(grades: Any, pairs: Any, human: str, sources: Sequence[str], *, confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Every analysis of a judge run, as plain rows (what ``judge.json`` holds)."""
    kw = {"confidence": confidence, "seed": seed}
    llms = [s for s in sources if s != human]
    return {
        "twin_bias": twin_bias(grades, human, llms, **kw),
        "disclosure": disclosure_effect(grades, sources, **kw),
        "pairwise": pairwise_rows(pairs, **kw),
        "parse": parse_counts(grades, pairs),
        "agreement": agreement(grades, sources),
        "grades": grade_table(grades, sources),
    }
