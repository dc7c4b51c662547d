"""LLM re-rankers (``rankgpt:``, ``llm-yesno:``): hand-worked permutations, windows and Borda
points; answers served through the same HTTP path as a real server (SimulatedServer) with known
content; the known-truth twin study; and small end-to-end runs with the offline SmolLM2."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus, Document
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.retrieval import build_retriever
from sourcebias.retrieval.rerankers.rankgpt import borda, input_orders, parse_permutation, rankgpt_messages, sliding_windows
from sourcebias.retrieval.rerankers.simulated_bias import biased_pair_responder, run_study
from sourcebias.retrieval.run import Run

PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.S)


def shown_passages(messages):
    return [PASSAGE.match(m["content"]).group(2) for m in messages if m["role"] == "user" and PASSAGE.match(m["content"])]


# -- hand-worked pieces --------------------------------------------------------------------------
def test_parse_permutation_repairs_by_rankgpts_rule_and_counts_each_repair():
    assert parse_permutation("[3] > [1] > [2]", 3) == ([2, 0, 1], {"unknown": 0, "duplicates": 0, "missing": 0})
    # 7 is unknown, the second [2] a repeat, [3] missing (appended in shown order after 2, 3, 1)
    assert parse_permutation("[2] > [4] > [2] > [7] > [1]", 4) == ([1, 3, 0, 2], {"unknown": 1, "duplicates": 1, "missing": 1})
    assert parse_permutation("I cannot rank these.", 3) == ([0, 1, 2], {"unknown": 0, "duplicates": 0, "missing": 3})


def test_sliding_windows_are_rankgpts_bottom_up():
    assert sliding_windows(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30), (0, 20)]
    assert sliding_windows(25, 20, 10) == [(5, 25), (0, 15)]
    assert sliding_windows(6, 3, 2) == [(3, 6), (1, 4), (0, 2)]
    assert sliding_windows(5, 20, 10) == [(0, 5)]


def test_input_orders_are_a_cyclic_latin_square_and_borda_points():
    square = [o.tolist() for o in input_orders(4, 4)]
    assert square == [[0, 1, 2, 3], [1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]]
    assert all(sorted(col) == [0, 1, 2, 3] for col in zip(*square))  # balanced: each passage at each position once
    # 3 orders of 20 (issue 40's design): offsets 0, 6, 13 (0, 6, 13 have no common divisor with 20)
    assert [int(o[0]) for o in input_orders(20, 3)] == [0, 6, 13]
    assert len(input_orders(2, 3)) == 2  # a window of 2 has 2 orders
    # n = 3: 2, 1, 0 points by rank; item 0: 2 + 1 + 2, item 1: 1 + 2 + 0, item 2: 0 + 0 + 1
    assert borda([[0, 1, 2], [1, 0, 2], [0, 2, 1]], 3).tolist() == [5.0, 3.0, 1.0]


def test_prompt_is_rankgpts_conversation():
    msgs = rankgpt_messages("who", ["a", "b"])
    assert msgs[0][0] == "system" and msgs[1][1].startswith("I will provide you with 2 passages")
    assert msgs[3:7] == (("user", "[1] a"), ("assistant", "Received passage [1]."), ("user", "[2] b"), ("assistant", "Received passage [2]."))
    assert msgs[-1][1].startswith("Search Query: who. \nRank the 2 passages above")


# -- through a simulated server ------------------------------------------------------------------
def valued_run(values):
    """One query whose first stage ranks documents with texts 'value V' in the given order."""
    docs = [Document(f"d{v}", "human" if v % 2 else "llm", "", f"value {v}") for v in values]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    positions = {"q": np.arange(len(values), dtype=np.int64)}
    return corpus, Run(corpus, "first", positions, {"q": -np.arange(len(values), dtype=float)}, {})


def by_value(messages, params):
    vals = [int(t.split()[1]) for t in shown_passages(messages)]
    return " > ".join(f"[{i + 1}]" for i in sorted(range(len(vals)), key=lambda i: -vals[i])), None


def test_sliding_window_bubbles_the_best_up_as_worked_by_hand():
    corpus, run = valued_run([1, 5, 2, 6, 3, 4])
    with SimulatedServer(by_value) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=6,window=3,step=2,cache=false").stages[0]
        out = stage.apply(run, {"q": "q"})
    # windows (3,6): [6,3,4] -> [6,4,3]; (1,4): [5,2,6] -> [6,5,2]; (0,2): [1,6] -> [6,1]
    assert [int(corpus.texts[i].split()[1]) for i in out.positions["q"]] == [6, 1, 5, 2, 4, 3]
    assert out.scores["q"].tolist() == [6, 5, 4, 3, 2, 1]
    info = out.info["stages"][-1]
    assert info["llm_answers"] == {"answers": 3, "repaired": 0, "unparseable": 0, "length_cut": 0, "ids_unknown": 0, "ids_duplicates": 0, "ids_missing": 0}


def scripted_rankgpt(texts):
    """A window of three passages shown in ``len(texts)`` orders, answered ``texts`` in turn: the run."""
    answers = iter(texts)
    _, run = valued_run([1, 2, 3])
    with SimulatedServer(lambda m, p: (next(answers), None)) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=3,window=3,orders={len(texts)},cache=false").stages[0]
        return stage.apply(run, {"q": "q"})


def test_malformed_answers_are_repaired_and_counted_in_the_evaluate_notes():
    from sourcebias.study.job import llm_stage_notes

    out = scripted_rankgpt(["[9] > [2] > [2]", "no idea"])
    a = out.info["stages"][-1]["llm_answers"]
    assert a == {"answers": 2, "repaired": 2, "unparseable": 1, "length_cut": 0, "ids_unknown": 1, "ids_duplicates": 1, "ids_missing": 5}
    notes = llm_stage_notes("r/mixed", out.info)
    assert notes[0][0] == "note" and "2 of 2 LLM answers repaired (1 with no ranking at all" in notes[0][1]


def test_an_echo_of_the_conversation_or_a_cut_reasoning_is_no_ranking():
    # issue 38 point 7: "Received passage [3]." (the conversation's last turn, repeated) read as "passage 3 first" before;
    # a reasoning model's <think> block is not read, its answer after it is
    out = scripted_rankgpt(["Received passage [3].", "<think>[1] looks best", "<think>[1] looks best</think>[3] > [1] > [2]"])
    a = out.info["stages"][-1]["llm_answers"]
    assert a == {"answers": 3, "repaired": 2, "unparseable": 2, "length_cut": 0, "ids_unknown": 0, "ids_duplicates": 0, "ids_missing": 6}
    assert "<think>" in out.info["stages"][-1]["repair_rule"]


def yesno_responder(messages, params):
    text = messages[-1]["content"]
    if "alpha" in text:
        return "Yes", [{"Yes": math.log(0.6), "No": math.log(0.2), "Maybe": math.log(0.1)}]
    return "No", [{"No": math.log(0.5), "The": math.log(0.1)}]  # Yes outside the top tokens


def test_llm_yesno_scores_are_p_yes_over_yes_plus_no_and_missing_answers_are_bounded_and_counted():
    docs = [Document("a", "human", "", "alpha text"), Document("b", "llm", "", "beta text")]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    run = Run(corpus, "first", {"q": np.array([1, 0])}, {"q": np.array([2.0, 1.0])}, {})
    with SimulatedServer(yesno_responder) as url:
        stage = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=2,cache=false").stages[0]
        out = stage.apply(run, {"q": "which"})
    assert out.positions["q"].tolist() == [0, 1]
    assert out.scores["q"] == pytest.approx([0.6 / 0.8, 0.1 / 0.6])  # Yes bounded by the lowest listed (0.1)
    assert out.info["stages"][-1]["choice_missing"] == 1
    with SimulatedServer(lambda m, p: ("Yes", None)) as url:
        stage = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=2,cache=false").stages[0]
        with pytest.raises(ConfigError, match="no log-probabilities"):
            stage.apply(run, {"q": "which"})


def test_known_truth_twin_study_recovers_the_injected_position_and_source_effects():
    theta, rho = 0.15, 0.7  # truth: position slope 2 rho - 1 = 0.4, source -2 theta = -0.3
    with SimulatedServer(biased_pair_responder(theta, rho, seed=11)) as url:
        coef = run_study(url, 300, theta=theta, rho=rho, seed=11)["coefficients"]
    for name, truth in (("position", 0.4), ("source:llm", -0.3)):
        lo, hi = coef[name]["ci"]
        assert lo <= truth <= hi and abs(coef[name]["estimate"] - truth) < 0.1


def test_options_are_checked_before_any_call():
    with pytest.raises(ConfigError, match="step"):
        build_retriever("bm25>>rankgpt:smollm2,depth=8,window=4,step=4")
    with pytest.raises(ConfigError, match="window"):
        build_retriever("bm25>>rankgpt:smollm2,window=1")
    with pytest.raises(ConfigError, match=r"orders \(21\) must be at most the window.s 20"):
        build_retriever("bm25>>rankgpt:smollm2,depth=40,window=20,orders=21")
    build_retriever("bm25>>rankgpt:smollm2,depth=20,window=20,orders=3")  # issue 40's design is accepted


# -- end to end with the offline SmolLM2 -----------------------------------------------------------
@pytest.fixture(scope="module")
def two_queries(nq_utd):
    from sourcebias.data import load_dataset
    from sourcebias.data.qrels import Qrels

    ds = load_dataset(nq_utd, split="test")
    keep = ds.evaluation_queries()[:2]
    return dataclasses.replace(ds, qrels=Qrels({q: ds.qrels[q] for q in keep})), keep


def test_bm25_rankgpt_smollm2_end_to_end_on_nq_utd(two_queries):
    from sourcebias.evaluation import evaluate, measure_grid
    from sourcebias.retrieval import BM25

    ds, keep = two_queries
    pipe = build_retriever("bm25>>rankgpt:smollm2,depth=3,words=25,cache=false")
    result = evaluate(ds, [pipe], measures=measure_grid(["NDCG"], [1, 3]), depth=3)
    run = result.runs[("bm25>>rankgpt:smollm2,depth=3,words=25,cache=false", "mixed")]
    bm25 = BM25().retrieve(ds.corpus, {q: ds.queries[q] for q in keep}, 3)
    for q in keep:
        assert sorted(run.positions[q].tolist()) == sorted(bm25.positions[q].tolist())  # a permutation of the top 3
    info = run.info["stages"][-1]
    assert info["llm_answers"]["answers"] == 2  # one window per query
    assert info["client"]["identity"]["backend"] == "local"


def test_minilm_llm_yesno_smollm2_scores_equal_a_plain_forward_pass(two_queries):
    import torch

    from sourcebias.llmcalls.prompts import load_prompt

    ds, keep = two_queries
    pipe = build_retriever("minilm>>llm-yesno:smollm2,depth=2,words=30,cache=false")
    q = keep[0]
    run = pipe.retrieve(ds.corpus, {q: ds.queries[q]}, 2)
    stage = pipe.stages[0]
    tok, model = stage._client.backend.tokenizer, stage._client.backend.transformers_model
    top = int(run.positions[q][0])
    doc = " ".join(ds.corpus.retrieval_texts()[top].split()[:30])
    ((role, content),) = load_prompt("yesno").render({"passage": doc, "query": ds.queries[q]})
    msgs = [{"role": role, "content": content}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].double(), dim=-1)
    yes, no = (float(lp[tok(c, add_special_tokens=False)["input_ids"][0]]) for c in ("Yes", "No"))
    assert len(tok("Yes", add_special_tokens=False)["input_ids"]) == 1  # single tokens: the plain pass is exact
    assert run.scores[q][0] == pytest.approx(math.exp(yes) / (math.exp(yes) + math.exp(no)), abs=1e-4)


def test_orders_show_each_window_in_every_order_and_borda_agrees_with_a_consistent_model():
    seen: list[list[int]] = []

    def recording(messages, params):
        seen.append([int(t.split()[1]) for t in shown_passages(messages)])
        return by_value(messages, params)

    corpus, run = valued_run([3, 1, 4, 2])
    with SimulatedServer(recording) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=4,window=4,orders=3,cache=false").stages[0]
        out = stage.apply(run, {"q": "q"}, seed=5)
    # as given and two rotations, offsets 0, 1, 2 (the three calls run concurrently: in any order)
    assert len(seen) == 3 and {tuple(x) for x in seen} == {(3, 1, 4, 2), (1, 4, 2, 3), (4, 2, 3, 1)}
    assert [int(corpus.texts[i].split()[1]) for i in out.positions["q"]] == [4, 3, 2, 1]  # every answer sorts: Borda keeps it
    rows = stage.last_records
    assert len(rows) == 12 and {r["order"] for r in rows} == {0, 1, 2}


def twin_windows(n_queries: int):
    """``n_queries`` windows of four passages (two human, two LLM) for the adversarial answers."""
    docs = []
    for i in range(n_queries):
        docs += [Document(f"d{i}{j}", "human" if j % 2 == 0 else "llm", "", f"passage {i} {j}") for j in range(4)]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    run = Run(corpus, "first", {f"q{i}": np.arange(4 * i, 4 * i + 4) for i in range(n_queries)}, {f"q{i}": np.arange(4, 0, -1.0) for i in range(n_queries)}, {})
    return run, {f"q{i}": f"query {i}" for i in range(n_queries)}


def test_answers_that_are_no_ranking_give_a_refusal_not_a_position_effect():
    """Issue 38, point 2: "Sure! Here is my ranking." to every window gave 960 of 960 answers
    repaired and position +1.000 [+1.000, +1.000] (the repair rule keeps the shown order). The fit
    sees only complete answers: none here, so it is refused with the count."""
    from sourcebias.study.job import llm_stage_notes

    run, queries = twin_windows(12)
    with SimulatedServer(lambda m, p: ("Sure! Here is my ranking.", None)) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=4,window=4,orders=4,cache=false").stages[0]
        out = stage.apply(run, queries)
    fit = out.info["stages"][-1]["position_source"]
    assert "coefficients" not in fit and fit["rows"] == 0 and fit["left_out_rows"] == 12 * 4 * 4
    assert fit["refused"].startswith("nothing to fit: all 192 rows come from answers that were repaired or held no identifier")
    assert fit["answers"] == {"complete": 0, "left_out": 48}
    line = [n for n in llm_stage_notes("r/mixed", out.info) if "answered position" in n[1]]
    assert line[0][0] == "note" and "refused" in line[0][1] and "+1.000" not in line[0][1]


def test_half_garbage_half_random_permutations_give_a_position_effect_covering_zero():
    """Issue 38, point 2: half random permutations, half garbage gave position +0.520 [+0.449, +0.590]
    (the truth is 0); on the complete answers alone the slope's interval covers 0."""
    import hashlib

    def half(messages, params):
        shown = shown_passages(messages)
        digest = hashlib.sha256("|".join(shown).encode()).digest()
        if digest[0] % 2:
            return "I think these are all relevant.", None
        order = np.random.default_rng(int.from_bytes(digest[1:9], "little")).permutation(len(shown)) + 1
        return " > ".join(f"[{i}]" for i in order), None

    run, queries = twin_windows(40)
    with SimulatedServer(half) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=4,window=4,orders=4,cache=false").stages[0]
        out = stage.apply(run, queries)
    fit = out.info["stages"][-1]["position_source"]
    complete, left = fit["answers"]["complete"], fit["answers"]["left_out"]
    assert complete + left == 160 and 50 < complete < 110 and fit["rows"] == 4 * complete
    lo, hi = fit["coefficients"]["position"]["ci"]
    assert lo <= 0.0 <= hi and "balanced" in out.info["stages"][-1]["position_source"]["balance"]
    # the same answers with the repaired ones kept (what was computed before): a position effect out of nothing
    from sourcebias.clustered import get_estimator

    rows = [r for r in stage.last_records if r["n"] > 1]
    before = get_estimator("position_source").estimate(
        [r["query"] for r in rows], [r["shown"] / 3 for r in rows], [r["answered"] / 3 for r in rows], [r["source"] for r in rows], "human"
    )
    assert before["coefficients"]["position"]["ci"][0] > 0.2


