"""A retriever's own masked-LM head: the weights behind ``mlm:from-retriever:SPEC``.

The Perplexity Trap paper (Dai et al., 2025) measures a document's perplexity with the
retriever's own backbone. ``SPEC`` is a retriever as ``--retriever`` writes it (a dense preset
such as ``minilm``, ``st:NAME_OR_PATH``, ``PRESET:path=DIR``) or a checkpoint's path or Hugging
Face name. It is resolved by the retriever's own code (the dense retriever's document encoder
folder), then the folder of its transformer weights is found (a sentence-transformers
checkpoint's ``modules.json`` names it: the ``Transformer`` module's path, often the root or
``0_Transformer``; a plain transformers checkpoint is its own folder).

Pseudo-perplexity needs the masked-LM head the backbone was pre-trained with. Most retrieval
checkpoints ship the encoder only (all-MiniLM-L6-v2's ``model.safetensors`` holds ``BertModel``
weights and nothing else): such a checkpoint is refused with a :class:`ConfigError`, never
given a randomly initialised head, whose "perplexities" would mean nothing. A head is
recognised by its weight names (:data:`HEAD_PREFIXES`) in the checkpoint's weight files; the
model is then built as ``AutoModelForMaskedLM`` by transformers, and refused as well if
transformers reports any weight of it missing from the checkpoint (a partial head).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError

#: weight-name prefixes of the masked-LM heads of transformers' ``*ForMaskedLM`` / ``*ForPreTraining`` models
HEAD_PREFIXES: dict[str, str] = {
    "cls.predictions.": "BERT's BertForMaskedLM / BertForPreTraining",
    "lm_head.": "RoBERTa's, XLM-RoBERTa's, MPNet's ForMaskedLM",
    "vocab_projector.": "DistilBertForMaskedLM",
    "vocab_transform.": "DistilBertForMaskedLM",
    "predictions.": "AlbertForMaskedLM",
    "generator_predictions.": "ElectraForMaskedLM (generator)",
}

_SINGLE_FILES = ("model.safetensors", "pytorch_model.bin")
_INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


@dataclass(frozen=True)
class RetrieverMLM:
    """Where a retriever's masked-LM head is: the retriever ``spec``, the checkpoint ``root`` its
    code resolved, the ``folder`` of the transformer weights, the weight ``files`` read, the
    config's ``architectures`` and the ``head`` weight names found."""

    spec: str
    root: str
    folder: str
    files: tuple[str, ...]
    architectures: tuple[str, ...]
    head: tuple[str, ...] = field(default=())

    def config(self) -> dict[str, Any]:
        return {
            "retriever": self.spec,
            "checkpoint": self.root,
            "transformer_folder": self.folder,
            "weight_files": list(self.files),
            "architectures": list(self.architectures),
            "head_source": "the retriever checkpoint's own masked-LM head weights",
            "head_weights": len(self.head),
            "head_prefixes": sorted({p for p in HEAD_PREFIXES for k in self.head if k.startswith(p)}),
        }


def retriever_root(spec: str) -> str:
    """The local checkpoint folder of a retriever ``spec`` (a registered dense kind, resolved as
    the retriever resolves it: its document encoder), or of a checkpoint path / Hugging Face name."""
    from sourcebias.models.encoders import SentenceTransformerEncoder, _local_folder
    from sourcebias.retrieval.specs import get_kind, split_stage

    spec = spec.strip()
    kind, _ = split_stage(spec)
    known = get_kind(kind) if "/" not in kind else None  # a registered kind wins over a folder of that name (write ./NAME)
    if known is None:
        return _local_folder(spec, flag="--model mlm:from-retriever:PATH")
    if known.role != "first":
        raise ConfigError(f"mlm:from-retriever:{spec}: '{kind}' is a re-ranking stage, not a retriever with a checkpoint")
    from sourcebias.retrieval import build_retriever

    encoder = getattr(build_retriever(spec, cache_dir=False), "encoder", None)
    if not isinstance(encoder, SentenceTransformerEncoder):
        raise ConfigError(
            f"mlm:from-retriever:{spec}: '{kind}' is not a dense retriever with a transformer "
            "checkpoint (use a dense preset, st:NAME_OR_PATH or a checkpoint folder)"
        )
    return encoder._folder("document")


