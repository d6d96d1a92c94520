from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from st_infocse.files import check_choice
from st_infocse.losses._checks import check_finite, refuse_labels, refuse_unused
from st_infocse.losses.conditional_mlm import ConditionalMLMLoss
from st_infocse.losses.contract import TrainingLoss
from st_infocse.losses.informin import Reduction, reconstruction_term
from st_infocse.losses.registry import PRESETS, Preset, check_bounds
from st_infocse.losses.simcse import SimCSELoss
from st_infocse.losses.terms import LossTerms
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit, MLMGather
from st_infocse.modeling.gradient import scale_gradient
from st_infocse.modeling.heads import ProjectionKind

AuxGradient = Literal["weighted", "full"]


class InfoCSELoss(TrainingLoss):
    preset_name: Preset = "infocse"

    def __init__(
        self,
        model: SentenceTransformer,
        lambda_: float | None = None,
        temperature: float = 0.05,
        projection: ProjectionKind | None = PRESETS["infocse"].projection,  # bn-mlp, the released --batchnorm
        k: int | None = None,
        n: int | None = None,
        mask_rate: float | None = None,
        decoder: AuxiliaryDecoder | str | os.PathLike | None = None,
        fusion_init: FusionInit | None = None,
        detach: bool | None = None,
        informin_weight: float = 0.0,
        informin_reduction: Reduction = "official",
        gather_across_devices: bool = False,
        mlm_head_source: str | None = None,
        mlm_gather: MLMGather = "auto",
        aux_gradient: AuxGradient = "weighted",
    ) -> None:
        """
        InfoCSE: contrastive learning plus ``lambda_`` times a conditional MLM through an auxiliary decoder whose
        only access to the unmasked sentence is the model's sentence embedding (paper 000, eq. 7):
        ``L = L_cl + lambda * L_aux``.

        The defaults are the authors' released run (caskcsg/sentemb ``InfoCSE/Infocse-bert-base.sh``): the
        contrastive term is :class:`SimCSELoss` through the training-only BatchNorm projection (``--batchnorm``),
        applied once to all views stacked; the conditional MLM (:class:`ConditionalMLMLoss`) runs on every view, each
        masked independently at rate 0.40 and conditioned on its own sentence embedding, so it costs no extra encoder
        pass. The auxiliary modules belong to the loss: trained with the model, never saved in it (use
        :class:`~st_infocse.training.AuxiliaryStateCallback` to keep them across checkpoints).

        Returns the weighted terms ``{"contrastive", "cmlm"[, "reconstruction"]}``, which the trainer sums and logs
        one by one. With ``lambda_=0`` the MLM is not computed and the loss is exactly
        ``SimCSELoss(model, projection=projection)``'s; the MLM's arguments (``k``, ``n``, ``mask_rate``,
        ``decoder``, ``fusion_init``, ``mlm_head_source``; ``detach``, ``mlm_gather``, ``aux_gradient`` other than
        their default) are then refused with a ``ValueError`` naming them. Train with
        :class:`~st_infocse.training.AuxiliaryLossTrainer` (one ``max_grad_norm`` over the encoder and the loss's
        modules, as the authors' trainer) from a CLS-pooled model; ``docs/REPRODUCING.md`` lists what else differs.

        Args:
            model: SentenceTransformer whose first module is a Hugging Face encoder, with CLS pooling (the papers'
                sentence embedding; a warning says so once otherwise).
            lambda_: weight of the conditional MLM term; default is the preset's (1e-5 for InfoCSE).
            temperature: contrastive temperature.
            projection: training-only projection head for the contrastive term: ``"bn-mlp"`` (default, the released
                script's ``--batchnorm`` head), ``"mlp"`` (SimCSE's Linear + Tanh) or ``None`` (no head).
            k: frozen lower layers of the auxiliary decoder; None (default): the preset's, 6 for encoders of 12 or
                more layers (``--skip_from 6`` in both released scripts), half the depth below.
            n: fusion layers; None (default): the preset's, 2.
            mask_rate: masking rate of the auxiliary MLM; None (default): the preset's, 0.40 (0.30 from 24 layers).
            decoder: a stage-1 decoder (object or folder from ``AuxiliaryPretrainingLoss.save_decoder``); None
                (default) builds one from the model. Beside a decoder, ``k``, ``n``, ``fusion_init`` and ``detach``
                must be unset or the decoder's own, and ``mlm_head_source`` unset (see :class:`ConditionalMLMLoss`).
            fusion_init: ``"fresh"`` (None, the default, takes the preset's ``"fresh"``: random layers with the
                encoder's ``initializer_range``, as the released script) or ``"copy"`` (the encoder layers above k).
            detach: freeze the decoder's lower copy; None (default): the preset's, ``True`` (paper 000 §3.2).
            informin_weight: weight of InforMin-CL's reconstruction term between the two views (0 = off, default).
            informin_reduction: its scaling, ``"official"`` (default) or ``"eq8"``, see
                :func:`~st_infocse.losses.informin.reconstruction_term`; another value with ``informin_weight=0`` is
                refused.
            gather_across_devices: gather contrastive candidates across processes.
            mlm_head_source: model path or hub id to take the MLM head from; None (default): the model's own.
            mlm_gather: ``"auto"`` (default), ``"exact"`` or ``"bounded"``: how the auxiliary MLM gathers the masked
                positions (see :class:`ConditionalMLMLoss`).
            aux_gradient: what the decoder (fusion layers and MLM head) learns from. ``"weighted"`` (default, the
                released script): ``lambda_ * L_aux`` is one term of the loss, so the decoder receives ``lambda_``
                times the MLM gradient, like the encoder; at ``lambda_=1e-5`` most of its gradient elements fall below
                AdamW's ``eps`` and it learns slowly. ``"full"``: the decoder receives the unweighted MLM gradient,
                while the encoder still receives ``lambda_`` times it through the sentence embedding; the logged
                ``cmlm`` term keeps its value, and :class:`~st_infocse.training.AuxiliaryLossTrainer` clips the
                decoder's gradients under their own norm so that they do not shrink the encoder's step.

        References:
            - Wu et al. 2022. InfoCSE: Information-aggregated Contrastive Learning of Sentence Embeddings
              (Findings of EMNLP). https://arxiv.org/abs/2210.06432

        Wrappers:
            Inside ``MatryoshkaLoss`` / ``Matryoshka2dLoss`` / ``AdaptiveLayerLoss`` every term is taken on the
            truncated embedding or the earlier layer's; the projection head and the decoder read a truncated
            embedding through its first dimensions (zero-padded to their width); the named terms are weighted and
            summed across widths or layers under their names (:class:`~st_infocse.losses.terms.LossTerms`).

        Requirements:
            1. Unlabelled sentences (one column) or (anchor, positive) pairs such as IDC-mined pairs.
            2. A tokenizer with a mask token; a BERT-like encoder of at least 2 layers.

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
                from sentence_transformers import SentenceTransformer
                from sentence_transformers.base.modules import Transformer
                from sentence_transformers.sentence_transformer.modules import Pooling
                from st_infocse import losses
                from st_infocse.training import AuxiliaryLossTrainer, check_training_dataset

                encoder = Transformer("bert-base-uncased", max_seq_length=32)
                model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
                train_dataset = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                train_dataset = check_training_dataset(train_dataset)  # a clear error for empty, None or blank text
                loss = losses.InfoCSELoss(model, lambda_=1e-5)
                AuxiliaryLossTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        self.model = model
        settings = PRESETS[self.preset_name]
        self.lambda_ = settings.lambda_ if lambda_ is None else lambda_
        check_bounds(lambda_=self.lambda_, informin_weight=informin_weight)
        check_choice("aux_gradient", aux_gradient, AuxGradient)
        check_choice("informin_reduction", informin_reduction, Reduction)
        if not self.lambda_:
            refuse_unused(
                "lambda_=0 turns the conditional MLM off", k=k, n=n, mask_rate=mask_rate, decoder=decoder,
                fusion_init=fusion_init, mlm_head_source=mlm_head_source,
                detach=None if detach == settings.detach else detach,
                mlm_gather=None if mlm_gather == "auto" else mlm_gather,
                aux_gradient=None if aux_gradient == "weighted" else aux_gradient,
            )
        if not informin_weight:
            refuse_unused("informin_weight=0 turns the reconstruction term off",
                          informin_reduction=None if informin_reduction == "official" else informin_reduction)
        self.contrastive = SimCSELoss(model, temperature, projection, gather_across_devices)
        self.cmlm = ConditionalMLMLoss(model, self.preset_name, k, n, mask_rate, decoder, fusion_init, detach,
                                       mlm_head_source, mlm_gather)
        self.informin_weight = informin_weight
        self.informin_reduction = informin_reduction
        self.aux_gradient = aux_gradient

    @property
    def decoder(self) -> AuxiliaryDecoder:
        return self.cmlm.decoder

    def forward(self, sentence_features: Iterable[dict[str, Tensor]],
                labels: Tensor | None = None) -> dict[str, Tensor]:
        refuse_labels(self, labels)
        features = list(sentence_features)
        embeddings, views = self.contrastive.embed(features)
        projected = self.contrastive.project(embeddings)
        losses = {"contrastive": self.contrastive.info_nce(projected)}
        overflow = None
        if self.lambda_:
            # Every column, as the authors' cl_forward runs the MLM on all batch * num_sent sentences.
            if self.aux_gradient == "full":
                # The encoder's share is scaled on the way back through h; the decoder's parameters see L_aux whole,
                # and the term still reads lambda * L_aux.
                conditions = [scale_gradient(embedding, self.lambda_) for embedding in embeddings]
                output = self.cmlm.compute_loss_from_embeddings(conditions, views)
                # L - L.detach() is exactly 0 forward and carries the whole gradient backward.
                losses["cmlm"] = self.lambda_ * output.loss.detach() + (output.loss - output.loss.detach())
            else:
                output = self.cmlm.compute_loss_from_embeddings(embeddings, views)
                losses["cmlm"] = self.lambda_ * output.loss
            overflow = output.overflow
        if self.informin_weight:
            reconstruction = reconstruction_term(projected[0], projected[1], self.informin_reduction)
            losses["reconstruction"] = self.informin_weight * reconstruction
        check_finite(self, losses, self.contrastive.empty_flag(features), overflow=overflow)
        return LossTerms(losses)

    def separately_clipped_parameters(self) -> list[nn.Parameter]:
        """Parameters that joint gradient clipping puts under a norm of their own.

        With ``aux_gradient="full"`` the decoder's gradient is the unweighted MLM gradient, ``1 / lambda_`` times
        the scale of what the encoder receives; counted in one norm with the encoder's, it would set the encoder's
        clip factor. Empty under the default, where everything is clipped together as in the authors' trainer.
        """
        if self.aux_gradient != "full" or not self.lambda_:
            return []
        return [param for param in self.cmlm.decoder.parameters() if param.requires_grad]

    def get_config_dict(self) -> dict[str, Any]:
        """Every argument of the objective as applied (the model card lists them)."""
        return {"lambda_": self.lambda_, **self.contrastive.get_config_dict(), **self.cmlm.get_config_dict(),
                "aux_gradient": self.aux_gradient, "informin_weight": self.informin_weight,
                "informin_reduction": self.informin_reduction}
