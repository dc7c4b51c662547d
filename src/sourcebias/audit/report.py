"""An audit as the one :class:`~sourcebias.report.model.Report` that every command renders
(terminal, Markdown, LaTeX, CSV, HTML through :mod:`sourcebias.report.render`): a table for
Share@k and one for ΔNDSR@k (naive, corrected with their CIs, the correction's flag, whether the
transfer check lets the corrected figure stand, and where the corpus has labels the truth),
captions that say what the detector and the intervals are, and the notes a reader must see."""

from __future__ import annotations

from typing import Any

from sourcebias.audit.result import AuditResult

_COVERS = {True: "yes", False: "no", None: "–"}


def _ci(lo: Any, hi: Any) -> str:
    return "–" if lo is None else f"[{lo:.3f}, {hi:.3f}]"


def _value(v: Any, signed: bool) -> str:
    return "–" if v is None else (f"{v:+.3f}" if signed else f"{v:.3f}")


def display_rows(result: AuditResult, measure: str) -> list[dict[str, Any]]:
    """The rows of ``measure`` (e.g. ``Share@10``) with the display fields the tables show (the
    raw fields kept)."""
    out = []
    for r in result.rows:
        if r["measure"] != measure:
            continue
        quantity = r["quantity"]
        status = (
            "UNRELIABLE" if not r.get("reliable", True) else "IMPRECISE" if r.get("precise") is False else "ok",
            r["flag"],
            f"{r['undefined_resamples']:,} undef." if r["undefined_resamples"] else "",
        )
        flag = ", ".join(x for x in status if x)
        signed = quantity != "Share"
        out.append(
            {
                **r,
                "naive_text": f"{_value(r['naive'], signed)} {_ci(r['naive_low'], r['naive_high'])}",
                "corrected_text": f"{_value(r['corrected'], signed)} {_ci(r['corrected_low'], r['corrected_high'])}",
                "flag_text": flag,
                "covers_text": _COVERS[r.get("corrected_covers")],
            }
        )
    return out


def _columns(quantity: str, truth: bool) -> list[Any]:
    from sourcebias.evaluation.stats import Column

    kind = "num" if quantity == "Share" else "delta"  # ΔNDSR's sign is coloured (< 0: LLM text higher)
    cols = [
        Column("run", "run", "text"),
        Column("naive_text", "naive [CI]", "cell"),
        Column("corrected_text", "corrected [CI]", "cell"),
        Column("flag_text", "corrected is", "text"),
    ]
    if truth:
        cols += [Column("true", "true", kind, 3), Column("covers_text", "CI covers", "text")]
    return cols


def caption(result: AuditResult) -> str:
    """What the figures are: the detector and its calibration, the intervals, the check."""
    d, s, c = result.detector, result.settings, result.diagnostic
    who = d.get("spec") or d.get("kind")
    auc = "–" if d.get("auc") is None else format(d["auc"], ".3f")
    sp_from = result.specificity_source
    if "specificity" in (result.in_domain or {}):  # the correction's Sp; the calibration twins' beside it
        sp_from += f" (the calibration twins' Sp: {d['specificity']:.3f})"
    parts = [
        f"Detector {who}: Se = {d['sensitivity']:.3f}, Sp = {result.specificity:.3f}, AUC = {auc}, threshold "
        f"{d['threshold']:.4g} ({d.get('threshold_rule')}), {d['pairs']:,} calibration pairs; Sp from the {sp_from}.",
        f"naive: the detector's labels; corrected: Rogan–Gladen; {s['level']:.0%} CIs, "
        f"{s['resamples']:,} joint resamples of queries and calibration pairs, seed {s['seed']}.",
    ]
    dom = result.domain or {}
    if dom:
        where = {"audited": "the audited domain", "other": "another domain: corrected figures unreliable", "unknown": "not known: corrected figures unreliable"}
        parts.append(f"Calibration twins from {where[dom['domain']]} ({dom['how']}).")
    if c:
        verdict = "passed" if c.get("passed") else "FAILED: corrected figures unreliable"
        parts.append(
            f"Transfer check (the audited documents against the calibration's mixture at share {c['share']:.3f}; score KS D = "
            f"{c['statistic']:.3f}; min-p over {len(c.get('p_values') or {})} statistics): p = {c['p_value']:.3g}, {verdict}."
        )
    half = s.get("max_half_width")
    if half is not None:
        parts.append(f"IMPRECISE: a corrected CI wider than ±{half:g} (Share; ±{2 * half:g} for ΔNDSR) does not pin the value down, whatever the check says.")
    few = sorted({r["queries"] for r in result.rows if str(r.get("imprecise_reason", "")).startswith("no ") and r.get("naive_low") is None})
    if few:
        parts.append(f"– : no interval, too few queries ({', '.join(map(str, few))}) to resample; see the notes.")
    if result.has_truth:
        parts.append("true: from the corpus's source labels, never read by the audit.")
    return " ".join(parts)


def audit_report(result: AuditResult, title: str | None = None) -> Any:
    """The :class:`~sourcebias.report.model.Report` of an audit.

    Args:
        result: the audit.
        title: the report's title (default: a generic one).

    Returns:
        A Report with one table per measure (Share@k, ΔNDSR@k), the caption on the last, the
        audit's notes, and the rows as data for CSV.
    """
    import pandas as pd

    from sourcebias.report.model import Report, Table

    truth = result.has_truth
    measures = list(dict.fromkeys(r["measure"] for r in result.rows))
    quantity = {r["measure"]: r["quantity"] for r in result.rows}
    titles = {"Share": "{m}: share of LLM text in the top k", "ΔNDSR": "{m}: NDSR human − NDSR LLM (< 0: LLM text ranked higher)"}
    tables = [
        Table(
            f"audit:{m}",
            titles[quantity[m]].format(m=m),
            _columns(quantity[m], truth),
            display_rows(result, m),
            caption(result) if i == len(measures) - 1 else "",
            status_rows=False,
        )
        for i, m in enumerate(measures)
    ]
    return Report(title or "Audit of source bias without provenance labels", tables, notes=list(result.notes), data={"audit_rows": pd.DataFrame(result.rows)})
