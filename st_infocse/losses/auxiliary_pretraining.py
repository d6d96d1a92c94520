from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from st_infocse.losses._checks import check_finite
from st_infocse.losses.conditional_mlm import MLMMetrics
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit, mlm_loss
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker


class AuxiliaryPretrainingLoss(nn.Module):
    training_step: int | None = None  # set by AuxiliaryStateCallback, quoted in non-finite loss errors

    def __init__(
        self,
        model: SentenceTransformer,
        k: int | None = None,
        n: int = 2,
        mask_rate: float = 0.15,
        aux_weight: float = 1.0,
        fusion_init: FusionInit = "fresh",
        mlm_head_source: str | None = None,
    ) -> None:
        """
        Stage 1 of InfoCSE (paper 000 §3.1): pre-train the auxiliary network before joint training.

        One masked copy of each sentence runs through the encoder. Two MLM losses share the encoder's lower ``k``
        layers and one untied head ``W``: the encoder's own MLM on its last layer (``L_mlm``), and the auxiliary
        MLM (``L_aux``) in which ``n`` fusion layers read ``[h ; M_{>0}]``, the sentence embedding ``h`` of the
        model next to the ``k``-th layer's non-[CLS] states. ``L = L_mlm + aux_weight * L_aux`` (the paper uses
        weight 1 and mask rate 0.15, Condenser's setting). The lower layers are shared here, so the ``k``-th layer
        states are read with a forward hook during the model's own forward pass.

        After training, :meth:`save_decoder` writes the decoder (with the encoder's trained lower layers copied into
        its frozen part); pass that folder as ``decoder=`` to :class:`InfoCSELoss` for stage 2, starting from the
        model saved at the end of stage 1.

        Args:
            model: SentenceTransformer whose first module is a Hugging Face encoder with a mask token.
            k: shared lower layers; default half the encoder's depth.
            n: fusion layers.
            mask_rate: masking rate.
            aux_weight: weight of ``L_aux`` relative to ``L_mlm``.
            fusion_init: ``"fresh"`` (default here, as in the authors' code) or ``"copy"``.
            mlm_head_source: model path or hub id to take the MLM head from (default: the model's own).

        References:
            - Wu et al. 2022. InfoCSE: Information-aggregated Contrastive Learning of Sentence Embeddings. https://arxiv.org/abs/2210.06432
            - Gao and Callan 2021. Condenser: a Pre-training Architecture for Dense Retrieval. https://arxiv.org/abs/2104.08253

        Requirements:
            1. Unlabelled text; a tokenizer with a mask token.

        Inputs:
            +-------------------------------+--------+
            | Texts                         | Labels |
            +===============================+========+
            | (text) single column          | none   |
            +-------------------------------+--------+

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from st_infocse import losses

                model = SentenceTransformer("bert-base-uncased")
                corpus = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                stage1 = losses.AuxiliaryPretrainingLoss(model)
                SentenceTransformerTrainer(model=model, train_dataset=corpus, loss=stage1).train()
                model.save("stage1/model")
                stage1.save_decoder("stage1/decoder")

                stage2 = losses.InfoCSELoss(SentenceTransformer("stage1/model"), decoder="stage1/decoder")
        """
        super().__init__()
        self.model = model
        parts = find_encoder_parts(model)
        self._parts = [parts]  # a list keeps it out of the module tree (no duplicate parameters)
        k = k if k is not None else max(1, parts.depth // 2)
        self.mask_rate = mask_rate
        self.aux_weight = aux_weight
        self.masker = TokenMasker(parts.tokenizer, mask_rate)
        # The decoder's lower copy is not used here (the encoder's own layers are shared); it is refreshed from the
        # encoder when the decoder is saved.
        self.decoder = AuxiliaryDecoder.from_encoder(
            model, k=k, n=n, fusion_init=fusion_init, detach=True, mlm_head_source=mlm_head_source
        )
        self.metrics = MLMMetrics()

    @property
    def k(self) -> int:
        return self.decoder.config.k

    def forward(
        self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None
    ) -> dict[str, Tensor]:
        features = list(sentence_features)[0]
        masked_ids, mlm_labels = self.masker(features["input_ids"], features["attention_mask"])
        masked = {
            key: value for key, value in features.items() if key not in ("token_embeddings", "sentence_embedding")
        }
        masked["input_ids"] = masked_ids

        captured: list[Tensor] = []

        def keep_output(module: nn.Module, args: Any, output: Any) -> None:
            captured.append(output[0] if isinstance(output, tuple) else output)

        handle = self._parts[0].layers[self.k - 1].register_forward_hook(keep_output)
        try:
            out = self.model(masked)
        finally:
            handle.remove()
        if not captured:
            raise RuntimeError(f"The model's forward pass did not run encoder layer {self.k}; is it the encoder's layer stack?")
        # Gradient checkpointing can run a layer more than once; the first pass is the forward one.
        encoder_mlm = mlm_loss(self.decoder.head, out["token_embeddings"], mlm_labels)
        aux = self.decoder(
            out["sentence_embedding"], masked_ids, features["attention_mask"], mlm_labels, lower_hidden=captured[0]
        )
        self.metrics.update(aux)
        losses = {"mlm": encoder_mlm.loss, "aux": self.aux_weight * aux.loss}
        check_finite(self, losses)
        return losses

    def save_decoder(self, path: str | os.PathLike) -> None:
        """Save the decoder for stage 2, its frozen part taken from the encoder's current lower layers."""
        with torch.no_grad():
            self.decoder.copy_lower_from(self._parts[0])
        self.decoder.save_pretrained(path)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.decoder.config.n,
            "mask_rate": self.mask_rate,
            "aux_weight": self.aux_weight,
            "fusion_init": self.decoder.config.fusion_init,
        }

    @property
    def citation(self) -> str:
        from st_infocse.losses.infocse import INFOCSE_CITATION

        return INFOCSE_CITATION
