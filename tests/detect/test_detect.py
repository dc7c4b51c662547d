"""Zero-shot detectors: Fast-DetectGPT's analytic criterion and Binoculars computed by hand from a
tiny random-weight causal LM's logits (a per-position loop over the vocabulary, independent of
the batched code), Raidar's rewrite similarity by hand, the rewrite cache, `sourcebias detect`
and its folder, and the folder read back by the audit."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from detect_helpers import tiny_causal_lm

from sourcebias.core.errors import ConfigError

TEXTS = [
    "alpha beta gamma delta the study of cells",
    "news on patients and cells in the a of",
    "kappa",
    "iota theta eta zeta epsilon delta gamma beta alpha the a of and is in on",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-lm")
    return {
        "a": tiny_causal_lm(root / "a", seed=0),
        "b": tiny_causal_lm(root / "b", seed=1),
        "other": tiny_causal_lm(root / "other", seed=2, extra_token="zzz"),
        "cache": root / "cache",
    }


def by_hand(score_folder: Path, ref_folder: Path, text: str, max_tokens: int) -> tuple[int, float, float, float]:
    """``(n, Σ ll, Σ μ, Σ σ²)`` with an explicit loop over positions and the vocabulary."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(score_folder)
    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"][:max_tokens]
    x = torch.tensor([ids])
    with torch.no_grad():
        ls = AutoModelForCausalLM.from_pretrained(score_folder).eval()(x).logits[0].double()
        lr = AutoModelForCausalLM.from_pretrained(ref_folder).eval()(x).logits[0].double()
    sums = [0.0, 0.0, 0.0]
    for t in range(1, len(ids)):
        logp = (ls[t - 1] - torch.logsumexp(ls[t - 1], 0)).tolist()
        z = torch.logsumexp(lr[t - 1], 0).item()
        q = [math.exp(v - z) for v in lr[t - 1].tolist()]
        mean = sum(qi * li for qi, li in zip(q, logp))
        sums[0] += logp[ids[t]]
        sums[1] += mean
        sums[2] += sum(qi * li * li for qi, li in zip(q, logp)) - mean * mean
    return len(ids) - 1, *sums


def test_fast_detectgpt_is_the_analytic_criterion_by_hand(tiny):
    from sourcebias.detect import build_detector

    det = build_detector(f"fast-detectgpt:lm:{tiny['a']},max_tokens=6", cache_dir=tiny["cache"])
    got = det.score_texts(TEXTS)
    for text, g in zip(TEXTS, got):
        _, ll, mean, var = by_hand(tiny["a"], tiny["a"], text, 6)
        assert g == pytest.approx((ll - mean) / math.sqrt(var), rel=1e-4)
    again = build_detector(f"fast-detectgpt:lm:{tiny['a']},max_tokens=6", cache_dir=tiny["cache"])
    assert np.array_equal(again.score_texts(TEXTS[::-1]), got[::-1])  # from the store, in any order


def test_binoculars_by_hand_and_refused_without_a_shared_tokenizer(tiny):
    from sourcebias.detect import build_detector

    det = build_detector(f"binoculars:lm:{tiny['a']}+lm:{tiny['b']},max_tokens=8", cache_dir=tiny["cache"])
    got = det.score_texts(TEXTS[:2])
    for text, g in zip(TEXTS[:2], got):
        n, ll, mean, _ = by_hand(tiny["a"], tiny["b"], text, 8)
        assert g == pytest.approx(-((-ll / n) / (-mean / n)), rel=1e-4)  # −log PPL / X-PPL
    other = build_detector(f"binoculars:lm:{tiny['a']}+lm:{tiny['other']}", cache_dir=tiny["cache"])
    with pytest.raises(ConfigError, match="share a tokenizer"):
        other.score_texts(TEXTS[:1])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("fast-detectgpt:smollm2", "lm:NAME"),
        ("binoculars:lm:smollm2", "two"),
        ("fast-detectgpt:lm:smollm2,max_tokens=x", "integer"),
        ("fast-detectgpt:lm:smollm2,temperature=1", "unknown option"),
        ("detectgpt:lm:x", "zero-shot detector"),
    ],
)
def test_bad_specs_are_refused_with_the_reason(spec, message):
    from sourcebias.detect import build_detector

    with pytest.raises(ConfigError, match=message):
        build_detector(spec)


