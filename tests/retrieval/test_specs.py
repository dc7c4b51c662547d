"""Stage specifications: typed options, and one precedence rule for every kind — a stage's own
option beats the command-wide one, which beats the kind's default."""

from __future__ import annotations

from pathlib import Path

import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.retrieval import build_retriever
from sourcebias.retrieval.specs import kinds, resolve_params

SAMPLES = {int: (7, 9), float: (0.25, 0.5), str: ("cpu", "cuda:1"), Path: (Path("/tmp/a"), Path("/tmp/b")), bool: (True, False)}


def _text(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def test_every_kinds_stage_option_beats_the_command_option():
    checked = 0
    for name, spec in kinds().items():
        for key, param in spec.params.items():
            if param.option is None:
                continue
            stage_value, command_value = SAMPLES[param.type]
            pos = [] if spec.positional is None else ["MODEL" if spec.params[spec.positional].type is str else "5"]
            arg = ",".join(pos + [f"{key}={_text(stage_value)}"])
            assert resolve_params(spec, arg, {param.option: command_value})[key] == stage_value, (name, key)
            only_command = ",".join(pos) or None
            assert resolve_params(spec, only_command, {param.option: command_value})[key] == command_value, (name, key)
            default = resolve_params(spec, only_command, {})
            assert default.get(key) == param.default, (name, key)
            checked += 1
    assert checked >= 20  # dense kinds (max_length, batch_size, device, cache_dir) and re-rankers (depth, ...)


def test_precedence_on_built_objects(tmp_path):
    assert build_retriever("minilm", max_length=128).encoder.max_length == 128
    assert build_retriever("minilm:max_length=64", max_length=128).encoder.max_length == 64
    assert build_retriever("st:sentence-transformers/all-MiniLM-L6-v2,batch_size=4", batch_size=16).encoder.batch_size == 4
    assert build_retriever("tas-b:path=/nowhere", max_length=None).encoder.max_length == 512  # the preset's default
    p = build_retriever("bm25>>lm:smollm2,depth=7,max_length=64", rerank_depth=50, max_length=256)
    assert (p.stages[0].depth, p.stages[0].max_length) == (7, 64)
    p = build_retriever("bm25>>lm:smollm2", rerank_depth=50, max_length=256)
    assert (p.stages[0].depth, p.stages[0].max_length) == (50, 256)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("bm25:k1=high", "bm25: option 'k1' expects a number, got 'high'"),
        ("bm25:k3=1", "bm25: unknown option 'k3'; options: k1, b, norms, method, stemmer"),
        ("bm25:k1=1,k1=2", "option 'k1' given twice"),
        ("tfidf:sublinear_tf=maybe", "expects true/false"),
        ("minilm:pooling=median", "option 'pooling' must be one of cls, mean"),
        ("bm25>>cut", "cut needs a k: cut:K"),
        ("bm25>>cut:x", "cut: option 'k' expects an integer"),
        ("bm25>>bm25", "unknown stage 'bm25' ('bm25' is a first stage"),
        ("cut:5", "unknown retriever 'cut' ('cut' is a stage: put a first stage before it"),
        ("bm25>>lm:smollm2,7", "expected key=value, got '7'"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ConfigError) as info:
        build_retriever(spec)
    assert message in str(info.value)


def test_unknown_command_option_is_refused():
    with pytest.raises(ConfigError, match="unknown option"):
        build_retriever("bm25", temperature=1)


def test_a_stages_own_cache_option_beats_no_cache(tmp_path):
    """--no-cache (cache_dir=False command-wide) turns the cache off unless the stage itself says
    cache=true; a stage's cache=false beats a command-wide cache folder."""
    from sourcebias.core.cache import default_cache_dir

    assert build_retriever("minilm", cache_dir=False).cache_dir is None
    assert build_retriever("minilm:cache=true", cache_dir=False).cache_dir == default_cache_dir()
    assert build_retriever("minilm:cache=true,cache_dir=" + str(tmp_path), cache_dir=False).cache_dir == tmp_path
    assert build_retriever("minilm:cache=false", cache_dir=tmp_path).cache_dir is None
    assert build_retriever("minilm", cache_dir=tmp_path).cache_dir == tmp_path
