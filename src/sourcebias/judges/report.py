"""A judge run as the one :class:`~sourcebias.report.model.Report` every command renders
(terminal, Markdown, LaTeX, CSV): the twin bias, the pairwise and disclosure effects, the parse
failures, the agreement with the assessors and, with runs, the protocol under each qrels."""

from __future__ import annotations

import math
from typing import Any

from sourcebias.judges.result import JudgeResult


def _num(v: Any, digits: int = 3, signed: bool = True) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def _p(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else (f"{v:.3g}" if v >= 1e-3 else f"{v:.2e}")


def _effect_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **r,
            "estimate_text": f"{_num(r['estimate'])} [{_num(r['low'])}, {_num(r['high'])}]",
            "p_text": _p(r["p"]),
            "n_text": f"{r['items']:,} / {r['queries']:,}",
            "missing_text": f"{r['missing']:,}",
        }
        for r in rows
    ]


def _effect_table(key: str, title: str, rows: list[dict[str, Any]], caption: str) -> Any:
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    cols = [
        Column("quantity", "quantity", "text"),
        Column("llm_source", "LLM source", "text"),
        Column("estimate_text", "estimate [CI]", "cell"),
        Column("p_text", "p", "cell"),
        Column("n_text", "items / queries", "cell"),
        Column("missing_text", "left out", "cell"),
    ]
    return Table(key, title, cols, _effect_rows(rows), caption, status_rows=False)


def _caption(result: JudgeResult, rows: list[dict[str, Any]]) -> str:
    """The effect tables' caption, from the methods the rows actually used (never a method that
    no row used; rows without CI and p said as such)."""
    s = result.settings
    computed = [r for r in rows if not r.get("refused")]
    ci = sorted({str(r["ci_method"]) for r in computed if not str(r["ci_method"]).startswith("none")})
    tests = sorted({str(r["p_method"]).split(" (")[0] for r in computed if r.get("p_method")})
    text = f"Query-clustered: mean over items; {s['confidence']:.0%} CI: {'; '.join(ci) or 'none computed'}"
    text += f"; p: {'; '.join(tests)} of the query sums (seed {s['seed']})" if tests else "; p: none computed"
    refused = len(rows) - len(computed) + sum(1 for r in computed if r.get("note"))
    if refused:
        text += f"; [–, –] or p –: {refused} row(s) without CI or p, the reason in the notes"
    return text + "; left out: items with an unparseable answer (on either side of a pair)."


def _protocol_tables(result: JudgeResult) -> list[Any]:
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    p = result.protocol
    if not p:
        return []
    rows = [
        {
            **r,
            "rd_text": f"{_num(r['rel_delta'], 1)} [{_num(r['low'], 1)}, {_num(r['high'], 1)}]",
            "ndsr_text": f"{_num(r['delta_ndsr'])} (p {_p(r['delta_ndsr_p'])})",
        }
        for r in p["rows"]
    ]
    cols = [
        Column("run", "run", "text"),
        Column("llm_source", "LLM source", "text"),
        Column("qrels", "qrels", "text"),
        Column("rd_text", "Rel Δ [CI]", "cell"),
        Column("ndsr_text", "ΔNDSR", "cell"),
        Column("queries", "queries", "int"),
    ]
    measure = p["rows"][0]["measure"] if p["rows"] else ""
    cap = (
        f"Relative Δ of {measure} = (human − LLM) / mean × 100 (bootstrap CI over queries; < 0: LLM text ranked higher) and ΔNDSR@10 (label-free; "
        "it moves only "
        "through the queries evaluated) of the same rankings under the assessors' qrels and the judge's grades of each source's copies."
    )
    cap += _refused_intervals(p["rows"])
    order = [{**o, "tau_text": _num(o["tau"], 3), "p_text": _p(o["p"]), "queries": o.get("queries", 0)} for o in p["orderings"]]
    ocols = [
        Column("qrels", "judge qrels", "text"),
        Column("measure", "systems ordered by", "text"),
        Column("tau_text", "Kendall τ", "cell"),
        Column("p_text", "p", "cell"),
        Column("systems", "systems", "int"),
        Column("note", "note", "text"),
    ]
    ocols.insert(5, Column("queries", "queries", "int"))  # the queries both qrels evaluate
    return [
        Table("judge:protocol", "The protocol under the assessors' and the judge's qrels", cols, rows, cap, status_rows=False),
        Table("judge:orderings", "System orderings: judge's qrels against the assessors'", ocols, order, "", status_rows=False),
    ]


