"""`sourcebias generate` with the local backend (SmolLM2-135M-Instruct, offline): a twin that
`load_dataset` accepts and `sourcebias evaluate` scores, resumption after a torn last line,
settings guarded across reruns, Cocktail's length filter in a run, and clean CLI errors."""

from __future__ import annotations

import json
import shutil

import pytest
from generation_helpers import copy_nq_subset, human_ids, read_twin

from sourcebias.cli.main import main
from sourcebias.data import load_dataset
from sourcebias.generation.postprocess import STATUSES
from sourcebias.llmcalls.backends import GenerationRequest

NAME = "smollm2-tmp0.2"
BUDGET = ["--min-new-tokens", "16", "--max-new-tokens", "64", "--threads", "1"]  # 1 thread: see LocalBackend


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


@pytest.fixture(scope="module")
def twin_dataset(nq_utd, tmp_path_factory):
    """Two short nq-utd documents rewritten by SmolLM2 (once for the module)."""
    ds = copy_nq_subset(nq_utd, tmp_path_factory.mktemp("e2e") / "ds", 2)
    with pytest.raises(SystemExit) as info:
        main(["generate", str(ds), "--name", NAME, "--model", "smollm2", "--keep-raw", *BUDGET])
    assert (info.value.code or 0) == 0
    return ds


