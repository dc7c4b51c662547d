"""The debiased training constraint of Dai et al. (KDD 2024, §5.1, Eqs. 1–2) as a sentence-transformers loss."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

#: the values of the optional label column: which copies of a tuple's document are positives
POSITIVE_LABELS = {"human": 0, "llm": 1, "both": 2}


def _cos_sim(a: Tensor, b: Tensor) -> Tensor:
    return nn.functional.normalize(a, dim=-1) @ nn.functional.normalize(b, dim=-1).T


class TwinPositivesRankingLoss(nn.Module):
    """A multiple-negatives ranking loss in which a query's human-written positive and its LLM-written
    twin are positives (**both** by default, or one of them: the *positive pool*), plus the
    source-bias constraint of Dai et al. (KDD 2024): a hinge that penalises ranking the twin
    above the original.

    For a batch of ``B`` (query q_i, human document h_i, twin l_i[, negatives n_i1..n_ik]) tuples,
    with s(·,·) the similarity and S = scale · s:

    * ``CE_human,i`` = cross-entropy of q_i over the candidates {h_j, l_j, n_jk : all j, k}
      with target h_i, the column of its own twin l_i removed (a query's other-source copy is
      relevant, its label copied from the original, so never its negative);
    * ``CE_llm,i`` = the same with target l_i and its own original h_i removed;
    * ``L_rank`` = mean_i (w_h,i · CE_human,i + w_l,i · CE_llm,i), where the pool of tuple i
      sets the weights: ``both`` → (1, 1), ``human`` → (1, 0), ``llm`` → (0, 1);
    * ``L_debias`` = mean_i max(0, s(q_i, l_i) − s(q_i, h_i)) (on the unscaled similarity);
    * ``loss = L_rank + alpha · L_debias``.

    With ``both`` this is the reference implementation: two ``CrossEntropyLoss`` terms summed,
    plus ``alpha * MarginRankingLoss(s_human, s_llm, target=1, margin=0)`` (the hinge above);
    ``alpha = 0`` leaves plain contrastive training on a mixed corpus. As ``alpha`` grows, the
    retriever is pushed to rank originals at least as high as their twins (Relative Δ rises
    towards and above 0).

    **With a one-copy pool** (``human``, ``llm``, or a per-tuple mix) the copy outside the
    pool is *excluded* from its own query's softmax — neither a positive nor a negative, as
    the reference treats a query's other-source copy — and enters only the hinge, which
    still compares both copies' scores. Every other candidate (other tuples' copies of both
    sources, the mined negatives' two copies) is a negative exactly as with ``both``, so the
    pools differ only in which copy is a target: ``alpha = 0`` with ``human`` against ``both``
    isolates "twins as positives"; ``alpha > 0`` with ``human`` isolates the hinge. Note the
    scale: ``both`` sums two cross-entropies per tuple, a one-copy pool one, so at equal
    ``alpha`` the hinge weighs about twice as much, relative to ``L_rank``, in a one-copy pool.

    Why a new name: sentence-transformers has an unrelated ``DebiasedMultipleNegativesRankingLoss``
    (Chuang et al., 2020: debiasing false negatives); this loss debiases *sources*.

    Args:
        model: SentenceTransformer model.
        alpha: weight of the constraint (the papers sweep 1e-4 to 1e-2; the reference's default 0.1).
        scale: multiplier of the similarities in the softmax (``1 / temperature``), as in
            ``MultipleNegativesRankingLoss`` (20 with cosine; 1 with dot product).
        similarity_fct: similarity of embeddings (default cosine).
        in_batch_negatives: ``False`` keeps only each tuple's own negatives (the ``hard-only``
            strategy of Huang et al. 2026): other tuples' documents are masked out.
        positives: the pool of every tuple (``both``, ``human``, ``llm``) when the batch has
            no labels; ``None``: per tuple, from the labels (required then). Labels, when
            given, are the :data:`POSITIVE_LABELS` codes of each tuple's pool (the training
            data's ``label`` column); with ``positives`` set they must agree with it.

    References:
        - Dai et al., *Neural Retrievers are Biased Towards LLM-Generated Content*, KDD 2024, §6
          (the debiased constraint).
        - Henderson et al., *Efficient Natural Language Response Suggestion for Smart Reply*, 2017
          (multiple negatives ranking).

    Requirements:
        1. (query, human copy, LLM copy) triplets, optionally with hard negatives, optionally
           with a label per tuple: which copies are positives (0 human, 1 LLM, 2 both).
        2. No two tuples of a batch share a query or a document (duplicates would be false
           negatives); :mod:`sourcebias.mitigation.plan` builds such batches.

    Inputs:
        +---------------------------------------------------------------+--------+
        | Texts                                                         | Labels           |
        +===============================================================+==================+
        | (query, human copy, LLM copy)                                 | none or 0/1/2    |
        +---------------------------------------------------------------+------------------+
        | (query, human copy, LLM copy, negative_1, ..., n_k)           | none or 0/1/2    |
        +---------------------------------------------------------------+------------------+

    Relations:
        - With only (query, human positive) columns and ``alpha = 0`` this is
          ``MultipleNegativesRankingLoss``; with ``positives="human"`` and ``alpha = 0`` it is
          that loss with the LLM copies as extra candidates, each query's own twin left out.

    Example:
        ::

            from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
            from sourcebias.mitigation.losses import TwinPositivesRankingLoss

            model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
            loss = TwinPositivesRankingLoss(model, alpha=0.01)
            # train_dataset columns: query, human, llm[, negative_1 ...]
            trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
            trainer.train()
    """

    def __init__(
        self,
        model: Any,
        alpha: float = 0.1,
        scale: float = 20.0,
        similarity_fct: Callable[[Tensor, Tensor], Tensor] | None = None,
        in_batch_negatives: bool = True,
        positives: str | None = "both",
    ) -> None:
        """See the class docstring (Args)."""
        super().__init__()
        self.model = model
        self.alpha = float(alpha)
        self.scale = float(scale)
        self.similarity_fct = similarity_fct or _cos_sim
        self.in_batch_negatives = in_batch_negatives
        if positives is not None and positives not in POSITIVE_LABELS:
            raise ValueError(f"positives must be one of {', '.join(POSITIVE_LABELS)} or None (per tuple, from the labels), got {positives!r}")
        self.positives = positives

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        embeddings = [self.model(f)["sentence_embedding"] for f in sentence_features]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """The loss from the column embeddings ``[queries, human, llm, negatives...]``."""
        if len(embeddings) < 3:
            raise ValueError(f"TwinPositivesRankingLoss needs (query, human, llm[, negatives]) columns, got {len(embeddings)}")
        q = embeddings[0]
        b = q.size(0)
        cands = torch.cat(embeddings[1:], dim=0)  # [h_1..h_B, l_1..l_B, negatives...]
        sim = self.similarity_fct(q, cands)  # (B, B * (2 + k)), unscaled
        logits = sim * self.scale
        rows = torch.arange(b, device=q.device)
        own_h, own_l = rows, rows + b
        mask_twin = torch.zeros_like(logits, dtype=torch.bool)
        mask_twin[rows, own_l] = True
        mask_orig = torch.zeros_like(logits, dtype=torch.bool)
        mask_orig[rows, own_h] = True
        if not self.in_batch_negatives:
            if len(embeddings) < 4:
                raise ValueError("without in-batch negatives the tuples need their own negatives (hard-only strategy)")
            own = torch.zeros_like(logits, dtype=torch.bool)
            for c in range(len(embeddings) - 1):
                own[rows, rows + c * b] = True
            mask_twin |= ~own
            mask_orig |= ~own
        ce = nn.functional.cross_entropy
        ce_h = ce(logits.masked_fill(mask_twin, float("-inf")), own_h, reduction="none")
        ce_l = ce(logits.masked_fill(mask_orig, float("-inf")), own_l, reduction="none")
        w_h, w_l = self._pool_weights(labels, b, ce_h)
        s_h, s_l = sim[rows, own_h], sim[rows, own_l]
        debias = torch.clamp(s_l - s_h, min=0).mean()
        return (w_h * ce_h + w_l * ce_l).mean() + self.alpha * debias

    def _pool_weights(self, labels: Tensor | None, b: int, like: Tensor) -> tuple[Tensor, Tensor]:
        """Per tuple, whether its human copy and its twin are targets (1.0) or not (0.0)."""
        if labels is None:
            if self.positives is None:
                raise ValueError("positives=None takes each tuple's pool from the labels; the batch has none")
            codes = torch.full((b,), POSITIVE_LABELS[self.positives], device=like.device)
        else:
            codes = labels.to(like.device).long().reshape(-1)
            if codes.numel() != b or not torch.isin(codes, torch.tensor(list(POSITIVE_LABELS.values()), device=like.device)).all():
                raise ValueError(f"labels must be one code per tuple among {POSITIVE_LABELS}")
            if self.positives is not None and (codes != POSITIVE_LABELS[self.positives]).any():
                raise ValueError(f"labels disagree with positives={self.positives!r}")
        w_h = (codes != POSITIVE_LABELS["llm"]).to(like.dtype)
        w_l = (codes != POSITIVE_LABELS["human"]).to(like.dtype)
        return w_h, w_l

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "scale": self.scale,
            "similarity_fct": getattr(self.similarity_fct, "__name__", "cos_sim"),
            "in_batch_negatives": self.in_batch_negatives,
            "positives": self.positives or "per tuple (labels)",
        }

    @property
    def citation(self) -> str:
        return """
@inproceedings{dai2024neural,
  title={Neural Retrievers are Biased Towards LLM-Generated Content},
  author={Dai, Sunhao and Zhou, Yuqi and Pang, Liang and Liu, Weihao and Hu, Xiaolin and Liu, Yong and Zhang, Xiao and Wang, Gang and Xu, Jun},
  booktitle={Proceedings of the 30th ACM SIGKDD Conference on Knowledge Discovery and Data Mining},
  year={2024}
}
"""
