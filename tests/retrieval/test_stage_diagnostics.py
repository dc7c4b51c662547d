"""The re-rankers' diagnostics, typed (``StageDiagnostics``): an entry of ``run.info["stages"]``
reads into typed counts and writes back as the same dict, key order included (``result.json``
unchanged; a folder written before the type loads), and the readers (the evaluation's notes, a
grid's cells) see the counts the stages wrote."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sourcebias.data import Corpus, Document
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.retrieval import build_retriever
from sourcebias.retrieval.rerankers.diagnostics import AnswerCounts, CallUsage, StageDiagnostics, stage_diagnostics
from sourcebias.retrieval.run import Run

#: a rankgpt entry as the stage wrote it before the type (the keys and order of a result.json of
#: an earlier build, the client's describe() shortened to what the type reads)
RANKGPT_ENTRY = json.loads(
    """{"name": "rankgpt:openai:sim,depth=6", "input_run": "bm25", "depth": 6, "window": 4, "step": 2, "orders": 1,
    "aggregation": "none (one input order)", "repair_rule": "RankGPT's",
    "llm_answers": {"answers": 12, "repaired": 5, "unparseable": 4, "length_cut": 0, "ids_unknown": 0, "ids_duplicates": 1, "ids_missing": 18},
    "position_source": {"rows": 3}, "client": {"identity": {"model": "sim"},
    "calls": {"calls": 12, "cached": 2, "computed": 10, "no_logprobs": 0, "retries": 1, "failed": 0},
    "usage": {"computed": {"calls": 10, "prompt_tokens": 5954, "completion_tokens": 62, "seconds": 0.145, "without_token_counts": 0}}},
    "seconds": 0.9}"""
)
#: an llm-yesno entry: the pairwise re-ranker's keys, then the LLM's (seconds before them)
YESNO_ENTRY = {
    "name": "llm-yesno:openai:sim,depth=4",
    "input_run": "bm25",
    "depth": 4,
    "queries": 6,
    "pairs": 24,
    "pairs_scored": 24,
    "pairs_reused": 0,
    "seconds": 0.3,
    "choice_missing": 13,
    "missing_rule": "bounded",
    "answers": ["Yes", "No"],
    "no_expected_grade": {"low mass": 2, "no grade listed": 1},
}


@pytest.mark.parametrize("entry", [RANKGPT_ENTRY, YESNO_ENTRY, {"name": "cut:10", "kept": 10}])
def test_an_entry_reads_typed_and_writes_back_unchanged(entry):
    d = StageDiagnostics.from_dict(entry)
    again = d.to_dict()
    assert again == entry and list(again) == list(entry)
    assert json.dumps(again) == json.dumps(entry)  # byte for byte in result.json


def test_the_typed_counts_are_the_stored_ones():
    rk = StageDiagnostics.from_dict(RANKGPT_ENTRY)
    assert rk.llm_answers == AnswerCounts(answers=12, repaired=5, unparseable=4, ids_duplicates=1, ids_missing=18)
    assert rk.usage == CallUsage(calls=12, cached=2, computed=10, retries=1, failed=0, prompt_tokens=5954, completion_tokens=62)
    assert rk.details["window"] == 4 and rk.choice_missing is None
    yn = StageDiagnostics.from_dict(YESNO_ENTRY)
    assert yn.choice_missing == 13 and yn.choices == ["Yes", "No"] and yn.expected_grade_missing == 3
    assert yn.llm_answers is None and yn.usage is None
    assert [s.name for s in stage_diagnostics({"stages": [RANKGPT_ENTRY, YESNO_ENTRY]})] == [RANKGPT_ENTRY["name"], YESNO_ENTRY["name"]]


def test_a_new_entry_is_written_in_the_stages_order():
    d = StageDiagnostics("s", {"input_run": "r", "depth": 2}, llm_answers=AnswerCounts(answers=1), client={"calls": {}}, seconds=0.5)
    assert list(d.to_dict()) == ["name", "input_run", "depth", "llm_answers", "client", "seconds"]
    assert d.to_dict()["llm_answers"] == {
        "answers": 1,
        "repaired": 0,
        "unparseable": 0,
        "length_cut": 0,
        "ids_unknown": 0,
        "ids_duplicates": 0,
        "ids_missing": 0,
    }


def yesno(messages, params):
    if "alpha" in messages[-1]["content"]:
        return "Yes", [{"Yes": math.log(0.6), "No": math.log(0.2)}]
    return "No", [{"No": math.log(0.5), "The": math.log(0.1)}]  # Yes outside the top tokens


def test_the_stages_write_entries_that_read_back_and_count_what_happened():
    docs = [Document("a", "human", "", "alpha text"), Document("b", "llm", "", "beta text"), Document("c", "llm", "", "alpha again")]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    run = Run(corpus, "first", {"q": np.array([1, 0, 2])}, {"q": np.array([3.0, 2.0, 1.0])}, {})
    with SimulatedServer(yesno) as url:
        out = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=3,cache=false").stages[0].apply(run, {"q": "which"})
    with SimulatedServer(lambda m, p: ("[2] > [9] > [2]", None)) as url:
        out2 = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=3,window=3,cache=false").stages[0].apply(run, {"q": "which"})
    yn, rk = out.info["stages"][-1], out2.info["stages"][-1]
    for entry in (yn, rk):
        assert StageDiagnostics.from_dict(entry).to_dict() == entry
    typed = StageDiagnostics.from_dict(yn)
    assert typed.choice_missing == 1 and typed.usage is not None and typed.usage.calls == 3 == typed.usage.computed  # one pair (b) missed Yes
    a = StageDiagnostics.from_dict(rk).llm_answers
    # one answer: 9 unknown, the second [2] repeated, [1] and [3] appended: repaired, not unparseable
    assert a == AnswerCounts(answers=1, repaired=1, unparseable=0, ids_unknown=1, ids_duplicates=1, ids_missing=2)
