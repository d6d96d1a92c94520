from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.util import all_gather_with_grad, cos_sim, get_rank
from torch import Tensor

from st_infocse.losses._checks import EmptyTextDetector, check_finite, refuse_labels
from st_infocse.losses.contract import TrainingLoss
from st_infocse.losses.registry import check_bounds
from st_infocse.losses.terms import LossTerms
from st_infocse.modeling.heads import ProjectionHead, ProjectionKind, at_least_fp32, initializer_range


class SimCSELoss(TrainingLoss):

    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        projection: ProjectionKind | None = "mlp",
        gather_across_devices: bool = False,
    ) -> None:
        """
        The contrastive core of SimCSE: InfoNCE over in-batch negatives with cosine similarity and a temperature.

        With a single text column, every sentence is encoded twice and the two dropout masks make the positive pair
        (unsupervised SimCSE). With ``(anchor, positive[, negative ...])`` columns, the positive column is the
        positive and any further columns are hard negatives (mined or supervised pairs).

        Args:
            model: SentenceTransformer model with CLS pooling (SimCSE's ``--pooler_type cls``: the last layer's [CLS]).
            temperature: softmax temperature ``tau`` (0.05 in the papers); the logits are ``cos / tau``.
            projection: training-only head on the sentence embedding for this term. ``"mlp"`` (default) is
                unsupervised SimCSE's ``--mlp_only_train`` head, Linear(d, d) + Tanh with N(0, 0.02) weights;
                ``"bn-mlp"`` is InfoCSE's BatchNorm head; ``None`` uses the embeddings as they are. The head is owned
                by the loss, never saved with the model and never used by ``encode``.
            gather_across_devices: gather the candidate embeddings from all processes (DDP) so every process sees
                the global batch of negatives.

        References:
            - Gao, Yao, Chen 2021. SimCSE: Simple Contrastive Learning of Sentence Embeddings. https://arxiv.org/abs/2104.08821

        Wrappers:
            Inside ``MatryoshkaLoss`` / ``Matryoshka2dLoss`` the contrastive loss is taken on each truncated (and
            L2-normalised) embedding; the training-only projection head reads it through its first dimensions
            (zero-padded to its width). Inside ``AdaptiveLayerLoss`` it is taken on each layer's pooled output.

        Requirements:
            1. Unlabelled sentences (one column), or pairs/triplets of texts.

        Inputs:
            +-----------------------------------------------+--------+
            | Texts                                         | Labels |
            +===============================================+========+
            | (sentence) single column                      | none   |
            +-----------------------------------------------+--------+
            | (anchor, positive) pairs                      | none   |
            +-----------------------------------------------+--------+
            | (anchor, positive, negative) triplets         | none   |
            +-----------------------------------------------+--------+

        Relations:
            - With ``projection=None`` it equals ``MultipleNegativesRankingLoss(scale=1 / temperature)`` on
              ``(s, s)`` pairs.

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
                loss = losses.SimCSELoss(model)
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        check_bounds(temperature=temperature)
        self.model = model
        self.temperature = temperature
        self.projection_kind = projection
        self.projection = (
            ProjectionHead(model.get_embedding_dimension(), projection, initializer_range(model))
            if projection is not None
            else None
        )
        self.gather_across_devices = gather_across_devices
        self.empty_texts = EmptyTextDetector.for_model(model)

    def empty_flag(self, features: list[dict[str, Any]]) -> Tensor | None:
        """Device flag: every text of the batch is empty."""
        return self.empty_texts(features) if self.empty_texts is not None else None

    def embed(self, sentence_features: Iterable[dict[str, Any]]) -> tuple[list[Tensor], list[dict[str, Any]]]:
        """The embeddings and features of each view: a single column is embedded twice (two dropout views, the same
        features twice) in one forward pass."""
        features = list(sentence_features)
        if not features:
            raise ValueError("The loss received no text columns.")
        if len(features) == 1:
            views = [features[0], dict(features[0])]
            # Both views are candidates of the same width: one merged forward, independent dropout per row.
            return embed_columns(self.model, views, separate_first=False), views
        return embed_columns(self.model, features), features

    def project(self, embeddings: list[Tensor]) -> list[Tensor]:
        """The training-only projection head, if any, on all views stacked, as the authors' ``cl_forward``: the
        BatchNorm head normalises over all rows (2B for two views), not per view."""
        if self.projection is None:
            return embeddings
        sizes = [emb.size(0) for emb in embeddings]
        return list(self.projection(torch.cat(embeddings)).split(sizes))

    def info_nce(self, embeddings: list[Tensor]) -> Tensor:
        """InfoNCE of the first view against the second (positives) and any further views (hard negatives)."""
        if len(embeddings) < 2:
            raise ValueError("The contrastive loss needs at least two views (anchor and positive).")
        anchors, candidates = embeddings[0], embeddings[1:]
        offset = 0
        if self.gather_across_devices:
            candidates = [all_gather_with_grad(c) for c in candidates]
            offset = get_rank() * anchors.size(0)
        scores = cos_sim(anchors, torch.cat(candidates, dim=0)) / self.temperature
        labels = torch.arange(offset, offset + anchors.size(0), device=anchors.device)
        return F.cross_entropy(at_least_fp32(scores), labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor]) -> Tensor:
        """The contrastive loss of precomputed sentence embeddings (projection applied here)."""
        return self.info_nce(self.project(embeddings))

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> LossTerms:
        refuse_labels(self, labels)
        features = list(sentence_features)
        embeddings, _ = self.embed(features)
        losses = LossTerms(contrastive=self.compute_loss_from_embeddings(embeddings))
        check_finite(self, losses, self.empty_flag(features))
        return losses

    def get_config_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "projection": self.projection_kind,
                "gather_across_devices": self.gather_across_devices}
