"""From answers to the passage table, by hand: what each answer cites, which rows enter the
estimates under each rule for answers that cite nothing, the counts and the notes."""

from __future__ import annotations

import pytest

from sourcebias.citations.design import build_contexts, context_order
from sourcebias.citations.study import CiteSettings, analyse, tables
from sourcebias.data.corpus import Corpus, Document
from sourcebias.llmcalls import Answer


@pytest.fixture
def corpus():
    docs = [Document(d, s, f"title {d}", f"text {d} {s}") for d in ("a", "b") for s in ("human", "llm")]
    return Corpus.from_documents(docs, source_order=["human", "llm"])  # positions: a/human 0, a/llm 1, b/human 2, b/llm 3


def test_orders_are_the_rows_of_a_cyclic_latin_square():
    """Issue 38, point 3: orders = k put each passage at each position exactly once (the shuffles
    did not, and order 0 was never shuffled)."""
    square = [context_order(4, j, 4) for j in range(4)]
    assert square == [[1, 2, 3, 4], [2, 3, 4, 1], [3, 4, 1, 2], [4, 1, 2, 3]]
    assert all(sorted(col) == [1, 2, 3, 4] for col in zip(*square))  # each rank once at each position
    assert [context_order(5, j, 2) for j in range(2)] == [[1, 2, 3, 4, 5], [3, 4, 5, 1, 2]]  # offsets 0, 2
    # k = 6, 3 orders: offsets 0, 2, 4 share the divisor 2 with 6 (a period-2 position effect would
    # read as rank), so the last moves to 3
    assert [context_order(6, j, 3)[0] for j in range(3)] == [1, 3, 4]


def test_more_orders_than_passages_are_refused_before_any_call():
    from sourcebias.core.errors import ConfigError

    with pytest.raises(ConfigError, match="at most k"):
        CiteSettings(k=3, orders=4).check()


@pytest.mark.parametrize("rule", ["keep", "drop"])
def test_answers_to_rows(corpus, rule):
    contexts = build_contexts({"q1": [1, 0, 3], "q2": [2, 3, 0], "q3": [0, 1, 2]}, orders=1)
    answers = [Answer("Yes [1][3].", "stop"), Answer("No idea.", "stop"), Answer("See [4] and [2]", "length")]
    passages, calls = tables(contexts, answers, corpus, rule)
    assert list(calls["status"]) == ["cited", "no_citation", "out_of_range"]
    assert list(calls["citations"]) == ["1 3", "", "2"] and list(calls["out_of_range"]) == ["", "", "4"]
    # q1 shows a/llm, a/human, b/llm at positions 1..3 and cites 1 and 3; q3 cites position 2 (a/llm)
    assert list(passages["cited"]) == [1, 0, 1, 0, 0, 0, 0, 1, 0]
    assert list(passages["source"]) == ["llm", "human", "llm", "human", "llm", "human", "human", "llm", "human"]
    assert list(passages["used"]) == [True] * 3 + [rule == "keep"] * 3 + [True] * 3
    result = analyse(passages, calls, CiteSettings(k=3, uncited=rule), "human")
    assert result.counts == {"answers": 3, "cited": 1, "out_of_range": 1, "no_citation": 1, "empty": 0, "only_out_of_range": 0, "truncated": 1, "echoed": 0}
    (llm_rate,) = [r for r in result.rates["source"] if r["source"] == "llm"]
    assert (llm_rate["cited"], llm_rate["n"]) == ((3, 4) if rule == "keep" else (3, 3))
    assert any("1 of 3 answers cite no passage" in n and f"uncited={rule}" in n for n in result.notes)
    assert any("outside 1..k" in n for n in result.notes) and any("max_tokens" in n for n in result.notes)


@pytest.mark.parametrize("rule", ["keep", "drop"])
def test_an_answer_citing_only_numbers_out_of_range_cites_nothing(corpus, rule):
    # issue 38 point 9b: under uncited=drop, "[7]" with k = 3 was kept (as citing none of its passages) before
    contexts = build_contexts({"q1": [1, 0, 3], "q2": [2, 3, 0]}, orders=1)
    answers = [Answer("Yes [1].", "stop"), Answer("It was in 2023 [7][9].", "stop")]
    passages, calls = tables(contexts, answers, corpus, rule)
    assert list(calls["status"]) == ["cited", "out_of_range"] and list(calls["citations"]) == ["1", ""]
    assert list(passages["used"]) == [True] * 3 + [rule == "keep"] * 3
    result = analyse(passages, calls, CiteSettings(k=3, uncited=rule), "human")
    assert result.counts["only_out_of_range"] == 1 and result.counts["out_of_range"] == 1
    note = "1 of 2 answers cite no passage (0 without a citation, 0 empty, 1 citing only numbers outside 1..k)"
    assert any(note in n and f"uncited={rule}" in n for n in result.notes)
    (llm_rate,) = [r for r in result.rates["source"] if r["source"] == "llm"]
    # q1 shows a/llm (cited), a/human, b/llm; q2 shows b/human, b/llm, a/human: llm rows cited 1 of 3 (keep), of 2 (drop: q2 out)
    assert (llm_rate["cited"], llm_rate["n"]) == ((1, 3) if rule == "keep" else (1, 2))


def test_echoes_of_the_prompt_are_not_citations(corpus):
    from sourcebias.citations.prompt import cite_prompt
    from sourcebias.citations.study import calls_for

    contexts = build_contexts({"q1": [1, 0, 3]}, orders=1)
    calls = calls_for(contexts, corpus, {"q1": "which?"}, CiteSettings(k=3))
    echo = f"{cite_prompt().demonstrations[0].fields['answer']} When citing several search results, use [1][2][3]."
    passages, frame = tables(contexts, [Answer(echo + " Also text a [2].", "stop")], corpus, "keep", calls)
    assert list(frame["citations"]) == ["2"] and bool(frame["echoed"].iloc[0])
    assert list(passages["cited"]) == [0, 1, 0]
