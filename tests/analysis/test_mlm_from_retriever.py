"""``mlm:from-retriever:SPEC``: pseudo-perplexity under the masked-LM head stored in a retriever's
checkpoint. A tiny random BERT with its MLM head, saved as a sentence-transformers checkpoint
(no retriever with a head ships offline), scored through the spec, against a plain loop here
(each token masked once, ``BertForMaskedLM.from_pretrained``, -log softmax averaged); a
checkpoint without a head, and the real all-MiniLM-L6-v2 (which ships ``BertModel`` weights
only), are refused; CDC's fit takes the spec and records where the head came from."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import TWIN_HUMAN, TWIN_LLM, TWIN_QUERIES, write_jsonl, write_qrels

from sourcebias.core.errors import ConfigError

torch = pytest.importorskip("torch")

HUMAN, LLM, QUERIES = TWIN_HUMAN, TWIN_LLM, TWIN_QUERIES


def _vocab(tmp_path):
    words = sorted({w for t in HUMAN + LLM + QUERIES for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return path


def _sentence_transformer(hf_dir, out_dir):
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 5.2 moved the modules
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers.models import Pooling, Transformer

    word = Transformer(str(hf_dir))
    SentenceTransformer(modules=[word, Pooling(32, pooling_mode="mean")], device="cpu").save(str(out_dir))
    return out_dir


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """``(with_head, without_head, vocab)``: sentence-transformers checkpoints of one tiny random
    BERT; the first has the BertForMaskedLM weights (head included) in its transformer folder."""
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    tmp = tmp_path_factory.mktemp("mlmret")
    vocab = _vocab(tmp)
    tok = BertTokenizer(str(vocab))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    mlm = BertForMaskedLM(cfg).eval()
    hf = tmp / "hf"
    mlm.save_pretrained(hf)
    tok.save_pretrained(hf)
    with_head = _sentence_transformer(hf, tmp / "st-head")
    folder = with_head / json.loads((with_head / "modules.json").read_text())[0]["path"]
    mlm.save_pretrained(folder)  # the checkpoint keeps the MLM head next to the encoder
    base = tmp / "base"
    BertModel(cfg).save_pretrained(base)
    tok.save_pretrained(base)
    without_head = _sentence_transformer(base, tmp / "st-base")
    return with_head, without_head, vocab


def plain_pseudo_perplexity(folder, texts):
    """Each token of each text masked once (no special tokens), one forward pass per copy of a
    plain ``BertForMaskedLM.from_pretrained``; the mean of -log softmax at the masked position."""
    from transformers import BertForMaskedLM, BertTokenizer

    model = BertForMaskedLM.from_pretrained(str(folder)).eval()
    tok = BertTokenizer.from_pretrained(str(folder))
    out = []
    with torch.no_grad():
        for t in texts:
            ids = tok(t, add_special_tokens=False)["input_ids"]
            nll = []
            for s in range(len(ids)):
                x = torch.tensor([ids])
                x[0, s] = tok.mask_token_id
                logits = model(input_ids=x).logits[0, s].double()
                nll.append(-torch.log_softmax(logits, -1)[ids[s]].item())
            out.append(float(np.mean(nll)))
    return np.array(out)


def test_values_equal_a_plain_masking_loop(checkpoints, tmp_path):
    from sourcebias.analysis.perplexity import build_lm_scorer

    with_head, _, _ = checkpoints
    scorer = build_lm_scorer(f"mlm:from-retriever:st:{with_head},max_tokens=64", device="cpu")
    got = scorer.encode_documents(HUMAN + LLM)
    want = plain_pseudo_perplexity(with_head, HUMAN + LLM)
    np.testing.assert_allclose(got[:, 1], want, atol=1e-5)
    assert (got[:, 1] > 0).all() and len(set(np.round(want, 4))) == len(want)  # distinct, real values
    cfg = scorer.config()
    assert cfg["head"]["transformer_folder"] == str(with_head) and cfg["head"]["head_prefixes"] == ["cls.predictions."]
    assert "retriever checkpoint" in cfg["head"]["head_source"] and cfg["name"] == f"mlm:from-retriever:st:{with_head}"
    # the plain path form resolves to the same folder and the same stored values
    same = build_lm_scorer(f"mlm:from-retriever:{with_head},max_tokens=64", device="cpu")
    assert same.fingerprint("document") == scorer.fingerprint("document")


def test_a_checkpoint_without_head_is_refused(checkpoints):
    from sourcebias.analysis.perplexity import build_lm_scorer

    _, without_head, _ = checkpoints
    with pytest.raises(ConfigError) as info:
        build_lm_scorer(f"mlm:from-retriever:st:{without_head}")
    msg = str(info.value)
    assert f"checkpoint at {without_head} has no masked-LM head" in msg and "cls.predictions.*" in msg and "lm_head.*" in msg
    assert "randomly initialised head would give meaningless perplexities" in msg


def test_the_minilm_preset_is_refused_plainly():
    """all-MiniLM-L6-v2 as shipped: its weights are BertModel's only (no ``cls.*``)."""
    from safetensors import safe_open

    from sourcebias.analysis.perplexity import build_lm_scorer
    from sourcebias.models.hub import resolve_model

    folder = resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    with safe_open(f"{folder}/model.safetensors", "pt") as f:
        assert not [k for k in f.keys() if k.startswith(("cls.", "lm_head."))]  # noqa: SIM118 - safe_open is not iterable
    with pytest.raises(ConfigError, match="has no masked-LM head"):
        build_lm_scorer("mlm:from-retriever:minilm")
    with pytest.raises(ConfigError, match="not a dense retriever"):
        build_lm_scorer("mlm:from-retriever:bm25")


