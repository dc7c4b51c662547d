"""Citations read from answers, by hand-worked cases, and the prompt's numbering."""

from __future__ import annotations

import pytest

from sourcebias.citations.parse import parse_citations
from sourcebias.citations.prompt import citation_messages, cite_prompt


@pytest.mark.parametrize(
    ("text", "k", "cited", "outside", "status"),
    [
        ("Paris is the capital [1]. It is large [2][3].", 5, (1, 2, 3), (), "cited"),
        ("Both say so [3, 1]; also [1; 2] and [ 2 ].", 3, (1, 2, 3), (), "cited"),
        ("It happened in 2023 [4][7].", 5, (4,), (7,), "out_of_range"),
        ("Nothing to cite [0].", 5, (), (0,), "out_of_range"),
        ("The answer is yes.", 5, (), (), "no_citation"),
        ("See Document 2 (Title: x).", 5, (), (), "no_citation"),
        ("   ", 5, (), (), "empty"),
        (None, 5, (), (), "empty"),
        ("Document [6](Title: ): made up.\n\nDocument [2](Title: x): copied", 5, (), (), "no_citation"),  # echoed headers
        ("Document [5](Title: ): Barbie premiered in July [5].", 5, (5,), (), "cited"),
    ],
)
def test_parse_citations_hand_cases(text, k, cited, outside, status):
    parsed = parse_citations(text, k)
    assert (parsed.cited, parsed.out_of_range, parsed.status) == (cited, outside, status)
    assert parsed.echoed == ("Document [" in (text or ""))


def test_prompt_numbers_passages_in_context_order_and_reads_back():
    messages = citation_messages("who won?\n", [("T one", "first\ntext"), ("", "second text")], shots=0)
    assert messages[0][0] == "system" and messages[0][1].startswith("Write an accurate, engaging, and concise answer for the given question")
    role, user = messages[1]
    assert role == "user"
    assert user == "Document [1](Title: T one): first text\nDocument [2](Title: ): second text\n\nQuestion: who won?\nAnswer:"
    read = cite_prompt().read(messages)  # through the prompt file, as the simulated generator reads it
    assert read["passages"] == [{"number": 1, "title": "T one", "text": "first text"}, {"number": 2, "title": "", "text": "second text"}]
    assert read["query"] == "who won?"


def test_one_demonstration_comes_first_as_chat_turns():
    messages = citation_messages("q", [("t", "x")], shots=1)
    assert [r for r, _ in messages] == ["system", "user", "assistant", "user"]
    assert cite_prompt().read(messages[:2])["passages"][0]["title"] == "Mount Everest"
    assert parse_citations(messages[2][1], 2).cited == (1, 2)
    assert messages[3] == citation_messages("q", [("t", "x")], shots=0)[1]
