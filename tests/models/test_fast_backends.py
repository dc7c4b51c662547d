"""Fast CPU encoding: ``backend=onnx|openvino`` (and ``quantize=int8``) on ``st:``, presets and ``mteb:``.

Parity is measured against the PyTorch vectors of the same model (all-MiniLM-L6-v2, offline) on
nq-utd texts: full-precision exports give cosine >= 0.9999 on every text. A quantized encoder is
named as such in its name, config, result.json, manifest and terminal output, and is cached apart
from the full-precision one; an export that fails the parity check is refused, never used.
"""

from __future__ import annotations

import hashlib
import json

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

import numpy as np

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.data import load_dataset
from sourcebias.models import hub
from sourcebias.models.backends import cosine_rows
from sourcebias.retrieval.registry import build_retriever

pytestmark = pytest.mark.slow  # exports MiniLM (a few seconds per backend)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("backends")
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("SOURCEBIAS_CACHE", str(root / "cache"))
    hub.hub_reachable.cache_clear()
    yield root
    mp.undo()


@pytest.fixture(scope="module")
def texts(nq_utd):
    ds = load_dataset(nq_utd, split="test")
    docs = ds.corpus.retrieval_texts()
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    return [docs[i] for i in order[:20] + order[-20:] + order[780:800]], [ds.queries[q] for q in ds.evaluation_queries()[:30]]


@pytest.fixture(scope="module")
def torch_vectors(env, texts):
    r = build_retriever("minilm", cache_dir=False)
    return r.embed(texts[0]), r.embed(texts[1], "query")


@pytest.mark.parametrize(
    "spec",
    [
        "minilm,backend=onnx",
        "minilm,backend=openvino",
        "st:sentence-transformers/all-MiniLM-L6-v2,backend=onnx",
        "mteb:sentence-transformers/all-MiniLM-L6-v2,backend=openvino",
    ],
)
def test_fp32_backends_match_pytorch(env, texts, torch_vectors, spec):
    if spec.startswith("mteb:"):
        pytest.importorskip("mteb")
    r = build_retriever(spec, cache_dir=False)
    docs, queries = r.embed(texts[0]), r.embed(texts[1], "query")
    assert cosine_rows(docs, torch_vectors[0]).min() >= 0.9999
    assert cosine_rows(queries, torch_vectors[1]).min() >= 0.9999
    enc = r.config()["encoder"]
    assert enc["backend"] == spec.split("backend=")[1] and enc["quantization"] == "none (fp32)"
    assert enc["exports"]["shared"]["parity"]["min_cosine"] >= 0.9999  # the check made at export, carried in the config
    assert "int8" not in r.name


