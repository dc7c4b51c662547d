"""The shared LLM-call layer: requests, answers, the answer store, the local and server clients.

Expected values come from hand-worked log-sum-exps, a plain forward pass of the model (one
log-softmax, no batching or cache), and counts of what a responder was asked."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls import Call, choices_from_top, open_client, parse_model_spec, user_call
from sourcebias.llmcalls.cache import AnswerStore
from sourcebias.llmcalls.simulated import SimulatedServer

HERE = Path(__file__).parent


def test_choices_from_top_sums_whitespace_variants_and_reports_absent_choices_as_missing():
    first = {
        "token": "Yes",
        "logprob": math.log(0.5),
        "top_logprobs": [{"token": "Yes", "logprob": math.log(0.5)}, {"token": " Yes", "logprob": math.log(0.2)}, {"token": "No", "logprob": math.log(0.1)}],
    }
    out = choices_from_top(["Yes", "No", "Maybe"], [first])
    assert out["Yes"] == pytest.approx(math.log(0.7))  # 0.5 + 0.2
    assert out["No"] == pytest.approx(math.log(0.1))
    assert out["Maybe"] is None  # below the k-th token: missing, never 0 or -inf
    assert choices_from_top(["Yes"], None) == {"Yes": None}


def test_calls_refuse_what_cannot_be_asked():
    with pytest.raises(ValueError, match="max_tokens"):
        user_call("q", max_tokens=0)
    with pytest.raises(ValueError, match="choices"):
        user_call("q", choices=("a", "a"))
    with pytest.raises(ValueError, match="messages"):
        Call(messages=())
    assert user_call("q", system="s").messages == (("system", "s"), ("user", "q"))


def test_server_specs_take_several_urls_and_refuse_a_missing_one():
    spec = parse_model_spec("openai:m@http://a:1/v1@https://u:p@b:2/v1")
    assert (spec.backend, spec.model, spec.urls) == ("openai", "m", ("http://a:1/v1", "https://u:p@b:2/v1"))
    assert str(spec) == "openai:m@http://a:1/v1@https://u:p@b:2/v1"
    with pytest.raises(ConfigError, match="--judge 'openai:m': a server is named openai:MODEL@"):
        parse_model_spec("openai:m", what="--judge")


def test_server_answers_are_stored_once_and_read_back(tmp_path):
    asked: list[str] = []
    lock = threading.Lock()

    def responder(messages, params):
        with lock:
            asked.append(messages[-1]["content"])
        return "no", [{"yes": math.log(0.3), "no": math.log(0.6)}]

    calls = [user_call(f"q{i % 5}", max_tokens=1, choices=("yes", "no")) for i in range(8)]  # 5 distinct
    with SimulatedServer(responder) as url:
        client = open_client(f"openai:sim@{url}", cache_dir=tmp_path, concurrency=3)
        first = client.answer(calls)
        again = client.answer(calls)
    assert sorted(asked) == [f"q{i}" for i in range(5)]  # each distinct call sent once, repeats not at all
    assert [a.choice_logprobs for a in first] == [{"yes": pytest.approx(math.log(0.3)), "no": pytest.approx(math.log(0.6))}] * 8
    assert not any(a.cached for a in first) and all(a.cached for a in again)
    assert client.describe()["calls"] == {"calls": 16, "cached": 8, "computed": 5, "no_logprobs": 0, "retries": 0, "failed": 0}


def test_a_server_without_logprobs_gives_missing_choices_and_says_so(tmp_path):
    with SimulatedServer(lambda m, p: ("yes", None), model="nolp") as url:
        client = open_client(f"openai:nolp@{url}", cache=False)
        ans = client.answer([user_call("q", max_tokens=1, choices=("yes", "no"))])
    assert ans[0].text == "yes" and ans[0].choice_logprobs == {"yes": None, "no": None}
    assert client.describe()["calls"]["no_logprobs"] == 1


def test_answer_store_removes_a_torn_line_and_never_duplicates(tmp_path):
    from sourcebias.llmcalls.base import Answer

    path = tmp_path / "s.jsonl"
    store = AnswerStore(path, {"identity": {"model": "x"}})
    assert store.put("k1", Answer("a", "stop")) and not store.put("k1", Answer("b", "stop"))
    with path.open("ab") as fh:
        fh.write(b'{"key": "k2", "answ')  # a write cut by kill -9
    again = AnswerStore(path)
    assert again.repaired_bytes > 0 and again.get("k1").text == "a" and "k2" not in again
    assert again.keys_on_disk() == ["k1"]


def test_a_job_killed_mid_run_resumes_with_no_duplicate(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(HERE / "llmcalls_child.py"), str(tmp_path)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    store_files = lambda: list((tmp_path / "llmcalls").glob("*.jsonl")) if (tmp_path / "llmcalls").is_dir() else []  # noqa: E731
    while time.monotonic() < deadline:
        files = store_files()
        if files and len(files[0].read_text().splitlines()) >= 6:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(AnswerStore(store_files()[0]))
    assert 5 <= before < 40  # killed mid-run
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=True)
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["cached"] == before and counts["computed"] == 40 - before  # the rerun sent only the rest
    keys = AnswerStore(store_files()[0]).keys_on_disk()
    assert len(keys) == 40 and len(set(keys)) == 40


@pytest.fixture(scope="module")
def smollm2():
    return open_client("smollm2", cache=False)


def _plain_logprobs(client, ids):
    """log-softmax of one plain forward pass (no batching, no cache) in float64."""
    import torch

    with torch.no_grad():
        logits = client.backend.transformers_model(torch.tensor([ids])).logits[0].double()
    return torch.log_softmax(logits, dim=-1)


def test_local_choice_logprobs_equal_a_plain_forward_pass(smollm2):
    call = user_call("Is Paris in France? Answer Yes or No.", max_tokens=0, choices=("Yes", "No", "Not sure"))
    got = smollm2.answer([call])[0].choice_logprobs
    tok = smollm2.backend.tokenizer
    prompt = tok.apply_chat_template(call.chat(), add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    for choice in call.choices:
        cont = tok(choice, add_special_tokens=False)["input_ids"]
        ids = list(prompt) + list(cont)
        lp = _plain_logprobs(smollm2, ids)
        expected = sum(float(lp[len(prompt) - 1 + t, cont[t]]) for t in range(len(cont)))
        assert got[choice] == pytest.approx(expected, abs=1e-4)


def test_local_top_logprobs_equal_a_plain_forward_pass(smollm2):
    call = user_call("Name a colour.", max_tokens=2, top_logprobs=3)
    ans = smollm2.answer([call])[0]
    tok = smollm2.backend.tokenizer
    prompt = tok.apply_chat_template(call.chat(), add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    lp = _plain_logprobs(smollm2, list(prompt))[-1]
    vals, idx = lp.topk(3)
    assert list(ans.top_logprobs[0]) == [tok.decode([int(i)]) for i in idx]
    assert list(ans.top_logprobs[0].values()) == pytest.approx([float(v) for v in vals], abs=1e-4)
    assert ans.text.startswith(tok.decode([int(idx[0])]))  # greedy: the most likely token first


def test_sourcebias_serve_returns_logprobs_that_match_the_local_model(smollm2):
    from sourcebias.llmcalls.server import make_server

    server = make_server(smollm2.backend, port=0, model_names=["smollm2"], quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = open_client(f"openai:smollm2@{server.url}", cache=False)
        call = user_call("Is Paris in France? Answer Yes or No.", max_tokens=1, choices=("Yes", "No"))
        remote = client.answer([call])[0].choice_logprobs
    finally:
        server.shutdown()
        server.server_close()
    local = smollm2.answer([call])[0].choice_logprobs
    # Both are single tokens here, so the first token's top log-probabilities are exact values.
    assert remote["Yes"] == pytest.approx(local["Yes"], abs=1e-3) and remote["No"] == pytest.approx(local["No"], abs=1e-3)


def test_gemma3_choice_logprobs_equal_a_plain_forward_pass():
    """The offline base Gemma-3-270m through the same client (a base model: the messages'
    contents are continued unless its GGUF carries a chat template)."""
    import torch

    from sourcebias.llmcalls.local import plain_prompt

    client = open_client("gemma3", cache=False)
    call = user_call("Question: is Paris in France? Answer Yes or No.\nAnswer:", max_tokens=0, choices=("Yes", "No"))
    got = client.answer([call])[0].choice_logprobs
    tok, model = client.backend.tokenizer, client.backend.transformers_model
    if client.backend.chat:
        prompt = list(tok.apply_chat_template(call.chat(), add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
    else:
        prompt = list(tok(plain_prompt(call))["input_ids"])
    for choice in call.choices:
        cont = tok(choice, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([prompt + cont])).logits[0].double(), dim=-1)
        expected = sum(float(lp[len(prompt) - 1 + t, cont[t]]) for t in range(len(cont)))
        assert got[choice] == pytest.approx(expected, abs=1e-3)
    assert client.identity()["model"] == "gemma3-270m"


def test_the_server_speaks_both_logprobs_formats_and_refuses_bad_requests():
    import httpx

    def responder(messages, params):
        return "yes", [{"yes": math.log(0.5), "no": math.log(0.3), "maybe": math.log(0.1)}]

    with SimulatedServer(responder) as url:
        chat = httpx.post(
            f"{url}/chat/completions", json={"model": "sim", "messages": [{"role": "user", "content": "q"}], "logprobs": True, "top_logprobs": 2}
        ).json()
        legacy = httpx.post(f"{url}/completions", json={"model": "sim", "prompt": "q", "logprobs": 2}).json()
        bad = httpx.post(f"{url}/chat/completions", json={"model": "sim", "messages": [{"role": "user", "content": "q"}], "top_logprobs": 2})
        none = httpx.post(f"{url}/chat/completions", json={"model": "sim", "messages": [{"role": "user", "content": "q"}]}).json()
    content = chat["choices"][0]["logprobs"]["content"]
    assert content[0]["token"] == "yes" and content[0]["logprob"] == pytest.approx(math.log(0.5))
    assert [e["token"] for e in content[0]["top_logprobs"]] == ["yes", "no"]  # the 2 most likely
    lp = legacy["choices"][0]["logprobs"]
    assert lp["tokens"] == ["yes"] and lp["top_logprobs"] == [{"yes": pytest.approx(math.log(0.5)), "no": pytest.approx(math.log(0.3))}]
    assert bad.status_code == 400 and "needs 'logprobs': true" in bad.json()["error"]["message"]
    assert none["choices"][0]["logprobs"] is None


def test_a_local_store_of_an_earlier_version_is_read_as_it_is(tmp_path):
    """Before format 2 a store had a header without "format" and answers without usage; a local
    model's identity (weights digest) is unchanged, so its answers are read back."""
    from sourcebias.llmcalls import call_key
    from sourcebias.llmcalls.cache import store_path

    client = open_client("smollm2", cache_dir=tmp_path)
    call = user_call("Is Paris in France?", max_tokens=0, choices=("Yes", "No"))
    ident = client.identity()
    path = store_path(ident, tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = {"text": "", "finish_reason": None, "top_logprobs": None, "choice_logprobs": {"Yes": -0.25, "No": -1.5}}
    path.write_text(json.dumps({"identity": ident}) + "\n" + json.dumps({"key": call_key(ident, call), "answer": old}) + "\n")
    got = client.answer([call])[0]
    assert got.cached and got.choice_logprobs == {"Yes": -0.25, "No": -1.5} and got.usage is None
    assert client.describe()["usage"]["answers"]["without_token_counts"] == 1
