"""The LLM commands check their inputs before any model is loaded, any call made or any ranking
computed; and ``judge -r``, ``cite -r`` and a grid's retrievers take ``LABEL=SPEC`` as
``evaluate -r`` does.

A new user's ``cite`` on a corpus without LLM twins loaded a model and generated for minutes
before the analysis had nothing to compare; ``judge`` loaded its model before refusing the same
corpus. Each check here runs the command in this process with the model opener, the retriever
builder and the dataset loader watched: a refusal must come with none of them called (or, for a
refusal that needs the data, with only the loader called), no output folder claimed, and one
line naming what the input has and what the command needs.
"""

from __future__ import annotations

import shutil

import pytest

from sourcebias.cli.main import main


@pytest.fixture(scope="module")
def one_source(tmp_path_factory):
    """NQ-UTD's human corpus alone (no LLM twin), in the package's own layout."""
    from importlib.resources import files

    builtin = files("sourcebias") / "data" / "builtin" / "nq-utd"
    root = tmp_path_factory.mktemp("one") / "nq-human-only"
    (root / "corpus").mkdir(parents=True)
    (root / "qrels").mkdir()
    for rel in ("corpus/human.jsonl.gz", "queries.jsonl.gz", "qrels/test.tsv.gz"):
        shutil.copyfile(str(builtin / rel), root / rel)
    return root


@pytest.fixture
def watched(monkeypatch):
    """What the command called: the model openers, the retriever builder, the dataset loader."""
    import sourcebias.data
    import sourcebias.llmcalls
    import sourcebias.retrieval

    calls: list[str] = []

    def spy(module, name):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **kw: calls.append(name) or real(*a, **kw))

    spy(sourcebias.llmcalls, "open_client")
    spy(sourcebias.llmcalls, "open_backend")
    spy(sourcebias.retrieval, "build_retriever")
    spy(sourcebias.data, "load_dataset")
    return calls


def _refused(args, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(args)
    err = " ".join(capsys.readouterr().err.split())
    assert info.value.code == 2, err
    return err


def test_cite_refuses_a_corpus_without_twins_before_any_model_or_ranking(one_source, watched, tmp_path, capsys):
    err = _refused(["cite", str(one_source), "-r", "bm25", "--generator", "smollm2", "-o", str(tmp_path / "out")], capsys)
    assert "its corpus has one source only, human (800 documents)" in err
    assert "a citation study (which of the passages shown a generator cites) compares the human original with its LLM twins" in err
    assert "it needs an LLM source beside the human one" in err
    assert watched == ["load_dataset"]  # no model opened, nothing ranked
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the folder was claimed and released: no lock, no staging, no folder


def test_cite_refuses_it_with_a_run_file_too(one_source, watched, tmp_path, capsys):
    run = tmp_path / "bm25.trec"
    run.write_text("Sports_q1 Q0 human/x 1 1.0 t\n")
    err = _refused(["cite", str(one_source), "--run", str(run), "--generator", "smollm2"], capsys)
    assert "one source only" in err and watched == ["load_dataset"]


def test_judge_refuses_a_corpus_without_twins_before_its_model(one_source, watched, tmp_path, capsys):
    err = _refused(["judge", str(one_source), "--judge", "smollm2", "-o", str(tmp_path / "out")], capsys)
    assert "one source only (human); a judge's twin bias needs LLM twins" in err
    assert "open_client" not in watched and "open_backend" not in watched


@pytest.mark.parametrize(
    "args, message",
    [
        (["cite", "nq-utd", "-r", "bm26", "--generator", "smollm2"], "unknown retriever 'bm26'"),
        (["cite", "nq-utd", "-r", "bm25", "--generator", "openai:qwen"], "--generator 'openai:qwen': a server is named openai:MODEL@http://HOST:PORT/v1"),
        (["cite", "nq-utd", "--run", "no-such-run", "--generator", "smollm2"], "no-such-run: neither an evaluate output folder nor a TREC run file"),
        (["judge", "nq-utd", "--judge", "smollm2", "-r", "bm26"], "unknown retriever 'bm26'"),
        (["judge", "nq-utd", "--judge", "openai:qwen", "-r", "bm25"], "--judge 'openai:qwen': a server is named"),
        (["judge", "nq-utd", "--judge", "smollm2", "--run", "no-such.trec"], "--run no-such.trec: file not found"),
    ],
)
def test_a_bad_spec_or_file_is_refused_before_the_data_is_read(args, message, watched, tmp_path, capsys):
    out = tmp_path / "not-yet" / "out"
    err = _refused([*args, "-o", str(out)], capsys)
    assert message in err
    assert watched == [] and not out.parent.exists()  # nothing loaded, built or opened; no folder claimed


@pytest.fixture(scope="module")
def judge_server():
    from sourcebias.data import load_dataset
    from sourcebias.judges.known_truth import BiasedJudge
    from sourcebias.llmcalls.simulated import SimulatedServer

    nq = load_dataset("nq-utd")
    with SimulatedServer(BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.3)) as url:
        yield url


