"""Debiased training: the loss against a hand computation, the seeded plan, a short real training
run that changes the weights, writes a loadable model, and resumes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sourcebias as sb

torch = pytest.importorskip("torch")

from sourcebias.mitigation.losses import TwinPositivesRankingLoss  # noqa: E402
from sourcebias.mitigation.plan import TrainingPlan, Tuple, build_plan, pack  # noqa: E402


def hand_loss(q, h, l, alpha, scale, negs=(), in_batch=True):
    """Written out: cosine similarities, the two masked softmax cross-entropies, the hinge."""

    def cos(a, b):
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    b = len(q)
    cands = list(h) + list(l) + [n for col in negs for n in col]
    ce_h, ce_l, hinge = 0.0, 0.0, 0.0
    for i in range(b):
        own = {i + c * b for c in range(2 + len(negs))}
        s = [scale * cos(q[i], c) for c in cands]
        keep_h = [j for j in range(len(cands)) if j != b + i and (in_batch or j in own)]
        keep_l = [j for j in range(len(cands)) if j != i and (in_batch or j in own)]
        ce_h += -s[i] + math.log(sum(math.exp(s[j]) for j in keep_h))
        ce_l += -s[b + i] + math.log(sum(math.exp(s[j]) for j in keep_l))
        hinge += max(0.0, cos(q[i], l[i]) - cos(q[i], h[i]))
    return ce_h / b + ce_l / b + alpha * hinge / b


@pytest.mark.parametrize("with_negs,in_batch", [(False, True), (True, True), (True, False)])
def test_loss_equals_the_hand_computation(with_negs, in_batch):
    rng = np.random.default_rng(0)
    q, h, l = (rng.normal(size=(3, 5)) for _ in range(3))
    negs = [rng.normal(size=(3, 5)), rng.normal(size=(3, 5))] if with_negs else []
    loss = TwinPositivesRankingLoss(model=None, alpha=0.7, scale=5.0, in_batch_negatives=in_batch)
    embs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in [q, h, l, *negs]]
    value = loss.compute_loss_from_embeddings(embs)
    assert value.item() == pytest.approx(hand_loss(q, h, l, 0.7, 5.0, negs, in_batch), rel=1e-10)
    value.backward()
    assert all(e.grad is not None and torch.isfinite(e.grad).all() for e in embs)
    # the hinge term: moving the twin towards the query raises the loss when alpha > 0
    assert hand_loss(q, h, q + 1e-3 * l, 0.7, 5.0, negs, in_batch) > hand_loss(q, h, q + 1e-3 * l, 0.0, 5.0, negs, in_batch)


def test_own_twin_is_never_a_negative():
    """With the twin identical to the original, masking makes the human term the plain in-batch
    cross-entropy over the others' documents (not a 50/50 split with its own twin)."""
    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 4))
    h = rng.normal(size=(2, 4))
    loss = TwinPositivesRankingLoss(model=None, alpha=0.0, scale=1.0)
    got = loss.compute_loss_from_embeddings([torch.tensor(x) for x in (q, h, h)]).item()
    assert got == pytest.approx(hand_loss(q, h, h, 0.0, 1.0), rel=1e-12)


def test_pack_has_no_duplicate_query_or_document():
    tuples = [Tuple("q1", "d1", "d9"), Tuple("q1", "d2", "d8"), Tuple("q2", "d1", None), Tuple("q3", "d3", "d1"), Tuple("q4", "d4", None)]
    batches = pack(tuples, 3)
    assert sorted(t for b in batches for t in b) == sorted(tuples)
    for b in batches:
        assert len({t.query_id for t in b}) == len(b)
        docs = [d for t in b for d in (t.doc_id, t.negative) if d]
        assert len(docs) == len(set(docs))


@pytest.fixture(scope="module")
def nf_train(nfcorpus):
    return sb.load_dataset(nfcorpus, split="train")


