"""What a user meets when a model cannot be reached (issue 39's new-user items), on the command
line: one line naming the option or spec they wrote (not ``--model``), a refused server in
seconds, and the old forms of 0.2.0 still read, each with one warning line naming the new form."""

from __future__ import annotations

import socket

import pytest

from sourcebias.cli.main import main


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["judge", "nq-utd", "--judge", "no-such-model", "--max-queries", "2", "-o", "{tmp}/j"], "pass that folder (--judge)"),
        (["evaluate", "nq-utd", "-r", "bm25>>rankgpt:no-such-model,depth=5"], "pass that folder (rankgpt:no-such-model,depth=5)"),
    ],
)
def test_a_model_that_cannot_be_found_is_named_with_the_option_used(args, named, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run_cli([a.format(tmp=tmp_path) for a in args], capsys)
    said = " ".join(err.split())
    assert code == 2 and "Error: language model 'no-such-model' is not in the local Hugging Face cache" in said and named in said
    assert "--model" not in said and "Traceback" not in err


def test_judge_against_a_refused_server_ends_in_one_line_naming_the_url(tmp_path, capsys):
    url = free_url()
    code, _, err = run_cli(["judge", "nq-utd", "--judge", f"openai:qwen@{url}", "--max-queries", "2", "-o", tmp_path / "j"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"Error: --judge openai:qwen@{url}: nothing answers at {url} (connection refused, 3 attempts over")
    assert not (tmp_path / "j").exists()


def test_the_old_generate_options_still_work_with_one_warning_line(cocktail_dir, tmp_path, capsys):
    url = free_url()
    code, _, err = run_cli(["generate", cocktail_dir, "--name", "x", "--model", "m", "--backend", "openai", "--base-url", url], capsys)
    lines = err.strip().splitlines()
    assert lines[0] == f"Warning: --model m --backend openai --base-url {url} is deprecated: use --model openai:m@{url} (the old form goes in 0.4.0)"
    assert code == 2 and lines[-1] == f"Error: no server is usable: {url}: unreachable (ConnectError)"  # as in 0.2.0


def test_raidar_base_url_still_works_with_a_warning(tmp_path):
    from sourcebias.core.errors import ConfigError
    from sourcebias.core.moved import SourceBiasDeprecationWarning
    from sourcebias.detect import build_detector

    url = free_url()
    warned = pytest.warns(SourceBiasDeprecationWarning, match=rf"raidar:m,base_url={url} is deprecated: use raidar:openai:m@{url}")
    with warned, pytest.raises(ConfigError, match=rf"raidar:m,base_url={url} openai:m@{url}: nothing answers at {url}"):
        build_detector(f"raidar:m,base_url={url}", cache_dir=tmp_path)
