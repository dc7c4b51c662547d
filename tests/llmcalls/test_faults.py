"""Issue 40, part 3: the LLM calls through faults. Every fault is injected for real, on loopback: a
:class:`FaultProxy` between the client and a simulated server (429 with ``Retry-After``, bursts of
500/503, connections reset or cut mid-body, dropped connections, answers slower than the time-out,
malformed JSON, JSON without an answer), a server process killed with -9 and restarted, a job
killed with -9, and two jobs sharing one answer store.

For each: no call lost, no answer stored twice (the store's own lines), the answers equal to what
the server's responder gives (computed here independently of any client) and to an undisturbed
run's, and each retry counted (:meth:`describe`, and the printed notes). A call that never gets an
answer stops the job with an error saying what is stored and that a rerun resumes; the rerun's
result equals an undisturbed run's. No timing is asserted."""

from __future__ import annotations

import math
import threading
import time

import pytest
from server_process import SimulatedProcess
from sim_server_child import respond

from sourcebias.llmcalls import open_client, user_call
from sourcebias.llmcalls.backends.base import GenerationError
from sourcebias.llmcalls.cache import AnswerStore
from sourcebias.llmcalls.client import call_notes
from sourcebias.llmcalls.faults import FaultProxy, burst, every
from sourcebias.llmcalls.simulated import SimulatedServer

N = 40
CALLS = [user_call(f"Passage {i}: does it answer the query? Answer Yes or No.", max_tokens=1, choices=("Yes", "No")) for i in range(N)]
QUICK = {"backoff_base": 0.01, "backoff_max": 0.05}  # the retries' waits, short (their count is what is tested)


def expected(call):
    """What the responder answers, from its own rule: the prompt upper-cased, P(Yes) from its digest."""
    text, top = respond(call.chat(), {})
    return text, {"Yes": top[0]["Yes"], "No": top[0]["No"]}


def check_answers(answers) -> None:
    assert len(answers) == N
    for call, ans in zip(CALLS, answers):
        text, choices = expected(call)
        assert ans.text == text and ans.finish_reason == "stop"
        assert ans.choice_logprobs == {k: pytest.approx(v, abs=1e-12) for k, v in choices.items()}
        assert math.exp(choices["Yes"]) + math.exp(choices["No"]) == pytest.approx(1.0)


def stored_keys(client) -> list[str]:
    return AnswerStore(client.store.path).keys_on_disk()


FAULT_CASES = [
    ("429 with Retry-After", burst("429", 3, 4), {}, 4),
    ("a burst of 500", burst("500", 5, 6), {}, 6),
    ("a burst of 503", burst("503", 0, 8), {}, 8),
    ("connections reset mid-body", every("reset", 7, 2), {}, None),
    ("answers cut mid-body", every("cut", 9, 1), {}, None),
    ("connections dropped before an answer", every("drop", 11, 3), {}, None),
    ("malformed JSON", every("malformed", 6), {}, None),
    ("JSON without an answer", burst("no-choices", 0, 3), {}, 3),
    ("answers slower than the time-out", burst("slow", 2, 3), {"timeout": 4.0}, 3),
]


@pytest.mark.parametrize("name,plan,options,count", FAULT_CASES, ids=[c[0] for c in FAULT_CASES])
def test_every_call_is_answered_once_through_the_fault(tmp_path, name, plan, options, count):
    with SimulatedServer(respond) as server_url:
        proxy = FaultProxy(server_url, plan, retry_after=1, slow_seconds=6.0)
        with proxy as url:
            client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=4, **QUICK, **options)
            answers = client.answer(CALLS)
            again = client.answer(CALLS)
    injected = sum(proxy.injected.values())
    assert injected == (count if count is not None else injected) and injected > 0
    check_answers(answers)
    assert all(a.cached for a in again) and [a.text for a in again] == [a.text for a in answers]
    keys = stored_keys(client)
    assert len(keys) == N and len(set(keys)) == N  # lost 0, duplicates 0
    # each fault cost exactly one retry, counted by the client and by the backend
    assert client.describe()["calls"] == {"calls": 2 * N, "cached": N, "computed": N, "no_logprobs": 0, "retries": injected, "failed": 0}
    assert client.backend.describe()["retries"] == injected
    assert call_notes(client.describe()) == [
        f"{injected} requests retried after faults of the servers or the network (HTTP 429/5xx, connections refused, reset or cut, time-outs, "
        "malformed answers); every answer used is a whole answer"
    ]


