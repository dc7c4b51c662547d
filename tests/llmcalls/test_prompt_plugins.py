"""Prompts as plug-ins (issue 39, part 2): the shipped files send byte for byte what the stages
sent before they were files, a prompt file is checked (file, line, field named), a stage refuses
a prompt that asks for another answer, and a user's own prompt file works end to end through the
simulated server in every stage.

``tests/fixtures/prompts/sent_before.json`` was written by the code on main before the prompts
moved (the prompts as Python strings in judges/prompts.py, rankgpt.py, llm_yesno.py and
citations/prompt.py): the messages of each prompt for a set of inputs (braces, new lines, tabs,
non-ASCII, empty titles), and the SHA-256 of every call each stage built on nq-utd. The answer
store is keyed by the whole call: a changed byte would leave every cached answer unread.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.llmcalls.prompts import Prompt, builtin_prompt_files, load_prompt, prompt_kinds, read_prompt_file, register_prompt

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "prompts" / "sent_before.json"
SENT = json.loads(FIXTURE.read_text(encoding="utf-8"))


def call_digest(call) -> str:
    return hashlib.sha256(json.dumps(asdict(call), sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def case_fields(case):
    fields = dict(case["fields"])
    if case["prompt"] in ("umbrela", "digit"):
        fields["disclosure"] = prompt_kinds()[case["prompt"]].disclosures[case["disclosure"]] if case["disclosure"] else ""
    return fields


# -- byte for byte -------------------------------------------------------------------------------
def test_every_shipped_prompt_renders_the_messages_sent_before():
    assert {c["prompt"] for c in SENT["cases"]} == {p.stem for p in builtin_prompt_files()}  # every shipped file is held to its old messages
    for case in SENT["cases"]:
        got = prompt_kinds()[case["prompt"]].render(case_fields(case), case.get("passages", ()), case.get("shots", 0))
        assert [list(m) for m in got] == case["messages"], case["prompt"]


def test_the_stage_helpers_render_the_messages_sent_before():
    from sourcebias.citations.prompt import citation_messages
    from sourcebias.judges.prompts import grade_messages, pair_messages
    from sourcebias.retrieval.rerankers.rankgpt import rankgpt_messages

    for case in SENT["cases"]:
        f, name = case["fields"], case["prompt"]
        if name in ("umbrela", "digit"):
            got = grade_messages(f["query"], f["passage"], case["disclosure"], name)
        elif name == "pairwise":
            got = pair_messages(f["query"], f["a"], f["b"])
        elif name == "rankgpt":
            got = rankgpt_messages(f["query"], [p["passage"] for p in case["passages"]])
        elif name == "alce":
            got = citation_messages(f["query"], [(p["title"], p["text"]) for p in case["passages"]], case["shots"])
        else:
            continue
        assert [list(m) for m in got] == case["messages"]


@pytest.fixture(scope="module")
def nq():
    from sourcebias.data import load_dataset

    return load_dataset("nq-utd")


@pytest.fixture(scope="module")
def judged(nq):
    assert SENT["queries"] == [q for q in nq.queries if q in nq.qrels and len(nq.qrels[q])][:2]
    return SENT["queries"]


def test_the_judge_sends_the_calls_it_sent_before(nq, judged):
    from sourcebias.judges.grading import JudgeSettings, build_calls
    from sourcebias.judges.items import item_table

    items = item_table(nq, judged)
    for prompt in ("umbrela", "digit"):
        for top in (5, 0):
            settings = JudgeSettings(modes=("grade", "disclosure", "pairwise"), prompt=prompt, top_logprobs=top, max_tokens=16 if top else 1, seed=3)
            calls, _ = build_calls(nq, items, settings)
            assert [call_digest(c) for c in calls] == SENT["calls"][f"judge/{prompt}/top_logprobs={top}"]


@pytest.fixture(scope="module")
def bm25_top(nq, judged):
    from sourcebias.retrieval import BM25

    return BM25().retrieve(nq.corpus, {q: nq.queries[q] for q in judged}, 6)


def test_the_citation_study_sends_the_calls_it_sent_before(nq, judged, bm25_top):
    from sourcebias.citations.design import Context
    from sourcebias.citations.study import CiteSettings, calls_for

    contexts = []
    for q in judged:
        top = [int(p) for p in bm25_top.positions[q][:4]]
        contexts += [Context(q, order, tuple(top[r - 1] for r in ranks), tuple(ranks)) for order, ranks in enumerate(([1, 2, 3, 4], [3, 1, 4, 2]))]
    for shots in (0, 1):
        for temperature in (0.0, 0.7):
            settings = CiteSettings(k=4, orders=2, seed=2, max_tokens=128, temperature=temperature, shots=shots)
            got = [call_digest(c) for c in calls_for(contexts, nq.corpus, nq.queries, settings)]
            assert got == SENT["calls"][f"cite/shots={shots}/temperature={temperature}"]


class Recorder:
    """A client that passes every call to a real one (against the simulated server) and keeps them;
    ``exact``: whether it says it scores choices exactly (as a local model's client does), which
    decides the calls a stage builds."""

    def __init__(self, client, exact=None):
        self.client, self.calls = client, []
        self.exact_choices = client.exact_choices if exact is None else exact
        self.choice_top_k = client.choice_top_k

    def answer(self, calls, *, task=None):
        self.calls += list(calls)
        return self.client.answer(calls, task=task)

    def describe(self):
        return self.client.describe()


def ranks_reversed_and_says_yes(messages, params):
    if messages[-1]["content"].startswith("Search Query:"):
        n = sum(1 for m in messages if m["role"] == "user" and m["content"].startswith("["))
        return " > ".join(f"[{i}]" for i in range(n, 0, -1)), None
    return "Yes", [{"Yes": math.log(0.6), "No": math.log(0.3), "0": -3.0, "1": -2.5, "2": -2.0, "3": -1.5}]


def test_the_llm_rerankers_send_the_calls_they_sent_before(nq, judged, bm25_top):
    from sourcebias.llmcalls import open_client
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.retrieval import build_retriever

    queries = {q: nq.queries[q] for q in judged}
    with SimulatedServer(ranks_reversed_and_says_yes) as url:
        for spec in ("rankgpt:openai:sim@URL,depth=6,window=4,step=2,words=25", "rankgpt:openai:sim@URL,depth=5,window=5,words=40"):
            stage = build_retriever("bm25>>" + spec.replace("URL", url) + ",cache=false").stages[0]
            stage._client = Recorder(open_client(f"openai:sim@{url}", cache=False))
            stage.apply(bm25_top, queries, seed=4)
            assert [call_digest(c) for c in stage._client.calls] == SENT["calls"][spec]
        for model in ("openai:sim@URL", "smollm2"):
            for answers in ("yesno", "grade"):
                stage = build_retriever(f"bm25>>llm-yesno:{model.replace('URL', url)},depth=3,words=30,answers={answers},cache=false").stages[0]
                stage._client, stage._loaded = Recorder(open_client(f"openai:sim@{url}", cache=False), exact=model == "smollm2"), True
                stage.apply(bm25_top, queries)
                assert [call_digest(c) for c in stage._client.calls] == SENT["calls"][f"llm-yesno:{model},depth=3,words=30,answers={answers}"]


# -- reading a prompt back -------------------------------------------------------------------------
def test_a_prompt_reads_back_the_fields_it_was_written_with():
    for case in SENT["cases"]:
        prompt = prompt_kinds()[case["prompt"]]
        read = prompt.read([tuple(m) for m in case["messages"]])
        assert read is not None, case["prompt"]
        for key, value in case["fields"].items():
            assert read[key] == prompt.shown(key, value), (case["prompt"], key)
        if case["prompt"] in ("umbrela", "digit"):
            assert read["disclosure"] == case["disclosure"]
        for i, p in enumerate(case.get("passages", ()), start=1):
            assert read["passages"][i - 1] == {"number": i, **{k: prompt.shown(k, v) for k, v in p.items()}}
    umbrela = prompt_kinds()["umbrela"]
    assert umbrela.read([("user", "Rate this passage.")]) is None and prompt_kinds()["pairwise"].read([("user", "Query: q")]) is None


# -- a prompt file is checked -------------------------------------------------------------------------
MINE = '''# a judge prompt of one's own
name = "terse"
description = "A short 0-3 grading prompt"
reference = "a test"
answer = "grade"
parser = "umbrela-grade"

[[messages]]
role = "system"
content = "You grade search results."

[[messages]]
role = "user"
content = """Query: {query}
Result: {passage}
Grade it 0-3 and answer 'Grade: N'."""
'''


def write(tmp_path, text, name="mine.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "line", "says"),
    [
        (("parser =", "parsr ="), 6, "unknown key(s) parsr (did you mean parser?)"),
        (('answer = "grade"', 'answer = "score"'), 5, "answer: 'score' is not one of grade, yes-no, pick, permutation, citations"),
        (('parser = "umbrela-grade"', 'parser = "ab-pick"'), 6, '\'ab-pick\' reads answer = "pick", not "grade"'),
        (('parser = "umbrela-grade"', 'parser = "umbrella"'), 6, "unknown parser 'umbrella'"),
        (('role = "system"', 'role = "bot"'), 9, "messages[1].role: 'bot' is not one of system, user, assistant"),
        (('content = "You grade search results."', 'contents = "x"'), 10, "messages[1]: unknown key(s) contents (did you mean content?)"),
        (('name = "terse"\n', 'name = "my judge"\n'), 2, "'my judge' is not a name"),
        (('answer = "grade"\n', ""), None, "'answer' is missing"),
        (('name = "terse"\n', 'name = "terse\n'), 2, "not valid TOML"),
    ],
)
def test_a_malformed_prompt_file_names_the_file_the_line_and_the_key(tmp_path, change, line, says):
    path = write(tmp_path, MINE.replace(*change))
    with pytest.raises(DataError) as info:
        read_prompt_file(path)
    assert info.value.path == path and says in info.value.problem, info.value.problem
    if line is not None:
        assert info.value.line == line and str(info.value).startswith(f"{path}:{line}: ")


def test_a_missing_message_key_points_at_its_table(tmp_path):
    with pytest.raises(DataError) as info:
        read_prompt_file(write(tmp_path, MINE.replace('role = "user"\n', "")))
    assert info.value.line == 12 and "messages[2]: 'role' is missing" in info.value.problem


def test_a_field_the_stage_does_not_give_is_refused_with_its_line(tmp_path):
    from sourcebias.judges.prompts import grade_prompt

    path = write(tmp_path, MINE.replace("Result: {passage}", "Result: {pasage}"))
    prompt = read_prompt_file(path)  # a field is the stage's to give: the file alone is well formed
    with pytest.raises(DataError) as info:
        grade_prompt(str(path))
    assert info.value.line == 14 and "messages[2].content: field {pasage} (did you mean {passage}?) is not one the judge's grade modes give" in str(info.value)
    assert prompt.name == "terse"
    with pytest.raises(DataError, match=r"need\(s\) the field\(s\) \{passage\}"):
        grade_prompt(str(write(tmp_path, MINE.replace("Result: {passage}\n", ""), "no-passage.toml")))


def test_a_prompt_for_another_answer_is_refused_by_the_stage_naming_the_file(tmp_path):
    from sourcebias.citations.prompt import cite_prompt
    from sourcebias.judges.grading import JudgeSettings
    from sourcebias.judges.prompts import grade_prompt
    from sourcebias.retrieval import build_retriever

    alce = prompt_kinds()["alce"]
    with pytest.raises(DataError) as info:
        grade_prompt("alce")
    answer_line = next(i for i, line in enumerate(alce.text.splitlines(), start=1) if line.startswith("answer ="))
    assert info.value.path == alce.path and info.value.line == answer_line
    assert 'answer = "citations" (an answer citing numbered passages): the judge\'s grade modes read(s) answer = "grade"' in info.value.problem
    with pytest.raises(DataError, match="the judge's pairwise mode read"):
        JudgeSettings(modes=("pairwise",), pair_prompt="umbrela")
    with pytest.raises(DataError, match="the citation study read"):
        cite_prompt("rankgpt")
    with pytest.raises(DataError, match='rankgpt read\\(s\\) answer = "permutation"'):
        build_retriever("bm25>>rankgpt:smollm2,prompt=yesno")
    with pytest.raises(DataError, match='a grade prompt needs probabilities = "first-token"'):
        build_retriever(f"bm25>>llm-yesno:smollm2,prompt={write(tmp_path, MINE)}")  # its grade is read from the grade token, after generating
    with pytest.raises(DataError, match="llm-yesno was asked for answers=grade"):
        build_retriever("bm25>>llm-yesno:smollm2,prompt=yesno,answers=grade")
    with pytest.raises(ConfigError, match=r"neither a registered prompt .* nor a prompt file"):
        grade_prompt("umbrella")


def test_a_list_of_passages_for_a_stage_that_shows_one_is_refused(tmp_path):
    from sourcebias.judges.prompts import grade_prompt

    listed = MINE.replace("Result: {passage}", "Results:\n{passages}") + '\n[passages]\nitem = "[{number}] {passage}"\n'
    with pytest.raises(DataError, match="the judge's grade modes show\\(s\\) one passage, not a numbered list"):
        grade_prompt(str(write(tmp_path, listed)))


def test_the_disclosure_mode_needs_the_disclosure_field_and_its_lines(tmp_path):
    from sourcebias.judges.grading import JudgeSettings

    path = write(tmp_path, MINE)
    assert JudgeSettings(prompt=str(path)).prompts()[0].name == "terse"
    with pytest.raises(DataError, match=r"the disclosure mode needs a \{disclosure\} field"):
        JudgeSettings(modes=("disclosure",), prompt=str(path))
    lines = MINE.replace("Result: {passage}", "Result: {passage}\n{disclosure}") + '\n[disclosures]\nhuman = "By a person.\\n"\n'
    with pytest.raises(DataError, match=r"needs a \[disclosures\] line for ai"):
        JudgeSettings(modes=("disclosure",), prompt=str(write(tmp_path, lines, "half.toml")))


def test_a_plugin_registers_a_prompt_file_by_name(tmp_path):
    from sourcebias.llmcalls import prompts as registry

    path = write(tmp_path, MINE)
    try:
        register_prompt(read_prompt_file(path))
        assert load_prompt("terse").path == path and "terse" in prompt_kinds()
    finally:
        registry._PROMPTS.pop("terse", None)
    with pytest.raises(ValueError, match="a prompt needs a name"):
        register_prompt(Prompt("no name", "grade", ()))


# -- one grade -------------------------------------------------------------------------------------
def test_the_judge_and_llm_yesno_build_the_same_expected_grade():
    """The same first-token grade distribution, the same number, by one rule: a grade outside the
    top k left out (not bounded), and none under half the mass."""
    from sourcebias.judges.grading import parse_answers
    from sourcebias.llmcalls import Answer
    from sourcebias.llmcalls.grades import LOW_MASS, from_choices

    row = {"query_id": "q", "doc_id": "d", "source": "human", "origin": "qrels", "assessor_grade": 1.0, "label": ""}
    cases = [
        ({"0": math.log(0.1), "1": None, "2": math.log(0.5), "3": math.log(0.2)}, (2 * 0.5 + 3 * 0.2) / 0.8, ""),  # 1 outside the top k
        ({"0": math.log(0.3), "1": math.log(0.1), "2": None, "3": None}, math.nan, LOW_MASS),  # .4 of the mass
    ]
    for choices, value, note in cases:
        grades, _ = parse_answers([("grade", row)], [Answer("2", "stop", None, choices)], "human", "digit")
        expected = from_choices(choices)
        assert expected.note == grades["expected_note"].iloc[0] == note
        if note:
            assert math.isnan(grades["expected"].iloc[0]) and math.isnan(expected.value)
        else:
            assert grades["expected"].iloc[0] == pytest.approx(value) == expected.value


def test_llm_yesno_gives_no_expected_grade_under_half_the_mass_and_counts_it():
    from sourcebias.data.corpus import Corpus, Document
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.retrieval import build_retriever
    from sourcebias.retrieval.run import Run
    from sourcebias.study.job import llm_stage_notes

    def grader(messages, params):
        if "alpha" in messages[-1]["content"]:
            return "3", [{"3": math.log(0.6), "2": math.log(0.2), "The": math.log(0.1)}]
        return "I", [{"I": math.log(0.7), "1": math.log(0.2), "0": math.log(0.05)}]  # the grades hold .25

    corpus = Corpus.from_documents([Document("a", "human", "", "alpha"), Document("b", "llm", "", "beta")], source_order=["human", "llm"])
    run = Run(corpus, "first", {"q": np.array([1, 0])}, {"q": np.array([2.0, 1.0])}, {})
    with SimulatedServer(grader) as url:
        out = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=2,answers=grade,cache=false").stages[0].apply(run, {"q": "which"})
    assert out.scores["q"].tolist() == pytest.approx([(3 * 0.6 + 2 * 0.2) / 0.8, -1.0])
    info = out.info["stages"][-1]
    assert info["no_expected_grade"] == {"grade tokens hold under 0.5 of the probability": 1} and info["choice_missing"] == 2
    notes = [text for _level, text in llm_stage_notes("r/mixed", out.info)]
    assert any("1 pairs have no expected grade (grade tokens hold under 0.5 of the probability: 1): scored -1" in n for n in notes)
