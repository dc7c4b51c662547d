"""Issue 40, part 4: a pool of servers (``openai:M@URL1@URL2...``) is the scale-out path. Its
requests in flight grow with the pool, every server gets a share, and a server killed with -9
mid-run loses nothing: its calls go to the others, each answer is stored once and equals the
responder's own. No timing is asserted (the benchmark measures the speed-up)."""

from __future__ import annotations

import threading
import time

import pytest
from server_process import SimulatedProcess
from sim_server_child import respond

from sourcebias.llmcalls import open_backend, open_client, user_call
from sourcebias.llmcalls.backends.openai import CONCURRENCY_PER_SERVER, OpenAIBackend
from sourcebias.llmcalls.cache import AnswerStore
from sourcebias.llmcalls.simulated import SimulatedServer

N = 96
CALLS = [user_call(f"Pool call {i}: relevant? Answer Yes or No.", max_tokens=1, choices=("Yes", "No")) for i in range(N)]


def check(answers) -> None:
    for call, ans in zip(CALLS, answers, strict=True):
        text, top = respond(call.chat(), {})
        assert ans.text == text and ans.choice_logprobs == {k: pytest.approx(v, abs=1e-12) for k, v in top[0].items()}


def test_requests_in_flight_grow_with_the_pool_unless_given():
    urls = [f"http://127.0.0.1:{9000 + i}/v1" for i in range(3)]
    assert CONCURRENCY_PER_SERVER == 4
    assert open_backend("openai:m@" + "@".join(urls)).concurrency == 12  # 4 per server
    assert open_backend(f"openai:m@{urls[0]}").concurrency == 4
    assert open_backend("openai:m@" + "@".join(urls), concurrency=5).concurrency == 5  # given: over the whole pool
    assert OpenAIBackend(urls, "m").concurrency == 12
    backend = OpenAIBackend(urls, "m")
    assert backend.describe()["concurrency"] == 12
    backend.close()


def test_every_server_of_a_pool_gets_a_share_and_the_answers_are_the_same(tmp_path):
    servers = [SimulatedServer(respond, latency=0.02, parallel=2) for _ in range(4)]
    urls = [s.__enter__() for s in servers]
    try:
        client = open_client("openai:sim@" + "@".join(urls), cache_dir=tmp_path)
        check(client.answer(CALLS))
        stats = client.describe()["requests"]
    finally:
        for s in servers:
            s.__exit__(None, None, None)
    assert client.backend.concurrency == 16
    assert sum(v["requests"] for v in stats.values()) == N and all(v["requests"] > 0 and v["errors"] == 0 for v in stats.values())
    assert sum(s.server.served for s in servers) == N  # each call answered by one server, once


def test_a_server_killed_mid_run_loses_nothing_its_calls_go_to_the_others(tmp_path):
    servers = [SimulatedProcess(latency=0.05, parallel=2).start() for _ in range(4)]
    try:
        spec = "openai:sim@" + "@".join(s.url for s in servers)
        client = open_client(spec, cache_dir=tmp_path, backoff_base=0.05, backoff_max=1.0)
        out: dict[str, object] = {}

        def job():
            try:
                out["answers"] = client.answer(CALLS)
            except BaseException as exc:  # reported by the assertion below
                out["error"] = exc

        worker = threading.Thread(target=job)
        worker.start()
        deadline = time.monotonic() + 60
        while len(AnswerStore(client.store.path)) < N // 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        servers[1].kill()  # dies mid-run, with requests in flight; not restarted
        killed_at = len(AnswerStore(client.store.path))
        worker.join(180)
    finally:
        for s in servers:
            s.stop()
    assert "error" not in out, out.get("error")
    assert N // 4 <= killed_at < N
    check(out["answers"])
    keys = AnswerStore(client.store.path).keys_on_disk()
    assert len(keys) == N and len(set(keys)) == N  # lost 0, duplicates 0
    calls, stats = client.describe()["calls"], client.describe()["requests"]
    dead = stats[servers[1].url]
    assert calls["computed"] == N and calls["failed"] == 0 and dead["errors"] >= 1 and calls["retries"] >= 1
    # every attempt is one request to one server: the answers plus the retries
    assert sum(v["requests"] for v in stats.values()) == N + calls["retries"]
    # the dead server answered only before it died; the living ones answered the rest
    assert dead["requests"] - dead["errors"] <= killed_at + 4  # (+ its answers in flight when counted)


def test_a_retry_goes_to_another_server_of_the_pool(tmp_path):
    """A pool of a dead server (nothing listening) and a live one, one retry allowed: a request
    refused by the dead one is sent again to the live one, never back to the dead one, so every
    call is answered (the dead one is also kept out longer after each failure in a row)."""
    from server_process import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"
    with SimulatedServer(respond, latency=0.01) as live:
        client = open_client(f"openai:sim@{dead}@{live}", cache_dir=tmp_path, concurrency=8, max_retries=1, backoff_base=0.001, backoff_max=0.002)
        check(client.answer(CALLS))
    calls, stats = client.describe()["calls"], client.describe()["requests"]
    assert calls["failed"] == 0 and calls["retries"] == stats[dead]["errors"] == stats[dead]["requests"] >= 1
    assert stats[live]["requests"] == N and stats[live]["errors"] == 0
