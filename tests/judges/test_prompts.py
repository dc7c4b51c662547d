"""The judge's answer parsing and expected grade, on hand-written answers and log-probabilities."""

from __future__ import annotations

import math

import pytest

from sourcebias.judges.prompts import grade_messages, grade_prompt, pair_messages, parse_grade, parse_pick
from sourcebias.llmcalls import Answer
from sourcebias.llmcalls.grades import LOW_MASS, MIN_GRADE_MASS, at_token, read_grade


def expected_grade(steps, text, offset):
    e = at_token(steps, text, offset)
    return e.value, e.mass, e.note


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
    assert text.endswith("Provide each score in the format of: ##final score: score without providing any reasoning.")
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


# -- issue 38 point 1: an expected grade only where a grade was parsed, from its token ------------
def _parse_one(answer, prompt, kind="grade"):
    from sourcebias.judges.grading import parse_answers

    row = {"query_id": "q", "doc_id": "d", "source": "human", "origin": "qrels", "assessor_grade": 1.0, "label": ""}
    grades, _ = parse_answers([(kind, row)], [answer], "human", prompt)
    return grades.iloc[0]


#: the issue's server: every answer a refusal whose first token leaves about 5% on the grades
REFUSAL = Answer("I cannot grade this passage.", "stop", [{"I": -0.05, "3": -3.5, "1": -4.0}], {"0": None, "1": -4.0, "2": None, "3": -3.5})


@pytest.mark.parametrize("prompt", ["digit", "umbrela"])
def test_an_unparseable_answer_has_no_expected_grade(prompt):
    # before: digit prompt, (3·e^-3.5 + 1·e^-4) / (e^-3.5 + e^-4) = 2.245 from the refusal's first token
    row = _parse_one(REFUSAL, prompt)
    assert math.isnan(row["grade"]) and math.isnan(row["expected"]) and row["expected_note"] == "unparsed"


def test_grade_tokens_holding_under_half_the_probability_give_no_expected_grade():
    # "2" parsed, but the grades hold .3 + .05 = .35 of its token: refused (the mass kept); before: (2·.3 + 1·.05) / .35 = 1.857
    first = {"2": math.log(0.3), "The": math.log(0.25), "I": math.log(0.2), "1": math.log(0.05)}
    low = Answer("2", "stop", [first], {"0": None, "1": math.log(0.05), "2": math.log(0.3), "3": None})
    row = _parse_one(low, "digit")
    assert row["grade"] == 2 and math.isnan(row["expected"]) and row["grade_mass"] == pytest.approx(0.35)
    assert row["expected_note"] == LOW_MASS and str(MIN_GRADE_MASS) in LOW_MASS
    # at .6 it is given: (2·.5 + 3·.1) / .6
    ok = Answer("2", "stop", None, {"0": None, "1": None, "2": math.log(0.5), "3": math.log(0.1)})
    row = _parse_one(ok, "digit")
    assert row["expected"] == pytest.approx(1.3 / 0.6) and row["grade_mass"] == pytest.approx(0.6) and row["expected_note"] == ""


def test_digit_prompt_answer_with_its_grade_later_reads_the_grade_token_not_the_first():
    # "The score is 2": the first token's grade probabilities are not the grade's; the grade token's are (2·.9 + 1·.1)
    steps = [{"The": -0.1, "2": -3.0}, {" score": -0.1}, {" is": -0.1}, {" 2": math.log(0.9), " 1": math.log(0.1)}]
    row = _parse_one(Answer("The score is 2", "stop", steps, {"0": None, "1": None, "2": -3.0, "3": None}), "digit")
    assert row["grade"] == 2 and row["expected"] == pytest.approx(1.9) and row["grade_mass"] == pytest.approx(1.0)


def test_expected_for_reads_the_token_after_a_reasoning_block():
    steps = [{"<think>": -0.01}, {"3?": -0.2}, {"</think>": -0.01}, {"##final score:": -0.01}, {" 2": math.log(0.75), " 3": math.log(0.25)}]
    text = "<think>3?</think>##final score: 2"
    read = read_grade(grade_prompt("umbrela"), Answer(text, "stop", steps))
    assert read.grade == 2 and (read.expected.value, read.expected.mass, read.expected.note) == (pytest.approx(2.25), pytest.approx(1.0), "")


# -- issue 38 point 7 through the judges' own imports ---------------------------------------------
def test_the_issues_parse_cases():
    for answer, grade in (("The final score is 3.", 3), ("The score is 1.", 1), ("I would assign a score of 2.", 2), ("##final score: 2", 2)):
        assert parse_grade(answer)[0] == grade  # unparseable before
    ((_, prompt),) = grade_messages("who won", "Team X won.")
    assert parse_grade(prompt, messages=[("user", prompt)]) == (None, None)  # grade 1 before, from "Assign category 1 if…"
    assert parse_grade(prompt) == (None, None)  # the template's own text is always known
    assert parse_grade("Important Instruction: Assign category 1 if the passage is somewhat related", messages=[("user", prompt)]) == (None, None)
    assert parse_grade("<think>score: 1</think>##final score: 3")[0] == 3
    assert parse_pick("A or B") is None and parse_pick("A and B") is None  # "A" before
    ((_, pair),) = pair_messages("q", "first text", "second text")
    assert parse_pick("Answer with one letter only: A or B.", messages=[("user", pair)]) is None
    assert parse_pick("Passage A: first text", messages=[("user", pair)]) is None and parse_pick("Passage A: first text") == "A"  # the call's prompt, echoed
