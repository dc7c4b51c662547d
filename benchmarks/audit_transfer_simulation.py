"""How often does the audit's transfer check raise a false alarm, how often does it miss a corrected
figure that is wrong, and how often does the corrected CI cover the truth when the audit offers it
as an estimate? Synthetic detector scores with a domain shift between the calibration and the
audited documents.

    python benchmarks/audit_transfer_simulation.py -o out/transfer-sim [--audits 200] [--seed 0]

Each simulated audit: a detector whose scores are N(0, 1) for human and N(1.2, 1) for LLM text on
the calibration domain (AUC ≈ 0.80), calibrated on 150 twin pairs (threshold: Youden); 80
queries × top 10 on the audited domain, each query's true LLM share drawn from Beta(3, 5), each
document's score drawn from the audited domain's components; the audit itself (sourcebias.audit.
audit: Rogan–Gladen, joint bootstrap of 500 resamples, the transfer check with 100). Scenarios
(the audited domain's components): same as calibration; both moved by +0.5 and +1.0; the LLM
component halfway to the human one (Se + Sp − 1 falls, as nfcorpus → nq-utd); both spread ×1.3.
Each scenario is run twice: with Se and Sp from the calibration twins, and with Sp (and the
check's human component) from a human reference set of 100 audited-domain documents. The
calibration twins are of the audited domain in "calibration holds" only (``calibration_domain``
"audited"; the others "other"): the audit offers a corrected figure as an estimate (reliable)
only when it is calibrated in domain and the check passes.
Writes OUTPUT/simulation.csv (one row per audit), OUTPUT/summary.md and OUTPUT/transfer_check.png.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

SCENARIOS = {  # name -> (human mean, human sd, LLM mean, LLM sd) on the audited domain
    "calibration holds": (0.0, 1.0, 1.2, 1.0),
    "both shifted +0.5": (0.5, 1.0, 1.7, 1.0),
    "both shifted +1.0": (1.0, 1.0, 2.2, 1.0),
    "LLM halfway to human": (0.0, 1.0, 0.6, 1.0),
    "both spread ×1.3": (0.0, 1.3, 1.2, 1.3),
}
CAL = (0.0, 1.0, 1.2, 1.0)


def one_audit(rng, scenario, reference=0, queries=80, k=10, pairs=150):

    from sourcebias.audit import AuditSettings, CalibratedDetector, audit
    from sourcebias.audit.detector import calibration_table, choose_threshold
    from sourcebias.data.corpus import Corpus
    from sourcebias.retrieval.run import Run

    hm, hs, lm, ls = SCENARIOS[scenario]
    p_q = rng.beta(3.0, 5.0, size=queries)
    is_llm = np.concatenate([(rng.random((queries, k)) < p_q[:, None]).ravel(), np.zeros(reference, dtype=bool)])  # then the reference set's human documents
    scores = np.where(is_llm, rng.normal(lm, ls, is_llm.size), rng.normal(hm, hs, is_llm.size))
    corpus = Corpus.keys_only([f"d{i}" for i in range(is_llm.size)], ["llm" if x else "human" for x in is_llm], source_order=["human", "llm"])
    run = Run(corpus, "sim", {f"q{q}": np.arange(q * k, (q + 1) * k) for q in range(queries)}, {f"q{q}": -np.arange(k, dtype=float) for q in range(queries)})
    cal_h, cal_l = rng.normal(CAL[0], CAL[1], pairs), rng.normal(CAL[2], CAL[3], pairs)
    lab = np.tile([False, True], pairs)
    cal = np.column_stack([cal_h, cal_l]).ravel()
    thr = choose_threshold(lab, cal)
    table = calibration_table(np.repeat([f"p{i}" for i in range(pairs)], 2), ["human", "llm"] * pairs, lab, cal, thr)
    det = CalibratedDetector(score=lambda _c, pos: scores[np.asarray(pos)], threshold=thr, calibration_table=table, info={"kind": "simulated"})
    ref = [(f"d{i}", "human") for i in range(queries * k, queries * k + reference)] or None
    domain = (
        "audited" if SCENARIOS[scenario] == CAL else "other"
    )  # the calibration twins are of the audited domain only where its components are the calibration's
    res = audit(
        {"sim": run},
        det,
        AuditSettings(resamples=500, check_resamples=100, seed=int(rng.integers(1 << 31))),
        human_source="human",
        reference=ref,
        calibration_domain=domain,
    )
    r = res.row("sim", "Share@10")
    return {
        "scenario": scenario,
        "reference": reference,
        "passed": res.diagnostic["passed"],
        "reliable": res.reliable,
        "p_value": res.diagnostic["p_value"],
        "true": r["true"],
        "naive": r["naive"],
        "corrected": r["corrected"],
        "low": r["corrected_low"],
        "high": r["corrected_high"],
        "covers": r["corrected_covers"],
        "precise": r["precise"],
        "se": r["sensitivity"],
        "sp": r["specificity"],
    }


def summarise(frame):
    rows = []
    for (name, reference), g in frame.groupby(["scenario", "reference"], sort=False):
        passed, offered = g[g["passed"]], g[g["reliable"]]
        covers = g["covers"].astype(bool)
        rows.append(
            {
                "scenario": name,
                "reference": reference,
                "audits": len(g),
                "flagged": float((~g["passed"]).mean()),
                "coverage_all": float(covers.mean()),
                "coverage_when_passed": float(passed["covers"].astype(bool).mean()) if len(passed) else float("nan"),
                "passed": len(passed),
                "misses_check_only": float((g["passed"] & ~covers).mean()),
                "offered": len(offered),
                "coverage_when_offered": float(offered["covers"].astype(bool).mean()) if len(offered) else float("nan"),
                "misses": float((g["reliable"] & ~covers).mean()),
                "mean_abs_error": float((g["corrected"] - g["true"]).abs().mean()),
            }
        )
    return rows


def markdown(rows, args) -> str:
    lines = [
        f"Transfer check, simulated: {args.audits} audits per scenario (80 queries × top 10; 150 calibration pairs; 500 joint resamples; check at α = 0.05 with 100 resamples), seed {args.seed}.",
        "",
        "| audited domain | human reference set | flagged by the check | corrected CI covers (all) | covers when the check passes (n) | the check alone: passed and CI misses "
        "| offered as an estimate (in domain, check passed) | covers when offered | miss: offered and CI misses | mean abs. error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        offered = f"{r['coverage_when_offered']:.1%}" if r["offered"] else "–"
        lines.append(
            f"| {r['scenario']} | {r['reference'] or '–'} | {r['flagged']:.1%} | {r['coverage_all']:.1%} | {r['coverage_when_passed']:.1%} ({r['passed']}) | {r['misses_check_only']:.1%} "
            f"| {r['offered'] / r['audits']:.1%} | {offered} | {r['misses']:.1%} | {r['mean_abs_error']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [
        r["scenario"].replace(" to ", "\nto ").replace(" shifted", "\nshifted").replace(" spread", "\nspread")
        + (f"\n+ {r['reference']} human ref." if r["reference"] else "")
        for r in rows
    ]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(13, 4.6))
    for i, (key, label, color) in enumerate(
        (
            ("flagged", "flagged by the check", "tab:red"),
            ("coverage_when_passed", "CI covers | check passed", "tab:blue"),
            ("misses_check_only", "the check alone: passed, CI misses", "tab:gray"),
            ("misses", "offered as an estimate, CI misses", "black"),
        )
    ):
        ax.bar(x + (i - 1.5) * 0.2, [r[key] for r in rows], 0.2, label=label, color=color)
    ax.axhline(0.95, color="tab:blue", linestyle=":", linewidth=1)
    ax.axhline(0.05, color="tab:red", linestyle=":", linewidth=1)
    ax.set_xticks(x, names, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of audits")
    ax.set_title(f"The transfer check on {rows[0]['audits']} simulated audits per scenario (Share@10)", fontsize=10, pad=22)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", type=int, default=100, help="size of the human reference set of the second run of each scenario")
    ap.add_argument("--replot", action="store_true", help="summarise and draw OUTPUT/simulation.csv again without simulating")
    args = ap.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    if args.replot:
        frame = pd.read_csv(args.output / "simulation.csv")
        for c in ("covers", "passed", "reliable"):
            frame[c] = frame[c].map({True: True, False: False, "True": True, "False": False})
    else:
        frame = pd.DataFrame([one_audit(rng, s, ref) for s in SCENARIOS for ref in (0, args.reference) for _ in range(args.audits)])
        frame.to_csv(args.output / "simulation.csv", index=False)
    rows = summarise(frame)
    text = markdown(rows, args) + f"\nCommand: `python {' '.join(sys.argv)}` ({time.perf_counter() - t0:.0f} s)\n"
    (args.output / "summary.md").write_text(text, encoding="utf-8")
    plot(rows, args.output / "transfer_check.png")
    print(text)


if __name__ == "__main__":
    main()
