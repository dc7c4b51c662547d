"""Inputs that make a statistic undefined: a document without analyzer terms, exactly two
pairs, a single judged pair. Each gives finite values with the count left out, or a statistic
marked undefined with the reason — never a crash, never a silent number. Expected values are
computed here with Python sets, numpy and SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels
from scipy import stats

import sourcebias as sb

NO_TERMS = "To be or not to be"  # every word a stop word: no analyzer term
HUMAN = ["The cat sat on the mat in the warm sun.", NO_TERMS, "The river flooded the valley after heavy rain."]
LLM = ["A cat was sitting on the mat under the warm sun.", "To be, or not to be.", "After heavy rain, the river flooded the valley."]


def _dataset(root, human, llm, qrels=()):
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
    write_jsonl(root / "queries.jsonl", [{"_id": "q0", "text": "cat on a mat"}])
    write_qrels(root / "qrels" / "test.tsv", list(qrels) or [("q0", "d0", 1)])
    return root


def test_compare_paired_with_two_pairs_gives_no_hedges_g():
    from sourcebias.analysis.effects import compare_paired, paired_g

    a, b = np.array([1.0, 3.0]), np.array([0.5, 1.0])
    out = compare_paired(a, b)
    d = a - b  # 0.5, 2.0: mean 1.25, SD sqrt(2 · 0.75²) = 1.06066
    assert out["d_z"] == pytest.approx(1.25 / math.sqrt(2 * 0.75**2))
    assert math.isnan(out["g_z"]) and "at least 3 pairs" in out["g_z_note"]
    assert math.isnan(paired_g(a, b))
    assert out["paired_p"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert out["wilcoxon_p"] == pytest.approx(stats.wilcoxon(a, b).pvalue)
    assert out["n"] == 2 and out["mean_difference"] == pytest.approx(d.mean())
    # three pairs: J(2) = Γ(1) / (sqrt(1) · Γ(1/2)) = 1 / sqrt(π)
    a3, b3 = np.array([1.0, 3.0, 2.0]), np.array([0.5, 1.0, 1.5])
    d3 = a3 - b3
    assert compare_paired(a3, b3)["g_z"] == pytest.approx(d3.mean() / d3.std(ddof=1) / math.sqrt(math.pi))


def test_artifacts_leave_out_a_document_without_terms_and_count_it(tmp_path):
    from sourcebias.analysis import artifacts as _artifacts
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    ds = sb.load_dataset(_dataset(tmp_path / "d", HUMAN, LLM), split=None)
    res = _artifacts.artifacts(ds, None)  # stopped with an error before
    analyzer = EnglishAnalyzer()
    docs = HUMAN + LLM
    terms = [analyzer(t) for t in docs]
    assert terms[1] == [] and terms[4] == []
    df = {w: sum(w in set(t) for t in terms) for w in set().union(*map(set, terms))}
    idf = {w: math.log(1 + (len(docs) - c + 0.5) / (c + 0.5)) for w, c in df.items()}
    medians = [float(np.median([idf[w] for w in t])) if t else None for t in terms]
    human = res.summary["per_source"]["median_idf"]["human"]
    assert human["n"] == 2 and human["left_out"] == 1
    assert human["mean"] == pytest.approx(np.mean([medians[0], medians[2]]))
    row = res.tables["comparisons"].set_index("feature").loc["median_idf"]
    assert row["paired_left_out"] == 1 and row["paired_n"] == 2
    assert row["paired_mean_difference"] == pytest.approx(np.mean([medians[3] - medians[0], medians[5] - medians[2]]))
    assert math.isnan(row["paired_g_z"])  # two pairs: undefined, and said so
    assert "at least 3 pairs" in row["paired_g_z_note"]


def test_quality_jaccard_mean_over_pairs_with_terms(tmp_path):
    from sourcebias.analysis import quality as _quality
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    ds = sb.load_dataset(_dataset(tmp_path / "d", HUMAN, LLM), split=None)
    res = _quality.quality(ds, "minilm", options={"cache_dir": tmp_path / "cache"})
    analyzer = EnglishAnalyzer()
    hand = [len(set(analyzer(a)) & set(analyzer(b))) / len(set(analyzer(a)) | set(analyzer(b))) for a, b in zip(LLM, HUMAN) if analyzer(a) or analyzer(b)]
    entry = res.summary["sources"]["llm"]
    assert len(hand) == 2 and entry["jaccard_mean"] == pytest.approx(np.mean(hand)) and entry["jaccard_left_out"] == 1
    assert entry["overlap_left_out"] == 1 and "left out" in entry["left_out_reason"]


def test_direction_with_a_single_judged_pair_reports_the_held_out_share_as_undefined(tmp_path, capsys):
    from sourcebias.analysis import direction as _direction
    from sourcebias.cli.main import main

    root = _dataset(tmp_path / "d", HUMAN[:1], LLM[:1])
    ds = sb.load_dataset(root, split="test")
    res = _direction.direction(ds, "minilm", permutations=10, options={"cache_dir": tmp_path / "cache"})  # raised before
    gap = res.summary["sources"]["llm"]["score_gap"]
    assert gap["triples"] == 1 and gap["share_along_held_out"] is None and gap["held_out_triples"] == 0
    assert gap["held_out_note"].startswith("undefined: the estimation half is empty (1 twin pair)")
    with pytest.raises(SystemExit) as info:
        main(["analyze", "direction", str(root), "--permutations", "10", "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr()
    assert info.value.code in (0, None), out.err
    assert "held out: undefined" in out.out
