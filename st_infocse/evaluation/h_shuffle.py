"""How much a sentence embedding tells an auxiliary decoder about the sentence's masked tokens.

InfoCSE and CMLM-CSE only shape the embedding ``h`` if their decoder reads it: the masked sentence also reaches the
decoder through its frozen lower layers, which may be enough on their own. :class:`ConditionalMLMEvaluator` scores
the decoder's masked-token loss and accuracy twice on fixed sentences and masks: once conditioned on each
sentence's own ``h``, once on the ``h`` of another sentence of the batch. The difference in loss (nats per masked
token) is the information ``h`` carries about the masked tokens, as far as this decoder can use it.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from sentence_transformers.base.evaluation import BaseEvaluator
from sentence_transformers.util import batch_to_device
from torch import nn
from tqdm.auto import tqdm

from st_infocse.files import check_at_least, is_text
from st_infocse.losses.registry import INFOCSE_MASK_RATE, PRESETS
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker

METRICS = ("loss", "accuracy", "loss_shuffled", "accuracy_shuffled", "information_gain", "accuracy_gap")


def _training_mask_rate(source: Any) -> float:
    """The loss's own mask rate (InfoCSE and CMLM-CSE keep theirs on their conditional-MLM term); for a bare
    decoder, InfoCSE's preset for the depth of the encoder it was built from (0.40, 0.30 from 24 layers)."""
    for holder in (source, getattr(source, "cmlm", None)):
        rate = getattr(holder, "mask_rate", None)
        if isinstance(rate, float):
            return rate
    decoder = source if isinstance(source, AuxiliaryDecoder) else getattr(source, "decoder", None)
    if isinstance(decoder, AuxiliaryDecoder):  # its encoder's config, as saved with it, holds the depth
        return PRESETS["infocse"].mask_rate(decoder.config.encoder_config[decoder.family.depth_attribute])
    return INFOCSE_MASK_RATE


def _batch_bounds(count: int, size: int) -> list[tuple[int, int]]:
    """Batches of ``size``; a lone last sentence joins the previous batch (it has no other embedding to borrow)."""
    starts = list(range(0, count, size))
    if len(starts) > 1 and count - starts[-1] == 1:
        starts.pop()
    return list(zip(starts, [*starts[1:], count], strict=True))