def _refused_intervals(rows: list[dict[str, Any]]) -> str:
    """The caption's sentence on the rows printed without a CI, with the reason each was refused."""
    reasons: dict[str, list[str]] = {}
    for r in rows:
        method = str(r.get("ci_method", ""))
        if method.startswith("none (") and method.endswith(")"):
            reasons.setdefault(method[len("none (") : -1], []).append(f"{r['run']} under {r['qrels']}")
    return "".join(f" No CI for {', '.join(where)}: {why}." for why, where in reasons.items())


def _agreement_table(result: JudgeResult) -> Any:
    """Cohen's κ against the assessors: binarised at grade > 0, and on the grades when both use one scale."""
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    rows = result.rows("agreement")
    agree = [
        {**a, "kb_text": _num(a.get("kappa_binary"), 3, False), "k_text": _num(a["kappa"], 3, False), "kq_text": _num(a["kappa_quadratic"], 3, False)}
        for a in rows
    ]
    cols = [Column("source", "judge graded copies of", "text"), Column("kb_text", "κ (grade > 0)", "cell"), Column("k_text", "Cohen's κ", "cell")]
    cols += [Column("kq_text", "κ (quadratic)", "cell"), Column("items", "items", "int"), Column("note", "note", "text")]
    scales = "; ".join(sorted({str(a.get("scales", "")) for a in rows if a.get("scales")})) or "scales unknown"
    caption = "κ (grade > 0): both sides binarised, relevant = grade > 0 (as the protocol counts relevance); "
    caption += f"Cohen's κ and κ (quadratic): on the grades, only when both grade on one scale ({scales})."
    return Table("judge:agreement", "Agreement with the assessors (judged documents)", cols, agree, caption, status_rows=False)


def _no_expected(row: dict[str, Any]) -> str:
    """The parse table's cell: answers without an expected grade, by reason; 0 when every graded
    answer has one; "– (no grade asked)" for pairwise answers, which have none to compute."""
    if row["mode"] == "pairwise":
        return "– (no grade asked)"
    return ", ".join(f"{k}: {v:,}" for k, v in row["no_expected_grade"].items()) or "0"


def judge_report(result: JudgeResult, title: str | None = None) -> Any:
    """The Report of a judge run (tables for each analysis it has, its notes, its rows as data)."""
    import pandas as pd

    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Report, Table

    tables = [
        _effect_table(
            "judge:twin_bias",
            "Twin bias of the judge: grade of the LLM twin − grade of the human original (> 0: LLM text graded higher)",
            result.rows("twin_bias"),
            _caption(result, result.rows("twin_bias")),
        )
    ]
    if result.rows("pairwise"):
        tables.append(
            _effect_table(
                "judge:pairwise",
                "Pairwise, both orders: preference for the LLM copy and for the first passage (− 1/2)",
                result.rows("pairwise"),
                _caption(result, result.rows("pairwise")),
            )
        )
    if result.rows("disclosure"):
        tables.append(
            _effect_table(
                "judge:disclosure",
                "Disclosed author: grade when told 'an AI wrote it' − when told 'a human wrote it', same passage",
                result.rows("disclosure"),
                _caption(result, result.rows("disclosure")),
            )
        )
    parse = [{**p, "no_expected": _no_expected(p)} for p in result.rows("parse")]
    tables.append(
        Table(
            "judge:parse",
            "Answers and parse failures",
            [
                Column("mode", "mode", "text"),
                Column("answers", "answers", "int"),
                Column("unparseable", "unparseable", "int"),
                Column("no_expected", "no expected grade", "text"),
            ],
            parse,
            "unparseable: no grade or pick could be read (left out, never defaulted)",
            status_rows=False,
        )
    )
    tables.append(_agreement_table(result))
    tables += _protocol_tables(result)
    judge = result.judge.get("identity", {}).get("model", "judge")
    return Report(
        title or f"LLM relevance judge {judge} on {result.dataset.get('name')}",
        tables,
        notes=list(result.notes),
        data={"grades": pd.DataFrame(result.rows("grades"))},
    )
