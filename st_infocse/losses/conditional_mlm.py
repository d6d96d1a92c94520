from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from st_infocse.files import check_choice
from st_infocse.losses._checks import EmptyTextDetector, check_finite, refuse_labels
from st_infocse.losses.contract import TrainingLoss
from st_infocse.losses.registry import OBJECTIVES, PRESETS, Preset
from st_infocse.losses.terms import LossTerms
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit, MLMGather, MLMOutput, gather_room
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker


def warn_unless_cls_pooling(model: nn.Module, loss_name: str) -> None:
    """Warn (once per call site) when the model does not pool the last layer's [CLS] token, the papers' embedding
    (SimCSE's ``cls_before_pooler``), which the auxiliary decoder reads in its [CLS] slot: a mean-pooled model still
    trains, but it is not the papers' method."""
    modes = [getattr(module, "pooling_mode", None) for module in model.children() if hasattr(module, "pooling_mode")]
    if modes and modes[0] != "cls":
        warnings.warn(
            f"{loss_name}: the model pools with {modes[0]!r}, but the papers condition the auxiliary decoder on the "
            "[CLS] embedding. Build the model with Pooling(dim, 'cls') to reproduce them.",
            UserWarning,
            stacklevel=3,
        )


class MLMMetrics:
    """Running sums of the auxiliary MLM loss, correct predictions and predictions between two log steps.

    The sums stay device tensors, so recording a step reads nothing back to the host; :meth:`pop` reads them.
    """

    def __init__(self) -> None:
        self.sums: list[Tensor] | None = None
        self.steps = 0

    def update(self, output: MLMOutput) -> None:
        values = [output.loss.detach().float(), output.correct.detach(), output.total.detach()]
        # copies: a compiled decoder's outputs live in CUDA-graph memory that the next step's replay overwrites
        self.sums = [v.clone() for v in values] if self.sums is None else [a + b for a, b in zip(self.sums, values, strict=True)]
        self.steps += 1

    def pop(self) -> dict[str, float]:
        """Mean loss and accuracy since the last call; empty when nothing was recorded."""
        if self.sums is None:
            return {}
        (loss, correct, total), steps = self.sums, self.steps
        self.sums, self.steps = None, 0
        result = {"cmlm_loss": loss.item() / steps}
        if int(total.item()):
            result["cmlm_accuracy"] = int(correct.item()) / int(total.item())
        return result