def test_rewrite_similarity_by_hand():
    from sourcebias.detect.rewrites import rewrite_similarity

    # words a b c d -> a x c d e: substitute b, insert e: distance 2 over max(4, 5) words
    assert rewrite_similarity("a b c d", "A x c d e") == pytest.approx(1 - 2 / 5)
    assert rewrite_similarity("same words here", "same words here") == 1.0
    assert math.isnan(rewrite_similarity("", ""))


def test_rewrites_are_answers_in_the_store_and_a_torn_line_is_redone(tiny, tmp_path):
    from sourcebias.detect import build_detector

    spec = f"raidar:{tiny['a']},max_words=6,max_new_tokens=8"
    det = build_detector(spec, cache_dir=tmp_path)
    first = det.score_texts(TEXTS[:3])
    path = det.engine.client.store.path
    assert path.parent == tmp_path / "llmcalls"  # the one answer store, no cache of its own
    lines = path.read_text().splitlines()
    header, answers = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    assert header["format"] == 2 and header["identity"]["backend"] == "local" and len(answers) == 3
    assert all(set(a) == {"key", "answer", "usage"} and a["usage"]["prompt_tokens"] > 0 for a in answers)
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:10])  # a kill in the middle of the third answer
    again = build_detector(spec, cache_dir=tmp_path)
    second = again.score_texts(TEXTS[:3])
    assert again.engine.client.describe()["calls"] == {"calls": 3, "cached": 2, "computed": 1}  # only the torn one redone
    assert len(path.read_text().splitlines()) == 4 and len(set(again.engine.client.store.keys_on_disk())) == 3
    assert np.array_equal(np.isnan(first), np.isnan(second)) and np.allclose(first[np.isfinite(first)], second[np.isfinite(second)])
    assert again.describe()["models"]["client"]["usage"]["answers"]["calls"] == 3


def test_detect_command_writes_a_folder_the_audit_reads(tiny, tmp_path, capsys):
    from test_audit import run_cli, tiny_dataset

    from sourcebias.audit import read_scores
    from sourcebias.core.artifacts import load_artifact
    from sourcebias.detect import load_detection

    data = tiny_dataset(tmp_path / "data", 12, "d")
    out = tmp_path / "det"
    code, _, err = run_cli(
        ["detect", str(data), "--detector", f"fast-detectgpt:lm:{tiny['a']},max_tokens=8", "--cache-dir", str(tiny["cache"]), "-o", str(out)], capsys
    )
    assert code in (0, None), err
    res = load_detection(out)
    assert load_artifact(out) == res and len(res.scores) == 24 and res.detector["kind"] == "fast-detectgpt"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "detect" and manifest["parameters"]["detector"].startswith("fast-detectgpt:")
    from sklearn.metrics import roc_auc_score

    assert res.summary["labelled"]["auroc"] == pytest.approx(roc_auc_score(res.scores["source"] != "human", res.scores["score"]))
    assert read_scores(out) == read_scores(out / "scores.tsv") == res.score_map()
    code, _, err = run_cli(
        [
            "detect",
            str(data),
            "--detector",
            f"fast-detectgpt:lm:{tiny['a']},max_tokens=8",
            "--max-pairs",
            "3",
            "--cache-dir",
            str(tiny["cache"]),
            "-o",
            str(tmp_path / "d3"),
        ],
        capsys,
    )
    assert code in (0, None), err
    assert len(load_detection(tmp_path / "d3").scores) == 6


def test_a_detect_folder_is_the_simulations_detector_and_an_audit_detector(tiny, tmp_path, capsys):
    from types import SimpleNamespace

    from test_audit import run_cli, tiny_dataset

    from sourcebias.audit.detector import choose_threshold
    from sourcebias.detect import load_detection
    from sourcebias.simulate.intervene import build_detector, filter_by_detector

    data = tiny_dataset(tmp_path / "data", 12, "d")
    spec = f"fast-detectgpt:lm:{tiny['a']},max_tokens=8"
    code, _, err = run_cli(["detect", str(data), "--detector", spec, "--cache-dir", str(tiny["cache"]), "-o", str(tmp_path / "det")], capsys)
    assert code in (0, None), err
    det = build_detector(SimpleNamespace(intervention=SimpleNamespace(detector=str(tmp_path / "det"), threshold="youden"), cache_dir=tiny["cache"]))
    s = load_detection(tmp_path / "det").scores
    assert det.threshold == pytest.approx(choose_threshold((s["source"] != "human").to_numpy(), s["score"].to_numpy()))  # calibrated on the folder's own scores
    assert det.info["spec"] == spec and det.calibration().pairs == 12
    from sourcebias.data import load_dataset

    corpus = load_dataset(data, split=None).corpus
    records = [{"_id": f"new{i}", "title": "", "text": t, "metadata": {"added": True}} for i, t in enumerate(TEXTS)]
    filter_by_detector(records, corpus, "round1", det)
    from sourcebias.detect import build_detector as zero_shot

    direct = zero_shot(spec, cache_dir=tiny["cache"]).score_texts(TEXTS)  # new documents are scored by the folder's spec
    assert np.allclose([r["metadata"]["detector_score"] for r in records], direct)
    assert [r["metadata"]["added"] for r in records] == [bool(x < det.threshold) for x in direct]


