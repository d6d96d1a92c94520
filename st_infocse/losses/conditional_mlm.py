from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from st_infocse.losses._checks import check_finite
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit, MLMOutput
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker

logger = logging.getLogger(__name__)

Preset = Literal["infocse", "cmlm-cse"]


@dataclass(frozen=True)
class ConditionalMLMPreset:
    """Defaults of one paper: ``k`` as a fraction of the encoder depth, ``n`` fusion layers, mask rate, lambda."""

    k_fraction: float
    n: int
    mask_rate: float
    lambda_: float


PRESETS: dict[str, ConditionalMLMPreset] = {
    # Paper 000: k=6, n=2 on 12 layers, mask rate 0.40, lambda 1e-5.
    "infocse": ConditionalMLMPreset(k_fraction=1 / 2, n=2, mask_rate=0.40, lambda_=1e-5),
    # Paper 003 (Tables 5/6): k=8, n=3 on 12 layers, mask rate 0.40, lambda 0.005.
    "cmlm-cse": ConditionalMLMPreset(k_fraction=2 / 3, n=3, mask_rate=0.40, lambda_=0.005),
}


def resolve_preset(preset: str) -> ConditionalMLMPreset:
    if preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")
    return PRESETS[preset]


class MLMMetrics:
    """Running sums of the auxiliary MLM loss and accuracy between two log steps."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.loss_sum = 0.0
        self.steps = 0
        self.correct = 0
        self.total = 0

    def update(self, output: MLMOutput) -> None:
        self.loss_sum += float(output.loss.detach())
        self.steps += 1
        self.correct += output.correct
        self.total += output.total

    def pop(self) -> dict[str, float]:
        """Mean loss and accuracy since the last call; empty when nothing was recorded."""
        if not self.steps:
            return {}
        result = {"cmlm_loss": self.loss_sum / self.steps}
        if self.total:
            result["cmlm_accuracy"] = self.correct / self.total
        self.reset()
        return result


class ConditionalMLMLoss(nn.Module):
    training_step: int | None = None  # set by AuxiliaryStateCallback, quoted in non-finite loss errors

    def __init__(
        self,
        model: SentenceTransformer,
        preset: Preset = "infocse",
        k: int | None = None,
        n: int | None = None,
        mask_rate: float | None = None,
        decoder: AuxiliaryDecoder | str | os.PathLike | None = None,
        fusion_init: FusionInit = "copy",
        detach: bool = True,
        mlm_head_source: str | None = None,
    ) -> None:
        """
        Conditional masked language modelling through an auxiliary decoder (InfoCSE paper 000 §3.2; CMLM-CSE).

        Each sentence is masked (80% [MASK] / 10% random / 10% kept, never special or padding tokens) and run
        through a frozen copy of the encoder's embeddings and lower ``k`` layers; its non-[CLS] states are
        concatenated after the model's sentence embedding ``h`` of the *unmasked* sentence and run through ``n``
        trainable fusion layers and an untied MLM head. The loss is the cross-entropy on the masked positions, so
        the encoder learns from it only through ``h``: the sentence embedding must carry what the frozen lower
        layers cannot recover.

        This loss alone is the auxiliary term; combine it with a contrastive loss through :class:`InfoCSELoss`.

        Args:
            model: SentenceTransformer whose first module is a Hugging Face encoder with a mask token.
            preset: ``"infocse"`` (k = half the depth, n=2, mask 0.40) or ``"cmlm-cse"`` (k = two thirds of the
                depth, n=3, mask 0.40). Explicit ``k``, ``n``, ``mask_rate`` override the preset.
            k: lower layers copied and frozen in the auxiliary decoder (``1 <= k < depth``).
            n: fusion layers.
            mask_rate: share of real tokens chosen for prediction.
            decoder: a stage-1 auxiliary decoder (:class:`~st_infocse.modeling.AuxiliaryDecoder` or a folder written
                by its ``save_pretrained``); if None, a new one is initialised from the model's own weights.
            fusion_init: ``"copy"`` the encoder layers above ``k`` into the fusion layers, or ``"fresh"`` random
                ones (the authors' code, followed by stage 1).
            detach: freeze the lower copy (paper default; ``False`` is paper 000's "w/o detach" ablation).
            mlm_head_source: model path or hub id holding the MLM head; defaults to the model's own path. Without a
                head in the checkpoint a new one is made and a warning says so.

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
                from st_infocse import losses

                model = SentenceTransformer("bert-base-uncased")
                train_dataset = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                loss = losses.ConditionalMLMLoss(model, preset="infocse")
                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__()
        self.model = model
        self.preset = preset
        settings = resolve_preset(preset)
        parts = find_encoder_parts(model)
        self.mask_rate = mask_rate if mask_rate is not None else settings.mask_rate
        self.masker = TokenMasker(parts.tokenizer, self.mask_rate)
        if decoder is not None:
            if not isinstance(decoder, AuxiliaryDecoder):
                decoder = AuxiliaryDecoder.from_pretrained(decoder)
            decoder.check_compatible(model)
            for name, value, saved in (("k", k, decoder.config.k), ("n", n, decoder.config.n)):
                if value is not None and value != saved:
                    raise ValueError(f"{name}={value} differs from the given decoder's {name}={saved}.")
            self.decoder = decoder.to(parts.hf_model.device)
        else:
            k = k if k is not None else max(1, round(parts.depth * settings.k_fraction))
            n = n if n is not None else settings.n
            self.decoder = AuxiliaryDecoder.from_encoder(
                model, k=k, n=n, fusion_init=fusion_init, detach=detach, mlm_head_source=mlm_head_source
            )
        self.metrics = MLMMetrics()

    @property
    def k(self) -> int:
        return self.decoder.config.k

    @property
    def n(self) -> int:
        return self.decoder.config.n

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], view_features: list[dict[str, Any]]) -> MLMOutput:
        """Conditional MLM over the given views, each conditioned on its own (unmasked) sentence embedding."""
        masked, labels, masks, types = [], [], [], []
        for features in view_features:
            ids, mask = features["input_ids"], features["attention_mask"]
            masked_ids, view_labels = self.masker(ids, mask)
            masked.append(masked_ids)
            labels.append(view_labels)
            masks.append(mask)
            types.append(features.get("token_type_ids"))
        if len({t.shape[1] for t in masked}) == 1:
            # Views of one width share a single pass through the decoder.
            token_types = None if any(t is None for t in types) else torch.cat(types)
            output = self.decoder(
                torch.cat(embeddings[: len(masked)]),
                torch.cat(masked),
                torch.cat(masks),
                torch.cat(labels),
                token_type_ids=token_types,
            )
        else:
            outputs = [
                self.decoder(emb, ids, mask, lab, token_type_ids=tt)
                for emb, ids, mask, lab, tt in zip(embeddings[: len(masked)], masked, masks, labels, types, strict=True)
            ]
            total = sum(o.total for o in outputs)
            loss = sum(o.loss * (o.total / total) for o in outputs) if total else outputs[0].loss
            output = MLMOutput(loss=loss, correct=sum(o.correct for o in outputs), total=total)
        self.metrics.update(output)
        return output

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = list(sentence_features)[:2]
        embeddings = embed_columns(self.model, features)
        loss = self.compute_loss_from_embeddings(embeddings, features).loss
        check_finite(self, {"cmlm": loss})
        return loss

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "k": self.k,
            "n": self.n,
            "mask_rate": self.mask_rate,
            "fusion_init": self.decoder.config.fusion_init,
            "detach": self.decoder.config.detach,
        }

    @property
    def citation(self) -> str:
        from st_infocse.losses.cmlm_cse import CMLM_CSE_CITATION
        from st_infocse.losses.infocse import INFOCSE_CITATION

        return CMLM_CSE_CITATION if self.preset == "cmlm-cse" else INFOCSE_CITATION
