"""The answer parsers against the peers' own parsers on the answers real models write.

Each peer's parse function is copied below, unchanged but for its name, as the reference oracle
(never into src): castorini/umbrela's ``parse_fewshot_response`` (Apache-2.0,
src/umbrela/utils/common_utils.py), castorini/rank_llm's ``clean_ranking_response`` and the
parsing steps of ``receive_permutation`` (Apache-2.0, src/rank_llm/rerank/listwise/), and
princeton-nlp/ALCE's citation reading (MIT, eval.py). On every answer that carries a grade, a
ranking or a citation list in the peers' form we must read what they read; the answers where we
differ on purpose are listed with the hand-worked value and the reason.
"""

from __future__ import annotations

import re

import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.judges.prompts import grade_messages, pair_messages
from sourcebias.llmcalls.parsers import (
    PARSERS,
    echo_spans,
    get_parser,
    parse_citations,
    parse_digit_grade,
    parse_permutation,
    parse_pick,
    parse_umbrela_grade,
    strip_reasoning,
)
from sourcebias.retrieval.rerankers.rankgpt import rankgpt_messages


# -- the peers' own code (reference oracles) -----------------------------------------------------
def umbrela_parse(response: str) -> tuple[int, int]:
    """castorini/umbrela ``parse_fewshot_response`` (commit e2c4e41), copied; Apache-2.0."""
    response = response.strip().lower()
    valid_res = 1
    answer = ""
    patterns = [
        r'"o"\s*[:-=]?\s*(0|1|2|3)',
        r"\'o\'\s*[:-=]?\s*(0|1|2|3)",
        r"o\s*[:-=]?\s*(0|1|2|3)",
        r'"overall_score"\s*[:-=]?\s*(0|1|2|3)',
        r'"overall"\s*[:-=]?\s*(0|1|2|3)',
        r'"overall score"\s*[:-=]?\s*(0|1|2|3)',
        r'"final score"\s*[:-=]?\s*(0|1|2|3)',
        r"final score\s*[:-=]?\s*(0|1|2|3)",
        r"final score is (0|1|2|3)",
        r'"final_score"\s*[:-=]?\s*(0|1|2|3)',
        r'"score"\s*[:-=]?\s*(0|1|2|3)',
        r'"o_score"\s*[:-=]?\s*(0|1|2|3)',
        r"output score is (0|1|2|3)",
        r"score is (0|1|2|3)",
        r"score of\s+(0|1|2|3)",
        r"assign(?:ing)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
        r"conclude(?:s|d)?\s+with\s+(?:a\s+)?score of\s+(0|1|2|3)",
        r"give(?:n)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
        r"i (?:would )?(?:give|assign)\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
        r"score:\s*(0|1|2|3)",
        r"[a-zA-Z]+\s+is\s+(0|1|2|3)\s",
        r"relevance category\s*[:-=]?\s*(0|1|2|3)",
        r"relevance category\s*[:-=]?\s*(0|1|2|3)",
        r"relevance category is (0|1|2|3)",
        r"it falls into the category (0|1|2|3)",
        r"category\s*(0|1|2|3)",
        r"relevance category (0|1|2|3)",
        r"relevance category for this passage would be (0|1|2|3)",
        r"the relevance category would be (0|1|2|3)",
        r"\n*(0|1|2|3)",
    ]
    for pattern in patterns:
        matched = None
        for m in re.finditer(pattern, response, re.IGNORECASE | re.MULTILINE | re.DOTALL):
            matched = m
        if matched:
            answer = matched.group(1).capitalize()
            break
    if answer == "":
        answer = "0"
        valid_res = 0
    return int(answer), valid_res


def rank_llm_clean(response: str) -> str:
    """castorini/rank_llm ``clean_ranking_response`` (use_alpha=False; commit 1b3cabb), copied; Apache-2.0."""
    if "</think>" in response:
        response = response.split("</think>")[-1].strip()
    fake_numbers_map = str.maketrans(
        "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
        "0123456789012345678912345678912345678901234567890123456789",
    )
    response = response.translate(fake_numbers_map)
    new_response = ""
    for c in response:
        if not c.isdigit():
            new_response += " "
        else:
            new_response += c
    return new_response.strip()


