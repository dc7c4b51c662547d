"""The positive-pool control of debiased training (issue 17 item 4): which copies are positives
(human, llm, both, a seeded mix), in the plan, in the loss, in a training folder and in the sweep."""

from __future__ import annotations

import csv
import hashlib
import json
import math

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels

import sourcebias as sb

torch = pytest.importorskip("torch")

from sourcebias.core.errors import ConfigError  # noqa: E402
from sourcebias.mitigation.losses import POSITIVE_LABELS, TwinPositivesRankingLoss  # noqa: E402
from sourcebias.mitigation.plan import TrainingPlan, build_plan, parse_positives  # noqa: E402

POOLS = ["human", "llm", "both", "mix:0.5", "mix:0.3"]


def write_dataset(root, n_queries, *, orphan=True):
    """Query qi relevant to document di (both copies); q0 also to 'orphan' (human only) and has a
    judged-irrelevant document (grade 0): neither gives a tuple. A dev split for evaluations."""
    human = [{"_id": f"d{i}", "title": "", "text": f"topic {i} words about subject {i % 7} and item {i}"} for i in range(n_queries)]
    llm = [{"_id": f"d{i}", "title": "", "text": f"a rewritten text on topic {i}, subject {i % 7}, item {i}"} for i in range(n_queries)]
    if orphan:
        human.append({"_id": "orphan", "title": "", "text": "a human-only document about topic 0"})
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": f"topic {i} item {i}"} for i in range(n_queries)])
    train = [(f"q{i}", f"d{i}", 1) for i in range(n_queries)]
    if orphan:
        train += [("q0", "orphan", 1), ("q0", "d1", 0)]
    write_qrels(root / "qrels" / "train.tsv", train)
    write_qrels(root / "qrels" / "dev.tsv", [(f"q{i}", f"d{i}", 1) for i in range(min(n_queries, 4))])
    return root


@pytest.fixture
def tiny(tmp_path):
    return sb.load_dataset(write_dataset(tmp_path / "tiny", 5), split="train")


# -- the plan ------------------------------------------------------------------------------------------


def test_parse_positives():
    assert parse_positives("both") == ("both", None) and parse_positives("human") == ("human", None)
    assert parse_positives("mix") == ("mix", 0.5) and parse_positives("mix:0.25") == ("mix", 0.25)
    for bad in ("twins", "human:0.5", "mix:x", "mix:1.5", "mix:-0.1"):
        with pytest.raises(ConfigError):
            parse_positives(bad)


def test_plan_positives_per_pool_by_hand(tiny):
    """Five tuples (q_i, d_i); the orphan and the grade-0 document give none. Each pool labels
    every tuple with itself; the batches are the same for every pool."""
    plans = {pool: build_plan(tiny, batch_size=2, epochs=2, seed=3, positives=pool) for pool in ("human", "llm", "both")}
    ids = {pool: [[(t.query_id, t.doc_id) for t in b] for b in p.batches()] for pool, p in plans.items()}
    assert ids["human"] == ids["llm"] == ids["both"]
    assert sorted(x for b in ids["both"][:3] for x in b) == [(f"q{i}", f"d{i}") for i in range(5)]
    for pool, plan in plans.items():
        assert {t.positive for b in plan.batches() for t in b} == {pool}
        assert plan.header["positives"] == pool and plan.header["positives_p"] is None and plan.positives == pool
        assert plan.header["positive_counts"] == {"human": 0, "llm": 0, "both": 0} | {pool: 5}


def test_mix_is_seeded_reproducible_and_keeps_the_batches(tmp_path):
    ds = sb.load_dataset(write_dataset(tmp_path / "big", 2000, orphan=False), split="train")
    p = 0.3
    a = build_plan(ds, batch_size=50, seed=11, positives=f"mix:{p}")
    b = build_plan(ds, batch_size=50, seed=11, positives=f"mix:{p}")
    c = build_plan(ds, batch_size=50, seed=12, positives=f"mix:{p}")
    both = build_plan(ds, batch_size=50, seed=11, positives="both")
    assert a.batches() == b.batches() and a.digest() == b.digest()
    draws = {t.doc_id: t.positive for bt in a.batches() for t in bt}
    assert draws != {t.doc_id: t.positive for bt in c.batches() for t in bt}
    # the mix changes which copy is the positive, never the tuples or their order
    assert [[(t.query_id, t.doc_id) for t in bt] for bt in a.batches()] == [[(t.query_id, t.doc_id) for t in bt] for bt in both.batches()]
    n = len(draws)
    k = sum(v == "llm" for v in draws.values())
    assert n == 2000 and set(draws.values()) == {"human", "llm"}
    assert abs(k / n - p) <= 4 * math.sqrt(p * (1 - p) / n)  # binomial error: 4 standard errors
    assert a.header["positive_counts"] == {"human": n - k, "llm": k, "both": 0} and a.positives == "mix:0.3"
    # a tuple keeps its draw in every epoch
    two = build_plan(ds, batch_size=50, epochs=2, seed=11, positives=f"mix:{p}")
    first, second = ({t.doc_id: t.positive for bt in e for t in bt} for e in two.epochs)
    assert first == second == draws


