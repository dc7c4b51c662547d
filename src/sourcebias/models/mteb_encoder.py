"""Any model of MTEB's registry as a sourcebias encoder (``pip install "sourcebias[mteb]"``).

MTEB (the ``mteb`` package, 2.x) knows, for each registered model, its loader, revision,
prompts and instructions (per task and per query/document role) and its similarity function.
:class:`MTEBEncoder` loads a model through MTEB's own loader (``ModelMeta.load_model``) and
encodes through the model's own ``encode(DataLoader, task_metadata=..., prompt_type=...)``, fed
by MTEB's ``create_dataloader`` — so the prompts, instructions and normalisation are MTEB's, not
copied by hand. Vectors then go through sourcebias' encode-once store (:mod:`.embedding_store`)
like any encoder's. Models scored by cosine are normalised to unit length (the dot product of
unit vectors is the cosine); models scored by dot product are kept as they are; other similarity
functions (MaxSim, Euclidean) are refused.

Which prompts apply depends on the task MTEB is told it runs: by default a generic retrieval
task (:func:`retrieval_metadata`: type ``Retrieval``, no task-specific instruction), or the
metadata of any MTEB task by name (``task=NQ`` uses NQ's instruction).

Offline, the weights come from a local folder (``path=DIR``), a package that ships them, or the
Hugging Face cache (:func:`sourcebias.models.hub.resolve_model`); the error says which model and how
to pass its folder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.models.backends import is_plain
from sourcebias.models.encoders import Encoder, backend_config

INSTALL = 'pip install "sourcebias[mteb]"'
SPLIT, SUBSET = "test", "default"


def require_mteb() -> Any:
    """The ``mteb`` module.

    Returns:
        The imported module.

    Raises:
        ConfigError: mteb is not installed (the message says how to install it).
    """
    try:
        import mteb
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ConfigError(f"MTEB models and tasks need the mteb package (2.x): {INSTALL} ({e})") from None
    return mteb


def retrieval_metadata(
    name: str = "SourceBiasRetrieval", *, split: str = SPLIT, description: str | None = None, reference: str | None = None, prompt: dict[str, str] | None = None
) -> Any:
    """An MTEB ``TaskMetadata`` of a text retrieval task: what a model is told it runs, and so which prompts it uses.

    Args:
        name: The task's name.
        split: Its evaluation split.
        description, reference: Shown in MTEB's outputs.
        prompt: A task instruction (``{"query": ...}``) for instruction-following models.

    Returns:
        The metadata (type ``Retrieval``, English text, main score ``ndcg_at_10``).
    """
    require_mteb()
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        name=name,
        dataset={"path": f"sourcebias/{name}", "revision": "local"},
        description=description or "Retrieval on a mixed corpus of human-written documents and their LLM-written copies (source bias).",
        reference=reference or "https://doi.org/10.1145/3637528.3671458",
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[split],
        eval_langs=["eng-Latn"],
        main_score="ndcg_at_10",
        date=None,
        domains=None,
        task_subtypes=None,
        license=None,
        annotations_creators=None,
        dialect=None,
        sample_creation=None,
        bibtex_citation=None,
        prompt=cast(Any, prompt),  # MTEB's PromptDict is a TypedDict over the same task-type keys
    )


def task_metadata(task: Any = None) -> Any:
    """The ``TaskMetadata`` a model is told it runs.

    Args:
        task: A task name of MTEB's (``"NQ"``), a metadata object, or ``None`` for :func:`retrieval_metadata`.

    Returns:
        The metadata.

    Raises:
        ConfigError: an unknown task name.
    """
    mteb = require_mteb()
    if task is None:
        return retrieval_metadata()
    if isinstance(task, str):
        try:
            return mteb.get_task(task).metadata
        except KeyError as e:
            raise ConfigError(f"unknown MTEB task '{task}' ({e.args[0] if e.args else e})") from None
    return task


def model_meta(name: str, revision: str | None = None) -> Any:
    """MTEB's registry entry of a model.

    Args:
        name: The model's name in the registry.
        revision: The revision asked for (must be the registered one).

    Returns:
        The ``ModelMeta``.

    Raises:
        ConfigError: unknown model (with MTEB's suggestions), another revision, or no loader.
    """
    mteb = require_mteb()
    try:
        meta = mteb.get_model_meta(name, revision)
    except KeyError as e:
        raise ConfigError(f'mteb:{name}: {e.args[0] if e.args else e} (list them with `python -c "import mteb; print(mteb.get_model_metas())"`)') from None
    except ValueError as e:  # a revision other than the registered one
        raise ConfigError(f"mteb:{name}: {e}") from None
    if meta.loader is None:
        raise ConfigError(f"mteb:{name}: MTEB has metadata for this model but no implementation to load it (e.g. an API model without a loader)")
    return meta


def _similarity(meta: Any) -> str:
    fn = str(getattr(meta.similarity_fn_name, "value", meta.similarity_fn_name) or "cosine").lower()
    if fn in ("cosine", "cos_sim"):
        return "cos"
    if fn in ("dot", "dot_score"):
        return "dot"
    raise ConfigError(f"mteb:{meta.name}: MTEB scores this model by '{fn}'; sourcebias' dense retrieval supports cosine and dot product")


def load_mteb_model(name: str, *, revision: str | None = None, path: str | None = None, device: str | None = None) -> tuple[Any, Any, str | None]:
    """Load a model through MTEB's loader, offline-safely.

    Args:
        name: The model's name in MTEB's registry.
        revision: The registered revision (checked).
        path: A local copy of the weights; default: a packaged copy, the Hugging Face cache, or the
            Hub by name when it can be reached.
        device: Where to load it (default: a GPU when there is one).

    Returns:
        ``(model, meta, folder)``: the model (its ``mteb_model_meta`` the registry's entry), the
        entry, and the local folder it came from (``None`` when loaded from the Hub by name).

    Raises:
        ConfigError: see :func:`model_meta`.
        ModelUnavailableError: offline and the weights are not here.
    """
    from sourcebias.models.hub import resolve_device, resolve_model

    meta = model_meta(name, revision)
    where = resolve_model(path or name, what="MTEB model", flag=f"--retriever mteb:{name},path=DIR")
    folder = where if Path(where).exists() else None
    # a local copy is loaded by MTEB's loader as the model (the name its loader opens); the meta stays the registry's
    load_meta = meta.model_copy(update={"name": folder, "revision": None}) if folder else meta
    model = load_meta.load_model(device=resolve_device(device))
    model.mteb_model_meta = meta
    return model, meta, folder


class MTEBEncoder(Encoder):
    """A model of MTEB's registry, loaded and prompted by MTEB, as a sourcebias encoder.

    Args:
        model_name: The name in MTEB's registry (``sentence-transformers/all-MiniLM-L6-v2``).
        revision: The registered revision (checked against MTEB's registry).
        path: A local copy of the weights (what to pass offline).
        task: An MTEB task name, a ``TaskMetadata``, or ``None`` for the generic retrieval task.
        model: An MTEB model already loaded (e.g. the one given to ``mteb.evaluate``).
        backend, quantize: ``onnx``/``openvino`` and ``int8`` (or ``bf16`` on openvino and torch) for sentence-transformers models
            (:mod:`sourcebias.models.backends`).
    """

    def __init__(
        self,
        model_name: str | None = None,
        *,
        revision: str | None = None,
        path: str | None = None,
        task: Any = None,
        model: Any = None,
        device: str | None = None,
        batch_size: int = 32,
        name: str = "",
        backend: str = "torch",
        quantize: str = "none",
        export_dir: str | None = None,
    ):
        from sourcebias.models.backends import check_backend

        if model is None and not model_name:
            raise ConfigError("MTEBEncoder needs a model name or a loaded model")
        self._model = model
        self._folder: str | None = None
        self.meta = model.mteb_model_meta if model is not None else model_meta(model_name, revision)  # type: ignore[arg-type]
        self.model_name, self.revision, self.path, self.device = self.meta.name, revision, path, device
        self.task = task_metadata(task)
        self.similarity = _similarity(self.meta)
        self.batch_size, self.export_dir = batch_size, export_dir
        self.backend, self.quantize = check_backend(backend, quantize)
        self.name = name or f"mteb:{self.model_name}"
        self._exports: dict[str, dict[str, Any]] = {}
        self._fingerprints: dict[str, str | None] = {}

    # -- loading -------------------------------------------------------------------------------
    def model(self) -> Any:
        """The MTEB model (loaded on first use; the backend attached when not PyTorch)."""
        if self._model is None:
            self._model, _, self._folder = load_mteb_model(self.model_name, revision=self.revision, path=self.path, device=self.device)
        if not is_plain(self.backend, self.quantize) and not self._exports:
            self._attach_backend()
        return self._model

    def _attach_backend(self) -> None:
        from sourcebias.core.cache import default_cache_dir
        from sourcebias.models.backends import attach_backend

        st = getattr(self._model, "model", None)
        if st is None or not hasattr(st, "encode") or not hasattr(st, "__getitem__"):
            raise ConfigError(f"mteb:{self.model_name}: backend={self.backend} runs sentence-transformers models; MTEB loads this one with {self.meta.loader}")
        digest = self.weights_digest() if self.backend != "torch" else ""  # PyTorch in bf16 exports nothing
        if digest is None:
            raise ConfigError(f"mteb:{self.model_name}: backend={self.backend} needs the model's weights folder to export them (pass path=DIR)")
        root = Path(self.export_dir) if self.export_dir else default_cache_dir()
        self._exports["shared"] = attach_backend(st, self.backend, self.quantize, digest, root)

    def weights_digest(self) -> str | None:
        """A digest of the weights folder (None when the loaded model's folder is not known)."""
        from sourcebias.models.hub import folder_digest

        if self._model is not None:
            folder = self._folder or _model_folder(self._model)
        else:
            from sourcebias.models.hub import resolve_model

            where = resolve_model(self.path or self.model_name, what="MTEB model", flag=f"--retriever mteb:{self.model_name},path=DIR")
            folder = where if Path(where).exists() else None
        return folder_digest(folder) if folder else None

    # -- Encoder ---------------------------------------------------------------------------------
    def _encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        from datasets import Dataset, disable_progress_bars, enable_progress_bars, is_progress_bar_enabled
        from mteb._create_dataloaders import create_dataloader  # MTEB's own input preparation, as in its retrieval evaluator
        from mteb.types import PromptType

        model = self.model()
        prompt_type = PromptType.query if role == "query" else PromptType.document
        shown = is_progress_bar_enabled()
        disable_progress_bars()
        try:
            data = Dataset.from_dict({"id": [str(i) for i in range(len(texts))], "text": list(texts)})
            loader = create_dataloader(data, task_metadata=self.task, prompt_type=cast(Any, prompt_type), batch_size=self.batch_size)
            kwargs = {"batch_size": self.batch_size, "show_progress_bar": False}
            vecs = model.encode(loader, task_metadata=self.task, hf_split=SPLIT, hf_subset=SUBSET, prompt_type=prompt_type, **kwargs)
        finally:
            if shown:
                enable_progress_bars()
        import torch

        vecs = torch.as_tensor(np.asarray(vecs.cpu().float() if hasattr(vecs, "cpu") else vecs, dtype=np.float32))
        if self.similarity == "cos":  # as sentence-transformers' normalize_embeddings=True does it
            vecs = torch.nn.functional.normalize(vecs, p=2, dim=1)
        return vecs.numpy()

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query")

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "document")

    def fingerprint(self, role: str) -> str | None:
        """Weights, MTEB's registry entry (loader, its arguments: prompts, instructions), the task
        it is told it runs, the role, the backend; ``None`` (memory only) when the weights are unknown."""
        if role not in self._fingerprints:
            import mteb

            digest = self.weights_digest()
            ident = {
                "weights": digest,
                "mteb": mteb.__version__,
                "model": self.meta.name,
                "revision": self.meta.revision,
                "loader": str(self.meta.loader),
                "loader_kwargs": json.dumps(self.meta.loader_kwargs, sort_keys=True, default=str),
                "task": {"name": self.task.name, "type": self.task.type, "prompt": self.task.prompt},
                "similarity": self.similarity,
                "role": role,
            }
            if not is_plain(self.backend, self.quantize):
                ident["backend"] = {"backend": self.backend, "quantize": self.quantize}
            self._fingerprints[role] = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:24] if digest else None
        return self._fingerprints[role]

    def config(self) -> dict[str, Any]:
        if not is_plain(self.backend, self.quantize):
            self.model()  # export once, so that the config carries the parity check
        return {
            "name": self.name,
            "class": "MTEBEncoder",
            "mteb_model": self.meta.name,
            "revision": self.meta.revision,
            "loader": getattr(self.meta.loader, "__name__", str(self.meta.loader)),
            "loader_kwargs": json.loads(json.dumps(self.meta.loader_kwargs, default=str)),
            "task": self.task.name,
            "task_type": self.task.type,
            "similarity": self.similarity,
            "path": self.path,
            "batch_size": self.batch_size,
            **backend_config(self.backend, self.quantize, self._exports),
        }


def _model_folder(model: Any) -> str | None:
    """The local folder a loaded MTEB model's sentence-transformers weights came from, if known."""
    st = getattr(model, "model", None)
    try:
        first = st[0]  # type: ignore[index]
        where = first.auto_model.config._name_or_path
    except Exception:
        return None
    if where and Path(where).is_dir():
        return str(where)
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(where, local_files_only=True)
    except Exception:
        return None