def test_llm_yesno_grade_answers_score_the_expected_grade():
    def grader(messages, params):
        if "alpha" in messages[-1]["content"]:
            return "3", [{"3": math.log(0.4), "2": math.log(0.3), "0": math.log(0.2), "1": math.log(0.05)}]
        return "0", [{"0": math.log(0.6), "1": math.log(0.2), "x": math.log(0.05)}]  # 2 and 3 outside the top tokens

    docs = [Document("a", "human", "", "alpha text"), Document("b", "llm", "", "beta text")]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    run = Run(corpus, "first", {"q": np.array([1, 0])}, {"q": np.array([2.0, 1.0])}, {})
    with SimulatedServer(grader) as url:
        stage = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=2,answers=grade,cache=false").stages[0]
        out = stage.apply(run, {"q": "which"})
    # alpha: (3 * .4 + 2 * .3 + 1 * .05 + 0 * .2) / .95; beta: 2 and 3 outside the top tokens, left out (the judge's rule,
    # sourcebias.llmcalls.grades): (0 * .6 + 1 * .2) / .8 (bounded by the lowest listed before: (1 * .2 + 2 * .05 + 3 * .05) / .9)
    assert out.scores["q"] == pytest.approx([1.85 / 0.95, 0.2 / 0.8])
    info = out.info["stages"][-1]
    assert info["choice_missing"] == 1 and info["answers"] == ["0", "1", "2", "3"] and info["no_expected_grade"] == {}