def test_cdc_fit_takes_the_spec_and_records_the_head(checkpoints, tmp_path, capsys):
    """`cdc fit -r st:CKPT --lm mlm:from-retriever:st:CKPT`: the sample's perplexities are the
    plain loop's, β̂₂ the Wald estimator of the sample, and the manifest names the head's folder."""
    import pandas as pd

    from sourcebias.cli.main import main
    from sourcebias.mitigation.cdc import CDCFit

    with_head, _, _ = checkpoints
    root = tmp_path / "d"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(HUMAN)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(LLM)])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": t} for i, t in enumerate(QUERIES)])
    write_qrels(root / "qrels" / "dev.tsv", [(f"q{i}", f"d{i}", 1) for i in range(4)])
    out = tmp_path / "cdc"
    lm = f"mlm:from-retriever:st:{with_head},max_tokens=64"
    with pytest.raises(SystemExit) as info:
        main(
            [
                "cdc",
                "fit",
                str(root),
                "-r",
                f"st:{with_head}",
                "--lm",
                lm,
                "--sample",
                "4",
                "--split",
                "dev",
                "--no-eval",
                "-o",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--device",
                "cpu",
            ]
        )
    assert info.value.code in (0, None), capsys.readouterr().err
    sample = pd.read_csv(out / "sample.csv")
    plain = dict(zip(HUMAN + LLM, plain_pseudo_perplexity(with_head, HUMAN + LLM)))
    texts = {("human", f"d{i}"): t for i, t in enumerate(HUMAN)} | {("llm", f"d{i}"): t for i, t in enumerate(LLM)}
    np.testing.assert_allclose(sample["perplexity"], [plain[texts[(s, d)]] for s, d in zip(sample["source"], sample["doc_id"])], atol=1e-5)
    llm, hum = sample[sample["is_llm"] == 1], sample[sample["is_llm"] == 0]
    wald = (llm["score"].mean() - hum["score"].mean()) / (llm["perplexity"].mean() - hum["perplexity"].mean())
    fit = CDCFit.load(out)
    assert fit.lm == lm and fit.n_pairs == 4 and fit.beta == pytest.approx(wald, rel=1e-6)
    head = json.loads((out / "manifest.json").read_text())["models"]["lm"]["head"]
    assert head["transformer_folder"] == str(with_head) and head["checkpoint"] == str(with_head) and "retriever checkpoint" in head["head_source"]
