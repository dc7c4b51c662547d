"""Whose answers an answer store holds (issue 38, point 10) and how a server that cannot answer is
met (issue 39): the API and what the server reports about its model are in every key, a store whose
server now reports another model is refused, answers that name another model are not mixed in, a
refused connection fails in seconds naming the URL, and each answer carries its usage.

Every server here is a :class:`SimulatedServer` whose reports are set as vLLM, llama.cpp's server,
llama-cpp-python's and OpenAI make theirs (``root``, ``meta``, ``/props``, a dated ``model``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls import open_client, user_call
from sourcebias.llmcalls.backends.base import GenerationError
from sourcebias.llmcalls.cache import AnswerStore, LegacyStoreError, store_path
from sourcebias.llmcalls.simulated import SimulatedServer

HERE = Path(__file__).parent
GGUF_A = {"model_path": "/models/qwen2.5-coder-1.5b-q4_k_m.gguf", "chat_template": "{{ messages }}"}
GGUF_B = {"model_path": "/models/qwen2.5-coder-1.5b-q8_0.gguf", "chat_template": "{{ messages }}"}


def echo(messages, params):
    """The last message back, upper-cased (``plain:`` and the prompt for the completions API)."""
    return (messages[-1]["content"].upper() if messages else "plain"), None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _quick_probes(monkeypatch):
    """A refused server is asked 3 times, 1 s apart; here 0.05 s apart (the count is what is tested)."""
    import sourcebias.llmcalls.server_client as sc

    monkeypatch.setattr(sc, "PROBE_WAIT", 0.05)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_the_api_is_in_the_key_so_completions_are_not_served_the_chat_answers(tmp_path):
    with SimulatedServer(echo, model="m") as url:
        chat = open_client(f"openai:m@{url}", cache_dir=tmp_path)
        plain = open_client(f"openai:m@{url}", cache_dir=tmp_path, chat=False)
        call = user_call("hello")
        assert chat.answer([call])[0].text == "HELLO"
        got = plain.answer([call])[0]
    assert got.text == "plain" and not got.cached  # asked again, of the completions API
    assert chat.identity()["api"] == "chat/completions" and plain.identity()["api"] == "completions"
    assert chat.store.path != plain.store.path


def test_a_store_whose_server_now_reports_another_gguf_is_refused(tmp_path):
    with SimulatedServer(echo, model="qwen", model_info={"meta": {"n_params": 1543714304, "size": 1117320768}}, props=GGUF_A) as url:
        first = open_client(f"openai:qwen@{url}", cache_dir=tmp_path, what="--judge")
        first.answer([user_call("a"), user_call("b")])
        header = lines(first.store.path)[0]
        assert header["format"] == 2 and header["identity"] == {"backend": "openai", "model": "qwen", "api": "chat/completions"}
        assert header["server"]["props"]["model_path"] == GGUF_A["model_path"] and header["server"]["models"]["meta"]["size"] == 1117320768
        first.close()
        same = open_client(f"openai:qwen@{url}", cache_dir=tmp_path)  # restarted with the same file: its answers are read back
        assert all(a.cached for a in same.answer([user_call("a"), user_call("b")]))
    with SimulatedServer(echo, model="qwen", model_info={"meta": {"n_params": 1543714304, "size": 1894532128}}, props=GGUF_B) as url:
        with pytest.raises(ConfigError, match=r"--judge openai:qwen@.*the model behind the name changed.*another name \(an alias naming its file\)"):
            open_client(f"openai:qwen@{url}", cache_dir=tmp_path, what="--judge")
        fresh = open_client(f"openai:qwen@{url}", cache_dir=tmp_path / "other")  # another store: computed anew
        assert not fresh.answer([user_call("a")])[0].cached


def test_a_server_that_comes_back_with_another_model_is_refused_at_its_first_answer(tmp_path):
    port = free_port()
    with SimulatedServer(echo, model="qwen", port=port, props=GGUF_A) as url:
        open_client(f"openai:qwen@{url}", cache_dir=tmp_path).answer([user_call("a")])
    down = open_client(f"openai:qwen@{url}", cache_dir=tmp_path)  # nothing listening: the store's report is taken
    assert down.answer([user_call("a")])[0].cached and "unverified" in down.describe()
    with pytest.raises(GenerationError, match=r"nothing answers at http://127\.0\.0\.1:\d+/v1 \(connection refused, 3 attempts"):
        down.answer([user_call("b")])  # a new call with nothing listening: fails in seconds
    with SimulatedServer(echo, model="qwen", port=port, props=GGUF_B), pytest.raises(GenerationError, match=r"now reports .*q8_0.* not what its answers"):
        down.answer([user_call("c")])
    assert [r.get("answer", {}).get("text") for r in lines(down.store.path)[1:]] == ["A"]  # nothing of the other model stored


def test_answers_that_name_another_model_are_not_mixed_in(tmp_path):
    """OpenAI-style: the name is an alias, each answer names the dated model behind it."""
    sim = SimulatedServer(echo, model="gpt", response_model="gpt-2024-08-06", fingerprint="fp_1")
    with sim as url:
        client = open_client(f"openai:gpt@{url}", cache_dir=tmp_path)
        client.answer([user_call("a")])
        assert client.describe()["system_fingerprints"] == {"fp_1": 1}
        sim.server.response_model = "gpt-2025-01-31"  # the alias now points at another model
        with pytest.raises(GenerationError, match="answered as model 'gpt-2025-01-31', but the stored answers came from 'gpt-2024-08-06'"):
            client.answer([user_call("b")])
    assert [r["served"] for r in lines(client.store.path)[1:]] == [{"model": "gpt-2024-08-06", "system_fingerprint": "fp_1"}]


def test_a_pool_whose_servers_report_different_models_is_refused():
    with SimulatedServer(echo, model="qwen", props=GGUF_A) as a, SimulatedServer(echo, model="qwen", props=GGUF_B) as b:
        refused = pytest.raises(ConfigError, match="the servers report different models")
        with refused:
            open_client(f"openai:qwen@{a}@{b}", cache=False)


def test_a_model_the_server_does_not_serve_is_named_with_the_option_used():
    refused = pytest.raises(ConfigError, match=r"--generator openai:qwne@.*do not serve 'qwne' \(they serve qwen\): name one of those models")
    with SimulatedServer(echo, model="qwen") as url, refused:
        open_client(f"openai:qwne@{url}", cache=False, what="--generator")


def test_a_refused_server_fails_in_seconds_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ConfigError, match=rf"--judge openai:m@{url}: nothing answers at {url} \(connection refused, 3 attempts over"):
        open_client(f"openai:m@{url}", cache_dir=tmp_path, what="--judge")


def test_a_server_store_of_an_earlier_version_is_refused_with_what_to_do(tmp_path):
    with SimulatedServer(echo, model="m") as url:
        path = store_path({"backend": "openai", "model": "m", "api": "chat/completions"}, tmp_path)
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"identity": {"backend": "openai", "model": "m", "api": "chat/completions"}}) + "\n")
        with pytest.raises(LegacyStoreError, match=r"did not record what the server served.*delete the file"):
            open_client(f"openai:m@{url}", cache_dir=tmp_path)


def test_each_answer_carries_its_usage_and_describe_sums_it(tmp_path):
    with SimulatedServer(echo, model="m") as url:
        client = open_client(f"openai:m@{url}", cache_dir=tmp_path)
        calls = [user_call("one two three"), user_call("four five"), user_call("one two three")]
        client.answer(calls)
        stored = lines(client.store.path)[1:]
        again = open_client(f"openai:m@{url}", cache_dir=tmp_path)
        again.answer(calls)
    # the simulated server counts words: 3 + 2 prompt words, 3 + 2 answer words
    assert sorted((r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) for r in stored) == [(2, 2), (3, 3)]
    assert all(r["usage"]["seconds"] > 0 for r in stored)
    first, second = client.usage(), again.usage()
    assert first["computed"]["prompt_tokens"] == 5 and first["computed"]["completion_tokens"] == 5 and first["computed"]["calls"] == 2
    assert second["computed"]["calls"] == 0 and second["answers"] == {**first["answers"], "seconds": second["answers"]["seconds"]}
    assert second["answers"]["seconds"] == pytest.approx(first["answers"]["seconds"], abs=1e-3)  # as recorded when computed
    assert again.describe()["calls"] == {"calls": 3, "cached": 3, "computed": 0, "no_logprobs": 0, "retries": 0, "failed": 0}


def test_a_torn_line_left_by_a_killed_writer_is_removed_by_the_next_writer(tmp_path):
    from sourcebias.llmcalls.base import Answer

    path = tmp_path / "s.jsonl"
    store = AnswerStore(path, {"identity": {"model": "x"}})
    store.put("k1", Answer("a", "stop"))
    with path.open("ab") as fh:
        fh.write(b'{"key": "k2", "answer": {"te')  # another process killed mid-write while this one runs
    assert store.put("k3", Answer("c", "stop")) and store.repaired_bytes > 0
    assert AnswerStore(path).keys_on_disk() == ["k1", "k3"] and all(x.endswith("}") for x in path.read_text().splitlines())


def test_two_processes_sharing_one_store_write_each_answer_once(tmp_path):
    """Two jobs answer overlapping calls (0-39 and 20-59) at once into one store: every call is
    answered, the shared ones are written once."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(HERE / "llmcalls_child.py"), str(tmp_path)]
    procs = [subprocess.Popen([*cmd, str(start)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for start in (0, 20)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    store_file = next((tmp_path / "llmcalls").glob("*.jsonl"))
    keys = AnswerStore(store_file).keys_on_disk()
    assert len(keys) == 60 and len(set(keys)) == 60
    counts = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    assert sum(c["computed"] for c in counts) >= 60 and all(c["calls"] == 40 for c in counts)


def test_the_yes_no_reranker_asks_the_client_what_it_can_do():
    """Exact choice scores need no generated token; top-k ones need one, and the top list."""
    from sourcebias.llmcalls import Answer
    from sourcebias.retrieval.rerankers.llm_yesno import LLMYesNoReranker

    class Recording:
        def __init__(self, exact: bool):
            self.exact_choices, self.choice_top_k, self.calls = exact, (0 if exact else 20), []

        def answer(self, calls, task=None):
            self.calls += calls
            return [Answer("", None, top_logprobs=[{"Yes": -0.1, "No": -2.0}], choice_logprobs={"Yes": -0.1, "No": -2.0}) for _ in calls]

    for exact, (max_tokens, top) in ((True, (0, 0)), (False, (1, 20))):
        stage = LLMYesNoReranker({"model": "any", "depth": 5, "words": 50})  # its client is set below, not opened
        stage._client = Recording(exact)
        stage.score_pairs(["q"], ["d"])
        assert (stage._client.calls[0].max_tokens, stage._client.calls[0].top_logprobs) == (max_tokens, top)


def test_a_concurrent_reader_sees_what_another_process_wrote(tmp_path):
    from sourcebias.llmcalls.base import Answer

    path = tmp_path / "s.jsonl"
    a, b = AnswerStore(path, {"identity": {"model": "x"}}), AnswerStore(path)
    assert a.put("k", Answer("first", "stop"))
    assert not b.put("k", Answer("second", "stop"))  # b reads a's line before writing: no duplicate
    b.refresh()
    assert b.get("k").text == "first" and AnswerStore(path).keys_on_disk() == ["k"]