def rank_llm_permutation(permutation: str, n: int) -> list[int]:
    """The order castorini/rank_llm ``receive_permutation`` applies to a window of ``n`` (its
    parsing steps, copied; Apache-2.0)."""
    original_rank = list(range(n))
    try:
        response = [int(x) - 1 for x in rank_llm_clean(permutation).split()]
        new_response: list[int] = []
        for c in response:
            if c not in new_response:
                new_response.append(c)
        response = [ss for ss in new_response if ss in original_rank]
        response = response + [tt for tt in original_rank if tt not in response]
    except Exception:
        response = original_rank
    return response


def alce_citations(answer: str) -> list[int]:
    """princeton-nlp/ALCE eval.py's citations of a text (1-based: its ``int(r[1:]) - 1`` + 1), copied; MIT."""
    return [int(r[1:]) for r in re.findall(r"\[\d+", answer)]


UMBRELA = grade_messages("who won the 2023 world series", "The Texas Rangers won the 2023 World Series over Arizona, 4 games to 1.")[0][1]
DIGIT = grade_messages("who won the 2023 world series", "The Texas Rangers won the 2023 World Series over Arizona, 4 games to 1.", prompt="digit")[0][1]


# -- grades --------------------------------------------------------------------------------------
#: answers that carry a grade, as judges write them: UMBRELA's own tests' answers first
CARRY_A_GRADE = [
    '{"overall_score": 3}',
    "I would give it a score of 2.",
    "final score is 1",
    "##final score: 2",
    "##Final Score:3",
    "##final score: 0\n",
    "The final score is 3.",
    "The score is 1.",
    "I would assign a score of 2.",
    "I conclude with a score of 2.",
    '{"M": 2, "T": 1, "O": 1}',
    "M: 2\nT: 1\nO: 2",
    "M = 1, T = 2, O = 1",
    "score: 0",
    "The relevance category is 2.",
    "Relevance category: 1",
    "It falls into the category 3",
    "3",
    "2.",
    " 1.\n",
    "**2**",
    "Final score: 3\n##final score: 2",  # UMBRELA's last match: 2
    "##final score: 1 ##final score: 3",
    "<think>The passage names the winner, so maybe score: 3. Or 2?</think>\n##final score: 2",
    "Measure M: 2. Trust T: 2.\nFinal score: 2",
    "##final score: 2\n\nThe passage answers the query directly.",
]


@pytest.mark.parametrize("answer", CARRY_A_GRADE)
def test_a_grade_umbrela_reads_is_read_alike(answer):
    grade, valid = umbrela_parse(answer)
    assert valid == 1
    assert parse_umbrela_grade(answer, [UMBRELA])[0] == grade


#: the forms judges state a grade in, each with every grade 0-3
GRADE_FORMS = [
    "##final score: {g}",
    "Final score: {g}",
    "final score - {g}",
    "The final score is {g}.",
    "score: {g}",
    "Score: {g}/3",
    "O: {g}",
    '"O": {g}',
    '{{"M": 1, "T": 2, "O": {g}}}',
    "I would give it a score of {g}.",
    "I'd give it a {g}.",
    "Grade: {g}",
    "Relevance: {g}",
    "{g}",
    "**{g}**",
    "Category {g}",
    "The relevance category is {g}.",
    "Overall: {g}",
    "Final Score = {g}",
    "##final score: {g}\nThe passage is on topic.",
    "The passage mentions the query. ##final score: {g}",
    "M: 2, T: 1\n##final score: {g}",
    "Output: {g}",
    "I rate this passage {g}.",
    "My score is {g}",
    "Answer: {g}",
    "{g} - the passage answers it",
    "final_score: {g}",
    "(O): {g}",
]


@pytest.mark.parametrize("form", GRADE_FORMS)
def test_every_form_of_a_stated_grade_is_read_as_umbrela_reads_it(form):
    for g in range(4):
        answer = form.format(g=g)
        assert umbrela_parse(answer) == (g, 1)
        assert parse_umbrela_grade(answer, [UMBRELA])[0] == g, answer