def test_checksum_differs_across_pools_and_survives_a_round_trip(tiny, tmp_path):
    plans = {pool: build_plan(tiny, batch_size=2, seed=3, positives=pool) for pool in POOLS}
    assert len({p.digest() for p in plans.values()}) == len(POOLS)
    for pool, plan in plans.items():
        path = plan.save(tmp_path / f"{pool}.jsonl")
        back = TrainingPlan.load(path, tiny)
        assert back.digest() == plan.digest() and back.batches() == plan.batches() and back.positives == pool


def test_a_plan_from_before_the_pools_loads_as_both_with_its_digest(tiny, tmp_path):
    plan = build_plan(tiny, batch_size=2, seed=3)
    header = {k: v for k, v in plan.header.items() if k not in ("positives", "positives_p", "positive_counts")}
    rows = [[[t.query_id, t.doc_id, t.negative] for t in b] for b in plan.epochs[0]]
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join([json.dumps({"header": header})] + [json.dumps({"epoch": 0, "batch": r}) for r in rows]) + "\n")
    # the digest as it was computed before pools existed
    body = json.dumps({"header": {k: v for k, v in header.items() if k != "created_utc"}, "epochs": [rows]}, sort_keys=True)
    old = TrainingPlan.load(path, tiny)
    assert old.digest() == hashlib.sha256(body.encode()).hexdigest()
    assert old.positives == "both" and {t.positive for b in old.batches() for t in b} == {"both"}


# -- the loss ------------------------------------------------------------------------------------------


def direct_loss(q, h, l, negs, codes, alpha, scale, in_batch=True):
    """Written out with torch, row by row: candidates [h_1..h_B, l_1..l_B, negatives...]; for each
    positive copy of a tuple one cross-entropy with the other own copy left out; the hinge."""
    b = q.shape[0]
    cands = torch.cat([h, l, *negs])
    cos = torch.nn.functional.cosine_similarity(q[:, None, :], cands[None, :, :], dim=-1)
    total = torch.zeros((), dtype=q.dtype)
    for i in range(b):
        own = [i + c * b for c in range(2 + len(negs))]
        allowed = own if not in_batch else list(range(len(cands)))
        targets = {0: [(i, b + i)], 1: [(b + i, i)], 2: [(i, b + i), (b + i, i)]}[codes[i]]
        for target, left_out in targets:
            cols = [j for j in allowed if j != left_out]
            logits = scale * cos[i, cols]
            total = total - (scale * cos[i, target] - torch.logsumexp(logits, dim=0))
        total = total + alpha * torch.clamp(cos[i, b + i] - cos[i, i], min=0)
    return total / b


@pytest.mark.parametrize("with_negs,in_batch", [(False, True), (True, True), (True, False)])
@pytest.mark.parametrize("pool", ["human", "llm", "both", "mixed"])
def test_loss_per_pool_equals_a_direct_computation(pool, with_negs, in_batch):
    rng = np.random.default_rng(5)
    q, h, l = (torch.tensor(rng.normal(size=(4, 6))) for _ in range(3))
    negs = [torch.tensor(rng.normal(size=(4, 6))) for _ in range(2)] if with_negs else []
    codes = [0, 1, 2, 1] if pool == "mixed" else [POSITIVE_LABELS[pool]] * 4
    loss = TwinPositivesRankingLoss(model=None, alpha=0.6, scale=7.0, in_batch_negatives=in_batch, positives=None if pool == "mixed" else pool)
    labels = torch.tensor(codes) if pool == "mixed" else None
    got = loss.compute_loss_from_embeddings([q, h, l, *negs], labels)
    assert got.item() == pytest.approx(direct_loss(q, h, l, negs, codes, 0.6, 7.0, in_batch).item(), rel=1e-10)
    if pool != "mixed":  # the same pool given as labels gives the same value
        assert loss.compute_loss_from_embeddings([q, h, l, *negs], torch.tensor(codes)).item() == pytest.approx(got.item(), rel=1e-12)