class ConditionalMLMLoss(TrainingLoss):

    def __init__(
        self,
        model: SentenceTransformer,
        preset: Preset = "infocse",
        k: int | None = None,
        n: int | None = None,
        mask_rate: float | None = None,
        decoder: AuxiliaryDecoder | str | os.PathLike | None = None,
        fusion_init: FusionInit | None = None,
        detach: bool | None = None,
        mlm_head_source: str | None = None,
        mlm_gather: MLMGather = "auto",
    ) -> None:
        """
        Conditional masked language modelling through an auxiliary decoder (InfoCSE paper 000 §3.2; CMLM-CSE).

        Each sentence is masked (80% [MASK] / 10% random / 10% kept, never special or padding tokens) and run
        through a frozen copy of the encoder's embeddings and lower ``k`` layers; its non-[CLS] states follow the
        model's sentence embedding ``h`` of the *unmasked* sentence through ``n`` trainable fusion layers and an
        untied MLM head. The encoder learns from the masked positions' cross-entropy only through ``h``, which must
        carry what the frozen lower layers cannot recover. This is the auxiliary term alone; :class:`InfoCSELoss`
        combines it with a contrastive loss.

        Args:
            model: SentenceTransformer whose first module is a Hugging Face encoder with a mask token, with CLS
                pooling, whose slot the papers condition the decoder on (a warning says so once otherwise).
            preset: ``"infocse"`` (the released scripts: k = 6 from 12 layers, half the depth below; n = 2; mask
                rate 0.40, 0.30 from 24 layers) or ``"cmlm-cse"`` (paper 003: k = two thirds of the depth; n = 3;
                mask rate 0.15); both start fresh fusion layers. Explicit arguments override the preset.
            k: lower layers copied and frozen (``1 <= k < depth``); None (default): the preset's, or the decoder's.
            n: fusion layers; None (default): the preset's, or the given decoder's.
            mask_rate: share of real tokens chosen for prediction; None (default): the preset's for the encoder's
                depth. It applies with a given decoder too.
            decoder: a stage-1 :class:`~st_infocse.modeling.AuxiliaryDecoder` or a folder written by its
                ``save_pretrained``; None (default) initialises one from the model's own weights. A given decoder
                brings its own shape, layers and head: ``k``, ``n``, ``fusion_init`` and ``detach`` other than its
                own, or any ``mlm_head_source``, are refused with a ``ValueError`` naming them.
            fusion_init: ``"fresh"`` (None, the default, takes the preset's ``"fresh"``: random layers with the
                encoder's ``initializer_range``, as the authors' ``BertForCL`` builds its ``c_head``) or ``"copy"``
                (the encoder layers above ``k``).
            detach: freeze the lower copy; None (default): the preset's ``True`` (paper 000 §3.2), or the decoder's
                own (``False`` is paper 000's "w/o detach" ablation, Table 6).
            mlm_head_source: model path or hub id holding the MLM head; None (default): the model's own path. Without
                a head in the checkpoint a new one is made and a warning says so.
            mlm_gather: ``"exact"`` runs the MLM head on exactly the masked positions, which reads their count (one
                host synchronisation per step on a GPU); ``"bounded"`` on a static number of positions (the binomial
                mean plus 8 standard deviations), reading nothing, and a batch with more masked positions stops
                training with an error instead of being cut. ``"auto"`` (default) is exact on the CPU and bounded on
                accelerators and under ``torch.compile``.

        References:
            - Wu et al. 2022. InfoCSE: Information-aggregated Contrastive Learning of Sentence Embeddings. https://arxiv.org/abs/2210.06432
            - Zhang and Chen 2023. CMLM-CSE: Based on Conditional MLM Contrastive Learning for Sentence Embeddings. https://arxiv.org/abs/2306.09594

        Requirements:
            1. Unlabelled sentences; a tokenizer with a mask token.

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
                loss = losses.ConditionalMLMLoss(model, preset="infocse")
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        self.model = model
        self.preset = preset
        parts = find_encoder_parts(model)
        check_choice("preset", preset, PRESETS)
        settings = PRESETS[preset].decoder_settings(parts.depth, k, n, mask_rate, fusion_init, detach)
        warn_unless_cls_pooling(model, type(self).__name__)
        self.mask_rate = settings.mask_rate
        self.masker = TokenMasker(parts.tokenizer, self.mask_rate)
        self.empty_texts = EmptyTextDetector(parts.tokenizer)
        check_choice("mlm_gather", mlm_gather, MLMGather)
        self.mlm_gather = mlm_gather
        self.mlm_head_source = mlm_head_source
        #: Where the decoder came from: the folder given, ``"AuxiliaryDecoder"`` for an object, None for a new one.
        self.decoder_source: str | None = None
        if decoder is not None:
            if mlm_head_source is not None:
                raise ValueError(f"mlm_head_source={mlm_head_source!r} does not apply beside a given decoder, which "
                                 "brings its own MLM head.")
            if not isinstance(decoder, AuxiliaryDecoder):
                self.decoder_source = str(decoder)
                decoder = AuxiliaryDecoder.from_pretrained(decoder)
            else:
                self.decoder_source = type(decoder).__name__
            # These describe the given decoder: its own value is what applies, another is refused.
            for name, value in {"k": k, "n": n, "fusion_init": fusion_init, "detach": detach}.items():
                if value is not None and value != getattr(decoder.config, name):
                    raise ValueError(f"{name}={value!r} differs from the given decoder's "
                                     f"{name}={getattr(decoder.config, name)!r}.")
            decoder.check_compatible(model)
            decoder.use_attention_of(parts.config)
            self.decoder = decoder.to(parts.hf_model.device)
        else:
            self.decoder = AuxiliaryDecoder.from_encoder(
                model, k=settings.k, n=settings.n, fusion_init=settings.fusion_init, detach=settings.detach,
                mlm_head_source=mlm_head_source,
            )
        self.metrics = MLMMetrics()

    @property
    def k(self) -> int:
        return self.decoder.config.k

    @property
    def n(self) -> int:
        return self.decoder.config.n

    def max_predictions(self, labels: Tensor) -> int | None:
        """Room for the masked positions of ``labels`` under a bounded gather; None for the exact gather."""
        return gather_room(self.mlm_gather, labels, self.mask_rate)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], view_features: list[dict[str, Any]]) -> MLMOutput:
        """Conditional MLM over the given views, each conditioned on its own (unmasked) sentence embedding: one
        embedding per view (a count that differs is refused rather than cut to the shorter list)."""
        if len(embeddings) != len(view_features):
            raise ValueError(f"{len(embeddings)} embeddings for {len(view_features)} views: give one per view.")
        masked, labels, masks, types = [], [], [], []
        for features in view_features:
            ids, mask = features["input_ids"], features["attention_mask"]
            masked_ids, view_labels = self.masker(ids, mask)
            masked.append(masked_ids)
            labels.append(view_labels)
            masks.append(mask)
            types.append(features.get("token_type_ids"))
        # All views share one pass through the decoder, padded to the widest (padding is masked out of attention
        # and labelled -100, so it changes no prediction and counts for nothing).
        width = max(t.shape[1] for t in masked)

        def stacked(tensors: list[Tensor], value: int) -> Tensor:
            return torch.cat([torch.nn.functional.pad(t, (0, width - t.shape[1]), value=value) for t in tensors])

        token_types = None if any(t is None for t in types) else stacked(types, 0)
        all_labels = stacked(labels, -100)
        output = self.decoder(torch.cat(embeddings), stacked(masked, 0), stacked(masks, 0), all_labels,
                              token_type_ids=token_types, max_predictions=self.max_predictions(all_labels))
        self.metrics.update(output)
        return output

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> LossTerms:
        refuse_labels(self, labels)
        features = list(sentence_features)
        embeddings = embed_columns(self.model, features)
        output = self.compute_loss_from_embeddings(embeddings, features)
        # a copy: the trainer keeps the terms past the step, and a compiled decoder's output lives in CUDA-graph
        # memory that the next step's replay overwrites
        losses = LossTerms(cmlm=output.loss.clone())
        check_finite(self, losses, self.empty_texts(features), overflow=output.overflow)
        return losses

    def get_config_dict(self) -> dict[str, Any]:
        """Every argument of the objective as applied: the preset, the decoder's shape and start, the mask rate."""
        return {"preset": self.preset, "k": self.k, "n": self.n, "mask_rate": self.mask_rate,
                "decoder": self.decoder_source, "fusion_init": self.decoder.config.fusion_init,
                "detach": self.decoder.config.detach, "mlm_head_source": self.mlm_head_source,
                "mlm_gather": self.mlm_gather}

    @property
    def citation(self) -> str:
        return OBJECTIVES[self.preset].citation