def test_a_quantized_backend_is_named_in_every_output(env, cocktail_dir, capsys):
    out = env / "out-int8"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "-r", "minilm,backend=onnx,quantize=int8,name=mini", "-o", str(out), "--statistics", "none"])
    assert info.value.code in (0, None)
    terminal = capsys.readouterr().out
    assert "mini (onnx int8)" in terminal
    result = json.loads((out / "result.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    for where in (result["retrievers"], manifest["models"]):
        enc = where["mini (onnx int8)"]["encoder"]
        assert enc["backend"] == "onnx" and enc["quantization"].startswith("int8")
        assert 0.9 < enc["exports"]["shared"]["parity"]["min_cosine"] < 1.0  # measured, not assumed


def test_backends_are_cached_apart_and_pytorch_keys_are_unchanged(env):
    torch_r = build_retriever("minilm")
    onnx_r = build_retriever("minilm,backend=onnx")
    int8_r = build_retriever("minilm,backend=onnx,quantize=int8")
    ov_r = build_retriever("minilm,backend=openvino")
    bf16_r = build_retriever("minilm,backend=openvino,quantize=bf16")
    torch_bf16_r = build_retriever("minilm,quantize=bf16")
    fps = {r.encoder.fingerprint("document") for r in (torch_r, onnx_r, int8_r, ov_r, bf16_r, torch_bf16_r)}
    assert len(fps) == 6
    # the PyTorch key is what it was before backends existed (vectors already on disk stay valid)
    enc = torch_r.encoder
    ident = {"weights": hub.folder_digest(enc._folder("document")), "pooling": None, "similarity": "cos", "max_length": None, "prefix": "", "role": "shared"}
    assert enc.fingerprint("document") == hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def test_an_export_is_made_once_and_reused(env, texts):
    r1 = build_retriever("minilm,backend=onnx", cache_dir=False)
    v1 = r1.embed(texts[0][:5])
    infos = sorted((env / "cache" / "exports").glob("*-onnx/info.json"))
    assert len(infos) == 1
    stamp = infos[0].stat().st_mtime_ns
    r2 = build_retriever("minilm,backend=onnx", cache_dir=False)
    assert np.array_equal(r2.embed(texts[0][:5]), v1)
    assert infos[0].stat().st_mtime_ns == stamp


def test_an_export_that_fails_parity_is_refused(env, monkeypatch, tmp_path):
    from sourcebias.models import backends

    monkeypatch.setattr(backends, "FP32_MIN_COSINE", 1.5)  # no export can pass: the refusal must show
    r = build_retriever(f"minilm,backend=openvino,cache_dir={tmp_path}")
    with pytest.raises(ConfigError, match="refusing to use it"):
        r.embed(["a text"])


def test_bad_backend_options_are_refused_before_any_work():
    with pytest.raises(ConfigError, match="must be one of torch, onnx, openvino"):
        build_retriever("minilm,backend=tensorrt")
    with pytest.raises(ConfigError, match="quantize=int8 needs backend=onnx or backend=openvino"):
        build_retriever("minilm,quantize=int8")
    with pytest.raises(ConfigError, match="quantize=bf16 needs backend=openvino or backend=torch"):
        build_retriever("minilm,backend=onnx,quantize=bf16")


def _cpu_runs_bf16() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def test_bf16_is_named_and_keeps_the_vectors_close(env, texts, torch_vectors, cocktail_dir, capsys):
    """On a CPU with bfloat16 (AVX512-BF16 or AMX) OpenVINO runs bf16: vectors within cosine 0.999
    of PyTorch's (bfloat16 keeps 8 bits of mantissa), named so everywhere; elsewhere it is refused."""
    if not _cpu_runs_bf16():
        with pytest.raises(ConfigError, match="cannot run bfloat16 on this CPU"):
            build_retriever("minilm,backend=openvino,quantize=bf16", cache_dir=False).embed(["a text"])
        return
    r = build_retriever("minilm,backend=openvino,quantize=bf16", cache_dir=False)
    docs = r.embed(texts[0])
    cos = cosine_rows(docs, torch_vectors[0])
    assert cos.min() >= 0.999 and cos.min() < 1.0  # close, and not fp32 under another name
    assert np.array_equal(r.embed(texts[0]), docs)  # deterministic: cached vectors are the ones a rerun gives
    out = env / "out-bf16"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "-r", "minilm,backend=openvino,quantize=bf16,name=mini", "-o", str(out), "--statistics", "none"])
    assert info.value.code in (0, None)
    assert "mini (openvino bf16)" in capsys.readouterr().out
    for where in (json.loads((out / "result.json").read_text())["retrievers"], json.loads((out / "manifest.json").read_text())["models"]):
        enc = where["mini (openvino bf16)"]["encoder"]
        assert enc["backend"] == "openvino" and enc["quantization"].startswith("bf16")
        assert enc["exports"]["shared"]["inference_precision"] == "bf16"  # as the compiled model reports it


def test_bf16_is_refused_on_a_cpu_without_it(env, monkeypatch, tmp_path):
    import openvino as ov

    class CoreWithoutBF16(ov.Core):
        def get_property(self, *args):
            return ["FP32", "INT8"] if args[1:] == ("OPTIMIZATION_CAPABILITIES",) else super().get_property(*args)

    monkeypatch.setattr(ov, "Core", CoreWithoutBF16)
    r = build_retriever(f"minilm,backend=openvino,quantize=bf16,cache_dir={tmp_path}")
    with pytest.raises(ConfigError, match=r"cannot run bfloat16 on this CPU \(its CPU plugin lists FP32, INT8, no BF16"):
        r.embed(["a text"])
    assert not (tmp_path / "exports").exists()  # refused before any export


@pytest.mark.parametrize("spec", ["minilm,quantize=bf16", "mteb:sentence-transformers/all-MiniLM-L6-v2,quantize=bf16"])
def test_pytorch_in_bf16_is_named_and_keeps_the_vectors_close(env, texts, torch_vectors, spec):
    if spec.startswith("mteb:"):
        pytest.importorskip("mteb")
    r = build_retriever(f"{spec},name=mini", cache_dir=False)
    assert r.name == "mini (torch bf16)"
    docs, queries = r.embed(texts[0]), r.embed(texts[1], "query")
    for got, want in ((docs, torch_vectors[0]), (queries, torch_vectors[1])):
        cos = cosine_rows(got, want)
        assert 0.999 <= cos.min() < 1.0  # bfloat16's 8-bit mantissa: close, and visibly not fp32
    enc = r.config()["encoder"]
    assert enc["backend"] == "torch" and enc["quantization"].startswith("bf16")
    assert enc["exports"]["shared"]["inference_precision"] == "bfloat16"
    assert 0.999 <= enc["exports"]["shared"]["parity"]["min_cosine"] < 1.0
