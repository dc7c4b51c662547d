"""Detectors × datasets: AUROC of each detector on held-out twins of nq-utd and nfcorpus, within and
across datasets, from `sourcebias detect` folders (zero-shot detectors) and the built-in detector.

    # the zero-shot scores (resumable; the same seeded pairs in every folder):
    sourcebias detect nq-utd --detector fast-detectgpt:lm:smollm2,max_tokens=64 --max-pairs 200 -o DET/fdg-smollm2-nq-utd
    ... (fdg-gemma3-270m-*, raidar-smollm2-* with --max-pairs 20), then
    python benchmarks/detector_table.py --detect DET [--builtin-pairs 200]

A zero-shot detector is trained on nothing, so its AUROC is one figure per dataset; what crosses
datasets is its threshold: "J within" is Se + Sp − 1 at the Youden threshold chosen on the same
pairs (optimistic), "J across" at the threshold chosen on the other dataset's pairs — what an
audit calibrated on the other dataset gets. The built-in detector (logistic regression on length,
median IDF and the MiniLM direction, no LM) is trained on pairs of one dataset (held out from the
scored pairs) and scored on the other's: AUROC within and across. The datasets are found as
``benchmarks/script_data.py`` says (nq-utd ships with sourcebias; nfcorpus after ``sourcebias
download nfcorpus``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import script_data

DATASETS = ("nq-utd", "nfcorpus")
ANCHORS = (
    "Published, on other text with far larger models, so not comparable one to one: Fast-DetectGPT AUROC 0.9887 averaged over five source models scored by "
    "themselves and 0.9338 on ChatGPT/GPT-4 text with surrogate scoring models (the authors' README, baoguangsheng/fast-detect-gpt); Binoculars (Falcon-7B and "
    "Falcon-7B-instruct) over 90% of ChatGPT samples detected at a 0.01% false-positive rate (Hans et al., ICML 2024, abstract); Raidar (GPT-3.5 rewrites, a "
    "classifier on edit-distance features) F1 gains of up to 29 points over other detectors (Mao et al., ICLR 2024, README). RAID (Dugan et al., ACL 2024) shows "
    "detectors failing under paraphrase, and our twins are paraphrases."
)


def labelled(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from sourcebias.detect import load_detection

    s = load_detection(folder).scores
    ok = np.isfinite(s["score"].to_numpy())
    return (s["source"] != "human").to_numpy()[ok], s["score"].to_numpy()[ok]


def youden(is_llm: np.ndarray, scores: np.ndarray, threshold: float | None = None) -> tuple[float, float]:
    """``(threshold, Se + Sp − 1)`` at ``threshold`` (default: the Youden one of these scores)."""
    from sourcebias.audit.detector import choose_threshold

    thr = choose_threshold(is_llm, scores) if threshold is None else threshold
    flagged = scores >= thr
    return thr, float(flagged[is_llm].mean() + (~flagged[~is_llm]).mean() - 1)


def zero_shot_rows(det_dir: Path) -> list[str]:
    from sklearn.metrics import roc_auc_score

    rows = []
    names = sorted({p.name[: -len(d) - 1] for p in det_dir.iterdir() for d in DATASETS if p.is_dir() and p.name.endswith(f"-{d}")})
    for name in names:
        found = {d: labelled(det_dir / f"{name}-{d}") for d in DATASETS if (det_dir / f"{name}-{d}" / "detect.json").is_file()}
        for d, (y, s) in found.items():
            other = next((o for o in found if o != d), None)
            _, j_in = youden(y, s)
            j_across = youden(y, s, youden(*found[other])[0])[1] if other else float("nan")
            rows.append(f"| {name} | {d} | {(~y).sum()}/{y.sum()} | {roc_auc_score(y, s):.3f} | – | {j_in:.3f} | {j_across:.3f} |")
    return rows


def builtin_rows(pairs: int) -> list[str]:
    """The built-in detector trained on ``pairs`` pairs of each dataset (other than the scored
    ones), scored on the 200 seeded pairs of each."""
    from sklearn.metrics import roc_auc_score

    from sourcebias.audit import FeatureSpec, train_detector
    from sourcebias.data import load_dataset
    from sourcebias.detect import sample_positions

    ds = {d: load_dataset(script_data.dataset(d), split=None) for d in DATASETS}
    test = {d: sample_positions(ds[d], max_pairs=200, seed=0) for d in DATASETS}
    dets = {
        d: train_detector(ds[d], FeatureSpec(), max_pairs=pairs, calibration_share=0.5, seed=1) for d in DATASETS
    }  # seed 1: another pair sample than the scored one
    rows = []
    for d in DATASETS:
        y = np.array([ds[d].corpus.source_of(int(p)) != "human" for p in test[d]])
        within = dets[d].score(ds[d].corpus, test[d])
        other = next(o for o in DATASETS if o != d)
        across = dets[other].score(ds[d].corpus, test[d])
        rows.append(
            f"| built-in (no LM), trained on {d} / {other} | {d} | 200/200 | {roc_auc_score(y, within):.3f} | {roc_auc_score(y, across):.3f} | {youden(y, within)[1]:.3f} | "
            f"{youden(y, across, dets[other].threshold)[1]:.3f} |"
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--detect", type=Path, required=True, help="folder of `sourcebias detect` outputs named DETECTOR-DATASET")
    ap.add_argument("--builtin-pairs", type=int, default=200)
    args = ap.parse_args()
    print("| detector | scored on | documents (human/LLM) | AUROC (within) | AUROC (across) | J within | J across |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in zero_shot_rows(args.detect) + (builtin_rows(args.builtin_pairs) if args.builtin_pairs else []):
        print(row)
    print("\n" + ANCHORS)


if __name__ == "__main__":
    script_data.run(main)
