from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor

from st_infocse.files import check_choice
from st_infocse.losses._checks import check_finite, refuse_inside_wrapper, refuse_labels, refuse_unused
from st_infocse.losses.contract import TrainingLoss
from st_infocse.losses.registry import INFORMIN_LAMBDA, MLM_MASK_RATE, check_bounds
from st_infocse.losses.simcse import SimCSELoss
from st_infocse.losses.terms import LossTerms
from st_infocse.modeling.auxiliary_decoder import MLMGather, MLMOutput, gather_room, mlm_loss
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.heads import ProjectionKind, at_least_fp32, build_mlm_head
from st_infocse.modeling.masking import TokenMasker, with_ids

Reduction = Literal["official", "eq8"]


def reconstruction_term(z1: Tensor, z2: Tensor, reduction: Reduction = "official") -> Tensor:
    """InforMin-CL's reconstruction term between the L2-normalised views ``z1`` and ``z2``: ``"eq8"`` is the
    paper's equation 8, the batch mean of ``||z1 - z2||^2``; ``"official"`` the authors' code, ``mse(z1, z2) +
    mse(z2, z1)``, ``2 / dim`` times that, with which the paper's lambda values (0.4 BERT-base, 4 RoBERTa) were tuned.
    """
    check_choice("reduction", reduction, Reduction)
    z1, z2 = F.normalize(at_least_fp32(z1), dim=-1), F.normalize(at_least_fp32(z2), dim=-1)
    if reduction == "eq8":
        return (z1 - z2).pow(2).sum(dim=-1).mean()
    return 2.0 * (z1 - z2).pow(2).mean()