def test_the_design_sentence_describes_the_windows_as_shown_not_the_nominal_window():
    """Found on NFCorpus (2026-12-07): a query that BM25 ranks only 4 abstracts for was shown in 3
    orders of its 4 passages, while the note said "3 orders of 20 passages" for every window."""
    docs = [Document(f"a{j}", "human" if j % 2 == 0 else "llm", "", f"passage a {j}") for j in range(4)]
    docs += [Document(f"b{j}", "human" if j % 2 == 0 else "llm", "", f"passage b {j}") for j in range(2)]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    run = Run(corpus, "first", {"qa": np.arange(0, 4), "qb": np.arange(4, 6)}, {"qa": np.arange(4, 0, -1.0), "qb": np.arange(2, 0, -1.0)}, {})

    def as_shown(messages, params):
        return " > ".join(f"[{i + 1}]" for i in range(len(shown_passages(messages)))), None

    with SimulatedServer(as_shown) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=4,window=4,orders=3,cache=false").stages[0]
        out = stage.apply(run, {"qa": "query a", "qb": "query b"})
    balance = out.info["stages"][-1]["position_source"]["balance"]
    assert balance == (
        "partial: 3 orders of 4 passages (each passage at 3 of the 4 positions, about 1.3 apart) in 1 window; "
        "balanced: 2 orders of 2 passages, a cyclic Latin square (each passage at each position once) in 1 window"
    )
