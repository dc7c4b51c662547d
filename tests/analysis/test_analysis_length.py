"""`analyze length`: words and MiniLM tokens of a tiny corpus counted by hand (and by the tokenizer
itself), per-pair ratios, per-query means over judged pairs, g_z written out from its formula and
the Wilcoxon test against SciPy on the same vectors; the output folder, its figure and the field."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels
from scipy import stats

import sourcebias as sb
from sourcebias.analysis import length as ln
from sourcebias.analysis.result import AnalysisResult
from sourcebias.cli.main import main

# (title, human text, LLM text); twins keep the human title
DOCS = [
    ("", "the cat sat on the mat", "the cat sat on the mat all day"),
    ("", "dogs bark at night.", "at night, dogs bark."),
    ("", "the river is long", "the river is very long and wide"),
    ("", "fresh bread every morning", "bread"),
    ("Birds", "birds sing", "snowboarding birds sing"),
]
# by hand: whitespace words; MiniLM WordPiece tokens (punctuation apart, 'snowboarding' = snow ##boarding)
WORDS_H, WORDS_L = [6, 4, 4, 4, 2], [8, 4, 7, 1, 3]
TOKENS_H, TOKENS_L = [6, 5, 4, 4, 2], [8, 6, 7, 1, 4]
QRELS = [("q0", "d0", 1), ("q0", "d1", 0), ("q1", "d2", 1), ("q1", "d3", 1), ("q2", "d4", 2)]
QUERY_PAIRS = {"q0": [0, 1], "q1": [2, 3], "q2": [4]}


@pytest.fixture
def tiny(tmp_path):
    root = tmp_path / "tiny"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": t, "text": h} for i, (t, h, _) in enumerate(DOCS)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": t, "text": x} for i, (t, _, x) in enumerate(DOCS)])
    write_jsonl(root / "queries.jsonl", [{"_id": q, "text": q} for q in QUERY_PAIRS])
    write_qrels(root / "qrels" / "test.tsv", QRELS)
    return root


def hand_g_z(a, b):
    """Hedges' g_z from its formula: J(n-1) * mean(d) / sd(d), J exact (Hedges 1981)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    df = d.size - 1
    j = math.gamma(df / 2) / (math.sqrt(df / 2) * math.gamma((df - 1) / 2))
    return j * d.mean() / d.std(ddof=1)


def test_counts_are_the_hand_counts_and_the_tokenizers_own():
    tok, config = ln.load_tokenizer("minilm")
    assert config["name"] == "sentence-transformers/all-MiniLM-L6-v2" and config["special_tokens"] is False
    human, llm = [h for _, h, _ in DOCS], [x for _, _, x in DOCS]
    assert ln.word_lengths(human).tolist() == WORDS_H and ln.word_lengths(llm).tolist() == WORDS_L
    assert ln.token_lengths(human, tok).tolist() == TOKENS_H and ln.token_lengths(llm, tok).tolist() == TOKENS_L
    assert ln.token_lengths(llm, tok).tolist() == [len(tok.tokenize(t)) for t in llm]
    assert tok.tokenize(llm[4]) == ["snow", "##boarding", "birds", "sing"]
    # batching changes nothing
    assert ln.token_lengths(llm, tok, batch=2).tolist() == TOKENS_L


def test_ratios_leave_out_a_human_copy_without_words():
    r = ln.ratios([3, 2, 0], [0, 4, 0])
    assert np.isnan(r[0]) and r[1] == 0.5 and np.isnan(r[2])
    s = ln.ratio_summary(r)
    assert s["n"] == 1 and s["left_out"] == 2 and s["median"] == 0.5 and s["share_llm_shorter"] == 1.0