class InforMinReconstructionLoss(TrainingLoss):

    def __init__(
        self,
        model: SentenceTransformer,
        lambda_: float = INFORMIN_LAMBDA,
        temperature: float = 0.05,
        projection: ProjectionKind | None = "mlp",
        reduction: Reduction = "official",
        mlm_weight: float = 0.0,
        mask_rate: float | None = None,
        gather_across_devices: bool = False,
        mlm_gather: MLMGather = "auto",
    ) -> None:
        """
        InforMin-CL: the SimCSE contrastive loss plus ``lambda_`` times a reconstruction term that pulls the two
        views of a sentence together, ``L = L_C + lambda * R`` (paper 001, eq. 9).

        ``R`` is computed on the L2-normalised views of the contrastive term (after the training-only projection),
        scaled as :func:`reconstruction_term` says. The views are never masked: the official code's masking of the
        contrastive inputs when the MLM term is on is not reproduced.

        Args:
            model: SentenceTransformer model (CLS pooling recommended).
            lambda_: weight of the reconstruction term; default 0.4, the registry's (paper 001 Table 3, BERT-base).
            temperature: contrastive temperature.
            projection: training-only head for both terms: ``"mlp"`` (the paper's MLP on [CLS]), ``"bn-mlp"`` or None.
            reduction: ``"official"`` (default, the authors' code) or ``"eq8"`` (``dim / 2`` times larger).
            mlm_weight: ``beta``, weight of an optional MLM term on independently masked copies of both views (0.1
                in the paper's "w/ MLM" rows; off by default because it costs STS, paper 001 Table 6): one more
                encoder pass per view, through an untied copy of the checkpoint's MLM head owned by the loss.
            mask_rate: masking rate of the optional MLM term; None (default): BERT's 0.15 (``MLM_MASK_RATE``).
            gather_across_devices: gather contrastive candidates across processes.
            mlm_gather: ``"auto"`` (default), ``"exact"`` or ``"bounded"``: how the optional MLM term gathers the
                masked positions (see :class:`~st_infocse.losses.ConditionalMLMLoss`). This and ``mask_rate`` given
                with ``mlm_weight=0`` would not apply and are refused.

        References:
            - Chen et al. 2022. An Information Minimization Based Contrastive Learning Model for Unsupervised
              Sentence Embeddings Learning (COLING). https://arxiv.org/abs/2209.10951

        Wrappers:
            Inside sentence-transformers' ``MatryoshkaLoss`` / ``Matryoshka2dLoss`` / ``AdaptiveLayerLoss`` both
            terms are taken on each truncated embedding or earlier layer (head as for ``SimCSELoss``), summed
            under their names; the optional MLM term (``mlm_weight > 0``) is refused there, as its pass would
            read the wrapper's cached outputs.

        Requirements:
            1. Unlabelled sentences (one column) or (anchor, positive) pairs.

        Inputs:
            +-------------------------------+--------+
            | Texts                         | Labels |
            +===============================+========+
            | (sentence) single column      | none   |
            +-------------------------------+--------+
            | (anchor, positive) pairs      | none   |
            +-------------------------------+--------+

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Transformer
                from sentence_transformers.sentence_transformer.modules import Pooling
                from st_infocse import losses
                from st_infocse.training import check_training_dataset

                encoder = Transformer("bert-base-uncased", max_seq_length=32)
                model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
                train_dataset = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                train_dataset = check_training_dataset(train_dataset)  # a clear error for empty, None or blank text
                loss = losses.InforMinReconstructionLoss(model, lambda_=0.4)
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        self.model = model
        self.lambda_ = lambda_
        self.reduction = reduction
        check_bounds(lambda_=lambda_)
        check_choice("reduction", reduction, Reduction)
        check_choice("mlm_gather", mlm_gather, MLMGather)
        if not mlm_weight:
            refuse_unused("mlm_weight=0 turns the MLM term off", mask_rate=mask_rate,
                          mlm_gather=None if mlm_gather == "auto" else mlm_gather)
        self.contrastive = SimCSELoss(model, temperature, projection, gather_across_devices)
        self.mlm_weight = mlm_weight
        self.mask_rate = MLM_MASK_RATE if mask_rate is None else mask_rate
        self.mlm_gather = mlm_gather
        if mlm_weight:
            parts = find_encoder_parts(model)
            self.masker = TokenMasker(parts.tokenizer, self.mask_rate)
            self.mlm_head = build_mlm_head(parts)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor]) -> dict[str, Tensor]:
        projected = self.contrastive.project(embeddings)
        contrastive = self.contrastive.info_nce(projected)
        reconstruction = reconstruction_term(projected[0], projected[1], self.reduction)
        return LossTerms(contrastive=contrastive, reconstruction=self.lambda_ * reconstruction)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]],
                labels: Tensor | None = None) -> dict[str, Tensor]:
        refuse_labels(self, labels)
        features = list(sentence_features)
        embeddings, views = self.contrastive.embed(features)
        losses = self.compute_loss_from_embeddings(embeddings)
        overflow = None
        if self.mlm_weight:
            refuse_inside_wrapper(self, self.model, f"the MLM term (mlm_weight={self.mlm_weight:g})", "mlm_weight=0")
            output = self.masked_lm_output(views)
            losses["mlm"] = self.mlm_weight * output.loss
            overflow = output.overflow
        check_finite(self, losses, self.contrastive.empty_flag(features), overflow=overflow)
        return LossTerms(losses)

    def masked_lm_output(self, views: list[dict[str, Tensor]]) -> MLMOutput:
        """MLM on an independently masked copy of every view, through the encoder (one more pass), as the authors'
        ``cl_forward`` on all ``batch * num_sent`` sentences (informin-cl/models.py:144-156, 221-225)."""
        hidden, labels = [], []
        for features in views:
            masked_ids, view_labels = self.masker(features["input_ids"], features["attention_mask"])
            tokens = self.model(with_ids(features, masked_ids))["token_embeddings"]
            hidden.append(tokens.reshape(-1, tokens.shape[-1]))
            labels.append(view_labels.reshape(-1))
        all_labels = torch.cat(labels)
        bound = gather_room(self.mlm_gather, all_labels, self.mask_rate)
        return mlm_loss(self.mlm_head, torch.cat(hidden), all_labels, bound)

    def get_config_dict(self) -> dict[str, Any]:
        """Every argument of the objective as applied (the model card lists them)."""
        return {"lambda_": self.lambda_, "reduction": self.reduction, "mlm_weight": self.mlm_weight,
                "mask_rate": self.mask_rate, **self.contrastive.get_config_dict(), "mlm_gather": self.mlm_gather}
