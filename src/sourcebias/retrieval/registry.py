"""Build retrievers from short specifications, as used on the command line.

Grammar::

    spec    := stage (">>" stage)*
    stage   := kind [":" argument]

First stages: ``bm25``, ``tfidf`` (argument: ``key=value`` parameters, e.g.
``bm25:k1=0.9,b=0.4``). Further kinds (dense encoders, re-rankers) register themselves
with :func:`register_first_stage` and :func:`register_reranker`.

Re-rankers (:mod:`sourcebias.retrieval.rerank`): ``ce``, ``monot5``, ``lm``, with the argument
``MODEL[,key=value...]``, e.g. ``bm25>>ce:ms-marco-MiniLM-L-6-v2`` or ``bm25>>lm:smollm2,depth=20``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.base import Reranker, Retriever

FirstStageFactory = Callable[[str | None, dict[str, Any]], Retriever]
RerankerFactory = Callable[[str | None, dict[str, Any]], Reranker]

_FIRST: dict[str, tuple[FirstStageFactory, str]] = {}
_RERANK: dict[str, tuple[RerankerFactory, str]] = {}


def register_first_stage(kind: str, factory: FirstStageFactory, help: str) -> None:
    _FIRST[kind] = (factory, help)


def register_reranker(kind: str, factory: RerankerFactory, help: str) -> None:
    _RERANK[kind] = (factory, help)


def parse_params(arg: str | None, allowed: dict[str, type]) -> dict[str, Any]:
    """``"k1=0.9,b=0.4"`` -> ``{"k1": 0.9, "b": 0.4}``, checked against ``allowed`` names/types."""
    out: dict[str, Any] = {}
    if not arg:
        return out
    for part in arg.split(","):
        if "=" not in part:
            raise ConfigError(f"expected key=value in '{arg}', got '{part}'")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in allowed:
            raise ConfigError(f"unknown parameter '{k}'; allowed: {', '.join(allowed)}")
        typ = allowed[k]
        try:
            if typ is bool:
                out[k] = v.lower() in ("1", "true", "yes", "on")
            elif typ is type(None):
                out[k] = None
            else:
                out[k] = typ(v)
        except ValueError:
            raise ConfigError(f"parameter '{k}' expects {typ.__name__}, got '{v}'") from None
    return out


def _split_stage(stage: str) -> tuple[str, str | None]:
    stage = stage.strip()
    if not stage:
        raise ConfigError("empty retrieval stage (check the '>>' in the specification)")
    kind, sep, arg = stage.partition(":")
    return kind.strip().lower(), (arg.strip() if sep else None)


def build_retriever(spec: str, **options: Any) -> Retriever:
    """Build a retriever (or a pipeline) from a specification such as ``"bm25"``,
    ``"bm25:k1=0.9"`` or ``"bm25>>ce:cross-encoder/ms-marco-MiniLM-L-6-v2"``.

    ``options`` (device, batch size, cache folder, ...) go to the stages that take them.
    """
    stages = spec.split(">>")
    kind, arg = _split_stage(stages[0])
    if kind not in _FIRST:
        hint = f" ('{kind}' is a re-ranker: put a first stage before it, e.g. bm25>>{stages[0].strip()})" if kind in _RERANK else ""
        raise ConfigError(f"unknown retriever '{kind}'{hint}; available: {', '.join(sorted(_FIRST))}")
    retriever = _FIRST[kind][0](arg, options)
    for stage in stages[1:]:
        rkind, rarg = _split_stage(stage)
        if rkind not in _RERANK:
            raise ConfigError(f"unknown re-ranker '{rkind}'; available: {', '.join(sorted(_RERANK)) or 'none'}")
        retriever = retriever >> _RERANK[rkind][0](rarg, options)
    return retriever


def available_retrievers() -> dict[str, dict[str, str]]:
    """``{"first_stage": {kind: help}, "rerankers": {kind: help}}``."""
    return {"first_stage": {k: h for k, (_, h) in sorted(_FIRST.items())}, "rerankers": {k: h for k, (_, h) in sorted(_RERANK.items())}}


def _bm25(arg: str | None, options: dict[str, Any]) -> Retriever:
    from sourcebias.retrieval.lexical import BM25, EnglishAnalyzer

    p = parse_params(arg, {"k1": float, "b": float, "method": str, "stemmer": str})
    analyzer = EnglishAnalyzer(stemmer=p.pop("stemmer")) if "stemmer" in p else None
    name = "bm25" if not arg else f"bm25:{arg}"
    return BM25(analyzer=analyzer, name=name, **p)


def _tfidf(arg: str | None, options: dict[str, Any]) -> Retriever:
    from sourcebias.retrieval.lexical import EnglishAnalyzer, TfIdf

    p = parse_params(arg, {"sublinear_tf": bool, "stemmer": str})
    analyzer = EnglishAnalyzer(stemmer=p.pop("stemmer")) if "stemmer" in p else None
    name = "tfidf" if not arg else f"tfidf:{arg}"
    return TfIdf(analyzer=analyzer, name=name, **p)


def _ce(arg: str | None, options: dict[str, Any]) -> Reranker:
    from sourcebias.retrieval.rerank import cross_encoder_factory

    return cross_encoder_factory(arg, options)


def _monot5(arg: str | None, options: dict[str, Any]) -> Reranker:
    from sourcebias.retrieval.rerank import monot5_factory

    return monot5_factory(arg, options)


def _lm(arg: str | None, options: dict[str, Any]) -> Reranker:
    from sourcebias.retrieval.rerank import causal_lm_factory

    return causal_lm_factory(arg, options)


register_first_stage("bm25", _bm25, "BM25 (bm25s, Lucene scoring, k1=1.2 b=0.75, Elasticsearch english analyzer); bm25:k1=0.9,b=0.4")
register_first_stage("tfidf", _tfidf, "TF-IDF cosine (scikit-learn, same analyzer); tfidf:sublinear_tf=true")


_DENSE_PARAMS = {
    "path": str,
    "query_path": str,
    "query_model": str,
    "pooling": str,
    "score": str,
    "max_length": int,
    "query_prefix": str,
    "doc_prefix": str,
    "index": str,
    "name": str,
}


def _dense(kind: str, arg: str | None, options: dict[str, Any]) -> Retriever:
    """``st:NAME_OR_PATH[,key=value...]`` or a preset ``tas-b[:key=value,...]``."""
    from sourcebias.retrieval.dense import DenseRetriever
    from sourcebias.models.encoders import PRESETS, Preset, SentenceTransformerEncoder

    if kind == "st":
        if not arg:
            raise ConfigError("st needs a model: --retriever st:NAME_OR_PATH (e.g. st:sentence-transformers/all-MiniLM-L6-v2)")
        model, _, rest = arg.partition(",")
        p = parse_params(rest, _DENSE_PARAMS)
        # A bare model: cosine (the sentence-transformers default), the checkpoint's pooling.
        base = Preset(model, "cos", max_length=None)
        short = "/".join(model.rstrip("/").split("/")[-2:]) if model.startswith((".", "/", "~")) else model
        default_name, preset_name = f"st:{short}", None
    else:
        base = PRESETS[kind]
        p = parse_params(arg, _DENSE_PARAMS)
        default_name, preset_name = (kind if not arg else f"{kind}:{arg}"), kind
    name = p.get("name") or default_name
    encoder = SentenceTransformerEncoder(
        model=p.get("path", base.model),
        query_model=p.get("query_path", p.get("query_model", base.query_model)),
        pooling=p.get("pooling", base.pooling),
        similarity=p.get("score", base.similarity),
        max_length=options.get("max_length") or p.get("max_length", base.max_length),
        query_prefix=p.get("query_prefix", ""),
        document_prefix=p.get("doc_prefix", ""),
        device=options.get("device"),
        batch_size=options.get("batch_size") or 32,
        name=name,
        preset=preset_name,
    )
    return DenseRetriever(encoder, name=name, cache_dir=options.get("cache_dir"), index=p.get("index", "exact"))


def _register_dense() -> None:
    from sourcebias.models.encoders import PRESETS

    register_first_stage(
        "st",
        lambda arg, opts: _dense("st", arg, opts),
        "any sentence-transformers / Hugging Face encoder: st:NAME_OR_PATH[,pooling=cls|mean|max|last|weightedmean,score=dot|cos,max_length=N,query_model=Q,query_prefix=..,doc_prefix=..,index=exact|faiss|faiss-hnsw]",
    )
    for kind, preset in PRESETS.items():
        two = f" + {preset.query_model} (queries)" if preset.query_model else ""
        pool = f", {preset.pooling} pooling" if preset.pooling else ""
        register_first_stage(
            kind,
            lambda arg, opts, kind=kind: _dense(kind, arg, opts),
            f"{preset.model}{two}: {preset.similarity}{pool}{', max length ' + str(preset.max_length) if preset.max_length else ''}"
            f"{'; ' + preset.notes if preset.notes else ''}; {kind}:path=LOCAL_DIR to use a local copy",
        )


_register_dense()

# Re-rankers (neural extra; torch is imported only when one is built and its model loaded).
# Options: KIND:MODEL[,depth=N,batch_size=N,max_length=N,...]; --rerank-depth/--batch-size/--max-length set the defaults.
register_reranker("ce", _ce, "cross-encoder (sentence-transformers), score = relevance logit; ce:ms-marco-MiniLM-L-6-v2 (cross-encoder/ms-marco-MiniLM-L-6-v2) or ce:NAME_OR_PATH")
register_reranker("monot5", _monot5, "monoT5, score = log P(true) over {false,true} for 'Query: q Document: d Relevant:'; monot5:base (castorini/monot5-base-msmarco) or monot5:NAME_OR_PATH[,tokenizer=T5_TOKENIZER]")
register_reranker("lm", _lm, "causal-LM query likelihood, score = log P(query | document) (UPR prompt); lm:smollm2 (offline SmolLM2-135M-Instruct) or lm:NAME_OR_PATH_OR_GGUF[,score=mean]")
