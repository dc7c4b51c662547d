"""`generate --length-control`: the target stated in the prompt, bounded seeded retries, the
``length`` status and the manifest, against the package's own OpenAI-compatible server
(:func:`sourcebias.llmcalls.server.make_server`, as `sourcebias serve` runs it) whose model is
scripted to answer with texts of known lengths; resumption after the generate process is killed
mid-run; and a short run of the real SmolLM2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import write_jsonl, write_qrels
from generation_helpers import human_ids, read_twin
from server_process import free_port

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.generation import LENGTH_INSTRUCTION, LengthControl, attempt_seed, document_seed
from sourcebias.llmcalls.backends.base import GenerationResult
from sourcebias.llmcalls.server import make_server

# Every human text has 10 words, and a key word saying which script its answers follow.
# ratio 1.0, tolerance 0.1: target 10 words, accepted 9-11.
SCRIPTS = {
    "alpha": [10],  # right the first time
    "bravo": [20, 10],  # one retry
    "charlie": [20, 3, 30],  # never within: flagged 'length' after 2 retries
    "delta": [20, 20, 11],  # within at the last attempt (11 = the upper bound, included)
}
MAX_RETRIES = 2
SPEC = f"ratio=1.0,tolerance=0.1,max_retries={MAX_RETRIES}"


def human_text(key: str) -> str:
    return f"{key} is a document of exactly ten words in all."


class ScriptedModel:
    """The model behind the test server: it answers document ``key``'s n-th distinct seed with
    ``SCRIPTS[key][n]`` words, so a retried request (same seed) gets the same answer. It records
    every request it is sent."""

    kind, model, concurrency = "scripted", "scripted", 1

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.requests: list[dict] = []
        self._seeds: dict[str, list[int | None]] = {}
        self._lock = threading.Lock()

    def generate(self, request):
        key = next(k for k in SCRIPTS if f"{k} is a document" in request.prompt)
        with self._lock:
            seen = self._seeds.setdefault(key, [])
            if request.seed not in seen:
                seen.append(request.seed)
            n = SCRIPTS[key][min(seen.index(request.seed), len(SCRIPTS[key]) - 1)]
            self.requests.append({"key": key, "seed": request.seed, "prompt": request.prompt, "words": n})
        time.sleep(self.delay)
        return GenerationResult(" ".join(["word"] * n) + ".", "stop", prompt_tokens=20, completion_tokens=n)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def describe(self) -> dict:
        return {"backend": self.kind}

    def close(self) -> None:
        pass


@pytest.fixture
def scripted():
    """(model, url): the package's HTTP server on a loopback port, answering from a ScriptedModel."""
    model = ScriptedModel()
    server = make_server(model, port=free_port(), model_names=["scripted"], quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield model, server.url
    server.shutdown()
    server.server_close()


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path / "ds"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d-{k}", "title": "", "text": human_text(k)} for k in SCRIPTS])
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "a query"}])
    write_qrels(root / "qrels" / "test.tsv", [("q1", f"d-{k}", 1) for k in SCRIPTS])
    return root


def generate(dataset, url, *extra) -> list[str]:
    return ["generate", str(dataset), "--name", "twin", "--model", "scripted", "--base-url", url, "--concurrency", "1", "--length-control", SPEC, *extra]


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    assert (info.value.code or 0) == 0, out.out + out.err
    return out.out


def test_the_band_and_the_spec():
    lc = LengthControl.parse("tolerance=0.1, ratio=1.0")
    assert (lc.target(10), lc.bounds(10), lc.max_retries) == (10, (9, 11), 2)
    assert lc.accepts(10, 9) and lc.accepts(10, 11) and not lc.accepts(10, 8) and not lc.accepts(10, 12)
    half = LengthControl(ratio=0.5, tolerance=0.2)
    assert half.target(57) == 28 and half.bounds(57) == (22, 34)  # round(28.5) = 28 (banker's); 22.4 -> 22, 33.6 -> 34
    assert half.instruction(57) == "The rewritten text should be about 28 words long."
    for bad in ("ratio=0", "tolerance=1", "ratio=1,max_retries=-1", "speed=2", "ratio=x"):
        with pytest.raises(ConfigError):
            LengthControl.parse(bad)


