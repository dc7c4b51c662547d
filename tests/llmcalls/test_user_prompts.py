"""A user's own prompt file, end to end in every LLM stage, through the simulated server: the model
(a responder) reads what it was asked back through the same file (``Prompt.read``), answers, and
the stage reads the answers with the file's parser; the result and the manifest record the file
(name, SHA-256, text)."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pytest

from sourcebias.cli.main import main
from sourcebias.core.artifacts import read_manifest
from sourcebias.data import load_dataset
from sourcebias.data.corpus import Corpus, Document
from sourcebias.llmcalls.prompts import load_prompt, read_prompt_file
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.retrieval import build_retriever
from sourcebias.retrieval.run import Run

JUDGE = '''name = "terse-judge"
description = "A short 0-3 grading prompt, answered 'Grade: N'"
reference = "a user's own"
answer = "grade"
parser = "umbrela-grade"

[[messages]]
role = "system"
content = "You grade search results for relevance."

[[messages]]
role = "user"
content = """Search: {query}
Result: {passage}
Grade the result 0 (useless) to 3 (answers the search). Answer 'Grade: N'."""
'''

RANKER = """name = "one-turn-ranker"
answer = "permutation"
parser = "rankgpt-permutation"

[passages]
item = "({number}) {passage}"

[[messages]]
role = "user"
content = "Order these {count} passages for '{query}', most relevant first, as [2] > [1] > ...:\\n{passages}"
"""

TRUE_FALSE = """name = "true-false"
answer = "yes-no"
probabilities = "first-token"
choices = ["True", "False"]

[[messages]]
role = "user"
content = "Query: {query}\\nDocument: {passage}\\nIs the document relevant to the query? True or False."
"""

CITER = """name = "short-citer"
answer = "citations"
parser = "alce-citations"
one_line = ["query", "title", "text"]

[passages]
item = "[{number}] {title} | {text}"
separator = "\\n"