def _copy(ds, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(ds, dest)
    return dest


def test_twin_loads_and_evaluates(twin_dataset, capsys):
    twin = read_twin(twin_dataset / "corpus" / f"{NAME}.jsonl")
    human = {json.loads(line)["_id"]: json.loads(line) for line in (twin_dataset / "corpus" / "human.jsonl").open()}
    assert sorted(r["_id"] for r in twin) == sorted(human)
    for r in twin:
        meta = r["metadata"]
        assert meta["rewrite_status"] in STATUSES and meta["model"] == "smollm2" and meta["prompt"] == "kdd"
        assert meta["raw"] is not None and meta["finish_reason"] in ("stop", "length")
        assert r["title"] == human[r["_id"]]["title"]
        if meta["rewrite_status"] == "ok":
            assert r["text"].strip() and meta["finish_reason"] == "stop"
        else:  # flagged: the human text is kept
            assert r["text"] == human[r["_id"]]["text"]
    ds = load_dataset(twin_dataset)
    assert ds.corpus.source_counts() == {"human": 2, NAME: 2}
    manifest = json.loads((twin_dataset / "corpus" / f"{NAME}.manifest.json").read_text())
    assert manifest["outputs"]["documents"] == 2 and manifest["outputs"]["complete"] is True
    assert manifest["parameters"]["temperature"] == 0.2 and manifest["parameters"]["prompt"]["template"].startswith("Please rewrite")
    assert manifest["models"]["rewriter"]["backend"] == "local"
    code, out, err = run_cli(["evaluate", str(twin_dataset), "--retriever", "bm25", "--k", "1", "3", "--resamples", "100"], capsys)
    assert code == 0, err
    assert "Rel Δ" in out and "NDCG@1" in out


def test_rerun_repairs_a_torn_line_and_skips_done_documents(twin_dataset, tmp_path, capsys):
    ds = _copy(twin_dataset, tmp_path)
    out = ds / "corpus" / f"{NAME}.jsonl"
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    # As if killed while writing the second line: one complete line, then half a line.
    out.write_text(lines[0] + lines[1][: len(lines[1]) // 2], encoding="utf-8")
    code, stdout, err = run_cli(["generate", str(ds), "--name", NAME, "--model", "smollm2", "--keep-raw", *BUDGET], capsys)
    assert code == 0, err
    assert "removed a torn last line" in stdout and "1 already done" in stdout
    new = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert new[0] == lines[0]  # finished documents untouched
    ids = [json.loads(x)["_id"] for x in new]
    assert sorted(ids) == sorted(human_ids(ds)) and len(set(ids)) == 2
    # Same settings and seed: the regenerated document is the same text as before.
    assert json.loads(new[1])["metadata"]["raw"] == json.loads(lines[1])["metadata"]["raw"]
    manifest = json.loads((ds / "corpus" / f"{NAME}.manifest.json").read_text())
    assert [r["documents_written"] for r in manifest["runs"]] == [2, 1]
    assert manifest["runs"][1]["torn_tail_bytes_repaired"] > 0


def test_rerun_with_other_settings_is_refused(twin_dataset, tmp_path, capsys):
    ds = _copy(twin_dataset, tmp_path)
    code, out, err = run_cli(["generate", str(ds), "--name", NAME, "--model", "smollm2", "--temperature", "1.0", *BUDGET], capsys)
    assert code == 2 and "other settings (temperature differ)" in err and "Traceback" not in err + out


def test_length_filter_flags_without_calling_the_model(twin_dataset, tmp_path, capsys):
    ds = _copy(twin_dataset, tmp_path)
    # Both documents have fewer than 40 words: all are filtered, none is sent to the model.
    code, _out, err = run_cli(["generate", str(ds), "--name", "filtered", "--model", "smollm2", "--length-filter", "--min-words", "40", *BUDGET], capsys)
    assert code == 0, err
    twin = read_twin(ds / "corpus" / "filtered.jsonl")
    human = {r["_id"]: r["text"] for r in read_twin(ds / "corpus" / "human.jsonl")}
    assert [r["metadata"]["rewrite_status"] for r in twin] == ["filtered"] * 2
    assert all(r["text"] == human[r["_id"]] and "words, outside 40-2000" in r["metadata"]["note"] for r in twin)


def test_local_backend_honours_seed_and_budget(twin_dataset):
    from sourcebias.llmcalls.backends.local import LocalBackend

    backend = LocalBackend("smollm2", threads=1)  # the model loaded by the module's run, from the process cache
    req = GenerationRequest(
        "k", [{"role": "user", "content": "Please rewrite the following text: Dogs bark at night."}], "", max_tokens=5, temperature=1.0, seed=7
    )
    a, b = backend.generate(req), backend.generate(req)
    assert a.text == b.text and a.completion_tokens == 5 and a.finish_reason == "length"
    assert backend.count_tokens("Dogs bark at night.") > 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "{missing}", "--name", "x", "--model", "smollm2"], "dataset folder not found"),
        (["generate", "{ds}", "--name", "x", "--model", "smollm2", "--prompt", "nope.txt"], "neither a built-in prompt"),
        (["generate", "{ds}", "--name", "x", "--model", "m", "--base-url", "localhost:8000"], "must look like http://HOST:PORT/v1"),
        (["generate", "{ds}", "--name", "x", "--model", "openai:m@localhost:8000"], "--model 'openai:m@localhost:8000': a server is named openai:MODEL@http"),
        (["generate", "{ds}", "--name", "x", "--model", "openai:m@http://127.0.0.1:9/v1"], "no server is usable: http://127.0.0.1:9/v1: unreachable"),
        (
            ["generate", "{ds}", "--name", "x", "--model", "openai:m@http://127.0.0.1:9/v1", "--base-url", "http://127.0.0.1:9/v1"],
            "--base-url goes with a model name",
        ),
        (
            ["generate", "{ds}", "--name", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "SB_SURELY_UNSET_KEY"],
            "SB_SURELY_UNSET_KEY (named by --api-key-env) is not set",
        ),
        (["generate", "{ds}", "--name", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "no server is usable: http://127.0.0.1:9/v1: unreachable"),
        (["generate", "{ds}", "--name", "x", "--model", "m", "--backend", "openai"], "--backend openai: name the servers in the model spec"),
        (["generate", "{ds}", "--name", "human", "--model", "smollm2"], "human source's name"),
        (["generate", "{ds}", "--name", "x", "--model", "smollm2", "--top-p", "0"], "--top-p must be in (0, 1]"),
    ],
)
def test_cli_errors_are_one_clean_message(args, message, cocktail_dir, tmp_path, capsys):
    args = [a.format(ds=cocktail_dir, missing=tmp_path / "missing") for a in args]
    code, out, err = run_cli(args, capsys)
    assert code == 2
    assert message in " ".join(err.split()), err
    assert "Traceback" not in out + err