def test_retries_statuses_seeds_and_manifest(scripted, dataset, capsys):
    model, url = scripted
    out = run_cli(generate(dataset, url), capsys)
    twin = {r["_id"]: r for r in read_twin(dataset / "corpus" / "twin.jsonl")}
    status = {d: r["metadata"]["rewrite_status"] for d, r in twin.items()}
    assert status == {"d-alpha": "ok", "d-bravo": "ok", "d-charlie": "length", "d-delta": "ok"}
    words = {d: r["metadata"]["length"]["attempt_words"] for d, r in twin.items()}
    assert words == {f"d-{k}": v for k, v in SCRIPTS.items()}  # charlie: 1 + max_retries attempts, then stop
    assert twin["d-charlie"]["text"] == human_text("charlie")  # flagged: the human text is kept
    assert twin["d-charlie"]["metadata"]["note"] == "30 words, outside 9-11 (target 10) after 3 attempts"
    assert twin["d-delta"]["text"] == " ".join(["word"] * 11) + "."
    assert all(r["metadata"]["length"]["target"] == 10 and r["metadata"]["length"]["bounds"] == [9, 11] for r in twin.values())
    # the prompt: the papers' KDD wording, then the target sentence after a blank line
    first = next(r for r in model.requests if r["key"] == "alpha")
    assert first["prompt"] == f"Please rewrite the following text: {human_text('alpha')}\n\nThe rewritten text should be about 10 words long."
    # seeds: the document's own first, then one per retry, all distinct and as documented
    seeds = [r["seed"] for r in model.requests if r["key"] == "charlie"]
    assert seeds == [document_seed(0, "d-charlie"), attempt_seed(0, "d-charlie", 1), attempt_seed(0, "d-charlie", 2)] and len(set(seeds)) == 3
    assert len(model.requests) == 1 + 2 + 3 + 3
    manifest = json.loads((dataset / "corpus" / "twin.manifest.json").read_text())
    lc = manifest["parameters"]["length_control"]
    assert (lc["ratio"], lc["tolerance"], lc["max_retries"], lc["instruction"]) == (1.0, 0.1, MAX_RETRIES, LENGTH_INSTRUCTION)
    assert manifest["outputs"]["status_counts"] == {"ok": 3, "length": 1} and manifest["outputs"]["complete"] is True
    assert manifest["runs"][-1]["length_retries"] == 1 + 2 + 2
    assert "5 retries; 1 documents outside the band" in " ".join(out.split())


def test_rerun_is_seeded_and_other_length_settings_are_refused(scripted, dataset, tmp_path, capsys):
    model, url = scripted
    run_cli(generate(dataset, url), capsys)
    first = read_twin(dataset / "corpus" / "twin.jsonl")
    n = len(model.requests)
    run_cli(generate(dataset, url), capsys)  # all done: nothing is sent again
    assert len(model.requests) == n
    run_cli(generate(dataset, url, "--overwrite"), capsys)  # again from scratch: the same requests, the same twin
    assert [(r["key"], r["seed"]) for r in model.requests[n:]] == [(r["key"], r["seed"]) for r in model.requests[:n]]
    strip = lambda rs: [{**r, "metadata": {k: v for k, v in r["metadata"].items() if k != "seconds"}} for r in rs]  # noqa: E731
    assert strip(read_twin(dataset / "corpus" / "twin.jsonl")) == strip(first)
    with pytest.raises(SystemExit) as info:
        main([*generate(dataset, url)[:-1], "ratio=0.8,tolerance=0.1"])
    assert info.value.code not in (0, None) and "length_control" in capsys.readouterr().err


