"""Does `sourcebias audit` recover the true source bias when the sources are hidden? Each of nq-utd
and nfcorpus is audited with a detector calibrated on the *other* dataset's twins (nothing from
the audited dataset's labels), or with ``--calibrate-on same`` on held-out twins of the audited
dataset itself (in domain), for BM25 and MiniLM; the naive and the corrected Share@10 and
ΔNDSR@10 are set beside the true values (from the audited corpus's source labels, which the audit
never reads), with the transfer check's verdict, what the audit calls the corrected figure
(ok, IMPRECISE, UNRELIABLE: calibrated on another domain, or a failed check) and the issue's
targets (Share@10 within ±0.05 with a 95% CI that covers the truth and is at most ±0.10 wide;
ΔNDSR@10 within ±0.10).

    python benchmarks/audit_validation.py -o OUT --evaluate-nq-utd EVAL_NQ --evaluate-nfcorpus EVAL_NF
        [--detector builtin | --detector fast-detectgpt:lm:smollm2,max_tokens=64] [--max-pairs 300] [--max-queries 80] [--calibrate-on other|same]

EVAL_*: `sourcebias evaluate DATASET -r bm25 -r minilm` folders (nfcorpus with --split dev). Writes
one audit folder per audited dataset (OUT/<audited>: the command's own folder) and prints the
table as Markdown (also OUT/table.md). Detector values come from the caches, so a rerun is fast.
The datasets are found as ``benchmarks/script_data.py`` says (nq-utd ships with sourcebias;
nfcorpus after ``sourcebias download nfcorpus``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import script_data


def fmt(v, signed=False):
    return "–" if v is None else (f"{v:+.3f}" if signed else f"{v:.3f}")


TARGETS = {"Share": 0.05, "ΔNDSR": 0.10}


def row_line(audited: str, calibrated: str, r: dict, check: dict) -> str:
    s = r["quantity"] != "Share"
    ci = "–" if r["corrected_low"] is None else f"[{r['corrected_low']:.3f}, {r['corrected_high']:.3f}]"
    err = None if r["corrected"] is None else r["corrected"] - r["true"]
    hit = err is not None and abs(err) <= TARGETS[r["quantity"]] and (s or (r["corrected_covers"] and (r["corrected_high"] - r["corrected_low"]) / 2 <= 0.10))
    verdict = "passed" if check["passed"] else f"**flagged** (p = {check['p_value']:.3g})"
    reason = r.get("unreliable_reason") or ""
    called = (
        ("UNRELIABLE (" + ("another domain" if reason.startswith("calibrated on another domain") else "the check") + ")")
        if not r["reliable"]
        else "IMPRECISE"
        if r.get("precise") is False
        else "ok"
    )
    covers = {True: "yes", False: "no", None: "–"}[r["corrected_covers"]]
    return (
        f"| {audited} | {calibrated} | {r['run']} | {r['measure']} | {fmt(r['naive'], s)} | {fmt(r['corrected'], s)} {ci} | {fmt(r['true'], s)} | {fmt(err, True)} | "
        f"{covers} | {'yes' if hit else 'no'} | {verdict} | {called} |"
    )


def reference_file(audited: str, n: int, output: Path) -> Path:
    """A TSV naming ``n`` seeded human documents of the audited corpus (read from its human
    source file: what a user who knows some documents' provenance would list)."""
    import numpy as np

    ids = [r["_id"] for r in script_data.records(audited, "corpus/human.jsonl")]
    chosen = sorted(ids[i] for i in np.random.default_rng(12345).permutation(len(ids))[:n])
    path = output / f"human-reference-{audited}.tsv"
    output.mkdir(parents=True, exist_ok=True)
    path.write_text("doc_id\tsource\n" + "".join(f"{d}\thuman\n" for d in chosen), encoding="utf-8")
    return path


HEADER = [
    "| audited | calibrated on | run | measure | naive | corrected [95% CI] | true | corrected − true | CI covers | target met | transfer check | corrected is |",
    "|---|---|---|---|---:|---:|---:|---:|---|---|---|---|",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--evaluate-nq-utd", type=Path)
    ap.add_argument("--evaluate-nfcorpus", type=Path)
    ap.add_argument("--detector", default="builtin", help="builtin (logistic regression, no LM) or a zero-shot spec")
    ap.add_argument("--max-pairs", type=int, default=300)
    ap.add_argument("--max-queries", type=int, default=80)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--calibrate-on", choices=("other", "same"), default="other", help="the other dataset's twins, or held-out twins of the audited dataset (in domain)"
    )
    ap.add_argument(
        "--human-reference",
        type=int,
        default=0,
        metavar="N",
        help="give the audit N seeded human documents of the audited corpus as its human reference set (standing in for documents a user knows to be human, e.g. written before 2022)",
    )
    args = ap.parse_args()

    from sourcebias.audit import AuditRuns, AuditSettings, DetectorOptions, run_audit

    folders = {"nq-utd": args.evaluate_nq_utd, "nfcorpus": args.evaluate_nfcorpus}
    lines = list(HEADER)
    t0 = time.perf_counter()
    for audited, other in (("nq-utd", "nfcorpus"), ("nfcorpus", "nq-utd")):
        other = audited if args.calibrate_on == "same" else other
        if folders[audited] is None:
            continue  # that direction is not asked for
        builtin = args.detector == "builtin"
        calibration = script_data.dataset(other)
        options = DetectorOptions(
            train=calibration if builtin else None,
            zero_shot=None if builtin else args.detector,
            calibrate=None if builtin else calibration,
            max_pairs=args.max_pairs,
            seed=args.seed,
        )
        reference = reference_file(audited, args.human_reference, args.output) if args.human_reference else None
        result, _ = run_audit(
            folders[audited],
            args.output / audited,
            detector=options,
            settings=AuditSettings(ks=(10,), resamples=args.resamples, seed=args.seed),
            overwrite=True,
            runs=AuditRuns(max_queries=args.max_queries),
            human_reference=reference,
        )
        lines += [row_line(audited, other, r, result.diagnostic) for r in result.rows]
        print(lines[-4:], flush=True)
    ref = f"; Sp from {args.human_reference} human documents of the audited corpus" if args.human_reference else ""
    text = "\n".join(
        [
            f"Detector: {args.detector}; calibration: {args.max_pairs} twin pairs of {'the other' if args.calibrate_on == 'other' else 'the audited'} dataset{ref}; "
            f"{args.max_queries} queries (seeded sample) × top 10; {args.resamples} resamples, seed {args.seed}.",
            "",
        ]
        + lines
    )
    text += f"\n\nCommand: `python {' '.join(sys.argv)}` ({time.perf_counter() - t0:.0f} s)\n"
    (args.output / "table.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    script_data.run(main)
