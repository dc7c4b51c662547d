"""A citation study as the one :class:`~sourcebias.report.model.Report` every command
renders: the answers' statuses (how many cite nothing, or a passage that does not exist), the
citation rates by source and rank and by source and position, the source effect (logit with rank
and position fixed effects, and matched twins), and the position and rank effects."""

from __future__ import annotations

from typing import Any

from sourcebias.citations.result import CitationResult


def _ci(lo: Any, hi: Any, signed: bool = False) -> str:
    if lo is None:
        return "–"
    return f"[{lo:+.3f}, {hi:+.3f}]" if signed else f"[{lo:.3f}, {hi:.3f}]"


def _rate_cell(r: dict[str, Any] | None) -> str:
    """rate [CI] (cited/n); a cell whose interval used another method marked †, one without
    interval "[–]" (the notes and the caption say which and why)."""
    if r is None or r["rate"] is None:
        return "–"
    ci = "[–]" if r.get("low") is None else _ci(r["low"], r["high"]) + ("†" if r.get("note") else "")
    return f"{r['rate']:.3f} {ci} ({r['cited']}/{r['n']})"


def rate_caption(result: CitationResult, table: str) -> str:
    """The rate table's caption: the methods its cells actually used, and the cells without interval."""
    rows = result.rates.get(table, [])
    level = result.settings["level"]
    text = f"rate [{level:.0%} CI] (cited/shown); {result.method['rates']}"
    extreme = [r for r in rows if r.get("note")]
    refused = [r for r in rows if r.get("refused")]
    if extreme:
        text += f"; † ({len(extreme)} cells): {extreme[0]['note']}"
    if refused:
        text += f"; [–] ({len(refused)} cells): no interval, {'; '.join(sorted({r['refused'] for r in refused}))}"
    return text + "."


def rate_rows(result: CitationResult, table: str, key: str) -> tuple[list[dict[str, Any]], list[str]]:
    """One display row per rank (or position), a cell per source: rate [CI] (cited/n)."""
    rows = result.rates.get(table, [])
    sources = list(dict.fromkeys(r["source"] for r in result.rates.get("source", [])))
    levels = sorted({r[key] for r in rows})
    cell = {(r["source"], r[key]): r for r in rows}
    return [{key: lvl, **{f"src:{s}": _rate_cell(cell.get((s, lvl))) for s in sources}} for lvl in levels], sources


def effect_rows(result: CitationResult, term: str) -> list[dict[str, Any]]:
    """The effects of ``term`` with display fields."""
    out = []
    for r in result.effects:
        if r["term"] != term:
            continue
        undefined = r["estimate"] is None
        what = "log OR" if r["estimator"] == "logit" else "Δ cited (twin − original)"
        out.append(
            {
                **r,
                "what": what,
                "estimate_text": "undefined" if undefined else f"{r['estimate']:+.3f} {_ci(r['low'], r['high'], True)}",
                "or_text": "–" if r.get("odds_ratio") is None else f"{r['odds_ratio']:.2f}",
                "ame_text": "–" if r.get("ame") is None else f"{r['ame']:+.3f} {_ci(r['ame_low'], r['ame_high'], True)}",
                "n_text": f"{r['pairs']} pairs" if r["estimator"] == "twins" else f"{r['n']} rows",
                "status_text": r["status"] + (f": {r['note']}" if r["note"] and r["status"] == "undefined" else ""),
            }
        )
    for row in out:  # an estimate without interval says why, as an undefined one does
        if row["status"] == "no_interval" and row["note"]:
            row["status_text"] += f": {row['note']}"
    return out


def _answers_table(result: CitationResult) -> Any:
    """The table of the answers by status, with the caption that says what each status means."""
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    s, c = result.settings, result.counts
    return Table(
        "answers",
        "Answers by status",
        [Column(k, k, "int") for k in ("answers", "cited", "out_of_range", "no_citation", "empty", "truncated", "echoed") if k in c],
        [c],
        f"cited: every number names a passage; out_of_range: a number outside 1..{s['k']} (dropped; with none "
        f"inside, the answer cites nothing); no_citation / empty: cites nothing (uncited={s['uncited']}); truncated: "
        "stopped at max_tokens; echoed: repeats the prompt (its passage headers or text: not read as citations).",
        status_rows=False,
    )


def _source_effect_table(result: CitationResult) -> Any:
    """The table of the source effect on citation (logit and twins estimators)."""
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    m = result.method
    effect_cols = [
        Column("estimator", "estimator", "text"),
        Column("level", "source", "text"),
        Column("estimate_text", "estimate [CI]", "cell"),
        Column("or_text", "odds ratio", "cell"),
        Column("ame_text", "AME on P(cited) [CI]", "cell"),
        Column("p", "p", "p"),
        Column("n_text", "n", "cell"),
        Column("queries", "queries", "int"),
        Column("status_text", "status", "text"),
    ]
    return Table(
        "effects:source",
        "Source effect on citation, conditional on rank (and position)",
        effect_cols,
        effect_rows(result, "source"),
        f"estimate: logit, the log odds ratio LLM vs human; twins, the mean of cited(twin) − cited(original). logit: {m['logit']}. twins: {m['twins']}.",
        status_rows=False,
    )


def citation_report(result: CitationResult, title: str | None = None) -> Any:
    """The :class:`~sourcebias.report.model.Report` of a citation study.

    Args:
        result: the study.
        title: the report's title (default: one naming the generator).

    Returns:
        A Report: answers, rates by rank, rates by position, source effect, position and rank
        effects; the notes; the passages and effects as data for CSV.
    """
    import pandas as pd

    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Report, Table

    tables = [_answers_table(result)]
    for key, table, heading in (("rank", "source_rank", "retrieval rank"), ("position", "source_position", "position in the context")):
        rows, sources = rate_rows(result, table, key)
        cols = [Column(key, key, "int")] + [Column(f"src:{x}", x, "cell") for x in sources]
        tables.append(Table(f"rates:{key}", f"P(cited | source, {heading})", cols, rows, rate_caption(result, table), status_rows=False))
    tables.append(_source_effect_table(result))
    fe = effect_rows(result, "rank") + effect_rows(result, "position")
    fe_cols = [
        Column("term", "term", "text"),
        Column("level", "level (vs 1)", "text"),
        Column("estimate_text", "log OR [CI]", "cell"),
        Column("or_text", "odds ratio", "cell"),
        Column("p", "p", "p"),
    ]
    # an empty table says why it is empty (every level left out, or no logit fitted), never a bare header
    fe_caption = "" if fe else "none estimated: the logit was not fitted or every rank and position level was left out (see the notes)."
    tables.append(Table("effects:position", "Rank and position effects (logit, against rank 1 / position 1)", fe_cols, fe, fe_caption, status_rows=False))
    return Report(
        title or f"Sources cited by {result.generator_name}",
        tables,
        notes=list(result.notes),
        data={"effects": pd.DataFrame(result.effects), "passages": result.passages},
    )
