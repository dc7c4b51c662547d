"""Model resolution: local paths, packaged offline models, and a fast, helpful offline error."""

import time

import pytest

from sourcebias.core.errors import ModelUnavailableError
from sourcebias.models import hub


def test_local_path_and_missing_path(tmp_path):
    assert hub.resolve_model(str(tmp_path)) == str(tmp_path)
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        hub.resolve_model(str(tmp_path / "nope"))


def test_packaged_minilm_found_by_its_hub_name():
    path = hub.resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    assert path.endswith("model") and (hub.Path(path) / "config.json").is_file()


def test_offline_error_is_fast_and_says_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    t = time.perf_counter()
    with pytest.raises(ModelUnavailableError) as info:
        hub.resolve_model("org/not-a-cached-model", what="cross-encoder", flag="--retriever bm25>>ce:DIR")
    assert time.perf_counter() - t < 5
    msg = str(info.value)
    assert "hf download org/not-a-cached-model" in msg and "bm25>>ce:DIR" in msg
    hub.hub_reachable.cache_clear()


def test_device_default():
    assert hub.resolve_device("cpu") == "cpu"
    assert hub.resolve_device(None) in ("cpu", "cuda")


def test_gguf_conversion_cache_is_keyed_by_content_not_install_path(tmp_path):
    """The same GGUF file in two virtual environments maps to one converted copy (issue: every
    new venv wrote another 517 MB); a changed file maps to another."""
    import shutil

    pytest.importorskip("gguf")
    from sourcebias.models.llm import _gguf_cache_key, smollm2_path

    src = smollm2_path()
    a = tmp_path / "venv-a" / src.name
    b = tmp_path / "venv-b" / src.name
    for p in (a, b):
        p.parent.mkdir()
        shutil.copyfile(src, p)
    assert _gguf_cache_key(a) == _gguf_cache_key(b) == _gguf_cache_key(src)
    with b.open("r+b") as fh:  # one byte changed
        fh.seek(-1, 2)
        last = fh.read(1)
        fh.seek(-1, 2)
        fh.write(bytes([last[0] ^ 1]))
    assert _gguf_cache_key(b) != _gguf_cache_key(a)
