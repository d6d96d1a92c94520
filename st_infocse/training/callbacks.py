"""Keep a loss's auxiliary modules across checkpoints, average their gradients across processes, log what they learn."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_infocse.losses.contract import own_parameters, training_losses

logger = logging.getLogger(__name__)

AUXILIARY_STATE_NAME = "auxiliary_state.safetensors"


def auxiliary_state_dict(loss: nn.Module) -> dict[str, torch.Tensor]:
    """Everything in the loss's state that is not the model's: decoders, heads, BatchNorm statistics."""
    model = getattr(loss, "model", None)
    model_storage = {t.data_ptr() for t in model.state_dict().values()} if model is not None else set()
    return {key: value for key, value in loss.state_dict().items() if value.data_ptr() not in model_storage}


def save_auxiliary_state(loss: nn.Module, directory: str | os.PathLike) -> Path:
    """Write the loss's auxiliary state to ``directory/auxiliary_state.safetensors``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / AUXILIARY_STATE_NAME
    # Cloned: tensors that share storage (tied weights) are written independently.
    save_file({key: value.detach().cpu().clone().contiguous() for key, value in auxiliary_state_dict(loss).items()},
              str(path))
    return path


def load_auxiliary_state(loss: nn.Module, directory: str | os.PathLike) -> None:
    """Restore what :func:`save_auxiliary_state` wrote; the keys must match the loss exactly."""
    path = Path(directory) / AUXILIARY_STATE_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"No auxiliary state at {path}. Without it the loss's decoder and heads would restart from scratch; "
            "train with AuxiliaryStateCallback(loss) so every checkpoint carries it."
        )
    state = load_file(str(path))
    expected = auxiliary_state_dict(loss)
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(
            f"The auxiliary state in {path} does not fit this loss (missing {missing[:5]}, unexpected {unexpected[:5]}); "
            "was it written by a loss with other settings?"
        )
    with torch.no_grad():
        for key, value in expected.items():
            value.copy_(state[key].to(value.device, value.dtype))


def average_auxiliary_gradients(loss: nn.Module) -> None:
    """Average the gradients of the loss's own trainable parameters across processes (the trainer wraps only the
    model in DDP); a missing gradient counts as zero, so every process joins the same collective."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return
    params = own_parameters(loss)
    if not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    for p, grad in zip(params, flat.split([p.numel() for p in params]), strict=True):
        p.grad = grad.view_as(p).clone()


class AuxiliaryStateCallback(TrainerCallback):
    """Trainer callback for losses that own trainable modules, which ``SentenceTransformerTrainer`` optimises but
    neither saves nor restores: it saves the loss's state with every checkpoint and restores it on resume, adds the loss's metrics
    (``cmlm_loss``, ``cmlm_accuracy``) to the logs, averages the loss's own gradients across processes (the trainer
    wraps only the model in DDP) and tells the loss the step number. The loss's non-finite / empty-batch flags stay
    on the device during training (:meth:`~st_infocse.losses.TrainingLoss.defer_step_checks`) and are read at
    ``on_step_end``, before the trainer logs, evaluates or saves, so a broken step still stops training before a
    checkpoint holds it. Clipping the loss's modules with the model is
    :class:`~st_infocse.training.AuxiliaryLossTrainer`'s step; under another trainer the model is clipped alone
    (in a hand-written loop, call :func:`~st_infocse.training.clip_gradients_jointly`).

    ``resume_from`` is the checkpoint folder to restore from; by default ``output_dir/checkpoint-<step>`` when
    training starts at a step above 0 (``trainer.train(resume_from_checkpoint=True)``).
    """

    def __init__(self, loss: nn.Module, resume_from: str | os.PathLike | None = None) -> None:
        self.loss = loss
        self.resume_from = resume_from
        self._averaged_step: int | None = None  # the step last averaged (joint clipping averages first)
        self.in_auxiliary_trainer = False  # set by AuxiliaryLossTrainer, which clips the loss's modules too

    def average_gradients(self, step: int) -> None:
        """Average the loss's own gradients across processes once for the optimizer step ``step``."""
        if self._averaged_step != step:
            average_auxiliary_gradients(self.loss)
            self._averaged_step = step

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            save_auxiliary_state(self.loss, checkpoint)

    def _set_deferred_checks(self, deferred: bool) -> None:
        for module in training_losses(self.loss):
            module.defer_step_checks(deferred)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._averaged_step = None
        self._set_deferred_checks(True)
        own = len(own_parameters(self.loss))
        if own and not self.in_auxiliary_trainer and args.max_grad_norm and args.max_grad_norm > 0:
            logger.warning(
                "The trainer clips the model's gradients alone to max_grad_norm=%s; the loss's own %d trainable "
                "tensors are not clipped with them. Train with st_infocse.training.AuxiliaryLossTrainer to clip them "
                "together, as the papers' trainers did.", args.max_grad_norm, own)
        if self.resume_from is None and state.global_step == 0:
            return
        checkpoint = self.resume_from or Path(args.output_dir) / f"checkpoint-{state.global_step}"
        load_auxiliary_state(self.loss, checkpoint)
        logger.info("Auxiliary state restored from %s", checkpoint)

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        for module in training_losses(self.loss):
            module.training_step = state.global_step + 1

    def on_pre_optimizer_step(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        self.average_gradients(state.global_step)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        try:
            for module in training_losses(self.loss):
                module.raise_step_checks()
        except Exception:
            # The loss keeps protecting itself if it is used again outside this run.
            self._set_deferred_checks(False)
            raise

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self.on_step_end(args, state, control, **kwargs)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        try:
            self.on_step_end(args, state, control, **kwargs)
        finally:
            self._set_deferred_checks(False)

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, logs=None, **kwargs):
        if not logs or "loss" not in logs:
            return
        extra: dict[str, float] = {}
        for module in training_losses(self.loss):
            extra.update({key: round(value, 4) for key, value in module.pop_metrics().items()})
        if extra:
            logs.update(extra)
            if state.log_history:
                state.log_history[-1].update(extra)