@pytest.mark.parametrize(
    ("answer", "ours", "umbrela", "why"),
    [
        ("no numeric label present", None, (0, 0), "unreadable: unparseable, never grade 0"),
        ("I cannot grade this passage.", None, (0, 0), "a refusal"),
        ("The passage is relevant.", None, (0, 0), "no grade stated"),
        ("", None, (0, 0), "empty"),
        ("I would say 4", None, (0, 0), "4 is not a grade"),
        ("Relevance: 10/10", None, (0, 1), "UMBRELA's any-digit catch-all reads the last 0 of 10"),
        ("The passage is from 2023 and is relevant.", None, (3, 1), "a year is not a grade"),
        ("It is hard to say; the passage talks about 1 team.", None, (1, 1), "'X is N' with no grade word; any-digit catch-all"),
        ("score: 2.5", None, (2, 1), "a fraction is not a grade"),
        ("##final score: -1", None, (1, 1), "a negative number is not a grade"),
        ("Final score: \u22122", None, (2, 1), "nor with the minus sign"),
        ("-1", None, (1, 1), "a lone negative number"),
        ("Rating: 2 out of 3", 2, (3, 1), "UMBRELA's catch-all takes the last digit, the scale's 3"),
        ("<think>Maybe score: 3, it names the winner", None, (3, 1), "cut while reasoning: no answer"),
        ("Assign category 1 if the passage is somewhat related to the topic", None, (1, 1), "an echo of the prompt"),
        ("Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2", None, (2, 1), "echo, cut"),
        ("0 = represent that the passage has nothing to do with the query, \n1 = represents", None, (1, 1), "echo of the scale"),
        (UMBRELA, None, None, "the whole prompt repeated"),
    ],
)
def test_where_we_differ_from_umbrela_on_purpose(answer, ours, umbrela, why):
    assert parse_umbrela_grade(answer, [UMBRELA])[0] == ours, why
    if umbrela is not None:
        assert umbrela_parse(answer) == umbrela


def test_the_issues_answers_umbrela_reads_are_read():
    # issue 38 point 7: unparseable before; UMBRELA's parser reads each
    for answer, grade in (("The final score is 3.", 3), ("The score is 1.", 1), ("I would assign a score of 2.", 2), ("##final score: 2", 2)):
        assert umbrela_parse(answer) == (grade, 1)
        assert parse_umbrela_grade(answer)[0] == grade


def test_an_echoed_umbrela_prompt_is_no_grade():
    # issue 38 point 7: "Assign category 1 if…" parsed as grade 1 before
    echo = UMBRELA.split("\n\nQuery:")[0]
    assert parse_umbrela_grade(echo, [UMBRELA]) == (None, None)
    assert parse_umbrela_grade(UMBRELA, [UMBRELA]) == (None, None)
    # the same words as the model's own answer, with its grade after the echo: the grade is read
    text = "Assign category 1 if the passage is somewhat related. Here it answers the query: ##final score: 3"
    assert parse_umbrela_grade(text, [UMBRELA]) == (3, text.rindex("3"))


def test_the_offset_points_at_the_digit_in_the_whole_answer():
    text = "<think>score: 1?</think>\n##final score: 2"
    grade, at = parse_umbrela_grade(text)
    assert (grade, text[at]) == (2, "2") and at == len(text) - 1
    grade, at = parse_digit_grade(" 3 - relevant")
    assert (grade, at) == (3, 1)


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("2", 2),
        (" 3", 3),
        ("2 - the passage answers it", 2),
        ("1.", None),
        ("2.", None),
        ("1. 0 = represent", None),
        ("10", None),
        ("The score is 1.", 1),
        ("<think>hmm</think>3", 3),
    ],
)
def test_digit_prompt_reads_a_leading_grade_not_a_list_number(answer, grade):
    assert parse_digit_grade(answer, [DIGIT])[0] == grade


# -- picks ---------------------------------------------------------------------------------------
PAIR = pair_messages("who won", "The Texas Rangers won the 2023 World Series.", "Arizona lost the 2023 World Series to Texas.")[0][1]


