"""Fast CPU encoding: a sentence-transformers model's transformer run on ONNX Runtime or OpenVINO.

``backend="onnx"`` or ``"openvino"`` (``st:NAME,backend=onnx``, ``minilm,backend=openvino``,
``mteb:NAME,backend=onnx,quantize=int8``) keeps everything sentence-transformers does around the
transformer (tokenizer, prompts, pooling, normalisation, dense layers) and swaps only the
transformer's forward pass for an exported graph:

* **Export, locally, once.** The PyTorch weights already loaded are exported with
  ``torch.onnx.export`` (no download) into ``<cache>/exports/<weights digest>-<backend>[-int8|-bf16]/``;
  OpenVINO reads that ONNX graph (``openvino.Core.read_model``) and saves its own IR beside it.
  A later run loads the exported graph; the export's ``info.json`` records how it was made.
* **Quantization** (``quantize="int8"`` or ``"bf16"``), only when asked for: ONNX Runtime's dynamic
  int8 quantization (``onnxruntime.quantization.quantize_dynamic``: int8 weights, activations
  quantized per batch) or NNCF's int8 weight compression for OpenVINO (``nncf.compress_weights``,
  data-free); ``bf16`` runs the fp32 graph with OpenVINO's bfloat16 inference precision
  (``INFERENCE_PRECISION_HINT=bf16``, on CPUs with AVX512-BF16 or AMX; refused on a CPU without,
  never run as fp32 under the bf16 name) or, on PyTorch, casts the model to ``torch.bfloat16``
  (no export). A quantized encoder is named as such in its name, its config (result.json,
  manifest.json) and its embedding-cache key; it is never used in place of the full-precision one.
* **Parity, checked at export.** The exported graph and the PyTorch model encode the same probe
  texts; the smallest cosine between their vectors is stored in ``info.json`` and in the encoder's
  config. A full-precision (fp32) export whose cosine falls below :data:`FP32_MIN_COSINE` is refused.

Why not sentence-transformers' own ``backend=`` argument: it loads and exports through Optimum
(``optimum.onnxruntime`` from optimum-onnx, ``optimum.intel``), whose releases require
transformers < 4.58 (optimum-onnx 0.1.0) and < 5.6 (optimum-intel 2.2.0), while this project pins
transformers 5.x; their imports fail on it. The runtimes themselves (onnxruntime, openvino, nncf)
have no such limit, so the thin part Optimum would provide (export and a forward pass that returns
``last_hidden_state``) is written here; everything else stays sentence-transformers'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

BACKENDS = ("torch", "onnx", "openvino")
QUANTIZATIONS = ("none", "int8", "bf16")
#: the smallest cosine a full-precision export may give against the PyTorch vectors
FP32_MIN_COSINE = 0.9999
#: texts of varied lengths encoded by both the PyTorch model and an export (the parity check)
PROBE_TEXTS = (
    "what is source bias",
    "Neural retrievers rank LLM-written copies of documents above the human-written originals.",
    "The mitochondrion is the powerhouse of the cell; it produces most of the chemical energy needed to power the cell's biochemical reactions. " * 4,
    "Quels sont les effets du café sur le sommeil ?",
    "2023 FIFA Women's World Cup final: Spain beat England 1-0 in Sydney on 20 August.",
    "x",
    "Statins lower LDL cholesterol; randomized trials show fewer cardiovascular events in patients at high risk, "
    "with muscle pain as the most common side effect. " * 12,
    "A query with numbers 3.14159 and symbols #@!",
)
QUANTIZATION_METHOD = {
    ("onnx", "int8"): "int8 dynamic quantization of the MatMuls (onnxruntime.quantization.quantize_dynamic, per-channel int8 weights)",
    ("openvino", "int8"): "int8 weight compression (nncf.compress_weights, INT8_ASYM)",
    ("torch", "bf16"): "bf16 weights and activations (the PyTorch model cast to torch.bfloat16)",
    ("openvino", "bf16"): "bf16 inference (OpenVINO INFERENCE_PRECISION_HINT=bf16: the CPU plugin computes in bfloat16, on AVX512-BF16 or AMX)",
}


def quantization_method(backend: str, quantize: str) -> str:
    """How an export is quantized, as configs and manifests name it.

    Args:
        backend: ``torch``, ``onnx`` or ``openvino``.
        quantize: ``none``, ``int8`` or ``bf16``.

    Returns:
        The method, e.g. ``"int8 weight compression (...)"``; ``"none (fp32)"`` when not quantized.
    """
    return QUANTIZATION_METHOD.get((backend, quantize), "none (fp32)")


def check_backend(backend: str | None, quantize: str | None) -> tuple[str, str]:
    """Validated backend and quantization.

    Args:
        backend: ``torch`` (default when ``None``), ``onnx`` or ``openvino``.
        quantize: ``none`` (default when ``None``), ``int8`` or ``bf16``.

    Returns:
        ``(backend, quantize)``, lower-cased.

    Raises:
        ConfigError: an unknown value, int8 on torch, or bf16 on onnx.
    """
    backend = (backend or "torch").lower()
    quantize = (quantize or "none").lower()
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; choose from {', '.join(BACKENDS)}")
    if quantize not in QUANTIZATIONS:
        raise ConfigError(f"unknown quantize '{quantize}'; choose from {', '.join(QUANTIZATIONS)}")
    if quantize == "int8" and backend == "torch":
        raise ConfigError("quantize=int8 needs backend=onnx or backend=openvino (the PyTorch backend runs fp32 or bf16)")
    if quantize == "bf16" and backend == "onnx":
        raise ConfigError("quantize=bf16 needs backend=openvino or backend=torch (ONNX Runtime's CPU kernels run fp32 or int8)")
    return backend, quantize


def is_plain(backend: str, quantize: str) -> bool:
    """Whether an encoder runs as sentence-transformers does by default (PyTorch, full precision).

    Args:
        backend: ``torch``, ``onnx`` or ``openvino``.
        quantize: ``none``, ``int8`` or ``bf16``.

    Returns:
        ``True`` for PyTorch in fp32: nothing attached, and embedding-cache keys as before backends.
    """
    return backend == "torch" and quantize == "none"


def backend_label(backend: str, quantize: str) -> str:
    """How outputs name a backend.

    Args:
        backend: ``torch``, ``onnx`` or ``openvino``.
        quantize: ``none``, ``int8`` or ``bf16``.

    Returns:
        ``"onnx"``, ``"openvino int8"``, ``"torch bf16"``, ...; ``""`` for PyTorch in fp32.
    """
    if is_plain(backend, quantize):
        return ""
    return backend if quantize == "none" else f"{backend} {quantize}"


def transformer_module(st: Any) -> Any:
    """The sentence-transformers ``Transformer`` module of a model.

    Args:
        st: A ``SentenceTransformer``.

    Returns:
        Its first module, the text transformer.

    Raises:
        ConfigError: the first module is not a text transformer.
    """
    first = st[0]
    if not hasattr(first, "auto_model") or not hasattr(first, "tokenizer"):
        raise ConfigError(f"backend=onnx/openvino needs a text transformer as the model's first module, got {type(first).__name__}")
    return first


def attach_backend(st: Any, backend: str, quantize: str, digest: str, cache_root: Path) -> dict[str, Any]:
    """Run a sentence-transformers model's transformer on ONNX Runtime or OpenVINO.

    Args:
        st: The ``SentenceTransformer``, loaded on PyTorch (its weights are exported).
        backend: ``onnx`` or ``openvino``; ``torch``: nothing to do in fp32, the model cast in place for bf16.
        quantize: ``none``, ``int8`` or ``bf16``.
        digest: Identifies the weights (and settings); names the export's folder.
        cache_root: The folder under which ``exports/`` is kept.

    Returns:
        The export's info (backend, quantization, files, parity with PyTorch), which the encoder's
        config carries; ``{}`` for PyTorch in fp32.

    Raises:
        ConfigError: an fp32 export whose cosine to the PyTorch vectors is below :data:`FP32_MIN_COSINE`,
            or bf16 on a CPU that OpenVINO cannot run in bfloat16.
    """
    backend, quantize = check_backend(backend, quantize)
    if is_plain(backend, quantize):
        return {}
    if backend == "torch":
        return _torch_bf16(st)
    if quantize == "bf16":
        require_bf16()
    module = transformer_module(st)
    folder = Path(cache_root) / "exports" / f"{digest[:32]}-{backend}{'' if quantize == 'none' else '-' + quantize}"
    info_path = folder / "info.json"
    torch_vectors = None
    if not info_path.is_file():
        torch_vectors = _probe(st)
        _export(module, folder, backend, quantize)
    runtime = _RuntimeModel.load(folder, backend, quantize, module.auto_model.config)
    original = module.auto_model
    module.model = runtime
    if torch_vectors is not None:
        info = _parity_info(st, torch_vectors, folder, backend, quantize)
        info["inference_precision"] = runtime.precision
        if quantize == "none" and info["parity"]["min_cosine"] < FP32_MIN_COSINE:
            module.model = original
            raise ConfigError(
                f"the {backend} export of this model gives cosine {info['parity']['min_cosine']:.6f} < {FP32_MIN_COSINE} to the PyTorch vectors "
                f"on the probe texts; refusing to use it (export left in {folder} for inspection)"
            )
        from sourcebias.core.atomic import atomic_write_json

        atomic_write_json(info_path, info)
    return json.loads(info_path.read_text(encoding="utf-8"))


def require_bf16() -> None:
    """Refuse ``quantize=bf16`` where OpenVINO cannot run bfloat16 on this CPU.

    Raises:
        ConfigError: the CPU plugin's ``OPTIMIZATION_CAPABILITIES`` lack ``BF16`` (the CPU has
            neither AVX512-BF16 nor AMX), so a bf16 request would run fp32 under the bf16 name.
    """
    import openvino as ov

    capabilities = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    if "BF16" not in capabilities:
        raise ConfigError(
            "quantize=bf16: OpenVINO cannot run bfloat16 on this CPU (its CPU plugin lists "
            f"{', '.join(capabilities)}, no BF16: that needs AVX512-BF16 or AMX); use quantize=none (fp32) or quantize=int8"
        )


def _probe(st: Any) -> np.ndarray:
    return np.asarray(st.encode(list(PROBE_TEXTS), convert_to_numpy=True, show_progress_bar=False, batch_size=4), dtype=np.float32)


def _torch_bf16(st: Any) -> dict[str, Any]:
    """Cast a sentence-transformers model to bfloat16 in place; its parity with the fp32 vectors."""
    import torch

    fp32 = _probe(st)
    st.to(torch.bfloat16)
    return {
        "backend": "torch",
        "quantization": quantization_method("torch", "bf16"),
        "parity": _parity(fp32, _probe(st), "the same model in fp32 (PyTorch)"),
        "inference_precision": str(next(st.parameters()).dtype).removeprefix("torch."),
    }


def _parity(torch_vectors: np.ndarray, other: np.ndarray, against: str) -> dict[str, Any]:
    cos = cosine_rows(torch_vectors, other)
    return {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()), "probe_texts": len(PROBE_TEXTS), "against": against}


def _parity_info(st: Any, torch_vectors: np.ndarray, folder: Path, backend: str, quantize: str) -> dict[str, Any]:
    return {
        "backend": backend,
        "quantization": quantization_method(backend, quantize),
        "files": sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "info.json"),
        "parity": _parity(torch_vectors, _probe(st), "the PyTorch model, same tokenizer and pooling"),
    }


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``a`` with the same row of ``b``.

    Args:
        a, b: Arrays of the same shape ``(n, dim)``.

    Returns:
        ``(n,)`` float64 cosines.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _input_names(module: Any) -> list[str]:
    features = module.tokenizer(["a b", "a longer text, so that the first one is padded"], padding=True, return_tensors="pt")
    return [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features]


def _export(module: Any, folder: Path, backend: str, quantize: str) -> None:
    """Export the transformer to ONNX (and to OpenVINO IR for ``openvino``), quantized if asked."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        onnx_path = Path(tmp) / "model.onnx"
        _torch_to_onnx(module, onnx_path)
        if backend == "onnx":
            target = folder / "model.onnx"
            if quantize == "int8":
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # per-channel int8 weights of the MatMuls: per-tensor weights give cosines near 0.9 on MiniLM
                quantize_dynamic(str(onnx_path), str(Path(tmp) / "int8.onnx"), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])
                onnx_path = Path(tmp) / "int8.onnx"
            onnx_path.replace(target)
        else:
            import openvino as ov

            model = ov.Core().read_model(str(onnx_path))
            if quantize == "int8":
                import contextlib
                import io
                import logging

                import nncf

                logging.getLogger("nncf").setLevel(logging.WARNING)  # its bit-width table and progress bar are not ours to print
                with contextlib.redirect_stdout(io.StringIO()):
                    model = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)
            ov.save_model(model, str(folder / "model.xml"), compress_to_fp16=False)