def test_plan_is_seeded_saved_and_reloaded(nf_train, tmp_path):
    a = build_plan(nf_train, batch_size=16, epochs=2, seed=42, strategy="hard", max_tuples=200)
    b = build_plan(nf_train, batch_size=16, epochs=2, seed=42, strategy="hard", max_tuples=200)
    c = build_plan(nf_train, batch_size=16, epochs=2, seed=7, strategy="hard", max_tuples=200)
    assert a.digest() == b.digest() and a.digest() != c.digest()
    a.save(tmp_path / "plan.jsonl")
    back = TrainingPlan.load(tmp_path / "plan.jsonl", nf_train)
    assert back.digest() == a.digest() and back.batches() == a.batches()
    for batch in a.batches():
        assert len({t.query_id for t in batch}) == len(batch)
        for t in batch:
            assert nf_train.qrels[t.query_id][t.doc_id] > 0
            assert nf_train.qrels[t.query_id].get(t.negative, 0) <= 0  # a mined negative is never relevant
    assert len(a.epochs) == 2 and [t for e in a.epochs for bt in e for t in bt] != []


def test_tuples_without_a_mined_negative_are_listed_not_lost(nf_train):
    # mining only BM25's first document: where that one is relevant, the query has no negative
    plan = build_plan(nf_train, batch_size=16, epochs=1, seed=42, strategy="hard", max_tuples=200, mine_depth=1)
    left = plan.header["left_out_without_negative"]
    assert left and plan.header["tuples"] + len(left) == 200
    assert sum(len(b) for b in plan.batches()) == plan.header["tuples"]
    for q, d in left:
        assert nf_train.qrels[q][d] > 0


@pytest.mark.slow
def test_a_short_training_run_changes_the_weights_and_resumes(nf_train, tmp_path):
    from sentence_transformers import SentenceTransformer

    from sourcebias.mitigation.training import read_training, train
    from sourcebias.models.hub import resolve_model

    plan = build_plan(nf_train, batch_size=4, epochs=1, seed=1, strategy="in-batch", max_tuples=8)
    n = len(plan.batches())
    assert n >= 2 and sum(len(b) for b in plan.batches()) == 8
    out = tmp_path / "run"
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model_dir = train(nf_train, plan, "minilm", out, alpha=1.0, max_seq_length=32, save_steps=1, learning_rate=1e-3)
    assert not [w for w in caught if "pin_memory" in str(w.message)]  # no pinned memory on a CPU
    info = read_training(model_dir)
    assert info["steps"] == n and info["plan"]["digest"] == plan.digest() and info["alpha"] == 1.0
    base = SentenceTransformer(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")
    tuned = SentenceTransformer(str(model_dir), device="cpu")
    w0 = next(base[0].auto_model.parameters()).detach()
    w1 = next(tuned[0].auto_model.parameters()).detach()
    assert not torch.allclose(w0, w1)
    # a run killed after step n - 1 (the model and the last checkpoint gone) resumes from there
    import shutil

    shutil.rmtree(model_dir)
    shutil.rmtree(out / "checkpoints" / f"checkpoint-{n}")
    assert (out / "checkpoints" / f"checkpoint-{n - 1}").is_dir()
    again = read_training(train(nf_train, plan, "minilm", out, alpha=1.0, max_seq_length=32, save_steps=1, learning_rate=1e-3))
    assert again["resumed"] and again["steps"] == n
    # ... and ends with the weights of the uninterrupted run (the plan's order, the saved RNG state)
    resumed = SentenceTransformer(str(model_dir), device="cpu")
    for (name, a), b in zip(tuned[0].auto_model.named_parameters(), resumed[0].auto_model.parameters()):
        assert torch.allclose(a.detach(), b.detach(), atol=1e-6), name
    # the evaluation of the trained model through --retriever st:DIR
    ret = sb.build_retriever(f"st:{model_dir}", cache_dir=tmp_path / "cache")
    assert ret.encoder.model == str(model_dir)