@pytest.mark.parametrize(
    ("answer", "pick"),
    [
        ("A", "A"),
        ("B.", "B"),
        ("b", "B"),
        ("**A**", "A"),
        ("Passage B", "B"),
        ("Passage B is more relevant", "B"),
        ("Answer: A", "A"),
        ("The answer is B.", "B"),
        ("I choose A", "A"),
        ("A is more relevant", "A"),
        ("Passage A is better than passage B", "A"),
        ("Passage B is more relevant than passage A.", "B"),
        ("<think>A or B? A names the winner.</think>B", "B"),
        # not a pick
        ("A or B", None),
        ("A and B", None),
        ("A/B", None),
        ("Answer with one letter only: A or B.", None),
        ("Both passage A and passage B are relevant.", None),
        ("Neither A nor B", None),
        ("Both are relevant", None),
        ("A passage about baseball", None),
        ("A\nit names the winner", "A"),
        ("Passage A says Texas; passage B says Arizona lost.", None),
        ("<think>Passage A is the one", None),
        ("", None),
        ("Passage A: The Texas Rangers won the 2023 World Series.", None),  # the prompt's passage A, echoed
        # a sentence that says no: never read backwards as a pick of the letter it names
        ("A is less relevant than B", None),
        ("B is not more relevant than A.", None),
        ("Passage B is not relevant to the query.", None),
        ("Passage B is off-topic.", None),
        ("I would not choose A", None),
        ("A: no. B: yes.", None),
        ("A. Passage B is off-topic.", "A"),  # the pick's own sentence says yes
        ("Passage A is more relevant. Passage B is not.", "A"),
        ("B, since it names the winner", "B"),
    ],
)
def test_parse_pick(answer, pick):
    assert parse_pick(answer, [PAIR]) == pick


def test_pick_echo_of_the_instruction_was_read_as_the_first_passage():
    # issue 38 point 7: parse_pick("A or B") and "A and B" returned "A" before
    assert parse_pick("A or B") is None and parse_pick("A and B") is None


# -- RankGPT permutations --------------------------------------------------------------------------
CONVERSATION = [c for _r, c in rankgpt_messages("who won", [f"passage {i} text about the series" for i in range(1, 11)])]

#: answers that carry a ranking (or part of one), as listwise re-rankers write them
RANKINGS = [
    "[2] > [1] > [3]",
    "[3] > [1] > [2] > [4] > [5] > [6] > [7] > [8] > [9] > [10]",
    "[2] > [4] > [2] > [7] > [1]",
    "[11] > [3] > [1]",
    "2 > 1 > 3",
    "[1]",
    "1. [3]\n2. [1]\n3. [2]",
    "The ranking is: [4] > [2] > [9]",
    "[３] > [１] > [２]",
    "[②] > [①]",
    "<think>[1] seems best, then [2]</think>\n[2] > [1] > [3]",
    "[2] > [1] > [3] > [",  # cut at max_tokens
]


@pytest.mark.parametrize("answer", RANKINGS)
def test_a_ranking_rank_llm_reads_is_read_alike(answer):
    assert parse_permutation(answer, 10, CONVERSATION)[0] == rank_llm_permutation(answer, 10)


@pytest.mark.parametrize(
    ("answer", "rank_llm_first"),
    [
        ("Received passage [10].", 9),  # the conversation's own turn, repeated: rank_llm puts passage 10 first
        ("The output format should be [] > [], e.g., [1] > [2].", 0),  # the instruction, echoed
        ("<think>[3] is the most relevant, then [1]", 2),  # cut while reasoning
        ("[4] passage 4 text about the series", 3),  # a passage repeated with its number
    ],
)
def test_where_we_differ_from_rank_llm_on_purpose(answer, rank_llm_first):
    assert rank_llm_permutation(answer, 10)[0] == rank_llm_first
    order, counts = parse_permutation(answer, 10, CONVERSATION)
    assert order == list(range(10)) and counts["missing"] == 10  # no ranking at all: the shown order, unparseable


