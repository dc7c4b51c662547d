"""Model resolution: local paths, packaged offline models, and a fast, helpful offline error."""

import time

import pytest

from sourcebias.models import hub
from sourcebias.core.errors import ModelUnavailableError


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