def test_greedy_decoding_is_not_retried(scripted, dataset, capsys):
    model, url = scripted
    run_cli(generate(dataset, url, "--temperature", "0"), capsys)
    twin = {r["_id"]: r["metadata"] for r in read_twin(dataset / "corpus" / "twin.jsonl")}
    assert len(model.requests) == len(SCRIPTS)  # one request per document: the seed would not change a greedy answer
    assert {d: m["rewrite_status"] for d, m in twin.items()} == {"d-alpha": "ok", "d-bravo": "length", "d-charlie": "length", "d-delta": "length"}


def test_killed_mid_run_resumes_without_redoing_finished_documents(dataset, capsys):
    model = ScriptedModel(delay=0.4)
    server = make_server(model, port=free_port(), model_names=["scripted"], quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = dataset / "corpus" / "twin.jsonl"
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "sourcebias", *generate(dataset, server.url)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "COLUMNS": "120"},
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not out.exists() or len(read_twin(out)) < 2):
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        done = [r["_id"] for r in read_twin(out)]
        assert 2 <= len(done) < 4, "killed mid-way"
        sent_before = len(model.requests)
        text = run_cli(generate(dataset, server.url), capsys)
    finally:
        server.shutdown()
        server.server_close()
    ids = [r["_id"] for r in read_twin(out)]
    assert sorted(ids) == sorted(human_ids(dataset)) and len(set(ids)) == len(ids) == 4
    assert not {f"d-{r['key']}" for r in model.requests[sent_before:]} & set(done)  # finished documents are not asked again
    assert f"{len(done)} already done" in text
    twin = {r["_id"]: r["metadata"] for r in read_twin(out)}
    assert {d: m["length"]["attempt_words"] for d, m in twin.items()} == {f"d-{k}": v for k, v in SCRIPTS.items()}  # the same answers as in one run
    runs = json.loads((dataset / "corpus" / "twin.manifest.json").read_text())["runs"]
    assert [r["finished"] for r in runs] == [False, True]


def test_smollm2_with_length_control(tmp_path, capsys):
    """The real model on one short document (10 words: target 10, accepted 7-13), one retry at most."""
    pytest.importorskip("torch")
    ds = tmp_path / "ds"
    write_jsonl(ds / "corpus" / "human.jsonl", [{"_id": "d1", "title": "", "text": "The old cat sat on the warm mat all day."}])
    write_jsonl(ds / "queries.jsonl", [{"_id": "q1", "text": "cat on a mat"}])
    write_qrels(ds / "qrels" / "test.tsv", [("q1", "d1", 1)])
    args = [
        "generate",
        str(ds),
        "--name",
        "smol",
        "--model",
        "smollm2",
        "--threads",
        "1",
        "--min-new-tokens",
        "32",
        "--max-new-tokens",
        "32",
        "--keep-raw",
        "--length-control",
        "ratio=1.0,tolerance=0.25,max_retries=1",
    ]
    run_cli(args, capsys)
    (r,) = read_twin(ds / "corpus" / "smol.jsonl")
    meta = r["metadata"]
    assert meta["length"]["words_in"] == 10 and meta["length"]["bounds"] == [7, 13]
    assert 1 <= len(meta["length"]["attempt_words"]) <= 2 and meta["rewrite_status"] in ("ok", "length", "truncated", "refused", "empty")
    if meta["rewrite_status"] == "ok":
        assert 7 <= len(r["text"].split()) <= 13 and meta["length"]["attempt_words"][-1] == len(r["text"].split())
    elif meta["rewrite_status"] == "length":
        assert len(meta["length"]["attempt_words"]) == 2 and r["text"] == "The old cat sat on the warm mat all day."
    manifest = json.loads((ds / "corpus" / "smol.manifest.json").read_text())
    assert manifest["parameters"]["length_control"]["tolerance"] == 0.25