def test_garbage_and_counts():
    assert parse_permutation("Sure! Here is my ranking.", 5) == ([0, 1, 2, 3, 4], {"unknown": 0, "duplicates": 0, "missing": 5})
    # 7 unknown, the second [2] a repeat, [3] missing (appended in shown order)
    assert parse_permutation("[2] > [4] > [2] > [7] > [1]", 4) == ([1, 3, 0, 2], {"unknown": 1, "duplicates": 1, "missing": 1})


# -- citations -----------------------------------------------------------------------------------
CITE_PROMPT = [
    "Write an accurate, engaging, and concise answer ... When citing several search results, use [1][2][3]. Cite at least one document.",
    "Document [1](Title: Rangers): The Texas Rangers won the 2023 World Series.\nDocument [2](Title: Arizona): Arizona lost.\n\nQuestion: who won?\nAnswer:",
]


@pytest.mark.parametrize(
    "answer",
    [
        "The Texas Rangers won [1].",
        "The Rangers won [1][2]. Arizona lost [2].",
        "Texas won [2] [1].",
        "They won in five games [1]. [3]",
        "Texas [1]",
    ],
)
def test_citations_alce_reads_are_read_alike(answer):
    parsed = parse_citations(answer, 5, CITE_PROMPT)
    assert parsed.cited == tuple(sorted(set(alce_citations(answer))))


@pytest.mark.parametrize(
    ("answer", "k", "cited", "alce", "why"),
    [
        ("Both say so [1, 2].", 5, (1, 2), [1], "a list counts whole; ALCE reads its first number"),
        ("Both say so [1-3].", 5, (1, 2, 3), [1], "a range counts whole (it was no citation at all); ALCE reads its first number"),
        ("Both say so [2\u20134].", 5, (2, 3, 4), [2], "with an en dash too"),
        ("Texas won [2", 5, (), [2], "an unclosed bracket (a cut) is no citation"),
        ("Document [3](Title: x): copied text", 5, (), [3], "a repeated passage header"),
        ("When citing several search results, use [1][2][3].", 5, (), [1, 2, 3], "the instruction, echoed"),
        ("<think>[1] says Texas</think>Texas won.", 5, (), [1], "reasoning is not the answer"),
    ],
)
def test_where_we_differ_from_alce_on_purpose(answer, k, cited, alce, why):
    assert alce_citations(answer) == alce
    assert parse_citations(answer, k, CITE_PROMPT).cited == cited, why


def test_citations_only_out_of_range_cite_no_passage():
    p = parse_citations("It happened in 2023 [7][9].", 5)
    assert (p.cited, p.out_of_range, p.status) == ((), (7, 9), "out_of_range")
    # a range's numbers past the passages: its ends, not every number between them
    p = parse_citations("In [2020-2021] and [4-9].", 5)
    assert (p.cited, p.out_of_range, p.status) == ((4, 5), (9, 2020, 2021), "out_of_range")
    assert parse_citations("<think>[1]", 5).status == "empty"  # only reasoning, cut


# -- the rules before every parser, and the registry ----------------------------------------------
def test_strip_reasoning():
    assert strip_reasoning("<think>a</think> b") == (" b", 16)
    assert strip_reasoning("<think>a</think>x<think>c</think>y") == ("y", 33)
    assert strip_reasoning("  <THINK> still thinking") == ("", 24)
    assert strip_reasoning("no reasoning") == ("no reasoning", 0)


def test_echo_spans_need_four_words_or_a_whole_message():
    prompt = ["Rank the passages. The output format should be [] > [], e.g., [1] > [2].", "Received passage [10]."]
    assert echo_spans("[1] > [2]", prompt) == []  # three words: a genuine answer says as much
    text = "so e.g., [1] > [2]."
    assert echo_spans(text, prompt) == [(3, len(text))]
    assert echo_spans("Received passage [10].", prompt) == [(0, 22)]
    assert echo_spans("anything at all", None) == []


def test_parsers_are_registered_by_name():
    assert set(PARSERS) == {"umbrela-grade", "digit-grade", "ab-pick", "rankgpt-permutation", "alce-citations"}
    assert get_parser("ab-pick")("B") == "B"
    with pytest.raises(ConfigError, match="unknown answer parser 'nope'"):
        get_parser("nope")