[[messages]]
role = "user"
content = "Sources:\\n{passages}\\n\\nAnswer '{query}' in one or two sentences, citing the sources you use as [1]."
"""


def write(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def recorded(prompts: dict, path) -> None:
    """What a result says was asked: the file's name, digest and text."""
    assert prompts["file"] == str(path) and prompts["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prompts["text"] == path.read_text(encoding="utf-8") and prompts["name"] == read_prompt_file(path).name


def test_a_users_judge_prompt_through_the_command_line(nq_utd, tmp_path, capsys):
    from sourcebias.judges import load_judge
    from sourcebias.judges.known_truth import BiasedJudge

    ds = load_dataset(nq_utd)
    path = write(tmp_path, JUDGE, "my-judge.toml")
    mine = read_prompt_file(path)
    biased = BiasedJudge.from_corpus(ds.corpus, ds.human_source, delta=0.4)
    given: dict[tuple[str, str], int] = {}

    def grade(messages, params):
        asked = mine.read(messages)  # the query and passage, read back through the user's file
        g = biased.grade(asked["query"], asked["passage"], False, params["seed"])
        given[asked["query"], asked["passage"]] = g
        return f"Grade: {g}", None

    out = tmp_path / "out"
    with SimulatedServer(grade) as url:
        code, text, err = run_cli(
            ["judge", nq_utd, "--judge", f"openai:sim@{url}", "--prompt", path, "--max-queries", "3", "--cache-dir", tmp_path / "c", "-o", out], capsys
        )
        assert code == 0, err
        code, _, err = run_cli(["judge", nq_utd, "--judge", f"openai:sim@{url}", "--prompt", "alce", "-o", tmp_path / "refused"], capsys)
    assert "Twin bias of the judge" in text
    result = load_judge(out)
    assert len(result.grades) == len(given) == 60 and result.grades["grade"].notna().all()  # every answer read by the file's parser
    for row in result.grades.itertuples():
        assert row.grade == given[ds.queries[row.query_id], ds.corpus[ds.corpus.position(row.doc_id, row.source)].retrieval_text()]
    recorded(result.settings["prompts"]["grade"], path)
    assert result.settings["prompt"] == "terse-judge"
    recorded(read_manifest(out)["parameters"]["prompts"]["grade"], path)
    alce = load_prompt("alce")
    answer_line = next(i for i, line in enumerate(alce.text.splitlines(), start=1) if line.startswith("answer ="))
    assert code == 2 and f'{alce.path}:{answer_line}: answer = "citations"' in err and 'the judge\'s grade modes read(s) answer = "grade"' in err
    assert not (tmp_path / "refused").exists()


def valued_run(values):
    docs = [Document(f"d{v}", "human" if v % 2 else "llm", "", f"value {v}") for v in values]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    return corpus, Run(corpus, "first", {"q": np.arange(len(values), dtype=np.int64)}, {"q": -np.arange(len(values), dtype=float)}, {})


def test_a_users_permutation_prompt_in_rankgpt(tmp_path):
    path = write(tmp_path, RANKER, "ranker.toml")
    mine = read_prompt_file(path)
    seen = []

    def by_value(messages, params):
        assert len(messages) == 1  # one turn: the user's prompt, not RankGPT's conversation
        shown = mine.read(messages)["passages"]
        seen.append([p["number"] for p in shown])
        values = [int(p["passage"].split()[1]) for p in shown]
        return " > ".join(f"[{i + 1}]" for i in sorted(range(len(values)), key=lambda i: -values[i])), None

    corpus, run = valued_run([1, 5, 2, 6, 3, 4])
    with SimulatedServer(by_value) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=6,window=3,step=2,cache=false,prompt={path}").stages[0]
        out = stage.apply(run, {"q": "q"})
    # as worked by hand in test_llm_rerankers: windows (3,6) -> [6,4,3]; (1,4) -> [6,5,2]; (0,2) -> [6,1]
    assert [int(corpus.texts[i].split()[1]) for i in out.positions["q"]] == [6, 1, 5, 2, 4, 3]
    assert seen == [[1, 2, 3], [1, 2, 3], [1, 2]] and out.info["stages"][-1]["llm_answers"]["repaired"] == 0
    recorded(stage.config()["prompt"], path)


def test_a_users_yes_no_prompt_in_llm_yesno(tmp_path):
    path = write(tmp_path, TRUE_FALSE, "true-false.toml")
    mine = read_prompt_file(path)

    def true_false(messages, params):
        relevant = "alpha" in mine.read(messages)["passage"]
        return ("True", [{"True": math.log(0.7), "False": math.log(0.2)}]) if relevant else ("False", [{"False": math.log(0.6), "True": math.log(0.3)}])

    corpus = Corpus.from_documents([Document("a", "human", "", "alpha text"), Document("b", "llm", "", "beta text")], source_order=["human", "llm"])
    run = Run(corpus, "first", {"q": np.array([1, 0])}, {"q": np.array([2.0, 1.0])}, {})
    with SimulatedServer(true_false) as url:
        stage = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},depth=2,cache=false,prompt={path}").stages[0]
        out = stage.apply(run, {"q": "which"})
    assert out.positions["q"].tolist() == [0, 1] and out.scores["q"] == pytest.approx([0.7 / 0.9, 0.3 / 0.9])
    assert out.info["stages"][-1]["answers"] == ["True", "False"] and stage.score_definition.startswith("P(True) / (P(True) + P(False))")
    recorded(stage.config()["prompt"], path)


def test_a_users_citation_prompt_through_the_command_line(nq_utd, tmp_path, capsys):
    from sourcebias.citations import load_citations
    from sourcebias.citations.simulated import responder_for

    ds = load_dataset(nq_utd)
    path = write(tmp_path, CITER, "citer.toml")
    responder = responder_for(ds.corpus, ds.human_source, [1.0, 0.0, -1.0], 1.5, prompt=str(path))  # reads the passages back through the file
    out = tmp_path / "out"
    with SimulatedServer(responder) as url:
        args = ["cite", nq_utd, "-r", "bm25", "--generator", f"openai:sim@{url}", "-k", "3", "--max-queries", "4", "--prompt", path, "--shots", "0"]
        code, _, err = run_cli([*args, "--cache-dir", tmp_path / "c", "-o", out], capsys)
        assert code == 0, err
        code, _, err = run_cli(["cite", nq_utd, "-r", "bm25", "--generator", f"openai:sim@{url}", "--prompt", path, "-o", tmp_path / "o2"], capsys)
    assert code == 2 and "shots is 0 to 0 (the demonstrations of the prompt" in err  # --shots 1 (the default): this prompt has none
    result = load_citations(out)
    answers = result.answers
    assert len(answers) == 4 and (answers["status"] != "empty").all() and not answers["echoed"].any()
    for text, cited in zip(answers["text"], answers["citations"]):
        assert " ".join(sorted(set(re.findall(r"\[(\d)\]", text)))) == (cited if isinstance(cited, str) else "")  # read as the responder wrote them
    recorded(result.settings["prompt"], path)
    recorded(read_manifest(out)["parameters"]["prompt"], path)
