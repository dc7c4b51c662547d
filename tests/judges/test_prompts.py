"""The judge's answer parsing and expected grade, on hand-written answers and log-probabilities."""

from __future__ import annotations

import math

import pytest

from sourcebias.judges.prompts import UMBRELA_PROMPT, expected_grade, grade_messages, pair_messages, parse_grade, parse_pick


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("##final score: 2", 2),
        ("##Final Score:3", 3),
        ('{"M": 2, "T": 1, "O": 1}', 1),
        ("score: 0", 0),
        ("The relevance category is 2.", 2),
        ("3", 3),
        (" 1.\n", 1),
        ("I would say 4", None),
        ("The passage is relevant.", None),
        ("", None),
    ],
)
def test_parse_grade(answer, grade):
    assert parse_grade(answer)[0] == grade


def test_parse_grade_offset_points_at_the_digit():
    text = "##final score: 2"
    g, at = parse_grade(text)
    assert text[at] == "2" and g == 2


@pytest.mark.parametrize(
    ("answer", "pick"), [("A", "A"), ("B.", "B"), ("Passage B is more relevant", "B"), ("Answer: A", "A"), ("Both are relevant", None), ("", None)]
)
def test_parse_pick(answer, pick):
    assert parse_pick(answer) == pick


def test_prompt_is_umbrela_with_the_passage_and_disclosure():
    ((role, text),) = grade_messages("who won", "Team X won.", "ai")
    assert role == "user" and "Query: who won\nPassage: Team X won.\nThis passage was written by an AI language model.\n" in text
    assert text.startswith("Given a query and a passage, you must provide a score on an integer scale of 0 to 3")
    assert "##final score: score" in UMBRELA_PROMPT
    ((_, plain),) = grade_messages("who won", "Team X won.")
    assert "written by" not in plain
    ((_, pair),) = pair_messages("q", "first text", "second text")
    assert pair.index("Passage A: first text") < pair.index("Passage B: second text")


def test_expected_grade_from_the_grade_token():
    # the answer "##final score: 2" in four tokens; at the grade token P(2) = .5, P(3) = .25, P(1) = .25
    steps = [{"##": -0.1, "#": -3.0}, {"final score": -0.2}, {":": -0.01}, {" 2": math.log(0.5), " 3": math.log(0.25), " 1": math.log(0.25)}]
    text = "##final score: 2"
    exp, mass, note = expected_grade(steps, text, parse_grade(text)[1])
    assert note == "" and exp == pytest.approx(2 * 0.5 + 3 * 0.25 + 1 * 0.25) and mass == pytest.approx(1.0)


def test_expected_grade_renormalises_over_grade_tokens_in_the_top_k():
    steps = [{"2": math.log(0.45), "0": math.log(0.15), "The": math.log(0.4)}]
    exp, mass, note = expected_grade(steps, "2", 0)  # "The" is not a grade: (2·.45 + 0·.15) / .6
    assert exp == pytest.approx(1.5) and mass == pytest.approx(0.6) and note == ""


@pytest.mark.parametrize(
    ("steps", "text", "offset", "why"),
    [
        (None, "2", 0, "no log-probabilities"),
        ([{"2": -0.1}], "x", None, "unparsed"),
        ([{"The": -0.1}, {" score": -0.2}], "A score: 2", 9, "tokens do not align with the text"),
        ([{"2": -0.1, "two": -0.2}], "2", 0, ""),
        ([{"x": -0.1}, {"2": -0.5, "z": -0.6}], "x2", 1, ""),
        ([{"x": -0.1}, {"y": -0.5, "z": -0.6}], "xy", 1, "no grade token in the top k"),
    ],
)
def test_expected_grade_unavailable_says_why(steps, text, offset, why):
    exp, _mass, note = expected_grade(steps, text, offset)
    assert note == why
    assert math.isnan(exp) == bool(why)
