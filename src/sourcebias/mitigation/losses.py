"""The debiased training constraint of Dai et al. (KDD 2024; SPEC §7) as a sentence-transformers loss."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn


def _cos_sim(a: Tensor, b: Tensor) -> Tensor:
    return nn.functional.normalize(a, dim=-1) @ nn.functional.normalize(b, dim=-1).T


class TwinPositivesRankingLoss(nn.Module):
    def __init__(self, model: Any, alpha: float = 0.1, scale: float = 20.0, similarity_fct: Callable[[Tensor, Tensor], Tensor] | None = None, in_batch_negatives: bool = True) -> None:
        """
        A multiple-negatives ranking loss in which a query's human-written positive and its LLM-written
        twin are **both** positives, plus the source-bias constraint of Dai et al. (KDD 2024): a hinge
        that penalises ranking the twin above the original.

        For a batch of ``B`` (query q_i, human document h_i, twin l_i[, negatives n_i1..n_ik]) tuples,
        with s(·,·) the similarity and S = scale · s:

        * ``L_human`` = mean_i cross-entropy of q_i over the candidates {h_j, l_j, n_jk : all j, k}
          with target h_i, the column of its own twin l_i removed (a query's other-source copy is
          relevant, so never its negative);
        * ``L_llm`` = the same with target l_i and its own original h_i removed;
        * ``L_debias`` = mean_i max(0, s(q_i, l_i) − s(q_i, h_i)) (on the unscaled similarity);
        * ``loss = L_human + L_llm + alpha · L_debias``.

        The two cross-entropy terms are summed, as in the reference implementation (two
        ``CrossEntropyLoss`` terms plus ``alpha * MarginRankingLoss(s_human, s_llm, target=1,
        margin=0)``, which is the hinge above); ``alpha = 0`` leaves plain contrastive training on a
        mixed corpus. As ``alpha`` grows, the retriever is pushed to rank originals at least as high
        as their twins (Relative Δ rises towards and above 0).

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

        References:
            - Dai et al., *Neural Retrievers are Biased Towards LLM-Generated Content*, KDD 2024, §6
              (the debiased constraint).
            - Henderson et al., *Efficient Natural Language Response Suggestion for Smart Reply*, 2017
              (multiple negatives ranking).

        Requirements:
            1. (query, human positive, LLM positive) triplets, optionally with hard negatives.
            2. No two tuples of a batch share a query or a document (duplicates would be false
               negatives); :mod:`sourcebias.mitigation.plan` builds such batches.

        Inputs:
            +---------------------------------------------------------------+--------+
            | Texts                                                         | Labels |
            +===============================================================+========+
            | (query, human positive, LLM positive)                         | none   |
            +---------------------------------------------------------------+--------+
            | (query, human positive, LLM positive, negative_1, ..., n_k)   | none   |
            +---------------------------------------------------------------+--------+

        Relations:
            - With only (query, human positive) columns and ``alpha = 0`` this is
              ``MultipleNegativesRankingLoss``.

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
        super().__init__()
        self.model = model
        self.alpha = float(alpha)
        self.scale = float(scale)
        self.similarity_fct = similarity_fct or _cos_sim
        self.in_batch_negatives = in_batch_negatives

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
        loss_h = ce(logits.masked_fill(mask_twin, float("-inf")), own_h)
        loss_l = ce(logits.masked_fill(mask_orig, float("-inf")), own_l)
        s_h, s_l = sim[rows, own_h], sim[rows, own_l]
        debias = torch.clamp(s_l - s_h, min=0).mean()
        return loss_h + loss_l + self.alpha * debias

    def get_config_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "scale": self.scale, "similarity_fct": getattr(self.similarity_fct, "__name__", "cos_sim"), "in_batch_negatives": self.in_batch_negatives}

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
