"""The trainer for a loss that trains modules of its own: the model's and the loss's gradients clipped under one norm,
as the papers' code did (one model held them all), rather than the model's alone as ``SentenceTransformerTrainer``
does, which leaves an exploding auxiliary gradient unclipped."""

from __future__ import annotations

import logging
from typing import Any

import torch
from sentence_transformers import SentenceTransformerTrainer
from torch import nn

from st_infocse.losses.contract import TrainingLoss, own_parameters
from st_infocse.training.callbacks import AuxiliaryStateCallback
from st_infocse.training.lora import has_lora, load_adapter_checkpoint, save_merged_checkpoint

logger = logging.getLogger(__name__)


def clip_gradients_jointly(loss: nn.Module, max_norm: float) -> torch.Tensor:
    """Clip the gradients of ``loss.model`` and of the loss's own modules under one norm; returns that norm before
    clipping. Call it after ``backward()`` (and unscaling) and before ``optimizer.step()``. Parameters the loss names
    in :meth:`~st_infocse.losses.TrainingLoss.separately_clipped_parameters` (``InfoCSELoss(aux_gradient="full")``'s
    decoder) are clipped under a norm of their own."""
    # loss.model is a submodule of the loss, and parameters() yields a tied weight once.
    trained = [param for param in loss.parameters() if param.requires_grad]
    own = list(loss.separately_clipped_parameters()) if isinstance(loss, TrainingLoss) else []
    if not own:
        return torch.nn.utils.clip_grad_norm_(trained, max_norm)
    own_ids = {id(param) for param in own}
    joint = [param for param in trained if id(param) not in own_ids]
    norm = torch.nn.utils.clip_grad_norm_(joint, max_norm)
    torch.nn.utils.clip_grad_norm_(own, max_norm)
    return norm


class AuxiliaryLossTrainer(SentenceTransformerTrainer):
    """A ``SentenceTransformerTrainer`` that clips the model's and the loss's own gradients under one norm and runs
    :class:`~st_infocse.training.AuxiliaryStateCallback` first (so reporting integrations get its metrics).

    Where the trainer would clip the model to ``args.max_grad_norm``, this one averages the loss's own gradients
    across processes, unscales fp16 gradients and clips with :func:`clip_gradients_jointly`; the logged
    ``grad_norm`` is the joint norm, and ``args`` are never changed. Under DeepSpeed or FSDP, whose engines clip
    sharded gradients themselves, it warns and leaves clipping to them; ``clip_jointly=False`` clips the model alone.
    """

    def __init__(self, *args: Any, clip_jointly: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(self.loss, dict):
            raise TypeError("AuxiliaryLossTrainer trains one loss; give a dict of losses to SentenceTransformerTrainer")
        self.auxiliary = AuxiliaryStateCallback(self.loss)
        self.callback_handler.callbacks.insert(0, self.auxiliary)
        self.clip_jointly = clip_jointly and self._joint_clipping_possible()
        self.auxiliary.in_auxiliary_trainer = True

    def _joint_clipping_possible(self) -> bool:
        """Whether this trainer may clip jointly: no DeepSpeed or FSDP engine clips (sharded) gradients instead."""
        engine = "DeepSpeed" if self.is_deepspeed_enabled else "FSDP" if self.is_fsdp_enabled else None
        clips = bool(self.args.max_grad_norm and self.args.max_grad_norm > 0)
        if engine is not None and clips:
            logger.warning("%s clips (sharded) gradients itself and its norm need not cover the loss's own modules; "
                           "joint clipping (AuxiliaryLossTrainer(clip_jointly=True)) is off.", engine)
        elif clips:
            logger.info("Gradient clipping: max_grad_norm=%s over the model and the loss's own modules together "
                        "(%d trainable tensors of the loss's own)", self.args.max_grad_norm, len(own_parameters(self.loss)))
        return engine is None

    def _clip_grad_norm(self, model: nn.Module) -> Any:
        # The trainer calls this only when args.max_grad_norm > 0, before on_pre_optimizer_step, and logs what it
        # returns as grad_norm; tests/test_library_touchpoints.py pins that call site.
        if not self.clip_jointly:
            return super()._clip_grad_norm(model)
        self.auxiliary.average_gradients(self.state.global_step)  # every process then clips by the same factor
        self.accelerator.unscale_gradients()
        return clip_gradients_jointly(self.loss, self.args.max_grad_norm)

    def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
        # A model carrying a LoRA adapter is saved with the adapter merged into a copy, so that a checkpoint folder
        # loads in SentenceTransformer as the model at its step; the adapter's own weights go beside it for resuming.
        super()._save(output_dir, state_dict)
        model = getattr(self.model, "_orig_mod", self.model)
        if has_lora(model):
            save_merged_checkpoint(model, output_dir if output_dir is not None else self.args.output_dir)

    def _load_from_checkpoint(self, checkpoint_path: str, *args: Any, **kwargs: Any) -> None:
        # Resuming a LoRA run (and loading its best checkpoint) reads the adapter's weights back into the adapter.
        model = getattr(self.model, "_orig_mod", self.model)
        if has_lora(model):
            load_adapter_checkpoint(model, checkpoint_path)
            return
        super()._load_from_checkpoint(checkpoint_path, *args, **kwargs)
