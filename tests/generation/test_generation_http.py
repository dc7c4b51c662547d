"""The OpenAI-compatible path against a real server on loopback (``sourcebias serve`` with
SmolLM2 in a child process): the wire format, busy answers (429 + Retry-After), a server
killed (SIGKILL) and restarted mid-run, failures recorded and retried, a pool of base URLs,
API keys kept out of files, and the generate process itself killed mid-run and resumed.

Answers are kept to a few tokens (speed: ~10 tokens/s on 2 CPU cores); most documents are
therefore flagged ``truncated``, which is what these tests expect: they test delivery.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from generation_helpers import copy_nq_subset, human_ids, read_twin
from server_process import ServerProcess, free_port

from sourcebias.cli.main import main
from sourcebias.generation.prompts import load_prompt
from sourcebias.generation.rewrite import RewriteSettings, resolve_target, rewrite_corpus
from sourcebias.llmcalls.backends.openai import OpenAIBackend

TINY = {"min_new_tokens": 6, "max_new_tokens": 6}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    # At most 2 requests admitted at once: clients sending more get 429 with Retry-After.
    # One PyTorch thread: on 2 shared cores it is several times faster than two (see LocalBackend).
    proc = ServerProcess("smollm2", extra_args=["--max-pending", "2", "--threads", "1"], log_path=log)
    proc.start(timeout=300)
    yield proc
    proc.stop()


def _settings(**kw) -> RewriteSettings:
    return RewriteSettings(load_prompt("kdd"), **{**TINY, **kw})


def _backend(urls, **kw) -> OpenAIBackend:
    opts = {"concurrency": 2, "timeout": 60.0, "max_retries": 30, "backoff_base": 0.2, "backoff_max": 2.0}
    return OpenAIBackend(urls, "smollm2", **{**opts, **kw})


def test_server_speaks_the_openai_format(server):
    url = server.url
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": "Please rewrite the following text: The cat sat on the mat."}],
        "max_tokens": 4,
        "temperature": 0.7,
        "seed": 11,
    }
    a = httpx.post(f"{url}/chat/completions", json=body, timeout=120).json()
    assert a["object"] == "chat.completion"
    assert a["choices"][0]["finish_reason"] == "length"  # 4 tokens cannot finish the answer
    assert a["usage"]["completion_tokens"] == 4 and a["usage"]["prompt_tokens"] > 10
    b = httpx.post(f"{url}/chat/completions", json=body, timeout=120).json()
    assert b["choices"][0]["message"]["content"] == a["choices"][0]["message"]["content"]  # same seed, same text
    c = httpx.post(f"{url}/completions", json={"prompt": "The capital of France is", "max_tokens": 2, "temperature": 0}, timeout=120).json()
    assert c["object"] == "text_completion" and c["usage"]["completion_tokens"] <= 2
    assert httpx.get(f"{url}/models").json()["data"][0]["id"] == "smollm2"
    assert httpx.post(f"{url}/chat/completions", json={**body, "model": "gpt-4"}).status_code == 404
    assert httpx.post(f"{url}/chat/completions", json={**body, "stream": True}).status_code == 400
    assert httpx.post(f"{url}/chat/completions", json={**body, "temperature": 5}).status_code == 400


def test_busy_server_answers_429_and_the_client_waits(server, nq_utd, tmp_path):
    ds = copy_nq_subset(nq_utd, tmp_path / "ds", 4)
    backend = _backend([server.url], concurrency=4)
    rejected_before = httpx.get(f"http://{server.host}:{server.port}/health").json()["rejected"]
    summary = rewrite_corpus(resolve_target(ds, "smol"), backend, _settings())
    rejected = httpx.get(f"http://{server.host}:{server.port}/health").json()["rejected"] - rejected_before
    assert rejected > 0  # 4 in flight against 2 admitted: some were told to come back
    assert summary.failed == 0
    assert sorted(r["_id"] for r in read_twin(ds / "corpus" / "smol.jsonl")) == sorted(human_ids(ds))


def test_server_killed_and_restarted_mid_run_loses_and_duplicates_nothing(server, nq_utd, tmp_path):
    ds = copy_nq_subset(nq_utd, tmp_path / "ds", 4)
    out = ds / "corpus" / "smol.jsonl"
    # retries for up to ~5 min (backoff at most 1 s): the restarted server loads SmolLM2 again,
    # which takes more than the other tests' ~45 s of retries on a loaded machine
    backend = _backend([server.url], concurrency=2, max_retries=400, backoff_max=1.0)
    result = {}
    worker = threading.Thread(
        target=lambda: result.setdefault("summary", rewrite_corpus(resolve_target(ds, "smol"), backend, _settings(max_new_tokens=8, min_new_tokens=8)))
    )
    worker.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or len(read_twin(out)) < 1):
        time.sleep(0.05)
    assert out.exists() and len(read_twin(out)) < 4, "the run should be mid-way"
    server.kill()  # SIGKILL: requests in flight die with the server
    time.sleep(1.0)  # clients now get connection refused and back off
    server.start(timeout=300)
    worker.join(600)
    assert not worker.is_alive()
    twin = read_twin(out)
    ids = [r["_id"] for r in twin]
    assert sorted(ids) == sorted(human_ids(ds)) and len(ids) == len(set(ids)) == 4
    assert result["summary"].failed == 0
    assert max(r["metadata"]["attempts"] for r in twin) > 1  # some requests were retried across the restart
    assert backend.stats()[server.url]["errors"] > 0


def test_failures_are_recorded_then_retried_through_a_pool(server, nq_utd, tmp_path, monkeypatch):
    ds = copy_nq_subset(nq_utd, tmp_path / "ds", 2)
    target = resolve_target(ds, "smol")
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    first = rewrite_corpus(target, _backend([dead], max_retries=1, backoff_base=0.05), _settings())
    assert first.failed == 2 and first.documents_in_output == 0
    failed = [json.loads(line) for line in target.failed_file.read_text().splitlines()]
    assert sorted(f["_id"] for f in failed) == sorted(human_ids(ds))
    assert all("ConnectError" in f["error"] and f["attempts"] == 2 for f in failed)
    assert not target.output.exists() or not target.output.read_text().strip()  # failures are not documents

    monkeypatch.setenv("SB_TEST_KEY", "sk-test-secret-4711")
    pool = _backend([dead, server.url], api_key_env="SB_TEST_KEY", require_api_key=True)
    second = rewrite_corpus(target, pool, _settings())
    assert second.failed == 0 and second.documents_in_output == 2
    assert not target.failed_file.exists()
    assert pool.stats()[server.url]["requests"] >= 2 and pool.stats()[dead]["errors"] >= 1
    manifest = json.loads(target.manifest_file.read_text())
    assert manifest["outputs"]["complete"] is True and len(manifest["runs"]) == 2
    assert manifest["runs"][1]["retried_previous_failures"] == 2
    rewriter = manifest["models"]["rewriter"]
    assert rewriter["api_key_env"] == "SB_TEST_KEY" and rewriter["api_key_set"] is True
    for path in [p for p in ds.rglob("*") if p.is_file()]:
        assert "sk-test-secret-4711" not in path.read_text(encoding="utf-8", errors="replace"), path


def test_generate_process_killed_mid_run_resumes_exactly_once(server, nq_utd, tmp_path, capsys):
    ds = copy_nq_subset(nq_utd, tmp_path / "ds", 4)
    out = ds / "corpus" / "smol.jsonl"
    args = [
        "generate",
        str(ds),
        "--name",
        "smol",
        "--model",
        "smollm2",
        "--base-url",
        server.url,
        "--concurrency",
        "1",
        "--min-new-tokens",
        "6",
        "--max-new-tokens",
        "6",
    ]
    child = subprocess.Popen(
        [sys.executable, "-m", "sourcebias", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "120"}
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or len(read_twin(out)) < 2):
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    written = len(read_twin(out))
    assert 2 <= written < 4, "killed mid-way"
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code in (0, None)
    ids = [r["_id"] for r in read_twin(out)]
    assert sorted(ids) == sorted(human_ids(ds)) and len(set(ids)) == 4
    assert f"{written} already done" in capsys.readouterr().out
    runs = json.loads((ds / "corpus" / "smol.manifest.json").read_text())["runs"]
    assert [r["finished"] for r in runs] == [False, True]  # the killed run stays on record, unfinished