def test_judge_names_a_labelled_retriever_by_its_label(judge_server, tmp_path, capsys):
    from sourcebias.judges import load_judge

    out = tmp_path / "judge"
    args = ["judge", "nq-utd", "--judge", f"openai:sim@{judge_server}", "--max-queries", "4", "--resamples", "200", "-r", "lex=bm25", "-r", "bm25:k1=0.9"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert info.value.code == 0, capsys.readouterr().err
    result = load_judge(out)
    assert result.dataset["runs"] == ["bm25:k1=0.9", "lex"]
    assert {r["run"] for r in result.protocol["rows"]} == {"lex", "bm25:k1=0.9"}


def test_judge_refuses_two_retrievers_of_one_name(watched, tmp_path, capsys):
    err = _refused(["judge", "nq-utd", "--judge", "openai:sim@http://127.0.0.1:9/v1", "-r", "a=bm25", "-r", "a=tfidf", "-o", str(tmp_path / "o")], capsys)
    assert "two runs share a name" in err and "open_client" not in watched and "build_retriever" not in watched


def test_cite_ranks_with_a_labelled_retriever(tmp_path, capsys):
    from sourcebias.citations import load_citations
    from sourcebias.citations.simulated import responder_for
    from sourcebias.data import load_dataset
    from sourcebias.llmcalls.simulated import SimulatedServer

    nq = load_dataset("nq-utd")
    with SimulatedServer(responder_for(nq.corpus, nq.human_source, (0.5, 0.0, -0.5), 1.0)) as url:
        common = ["--generator", f"openai:sim@{url}", "-k", "3", "--max-queries", "6", "--cache-dir", str(tmp_path / "cache")]
        for name, r in (("plain", "bm25"), ("labelled", "lex=bm25")):
            with pytest.raises(SystemExit) as info:
                main(["cite", "nq-utd", "-r", r, *common, "-o", str(tmp_path / name)])
            assert info.value.code == 0, capsys.readouterr().err
    plain, labelled = load_citations(tmp_path / "plain"), load_citations(tmp_path / "labelled")
    assert labelled.inputs["retriever"] == "bm25" and labelled.inputs["label"] == "lex" and "label" not in plain.inputs
    assert labelled.passages.equals(plain.passages)  # the same ranking, named otherwise


def test_a_grid_retriever_takes_a_label(tmp_path):
    from sourcebias.core.errors import DataError
    from sourcebias.experiments.config import load_grid_config

    def grid(retrievers: str):
        path = tmp_path / "grid.toml"
        path.write_text(f'[grid]\nname = "g"\n\n[[datasets]]\npath = "nq-utd"\n\n{retrievers}')
        return load_grid_config(path)

    cfg = grid('[[retrievers]]\nspec = "lex=bm25"\n\n[[retrievers]]\nspec = "bm25>>rankgpt:openai:qwen@http://gpu1:8000/v1,depth=10"\n')
    assert [(r.name, r.spec) for r in cfg.retrievers] == [
        ("lex", "bm25"),
        ("bm25>>rankgpt:openai:qwen,depth=10", "bm25>>rankgpt:openai:qwen@http://gpu1:8000/v1,depth=10"),
    ]
    assert grid('[[retrievers]]\nspec = "lex=bm25"\nname = "lex"\n').retrievers[0].name == "lex"
    with pytest.raises(DataError, match=r"grid.toml:9: retrievers\[1\]: two names, 'other' \(name\) and 'lex' \(LABEL= of the spec\); give one"):
        grid('[[retrievers]]\nspec = "lex=bm25"\nname = "other"\n')


def test_generate_refuses_other_settings_or_a_busy_twin_before_its_model(nq_utd, tmp_path, capsys, monkeypatch):
    """A twin made with other settings, or being written by another run, was refused once the
    model had been loaded (seconds to minutes); now before."""
    from generation_helpers import copy_nq_subset

    import sourcebias.llmcalls
    from sourcebias.generation.journal import exclusive
    from sourcebias.generation.rewrite import resolve_target
    from sourcebias.llmcalls.simulated import SimulatedServer

    ds = copy_nq_subset(nq_utd, tmp_path / "ds", 2)
    with SimulatedServer(lambda messages, params: ("A passage written again in other words.", None)) as url:
        with pytest.raises(SystemExit) as info:
            main(["generate", str(ds), "--name", "twin", "--model", f"openai:sim@{url}"])
        assert info.value.code in (0, None), capsys.readouterr().err
    opened: list[str] = []
    real = sourcebias.llmcalls.open_backend
    monkeypatch.setattr(sourcebias.llmcalls, "open_backend", lambda *a, **kw: opened.append("open_backend") or real(*a, **kw))
    err = _refused(["generate", str(ds), "--name", "twin", "--model", "smollm2"], capsys)
    assert "was made with other settings (model differ)" in err and opened == []
    with exclusive(resolve_target(ds, "twin")):  # another run holds the twin
        err = _refused(["generate", str(ds), "--name", "twin", "--model", "smollm2", "--overwrite"], capsys)
    assert "another `sourcebias generate` is writing" in err and opened == []


def test_cite_asks_about_the_split_named_after_the_folder(tmp_path, capsys):
    """``cite DIR,split`` (as ``judge`` takes it) asks only about that split's judged queries."""
    from importlib.resources import files

    from sourcebias.citations import load_citations
    from sourcebias.citations.simulated import responder_for
    from sourcebias.data import load_dataset
    from sourcebias.llmcalls.simulated import SimulatedServer

    builtin = files("sourcebias") / "data" / "builtin" / "nq-utd"
    root = tmp_path / "nq"
    (root / "corpus").mkdir(parents=True)
    (root / "qrels").mkdir()
    for rel in ("corpus/human.jsonl.gz", "corpus/llama-2-7b-chat-tmp0.2.jsonl.gz", "queries.jsonl.gz", "qrels/test.tsv.gz"):
        shutil.copyfile(str(builtin / rel), root / rel)
    nq = load_dataset(root)
    chosen = sorted(nq.qrels.queries_with_relevant())[:3]  # a hand-made split of three judged queries
    lines = [f"{q}\t{d}\t{g}" for q in chosen for d, g in sorted(nq.qrels[q].items())]
    (root / "qrels" / "pilot.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    with SimulatedServer(responder_for(nq.corpus, nq.human_source, (0.5, 0.0, -0.5), 1.0)) as url:
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "cite",
                    f"{root},pilot",
                    "-r",
                    "bm25",
                    "--generator",
                    f"openai:sim@{url}",
                    "-k",
                    "3",
                    "--cache-dir",
                    str(tmp_path / "c"),
                    "-o",
                    str(tmp_path / "o"),
                ]
            )
        assert info.value.code == 0, capsys.readouterr().err
    asked = set(load_citations(tmp_path / "o").passages["query_id"])
    assert asked == set(chosen)
