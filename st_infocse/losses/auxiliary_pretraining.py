from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterable
from typing import Any, Literal

import torch
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from st_infocse.files import check_choice
from st_infocse.losses._checks import EmptyTextDetector, check_finite, refuse_inside_wrapper, refuse_labels
from st_infocse.losses.conditional_mlm import MLMMetrics, warn_unless_cls_pooling
from st_infocse.losses.contract import TrainingLoss
from st_infocse.losses.registry import MLM_MASK_RATE, PRESETS
from st_infocse.losses.terms import LossTerms
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit, MLMGather, gather_room, mlm_loss
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker, WholeWordMasker, with_ids

Masking = Literal["whole_word", "token"]


class AuxiliaryPretrainingLoss(TrainingLoss):

    def __init__(
        self,
        model: SentenceTransformer,
        k: int | None = None,
        n: int = PRESETS["infocse"].n,
        mask_rate: float = MLM_MASK_RATE,
        aux_weight: float = 1.0,
        fusion_init: FusionInit = PRESETS["infocse"].fusion_init,
        mlm_head_source: str | None = None,
        tie_head: bool = True,
        masking: Masking = "whole_word",
        mlm_gather: MLMGather = "auto",
    ) -> None:
        """
        Stage 1 of InfoCSE (paper 000 §3.1): pre-train the auxiliary network before joint training.

        One masked copy of each sentence runs through the encoder. Two MLM losses share the encoder's lower ``k``
        layers and one head: the encoder's own MLM on its last layer (``L_mlm``), and the auxiliary MLM (``L_aux``)
        whose ``n`` fusion layers read ``[h ; M_{>0}]``, the sentence embedding ``h`` of the masked sentence next to
        the ``k``-th layer's non-[CLS] states, read by a forward hook that lives only for the model's forward pass.
        ``L = L_mlm + aux_weight * L_aux`` (weight 1 and mask rate 0.15 in the paper, Condenser's setting).

        This is Condenser's pre-training (``CondenserForPretraining`` with ``skip_from = k``, ``n_head_layers = n``,
        ``--late_mlm``), and the defaults follow it: the head's vocabulary projection *is* the input word-embedding
        matrix (``tie_head``, as in ``BertForMaskedLM``), and words are masked whole with a fixed budget per sentence
        (``masking="whole_word"``, see :class:`~st_infocse.modeling.masking.WholeWordMasker`). With CLS pooling and
        no Dense module, ``h`` is Condenser's final-layer [CLS] state.

        After training, :meth:`save_decoder` writes the decoder (its frozen part copied from the encoder's trained
        lower layers, its head's projection an untied copy of the trained embeddings) for ``decoder=`` of
        :class:`InfoCSELoss` in stage 2, which starts from the model saved at the end of stage 1 and trains that head.

        Args:
            model: SentenceTransformer whose first module is a Hugging Face encoder with a mask token.
            k: shared lower layers; None (default): 6 on encoders of 12 or more layers (Condenser's and InfoCSE's
                ``--skip_from 6``), half the depth below (the ``"infocse"`` preset's).
            n: fusion layers; default 2, the ``"infocse"`` preset's (Condenser's ``--n_head_layers 2``).
            mask_rate: masking rate; default 0.15, the registry's ``MLM_MASK_RATE`` (Condenser's, paper 000 §3.1).
            aux_weight: weight of ``L_aux`` relative to ``L_mlm``; default 1 (paper 000 §3.1).
            fusion_init: ``"fresh"`` (default, the ``"infocse"`` preset's, as in the authors' code) or ``"copy"``.
            mlm_head_source: model path or hub id to take the MLM head from; None (default): the model's own. With
                ``tie_head`` only its transform and output bias are used.
            tie_head: share the encoder's input word-embedding parameter as the head's output projection during
                stage 1 (Condenser). ``False`` trains an untied copy instead, which leaves the embeddings to the
                encoder's own input path.
            masking: ``"whole_word"`` (Condenser: whole words, ``max(1, round(mask_rate * n))`` tokens per sentence)
                or ``"token"`` (each token chosen independently with probability ``mask_rate``).
            mlm_gather: ``"auto"`` (default), ``"exact"`` or ``"bounded"``: how both MLM terms gather the masked
                positions (see :class:`ConditionalMLMLoss`); with whole-word masking the bound is the per-sentence
                budget, never exceeded.

        References:
            - Wu et al. 2022. InfoCSE: Information-aggregated Contrastive Learning of Sentence Embeddings. https://arxiv.org/abs/2210.06432
            - Gao and Callan 2021. Condenser: a Pre-training Architecture for Dense Retrieval. https://arxiv.org/abs/2104.08253
            - Condenser's code: https://github.com/luyug/Condenser (``modeling.py`` ``CondenserForPretraining``,
              ``data.py`` ``CondenserCollator``).

        Requirements:
            1. Unlabelled text in one column (a batch with more columns, or with labels, is refused with a
               ``ValueError``: only one column would be read); a tokenizer with a mask token.

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
                from sentence_transformers.base.modules import Transformer
                from sentence_transformers.sentence_transformer.modules import Pooling
                from st_infocse import losses
                from st_infocse.training import check_training_dataset

                encoder = Transformer("bert-base-uncased", max_seq_length=32)
                model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
                corpus = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                corpus = check_training_dataset(corpus)  # a clear error for empty, None or blank text
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
        warn_unless_cls_pooling(model, type(self).__name__)
        # InfoCSE's k (6 from 12 layers, half the depth below), which is also Condenser's --skip_from 6.
        k = k if k is not None else PRESETS["infocse"].k(parts.depth)
        self.mask_rate = mask_rate
        self.aux_weight = aux_weight
        check_choice("masking", masking, Masking)
        check_choice("mlm_gather", mlm_gather, MLMGather)
        self.masker = (WholeWordMasker if masking == "whole_word" else TokenMasker)(parts.tokenizer, mask_rate)
        self.masking = masking
        self.mlm_gather = mlm_gather
        self.empty_texts = EmptyTextDetector(parts.tokenizer)
        # The decoder's lower copy is unused here (the encoder's layers are shared); saving refreshes it.
        self.decoder = AuxiliaryDecoder.from_encoder(
            model, k=k, n=n, fusion_init=fusion_init, detach=True, mlm_head_source=mlm_head_source
        )
        self.mlm_head_source = mlm_head_source
        # Layer k's outputs in the model's forward, kept by one hook function for the loss's lifetime (a compiled
        # model sees the same hook at every step and is not recompiled); it holds the list, not the loss.
        self._lower_outputs: list[Tensor] = []
        self._keep_lower_output = functools.partial(_keep_output, self._lower_outputs)
        self.tie_head = tie_head
        if tie_head:
            embeddings = parts.hf_model.get_input_embeddings().weight
            projection = self.decoder.head.decoder
            if projection.weight.shape != embeddings.shape:
                raise ValueError(
                    f"tie_head: the MLM head projects to {tuple(projection.weight.shape)} but the word embeddings are "
                    f"{tuple(embeddings.shape)}; pass tie_head=False."
                )
            # The same Parameter: listed once by named_parameters(), under the model's name, and saved with the model.
            projection.weight = embeddings
        self.metrics = MLMMetrics()

    @property
    def k(self) -> int:
        return self.decoder.config.k

    def max_predictions(self, labels: Tensor) -> int | None:
        """Room for the masked positions of ``labels`` under a bounded gather; None for the exact gather. Whole-word
        masking gives no row more than its budget, ``max(1, round(mask_rate * n))`` with ``n`` at most the width."""
        return gather_room(self.mlm_gather, labels, self.mask_rate, per_row=self.masking == "whole_word")

    def forward(self, sentence_features: Iterable[dict[str, Tensor]],
                labels: Tensor | None = None) -> dict[str, Tensor]:
        columns = list(sentence_features)
        refuse_labels(self, labels, columns, takes=1)
        features = columns[0]
        refuse_inside_wrapper(self, self.model, "stage 1 (a masked-LM pass with a hook on layer k)",
                              "the loss unwrapped: stage 1 trains the decoder, not the embedding")
        masked_ids, mlm_labels = self.masker(features["input_ids"], features["attention_mask"])
        self._lower_outputs.clear()
        self._hook_lower_layer()
        try:
            out = self.model(with_ids(features, masked_ids))
        finally:
            self._unhook_lower_layer()
        if not self._lower_outputs:
            raise RuntimeError(f"The model's forward pass did not run encoder layer {self.k}; is it the encoder's layer stack?")
        lower_hidden = self._lower_outputs.pop(0)
        self._lower_outputs.clear()
        bound = self.max_predictions(mlm_labels)
        encoder_mlm = mlm_loss(self.decoder.head, out["token_embeddings"], mlm_labels, bound)
        aux = self.decoder(
            out["sentence_embedding"],
            masked_ids,
            features["attention_mask"],
            mlm_labels,
            lower_hidden=lower_hidden,
            max_predictions=bound,
        )
        self.metrics.update(aux)
        losses = {"mlm": encoder_mlm.loss, "aux": self.aux_weight * aux.loss}
        overflow = aux.overflow if encoder_mlm.overflow is None else encoder_mlm.overflow  # the same labels
        check_finite(self, losses, self.empty_texts([features]), overflow=overflow)
        return LossTerms(losses)

    # torch.compile cannot trace a hook's RemovableHandle: these two run eagerly around the compiled model forward.
    @torch.compiler.disable
    def _hook_lower_layer(self) -> None:
        self._hook_handle = self._parts[0].layers[self.k - 1].register_forward_hook(self._keep_lower_output)

    @torch.compiler.disable
    def _unhook_lower_layer(self) -> None:
        handle = self.__dict__.pop("_hook_handle", None)
        if handle is not None:
            handle.remove()

    def untied_decoder(self) -> AuxiliaryDecoder:
        """A copy of the decoder for stage 2: its frozen part taken from the encoder's current lower layers, and
        every weight its own (a tied head's projection becomes a copy of the current word embeddings)."""
        with torch.no_grad():
            self.decoder.copy_lower_from(self._parts[0])
        # deepcopy gives the shared embedding Parameter a fresh copy, as the model is not part of the copy.
        return copy.deepcopy(self.decoder)

    def save_decoder(self, path: str | os.PathLike) -> None:
        """Save the decoder for stage 2 (see :meth:`untied_decoder`)."""
        self.untied_decoder().save_pretrained(path)

    def get_config_dict(self) -> dict[str, Any]:
        """Every argument of the objective as applied (the model card lists them)."""
        return {"k": self.k, "n": self.decoder.config.n, "mask_rate": self.mask_rate, "aux_weight": self.aux_weight,
                "fusion_init": self.decoder.config.fusion_init, "mlm_head_source": self.mlm_head_source,
                "tie_head": self.tie_head, "masking": self.masking, "mlm_gather": self.mlm_gather}


def _keep_output(kept: list[Tensor], module: nn.Module, args: Any, output: Any) -> None:
    kept.append(output[0] if isinstance(output, tuple) else output)