class ConditionalMLMEvaluator(BaseEvaluator):
    """Auxiliary-MLM loss and accuracy with each sentence's own embedding ``h`` and with a shuffled one.

    The sentences are tokenized with the model's tokenizer, masked once with a seeded masker (training's 80/10/10
    rule, so every call scores the same tokens) and scored by the decoder in eval mode. The shuffled score gives
    sentence ``i`` the embedding of sentence ``i + 1`` of its batch, so the lower layers' view of the masked sentence
    is unchanged and only ``h`` is wrong. Reported, prefixed with ``name``: ``loss``/``accuracy`` (cross-entropy and
    top-1 accuracy on the masked tokens), ``loss_shuffled``/``accuracy_shuffled``, ``information_gain`` (the shuffled
    loss minus the true one: nats per masked token that ``h`` saves the decoder, about 0 when it ignores ``h``; the
    primary metric) and ``accuracy_gap``. Used as in the evaluation guide.

    Args:
        sentences: Held-out sentences (a few hundred; at least 2 per batch).
        decoder: The training loss (an ``InfoCSELoss``, ``CMLMCSELoss``, ``ConditionalMLMLoss`` or
            ``AuxiliaryPretrainingLoss``, whose live decoder is read at each call), or a fixed
            :class:`~st_infocse.modeling.AuxiliaryDecoder` or folder written by its ``save_pretrained`` (to score any
            model with the same frozen decoder, e.g. one from :func:`st_infocse.training.train_probe_decoder`).
        mask_rate: Share of real tokens masked; None: the loss's, or for a bare decoder InfoCSE's preset for the
            depth of the encoder it was built from.
        batch_size: Sentences per decoder pass, and the group within which ``h`` is shuffled.
        max_seq_length: Tokenization length; None: the model's.
        write_csv: Append the metrics to ``conditional_mlm_evaluation_{name}_results.csv`` in ``output_path``.
    """

    def __init__(self, sentences: Sequence[str], decoder: AuxiliaryDecoder | nn.Module | str | os.PathLike,
                 mask_rate: float | None = None, batch_size: int = 64, max_seq_length: int | None = None, seed: int = 0,
                 name: str = "", show_progress_bar: bool = False, write_csv: bool = True) -> None:
        super().__init__()
        sentences = list(sentences)
        blank = [i for i, s in enumerate(sentences) if not is_text(s)]
        if blank:
            raise ValueError(f"sentences must be non-empty strings; {len(blank)} are not (first at index {blank[0]})")
        if len(sentences) < 2:
            raise ValueError("need at least 2 sentences: the shuffled score borrows another sentence's embedding")
        check_at_least("batch_size", batch_size, 2)  # the embedding is shuffled within each batch
        check_at_least("max_seq_length", max_seq_length)  # None: the model's
        if isinstance(decoder, str | os.PathLike):
            decoder = AuxiliaryDecoder.from_pretrained(decoder)
        if not isinstance(decoder, AuxiliaryDecoder) and not isinstance(getattr(decoder, "decoder", None), nn.Module):
            raise TypeError("decoder must be an AuxiliaryDecoder, a folder written by its save_pretrained, or a loss "
                            f"with a `decoder` attribute; got {type(decoder).__name__}")
        self.sentences = sentences
        self.source = decoder
        self.mask_rate = mask_rate if mask_rate is not None else _training_mask_rate(decoder)
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.seed = seed
        self.name = name
        self.show_progress_bar = show_progress_bar
        self.write_csv = write_csv
        self.primary_metric = "information_gain"
        self.csv_file = f"conditional_mlm_evaluation{'_' + name if name else ''}_results.csv"

    @property
    def decoder(self) -> AuxiliaryDecoder:
        if isinstance(self.source, AuxiliaryDecoder):
            return self.source
        untied = getattr(self.source, "untied_decoder", None)
        # Stage 1 shares the encoder's lower layers; its untied copy holds their current weights.
        return untied() if callable(untied) else self.source.decoder

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        decoder = self.decoder
        parts = find_encoder_parts(model)
        decoder.check_compatible(model)
        decoder.use_attention_of(parts.config)
        masker = TokenMasker(parts.tokenizer, self.mask_rate, seed=self.seed)
        device = next(model.parameters()).device
        decoder.to(device)
        sums = dict.fromkeys(("loss", "correct", "loss_shuffled", "correct_shuffled", "total"), 0.0)
        model_was_training, decoder_was_training = model.training, decoder.training
        model.eval()
        decoder.eval()
        length = self.max_seq_length if self.max_seq_length is not None else model.max_seq_length
        try:
            bounds = _batch_bounds(len(self.sentences), self.batch_size)
            with torch.no_grad():
                for start, end in tqdm(bounds, desc="Conditional MLM", disable=not self.show_progress_bar):
                    self._score_batch(model, decoder, masker, self.sentences[start:end], length, device, sums)
        finally:
            model.train(model_was_training)
            decoder.train(decoder_was_training)
        total = max(sums["total"], 1.0)
        metrics = {name: sums[key] / total for name, key in (("loss", "loss"), ("accuracy", "correct"),
                   ("loss_shuffled", "loss_shuffled"), ("accuracy_shuffled", "correct_shuffled"))}
        metrics["information_gain"] = metrics["loss_shuffled"] - metrics["loss"]
        metrics["accuracy_gap"] = metrics["accuracy"] - metrics["accuracy_shuffled"]
        metrics["masked_tokens"] = sums["total"]
        if output_path is not None and self.write_csv:
            self._write_csv(Path(output_path), epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def _score_batch(self, model: Any, decoder: AuxiliaryDecoder, masker: TokenMasker, batch: list[str], length: int,
                     device: torch.device, sums: dict[str, float]) -> None:
        features = batch_to_device(model.preprocess(batch, max_length=length), device)  # the evaluator's max_length
        h = model(dict(features))["sentence_embedding"]
        masked, labels = masker(features["input_ids"], features["attention_mask"])
        token_types = features.get("token_type_ids")
        lower = decoder.lower_hidden_states(masked, features["attention_mask"], token_types)
        shifted = h[torch.roll(torch.arange(len(batch)), shifts=-1).to(device)]  # row i takes row i + 1's h
        for key, embedding in (("", h), ("_shuffled", shifted)):
            out = decoder(embedding, masked, features["attention_mask"], labels, lower_hidden=lower)
            sums["loss" + key] += float(out.loss) * float(out.total)
            sums["correct" + key] += float(out.correct)
        sums["total"] += float(out.total)

    def _write_csv(self, folder: Path, epoch: int, steps: int, metrics: dict[str, float]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.csv_file
        new = not path.exists()
        with path.open("a", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if new:
                writer.writerow(["epoch", "steps", *METRICS, "masked_tokens"])
            writer.writerow([epoch, steps, *(metrics[key] for key in METRICS), metrics["masked_tokens"]])

    def get_config_dict(self) -> dict[str, Any]:
        return {"mask_rate": self.mask_rate, "sentences": len(self.sentences), "seed": self.seed}

    @property
    def description(self) -> str:
        return "Conditional MLM: information in h"