def test_out_of_pool_copy_is_neither_positive_nor_negative_of_its_query():
    """One tuple, no negatives, α = 0, pool human: the only candidates left are h_1 (the target)
    and its twin, which is left out, so the loss is 0 whatever the twin; with the hinge only the
    twin's score matters through max(0, s_l − s_h)."""
    rng = np.random.default_rng(2)
    q, h = (torch.tensor(rng.normal(size=(1, 3))) for _ in range(2))
    loss0 = TwinPositivesRankingLoss(model=None, alpha=0.0, scale=20.0, positives="human")
    for l in (h, -h, torch.tensor(rng.normal(size=(1, 3)))):
        assert loss0.compute_loss_from_embeddings([q, h, l]).item() == 0.0
    loss1 = TwinPositivesRankingLoss(model=None, alpha=2.0, scale=20.0, positives="human")
    cos = torch.nn.functional.cosine_similarity
    assert loss1.compute_loss_from_embeddings([q, h, q]).item() == pytest.approx(2.0 * (1.0 - cos(q, h).item()))


def test_loss_refuses_missing_or_contradicting_labels():
    q = torch.zeros(2, 3) + torch.eye(2, 3)
    with pytest.raises(ValueError, match="labels"):
        TwinPositivesRankingLoss(model=None, positives=None).compute_loss_from_embeddings([q, q, q])
    with pytest.raises(ValueError, match="disagree"):
        TwinPositivesRankingLoss(model=None, positives="human").compute_loss_from_embeddings([q, q, q], torch.tensor([0, 1]))
    with pytest.raises(ValueError):
        TwinPositivesRankingLoss(model=None, positives="twins")


# -- training and the sweep ------------------------------------------------------------------------------


@pytest.mark.slow
def test_mix_trains_through_the_label_column_and_another_pool_cannot_resume(tiny, tmp_path):
    from sourcebias.mitigation.training import plan_columns, read_training, train

    plan = build_plan(tiny, batch_size=2, seed=4, positives="mix:0.5")
    cols, sizes = plan_columns(plan, tiny)
    assert cols["label"] == [POSITIVE_LABELS[t.positive] for b in plan.batches() for t in b] and sum(sizes) == 5
    out = tmp_path / "run"
    info = read_training(train(tiny, plan, "minilm", out, alpha=1.0, max_seq_length=16, save_steps=1))
    assert info["positives"] == "mix:0.5" and info["plan"]["digest"] == plan.digest() and info["steps"] == len(sizes)
    assert info["loss"]["positives"] == "per tuple (labels)"
    other = build_plan(tiny, batch_size=2, seed=4, positives="human")
    with pytest.raises(ConfigError, match=r"positives mix:0\.5 \(now human\)"):
        train(tiny, other, "minilm", out, alpha=1.0, max_seq_length=16)
    # an unfinished run (checkpoints only) refuses too
    import shutil

    shutil.rmtree(out / "model")
    with pytest.raises(ConfigError, match="another plan"):
        train(tiny, other, "minilm", out, alpha=1.0, max_seq_length=16)
    with pytest.raises(ConfigError, match="alpha"):
        train(tiny, plan, "minilm", out, alpha=2.0, max_seq_length=16)


@pytest.mark.slow
def test_cli_sweep_has_the_positives_column_and_refuses_another_pool(tmp_path, capsys):
    from sourcebias.cli.main import main

    root = write_dataset(tmp_path / "tiny", 6)
    out = tmp_path / "sweep"
    args = ["train", str(root), "--alpha", "0", "--batch-size", "2", "--max-seq-length", "16", "-o", str(out)]
    with pytest.raises(SystemExit) as info:
        main([*args, "--positives", "human"])
    assert info.value.code in (0, None), capsys.readouterr().err
    with open(out / "sweep.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert next(iter(rows[0])) == "positives" and [(r["model"], r["positives"]) for r in rows] == [("base", ""), ("alpha=0", "human")]
    assert "positives" in capsys.readouterr().out  # the printed table's column
    assert TrainingPlan.load(out / "plan.jsonl").positives == "human"
    with pytest.raises(SystemExit) as info:
        main([*args, "--positives", "mix:0.4"])
    assert info.value.code == 2 and "positives" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([*args, "--positives", "twins"])
    assert info.value.code == 2