def _torch_to_onnx(module: Any, path: Path) -> None:
    """``torch.onnx.export`` of the transformer's ``last_hidden_state``, with dynamic batch and
    sequence axes, traced on a padded batch so that the attention mask stays in the graph."""
    import torch

    names = _input_names(module)
    model = module.auto_model
    features = module.tokenizer(["a b", "a longer text, so that the first one is padded"], padding=True, return_tensors="pt")
    args = tuple(features[k] for k in names)

    class _LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            return self.inner(**dict(zip(names, tensors)), return_dict=True).last_hidden_state

    previous = getattr(model.config, "_attn_implementation", None)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")  # the SDPA path can drop the mask when tracing
    try:
        with torch.no_grad():
            torch.onnx.export(
                _LastHidden(model).eval(),
                args,
                str(path),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={k: {0: "batch", 1: "sequence"} for k in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
    finally:
        if previous and hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(previous)


def _threads() -> int:
    import torch

    return max(1, torch.get_num_threads())


def _torch_module_base():
    import torch

    return torch.nn.Module


class _RuntimeModel:
    """Stands in for the transformer's ``auto_model``: takes the tokenizer's tensors, returns
    ``{"last_hidden_state": tensor}`` computed by ONNX Runtime or OpenVINO (threads: PyTorch's
    setting, ``torch.get_num_threads()``)."""

    @staticmethod
    def load(folder: Path, backend: str, quantize: str, config: Any) -> Any:
        base = _torch_module_base()

        # base is torch.nn.Module, imported lazily (a variable, so mypy cannot see it); an nn.Module so
        # sentence-transformers can hold it as a submodule
        class RuntimeModel(base):  # type: ignore[valid-type,misc]
            def __init__(self):
                super().__init__()
                self.config = config
                self.backend = backend
                self._run, self.input_names, self.precision = _session(folder, backend, quantize)

            def forward(self, **features):
                import torch

                feed = {k: features[k].cpu().numpy() for k in self.input_names if k in features}
                device = features["input_ids"].device  # the pooling that follows runs where the inputs are
                return {"last_hidden_state": torch.from_numpy(np.ascontiguousarray(self._run(feed))).to(device)}

        return RuntimeModel()


def _session(folder: Path, backend: str, quantize: str) -> tuple[Any, Sequence[str], str]:
    """``(run, input names, precision)``: ``run(feed) -> last_hidden_state`` on the exported graph,
    and the precision it runs in (for OpenVINO, as the compiled model reports it)."""
    threads = _threads()
    if backend == "onnx":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return (lambda feed: session.run(None, feed)[0]), names, "f32" if quantize == "none" else "int8 MatMuls, f32 elsewhere"
    import openvino as ov

    core = ov.Core()
    # f32 unless bf16 is asked for: OpenVINO would otherwise run bf16 on CPUs that have it, which is not parity
    hint = "bf16" if quantize == "bf16" else "f32"
    compiled = core.compile_model(core.read_model(str(folder / "model.xml")), "CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": hint})
    precision = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    if precision != hint:
        raise ConfigError(
            f"OpenVINO compiled {folder / 'model.xml'} for {precision} inference where {hint} was asked for; refusing to run it under the {hint} name"
        )
    names = [p.get_any_name() for p in compiled.inputs]
    request = compiled.create_infer_request()

    def run(feed):
        return request.infer(feed)[compiled.outputs[0]].copy()

    return run, names, precision
