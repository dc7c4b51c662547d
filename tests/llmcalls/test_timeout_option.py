"""The server timeout reaches the backend from every way a job names a model, and it decides
whether calls queued behind a one-request-at-a-time server are sent again.

A simulated server that answers one request at a time in 0.6 s (as llama-cpp-python's server
answers a long prompt: the others wait) gets 3 calls at once: the third waits 1.2 s before its
0.6 s, so with a 1 s timeout it is sent again, and waits again behind the requests abandoned
before it (a server computes what it was sent whether or not anyone still waits): the job gives up,
having stored what was answered. With a 10 s timeout each call is sent once. No timing is asserted
beyond that ordering (0.6 s against 1 s and 10 s).
"""

from __future__ import annotations

import pytest

from sourcebias.llmcalls import ModelAccess, open_client, user_call
from sourcebias.llmcalls.simulated import SimulatedServer

CALLS = [user_call(f"Timeout call {i}: relevant? Answer Yes or No.", max_tokens=1) for i in range(3)]


def _yes(messages, params):
    return "Yes", None


def test_requests_waiting_behind_a_serial_server_time_out_and_the_job_gives_up(tmp_path):
    from sourcebias.llmcalls.backends.base import GenerationError

    with SimulatedServer(_yes, latency=0.6, parallel=1) as url:
        client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=3, timeout=1.0, max_retries=2, backoff_base=0.01, backoff_max=0.02)
        with pytest.raises(GenerationError, match="ReadTimeout") as info:
            client.answer(CALLS)
        client.close()
    assert client.backend.timeout == 1.0
    assert "a rerun sends only the calls not stored" in str(info.value)


def test_a_timeout_above_the_wait_sends_each_call_once(tmp_path):
    with SimulatedServer(_yes, latency=0.6, parallel=1) as url:
        client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=3, timeout=10.0)
        answers = client.answer(CALLS)
        calls = client.describe()["calls"]
        client.close()
    assert [a.text for a in answers] == ["Yes"] * 3 and calls["retries"] == 0 and calls["failed"] == 0


def test_the_timeout_reaches_the_backend_from_a_job_and_from_a_stage_spec(tmp_path):
    from sourcebias.retrieval import build_retriever

    with SimulatedServer(_yes) as url:
        client = ModelAccess(cache_dir=tmp_path, timeout=42.0).open(f"openai:sim@{url}", what="--judge")
        assert client.backend.timeout == 42.0
        client.close()
        default = ModelAccess(cache_dir=tmp_path).open(f"openai:sim@{url}", what="--judge")
        assert default.backend.timeout == 300.0
        default.close()
        stage = build_retriever(f"bm25>>llm-yesno:openai:sim@{url},timeout=7.5,cache_dir={tmp_path}")
        reranker = stage.stages[-1]
        reranker.load()
        assert reranker._client.backend.timeout == 7.5
        reranker._client.close()