def test_an_undisturbed_run_has_no_note_and_equal_answers(tmp_path):
    with SimulatedServer(respond) as url:
        client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=4)
        check_answers(client.answer(CALLS))
    assert client.describe()["calls"]["retries"] == 0 and call_notes(client.describe()) == []


def test_a_call_that_never_gets_an_answer_stops_the_batch_saying_what_is_stored(tmp_path):
    """From its 13th request on, the server answers 503 only: after its retries, the first call to
    give up stops the batch; what was answered is stored, and a rerun sends only the rest."""
    with SimulatedServer(respond) as server_url:
        proxy = FaultProxy(server_url, lambda n: "503" if n >= 12 else None)
        with proxy as url:
            client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=4, max_retries=2, **QUICK)
            with pytest.raises(GenerationError) as info:
                client.answer(CALLS)
            stored = len(AnswerStore(client.store.path))
            counts = client.describe()["calls"]
            proxy.set_plan(None)  # the server is well again
            rerun = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=4)
            answers = rerun.answer(CALLS)
    message = str(info.value)
    assert stored == 12 and "gave up after 3 attempts; last error" in message and "HTTP 503" in message
    assert (
        f"{N - 12} of {N} calls of this batch got no answer; the 12 answered are stored in {client.store.path} (12 answers in all): a rerun sends only"
        in message
    )
    assert counts["computed"] == 12 and counts["failed"] == N - 12
    assert call_notes(client.describe())[-1] == "28 calls got no answer after their retries (the job stopped; a rerun sends only the calls not stored)"
    check_answers(answers)
    assert rerun.describe()["calls"] == {"calls": N, "cached": 12, "computed": N - 12, "no_logprobs": 0, "retries": 0, "failed": 0}
    keys = stored_keys(rerun)
    assert len(keys) == N and len(set(keys)) == N


def test_a_server_killed_with_9_and_restarted_mid_run_loses_nothing(tmp_path):
    server = SimulatedProcess(latency=0.05, parallel=2).start()
    try:
        client = open_client(f"openai:sim@{server.url}", cache_dir=tmp_path, concurrency=2, max_retries=12, backoff_base=0.05, backoff_max=1.0)
        out: dict[str, object] = {}

        def job():
            try:
                out["answers"] = client.answer(CALLS)
            except BaseException as exc:  # reported by the assertion below
                out["error"] = exc

        worker = threading.Thread(target=job)
        worker.start()
        deadline = time.monotonic() + 60
        while len(AnswerStore(client.store.path)) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()  # mid-run: two requests in flight die with it
        killed_at = len(AnswerStore(client.store.path))
        time.sleep(0.3)
        server.start()  # same port
        worker.join(120)
    finally:
        server.stop()
    assert "error" not in out, out.get("error")
    assert 10 <= killed_at < N
    check_answers(out["answers"])
    keys = stored_keys(client)
    assert len(keys) == N and len(set(keys)) == N
    calls = client.describe()["calls"]
    assert calls["computed"] == N and calls["failed"] == 0 and calls["retries"] >= 1
    assert calls["retries"] == client.backend.describe()["retries"] and call_notes(client.describe())


def test_a_busy_server_slow_to_say_what_it_serves_is_not_a_changed_model(tmp_path):
    """llama-cpp-python's server runs one request at a time: GET /models waits behind the calls in
    flight. A store's server that answers its probe after more than the start-up check's 5 s was
    reported as "now reports unreachable ... the model behind the name changed" and the job stopped
    (seen on Qwen2.5-Coder through llama.cpp); it is asked again as patiently as for a call."""
    with SimulatedServer(respond) as server_url:
        open_client(f"openai:sim@{server_url}", cache_dir=tmp_path).answer(CALLS[:2])  # the store, with the server's report
        with FaultProxy(server_url, probe_seconds=5.5) as url:
            client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=2)
            answers = client.answer(CALLS[:6])
    assert [a.cached for a in answers] == [True, True, False, False, False, False]
    check_stored = stored_keys(client)
    assert len(check_stored) == 6 and len(set(check_stored)) == 6
