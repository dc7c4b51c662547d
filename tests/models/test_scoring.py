"""The shared log-likelihood scorer (re-ranking and perplexity call the same code), checked
against a plain forward pass of SmolLM2-135M (offline) with a full log-softmax."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")

TEXTS = [
    "The cat sat on the mat in the sun.",
    "Dogs bark loudly at night, and the neighbours complain about it every single week.",
    "Rain.",
    "A short one.",
]


@pytest.fixture(scope="module")
def scorer():
    from sourcebias.core.errors import ModelUnavailableError
    from sourcebias.models.scoring import CausalLMScorer

    try:
        return CausalLMScorer.load("smollm2", device="cpu", batch_size=3)
    except ModelUnavailableError as exc:
        pytest.skip(str(exc))


def plain_logprobs(model, ids):
    """log P(x_t | x_<t), t >= 1, from one unpadded forward pass and a full log-softmax."""
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return np.array([logp[t - 1, ids[t]].item() for t in range(1, len(ids))])


def test_sequence_logprobs_equal_a_plain_forward_pass(scorer):
    seqs = [scorer.tokenizer(t)["input_ids"] for t in TEXTS]
    got = scorer.sequence_logprobs(seqs)  # length-sorted, right-padded batches of 3
    for ids, lp in zip(seqs, got):
        assert lp.shape == (len(ids) - 1,)
        np.testing.assert_allclose(lp, plain_logprobs(scorer.model, ids), atol=2e-3)


def test_small_token_budget_gives_the_same_values(scorer):
    seqs = [scorer.tokenizer(t)["input_ids"] for t in TEXTS]
    wide = scorer.sequence_logprobs(seqs)
    budget, scorer.max_batch_tokens = scorer.max_batch_tokens, 8  # one sequence per batch
    try:
        narrow = scorer.sequence_logprobs(seqs)
    finally:
        scorer.max_batch_tokens = budget
    for a, b in zip(wide, narrow):
        np.testing.assert_allclose(a, b, atol=2e-3)


def test_continuations_share_prefixes_and_equal_the_plain_pass(scorer):
    tok = scorer.tokenizer
    prefix = tok("Passage: the cat sat on the mat.\nQuestion:")["input_ids"]
    conts = [tok(" where is the cat", add_special_tokens=False)["input_ids"], tok(" who barks", add_special_tokens=False)["input_ids"]]
    other = tok("Passage: dogs bark.\nQuestion:")["input_ids"]
    got = scorer.continuation_logprobs([prefix, prefix, other], [conts[0], conts[1], conts[1]])
    for (p, c), lp in zip([(prefix, conts[0]), (prefix, conts[1]), (other, conts[1])], got):
        full = plain_logprobs(scorer.model, p + c)
        np.testing.assert_allclose(lp, full[len(p) - 1 :], atol=2e-3)


def test_bad_inputs_are_refused(scorer):
    with pytest.raises(ValueError, match="at least one token"):
        scorer.continuation_logprobs([[]], [[1]])
    with pytest.raises(ValueError, match="differ in length"):
        scorer.continuation_logprobs([[1]], [])