def transformer_folder(root: str | Path) -> Path:
    """The folder of a checkpoint's transformer weights: the ``Transformer`` module's path of a
    sentence-transformers ``modules.json``, else ``root`` itself."""
    root = Path(root)
    modules = root / "modules.json"
    if not modules.is_file():
        return root
    try:
        entries = json.loads(modules.read_text())
    except ValueError as e:
        raise ConfigError(f"{modules}: not valid JSON ({e})") from None
    for entry in entries:
        if str(entry.get("type", "")).rsplit(".", 1)[-1] == "Transformer":
            return root / entry.get("path", "")
    raise ConfigError(f"{modules} has no sentence-transformers Transformer module: no transformer weights to take a masked-LM head from")


def weight_names(folder: Path) -> tuple[list[str], list[str]]:
    """``(weight names, files read)`` of a transformers checkpoint folder (safetensors or
    PyTorch ``.bin``, single or sharded)."""
    for name in _INDEX_FILES:
        if (folder / name).is_file():
            return sorted(json.loads((folder / name).read_text()).get("weight_map", {})), [name]
    for name in _SINGLE_FILES:
        path = folder / name
        if not path.is_file():
            continue
        if name.endswith(".safetensors"):
            from safetensors import safe_open

            with safe_open(str(path), "pt") as f:
                return sorted(f.keys()), [name]
        import torch

        return sorted(torch.load(path, map_location="cpu", weights_only=True, mmap=True)), [name]
    raise ConfigError(f"{folder} holds no transformers weights ({', '.join(_SINGLE_FILES + _INDEX_FILES)})")


def _no_head_message(spec: str, folder: Path, architectures: list[str]) -> str:
    looked = ", ".join(f"{p}* ({what})" for p, what in HEAD_PREFIXES.items())
    return (
        f"mlm:from-retriever:{spec}: the checkpoint at {folder} has no masked-LM head "
        f"(architectures {architectures or 'not given'}; looked for weights named {looked}). "
        "A randomly initialised head would give meaningless perplexities, so none is made: use a "
        "checkpoint that keeps its pre-training head, or mlm:NAME with the backbone's masked LM"
    )


def find_head(spec: str) -> RetrieverMLM:
    """Resolve ``spec`` and check that its transformer weights include a masked-LM head
    (:class:`ConfigError` naming the folder and the weights looked for when they do not)."""
    root = retriever_root(spec)
    folder = transformer_folder(root)
    names, files = weight_names(folder)
    try:
        architectures = list(json.loads((folder / "config.json").read_text()).get("architectures") or [])
    except (OSError, ValueError):
        architectures = []
    head = tuple(k for k in names if k.startswith(tuple(HEAD_PREFIXES)))
    if not head:
        raise ConfigError(_no_head_message(spec, folder, architectures))
    return RetrieverMLM(spec, str(root), str(folder), tuple(files), tuple(architectures), head)


def load_retriever_mlm(where: RetrieverMLM, *, device: str | None = None):
    """``(model, tokenizer)``: the ``*ForMaskedLM`` of transformers with the checkpoint's own
    weights, head included; a :class:`ConfigError` if transformers had to initialise any weight."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from sourcebias.models.hub import resolve_device

    model, info = AutoModelForMaskedLM.from_pretrained(where.folder, output_loading_info=True)
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        raise ConfigError(
            f"mlm:from-retriever:{where.spec}: the masked-LM head of the checkpoint at {where.folder} is incomplete "
            f"(missing {', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}); a randomly initialised part would give meaningless perplexities"
        )
    tokenizer = AutoTokenizer.from_pretrained(where.folder if (Path(where.folder) / "tokenizer_config.json").is_file() else where.root)
    return model.to(resolve_device(device)).eval(), tokenizer