def test_detect_killed_mid_way_resumes_where_it_stopped(tiny, tmp_path, monkeypatch, capsys):
    from test_audit import run_cli, tiny_dataset

    from sourcebias.detect import load_detection
    from sourcebias.detect.criteria import LMCriterion

    monkeypatch.setenv("SOURCEBIAS_FLUSH_SECONDS", "0.001")  # every finished batch is written at once
    data = tiny_dataset(tmp_path / "data", 10, "k")
    cache = tmp_path / "cache"
    args = [
        "detect",
        str(data),
        "--detector",
        f"fast-detectgpt:lm:{tiny['a']},max_tokens=8,batch_size=4",
        "--cache-dir",
        str(cache),
        "-o",
        str(tmp_path / "out"),
    ]
    encoded: list[int] = []
    real = LMCriterion.encode_documents

    def dies_on_the_third_batch(self, texts):
        if len(encoded) == 2:
            raise KeyboardInterrupt
        encoded.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(LMCriterion, "encode_documents", dies_on_the_third_batch)
    code, _, err = run_cli(args, capsys)
    assert code == 130 and not (tmp_path / "out").exists() and sum(encoded) == 8  # two batches done, the folder not committed
    encoded.clear()
    monkeypatch.setattr(LMCriterion, "encode_documents", lambda self, texts: encoded.append(len(texts)) or real(self, texts))
    code, _, err = run_cli(args, capsys)
    assert code in (0, None), err
    scores = load_detection(tmp_path / "out").scores
    assert len(set(zip(scores["doc_id"], scores["source"]))) == 20 and scores["score"].notna().all()
    assert sum(encoded) == 20 - 8  # the rerun computed only what the killed run had not


def test_audit_with_a_zero_shot_detector_calibrated_on_twins(tiny, tmp_path, capsys, monkeypatch):
    from test_audit import run_cli, tiny_dataset

    from sourcebias.audit import load_audit
    from sourcebias.data import load_dataset
    from sourcebias.detect import build_detector
    from sourcebias.evaluation import evaluate, parse_measure
    from sourcebias.retrieval import build_retriever

    monkeypatch.setenv("SOURCEBIAS_CACHE", str(tiny["cache"]))
    target, calib = tiny_dataset(tmp_path / "t", 30, "t"), tiny_dataset(tmp_path / "c", 40, "c")
    evaluate(load_dataset(target), [build_retriever("bm25")], measures=[parse_measure("NDCG@3")]).save(tmp_path / "eval")
    spec = f"fast-detectgpt:lm:{tiny['a']},max_tokens=8"
    args = [
        "audit",
        str(tmp_path / "eval"),
        "--detector",
        spec,
        "--calibrate",
        str(calib),
        "--max-pairs",
        "12",
        "--k",
        "3",
        "--resamples",
        "200",
        "--check-resamples",
        "50",
        "-o",
        str(tmp_path / "a"),
    ]
    code, _stdout, err = run_cli(args, capsys)
    assert code in (0, None), err
    res = load_audit(tmp_path / "a")
    assert res.detector["spec"] == spec and res.detector["kind"] == "zero-shot" and res.detector["pairs"] == 12 and len(res.calibration) == 24
    cal = load_dataset(calib, split=None).corpus
    keys = list(zip(res.calibration["doc_id"], res.calibration["source"]))
    direct = build_detector(spec).score_texts([cal.texts[cal.position(d, s)] for d, s in keys])
    assert np.allclose(res.calibration["score"], direct)  # the calibration scores are the detector's own
    assert res.diagnostic["dimensions"] == ["score"]  # a zero-shot detector has its score only
    code, _, err = run_cli(["audit", str(tmp_path / "eval"), "--detector", spec, "-o", str(tmp_path / "b")], capsys)
    assert code == 2 and "--calibrate" in err