def test_pairs_queries_and_effect_sizes_against_numpy_and_scipy(tiny):
    ds = sb.load_dataset(tiny, split="test")
    res = ln.length(ds, "minilm")
    pairs = res.tables["length_pairs"]
    assert pairs["doc_id"].tolist() == [f"d{i}" for i in range(5)]
    assert pairs["words_human"].tolist() == WORDS_H and pairs["words_llm"].tolist() == WORDS_L
    assert pairs["tokens_human"].tolist() == TOKENS_H and pairs["tokens_llm"].tolist() == TOKENS_L
    np.testing.assert_allclose(pairs["words_ratio"], np.array(WORDS_L) / np.array(WORDS_H))
    for unit, (a, b) in {"words": (WORDS_L, WORDS_H), "tokens": (TOKENS_L, TOKENS_H)}.items():
        c = res.summary["pairs"]["llm"][unit]["llm_vs_human"]
        w = stats.wilcoxon(a, b)
        assert c["n"] == 5 and c["wilcoxon_n"] == int(np.count_nonzero(np.subtract(a, b)))
        assert c["g_z"] == pytest.approx(hand_g_z(a, b), rel=1e-12)
        assert c["wilcoxon_w"] == pytest.approx(w.statistic) and c["wilcoxon_p"] == pytest.approx(w.pvalue, rel=1e-12)
        r = res.summary["pairs"]["llm"][unit]["ratio"]
        assert r["median"] == pytest.approx(np.median(np.divide(a, b)))
        assert r["geometric_mean"] == pytest.approx(math.exp(np.mean(np.log(np.divide(a, b)))))
    # words: one pair of equal length (d1) drops out of Wilcoxon's n
    assert res.summary["pairs"]["llm"]["words"]["llm_vs_human"]["wilcoxon_n"] == 4
    _check_queries(res)


def _check_queries(res):
    q = res.tables["length_queries"].set_index("query_id")
    assert q.loc["q0", "judged_pairs"] == 2 and q.loc["q0", "relevant_pairs"] == 1
    hm = {k: np.mean([WORDS_H[i] for i in v]) for k, v in QUERY_PAIRS.items()}
    lm = {k: np.mean([WORDS_L[i] for i in v]) for k, v in QUERY_PAIRS.items()}
    assert q["words_human_mean"].to_dict() == pytest.approx(hm) and q["words_llm_mean"].to_dict() == pytest.approx(lm)
    assert q.loc["q1", "words_ratio_mean"] == pytest.approx((7 / 4 + 1 / 4) / 2)
    c = res.summary["queries"]["llm"]["words"]["llm_vs_human"]
    a, b = [lm[k] for k in QUERY_PAIRS], [hm[k] for k in QUERY_PAIRS]
    assert c["n"] == 3 and c["g_z"] == pytest.approx(hand_g_z(a, b), rel=1e-12)
    assert c["wilcoxon_p"] == pytest.approx(stats.wilcoxon(a, b).pvalue, rel=1e-12)


def test_title_and_text_counts_the_title(tiny):
    ds = sb.load_dataset(tiny, split="test")
    pairs = ln.length(ds, "minilm", field="title+text").tables["length_pairs"].set_index("doc_id")
    assert pairs.loc["d4", "words_human"] == 3 and pairs.loc["d4", "words_llm"] == 4  # "Birds birds sing"
    assert pairs.loc["d4", "tokens_llm"] == 5 and pairs.loc["d0", "words_human"] == 6  # no title: unchanged


def test_cli_writes_the_folder_with_its_figure(tiny, tmp_path, capsys):
    out = tmp_path / "len"
    with pytest.raises(SystemExit) as info:
        main(["analyze", "length", str(tiny), "-o", str(out), "--split", "test"])
    assert (info.value.code or 0) == 0
    text = capsys.readouterr().out
    assert "field measured: text" in text and "g_z" in text and "Wilcoxon p" in text
    res = AnalysisResult.load(out)
    assert res.analysis == "length" and res.parameters["field"] == "text" and res.parameters["tokenizer"] == "minilm"
    assert set(res.tables) == {"length_documents", "length_pairs", "length_queries"}
    assert res.tables["length_pairs"]["words_llm"].tolist() == WORDS_L
    png = out / "figures" / "length_ratios.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "analyze length" and manifest["models"]["tokenizer"]["name"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_without_a_split_there_is_no_per_query_table_and_it_says_so(tiny):
    res = ln.length(sb.load_dataset(tiny, split=None), "minilm")
    assert len(res.tables["length_queries"]) == 0 and "give --split" in res.summary["queries"]["llm"]["note"]


def test_a_local_tokenizer_folder_gives_the_same_counts():
    from sourcebias.models.hub import packaged_model

    folder = packaged_model("sentence-transformers/all-MiniLM-L6-v2")
    if folder is None:
        pytest.skip("the packaged MiniLM is not installed")
    tok, _config = ln.load_tokenizer(folder)
    assert ln.token_lengths([x for _, _, x in DOCS], tok).tolist() == TOKENS_L
