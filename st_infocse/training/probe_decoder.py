"""The probe decoder: an auxiliary decoder trained alone on a model's frozen sentence embeddings, to score models
with one fixed decoder (:class:`~st_infocse.evaluation.ConditionalMLMEvaluator`) or to start InfoCSE's decoder
from one that already reads the sentence embedding (:func:`warm_up_decoder`, ``st-infocse train
--decoder_warmup_steps``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from sentence_transformers.util import batch_to_device
from tqdm.auto import tqdm

from st_infocse.files import is_text
from st_infocse.losses.registry import get_objective
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, FusionInit
from st_infocse.modeling.encoder_parts import find_encoder_parts
from st_infocse.modeling.masking import TokenMasker
from st_infocse.modeling.random_state import global_random_state_kept


def train_probe_decoder(
    model: Any, sentences: Sequence[str], k: int | None = None, n: int | None = None, mask_rate: float | None = None,
    steps: int = 200, batch_size: int = 64, learning_rate: float = 5e-4, seed: int = 0,
    fusion_init: FusionInit | None = None, show_progress_bar: bool = True, description: str = "Probe decoder",
    objective: str = "infocse",
) -> tuple[AuxiliaryDecoder, list[dict[str, float]]]:
    """Train an auxiliary decoder to read ``model``'s frozen embeddings, to score models with one fixed decoder.

    The model is not changed: its embeddings are computed under ``torch.no_grad`` in eval mode. The decoder's lower
    ``k`` layers are a frozen copy of the model's (as in InfoCSE); its fusion layers and MLM head train with AdamW on
    the conditional MLM loss over ``steps`` batches drawn from ``sentences`` (cycled). Returns the decoder in eval
    mode and the training curve (``step``, ``loss``, ``accuracy`` per step).

    Every random draw (the fusion layers' initialisation, the fusion layers' dropout, the masks, the batch order)
    follows ``seed``; torch's global generators (the CPU's and the model's device's) are left as they were found,
    so a call changes no random stream of the caller's.

    Args:
        model: a CLS-pooled SentenceTransformer whose first module is a Hugging Face encoder with a mask token.
        sentences: training sentences (distinct from the evaluator's held-out ones).
        k: frozen lower layers; None (default): the ``objective``'s preset for the model's depth (InfoCSE's: 6 from
            12 layers, half the depth below).
        n: fusion layers; None (default): the preset's (InfoCSE's: 2; ``st_infocse/losses/registry.py``).
        mask_rate: share of real tokens masked; None (default): the preset's for the model's depth (InfoCSE's: 0.40;
            0.30 from 24 layers).
        steps: optimisation steps.
        batch_size: sentences per step.
        learning_rate: The decoder's own AdamW learning rate (its fusion layers and head).
        seed: seeds the fusion layers' initialisation and dropout, the masks and the batch order.
        fusion_init: ``"fresh"`` or ``"copy"`` (see :meth:`AuxiliaryDecoder.from_encoder`); None (default): the
            preset's (fresh).
        show_progress_bar: show a progress bar over the steps.
        description: the progress bar's label.
        objective: the objective whose preset fills in ``k``, ``n``, ``mask_rate`` and ``fusion_init`` where None
            (``"infocse"``, ``"cmlm-cse"`` or ``"cmlm"``).

    Example:
        ::

            from st_infocse.evaluation import ConditionalMLMEvaluator
            from st_infocse.training import train_probe_decoder

            decoder, curve = train_probe_decoder(base_model, train_sentences, steps=200)
            evaluator = ConditionalMLMEvaluator(held_out_sentences, decoder=decoder, name="probe")
            print(evaluator(simcse_model)["probe_information_gain"])
    """
    sentences = [s for s in sentences if is_text(s)]
    if len(sentences) < 2:
        raise ValueError("need at least 2 non-empty sentences to train a probe decoder")
    if steps < 1 or batch_size < 1:
        raise ValueError("steps and batch_size must be at least 1")
    parts = find_encoder_parts(model)
    settings = get_objective(objective).preset.decoder_settings(parts.depth, k, n, mask_rate, fusion_init)
    k, n, mask_rate, fusion_init = settings.k, settings.n, settings.mask_rate, settings.fusion_init
    device = next(model.parameters()).device
    with global_random_state_kept(seed, device):
        decoder = AuxiliaryDecoder.from_encoder(model, k=k, n=n, fusion_init=fusion_init, detach=True)
        masker = TokenMasker(parts.tokenizer, mask_rate, seed=seed)
        trainable = [p for p in decoder.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=learning_rate)
        order = itertools.cycle(torch.randperm(len(sentences), generator=torch.Generator().manual_seed(seed)).tolist())
        model_was_training = model.training
        model.eval()
        decoder.train()
        curve: list[dict[str, float]] = []
        try:
            for step in tqdm(range(1, steps + 1), desc=description, disable=not show_progress_bar):
                batch = [sentences[next(order)] for _ in range(batch_size)]
                features = batch_to_device(model.preprocess(batch), device)
                with torch.no_grad():
                    h = model(dict(features))["sentence_embedding"]
                masked, labels = masker(features["input_ids"], features["attention_mask"])
                out = decoder(h, masked, features["attention_mask"], labels, features.get("token_type_ids"))
                optimizer.zero_grad(set_to_none=True)
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(trainable, 1.0)
                optimizer.step()
                total = max(float(out.total), 1.0)
                curve.append({"step": step, "loss": float(out.loss.detach()), "accuracy": float(out.correct) / total})
        finally:
            model.train(model_was_training)
    decoder.eval()
    return decoder, curve


def warm_up_decoder(model: Any, texts: Sequence[str], output_dir: str | os.PathLike, **options: Any) -> Path:
    """Train an objective's auxiliary decoder alone on the frozen ``model`` (:func:`train_probe_decoder`), save it to
    ``output_dir/decoder_warmup`` and print its MLM accuracy over its last ten steps; returns that folder, the loss's
    ``decoder`` argument. The loss then starts from a decoder that already reads the sentence embedding.

    Args:
        model: a CLS-pooled SentenceTransformer, as for :func:`train_probe_decoder`.
        texts: the training texts.
        output_dir: the run's folder.
        **options: :func:`train_probe_decoder`'s: ``objective`` (whose preset fills in what is not given), ``steps``,
            ``batch_size``, ``learning_rate``, ``seed``, ``k``, ``n``, ``mask_rate``, ``fusion_init``.
    """
    decoder, curve = train_probe_decoder(model, texts, **{"description": "Decoder warm-up", **options})
    folder = Path(output_dir) / "decoder_warmup"
    decoder.save_pretrained(folder)
    last = curve[-10:]
    accuracy = sum(point["accuracy"] for point in last) / len(last)
    print(f"Decoder warm-up: {len(curve)} steps, MLM accuracy {100 * accuracy:.1f}% over the last {len(last)}; "
          f"saved to {folder}", flush=True)
    return folder
