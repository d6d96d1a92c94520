"""Keep a loss's auxiliary modules across checkpoints, clip them with the model, and log what they learn."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_infocse.losses.contract import TrainingLoss, training_losses

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
    # Clone so tensors that share storage (tied weights) can be written independently.
    save_file(
        {key: value.detach().cpu().clone().contiguous() for key, value in auxiliary_state_dict(loss).items()}, str(path)
    )
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
    """Average the gradients of the loss's own trainable parameters across processes.

    The trainer wraps only the model in DistributedDataParallel, so without this every process would train its own
    auxiliary decoder and heads on its own data. A parameter without a gradient on some process (e.g. an MLM head
    in a batch with nothing masked) counts as a zero gradient there, so every process joins the same collective.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return
    model = getattr(loss, "model", None)
    model_params = {id(p) for p in model.parameters()} if model is not None else set()
    params = [p for p in loss.parameters() if p.requires_grad and id(p) not in model_params]
    if not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for p in params:
        numel = p.numel()
        p.grad = flat[offset : offset + numel].view_as(p).clone()
        offset += numel


def _jointly_trained_parameters(loss: nn.Module) -> Iterator[nn.Parameter]:
    """The model's and the loss's own trainable parameters, each once (tied weights share one tensor)."""
    model = getattr(loss, "model", None)
    modules = [loss] + ([model] if isinstance(model, nn.Module) else [])
    seen: set[int] = set()
    for module in modules:
        for param in module.parameters():
            if param.requires_grad and id(param) not in seen:
                seen.add(id(param))
                yield param


def clip_gradients_jointly(loss: nn.Module, max_norm: float) -> torch.Tensor:
    """Clip the gradients of ``loss.model`` and of the loss's own modules together, under one norm.

    This is what one ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`` did when the model object held
    the encoder, the projection head and the auxiliary decoder. Call it after ``backward()`` (and after unscaling, if
    a ``GradScaler`` is used) and before ``optimizer.step()``.

    A loss may name parameters to clip under a norm of their own with
    :meth:`~st_infocse.losses.TrainingLoss.separately_clipped_parameters` (``InfoCSELoss(aux_gradient="full")``
    does, for its decoder); the rest are clipped together as above.

    Returns:
        The total 2-norm of the jointly clipped gradients before clipping, as a tensor.
    """
    own = list(loss.separately_clipped_parameters()) if isinstance(loss, TrainingLoss) else []
    if not own:
        return torch.nn.utils.clip_grad_norm_(list(_jointly_trained_parameters(loss)), max_norm)
    own_ids = {id(param) for param in own}
    joint = [param for param in _jointly_trained_parameters(loss) if id(param) not in own_ids]
    norm = torch.nn.utils.clip_grad_norm_(joint, max_norm)
    torch.nn.utils.clip_grad_norm_(own, max_norm)
    return norm


#: What ``GradScaler.unscale_`` says when the gradients were already unscaled since the last ``update()``. Its
#: docstring documents the error ("Calling unscale_() twice for a given optimizer between each step() triggers a
#: RuntimeError"); the wording is pinned by tests/test_library_touchpoints.py (written against torch 2.13).
_ALREADY_UNSCALED = "unscale_() has already been called"


def _unscale_once(optimizer: Any) -> None:
    """Unscale fp16 gradients in place, as ``Accelerator.unscale_gradients`` does, unless that already happened.

    The trainer's own gradient-norm computation unscales every step, even without clipping (transformers 5.24.0:
    ``Trainer._get_grad_norm`` calls ``Accelerator.clip_grad_norm_``); skipping the unscale when it has not happened
    would clip scaled gradients. Only public parts are used: ``GradScaler.unscale_`` and its documented
    ``RuntimeError`` on a second call before ``step()``, and accelerate's ``AcceleratedOptimizer.optimizer`` and
    ``.scaler`` (accelerate 1.15.0).
    """
    scaler = getattr(optimizer, "scaler", None)
    if scaler is None or not scaler.is_enabled():
        return
    from accelerate.optimizer import AcceleratedOptimizer

    inner = optimizer
    while isinstance(inner, AcceleratedOptimizer):
        inner = inner.optimizer
    try:
        scaler.unscale_(inner)
    except RuntimeError as error:
        if _ALREADY_UNSCALED not in str(error):
            raise


def _engine_owning_clipping(args: TrainingArguments, optimizer: Any) -> str | None:
    """Name the DeepSpeed/FSDP setting whose engine clips (sharded) gradients itself, if any."""
    from accelerate.utils import DistributedType

    kind = getattr(getattr(optimizer, "accelerator_state", None), "distributed_type", None)
    if kind == DistributedType.DEEPSPEED or getattr(args, "deepspeed", None):
        return "DeepSpeed"
    if kind == DistributedType.FSDP or getattr(args, "fsdp", None):
        return "FSDP"
    return None


class AuxiliaryStateCallback(TrainerCallback):
    """Trainer callback for losses that own trainable modules: checkpointing, joint gradient clipping, logging.

    ``SentenceTransformerTrainer`` optimises parameters owned by a loss but saves and restores only the model, so
    without this callback a resumed InfoCSE run would restart its auxiliary decoder from its initial weights. The
    callback also adds the auxiliary MLM loss and accuracy (``cmlm_loss``, ``cmlm_accuracy``) to the training logs,
    so a reader can see whether the auxiliary task is being learned; averages the auxiliary modules' gradients
    across processes in distributed training (the trainer wraps only the model in DDP); and tells the loss the
    step number, so that a non-finite loss is reported with the step it happened at.

    Step checks without synchronisation: for the length of a training run the loss keeps its non-finite / empty
    batch flags on the device (:meth:`~st_infocse.losses.TrainingLoss.defer_step_checks`) and the callback reads
    them at ``on_step_end`` (:meth:`~st_infocse.losses.TrainingLoss.raise_step_checks`), which the trainer calls
    before it logs, evaluates or saves; a broken step still stops training with the same error, before any
    checkpoint holds its weights. Flags left by an evaluation are read at ``on_evaluate``. Without the callback the
    loss checks inside its forward, as before.

    Joint gradient clipping (``clip_jointly=True``, the default): the trainer clips only the model's gradients to
    ``args.max_grad_norm``, so a projection head, fusion layers or MLM head owned by the loss are never clipped and
    their gradients do not count in the norm. The papers' training code clipped everything together, and one
    exploding auxiliary gradient then shrank the whole update instead of being applied in full. With this option
    the callback turns the trainer's own clipping off for each step and, just before ``optimizer.step()`` (after the
    distributed averaging, and after unscaling under fp16), clips the model's and the loss's own gradients under one
    ``max_grad_norm`` with :func:`clip_gradients_jointly`. The logged ``grad_norm`` is then the joint norm before
    clipping. ``args.max_grad_norm`` keeps its value everywhere else (model card, saved training arguments). With
    ``max_grad_norm=0`` nothing is clipped. Under DeepSpeed or FSDP, whose engines clip sharded gradients
    themselves, the callback warns and leaves clipping to the engine, whose norm need not cover the loss's modules.

    Reporting integrations (``report_to``: TensorBoard, W&B, ...) receive each log before user callbacks do, so
    they record the trainer's model-only ``grad_norm`` and none of the auxiliary metrics unless this callback runs
    first: ``handler = trainer.callback_handler; handler.callbacks.insert(0, handler.pop_callback(callback))``.
    ``trainer.state.log_history`` and the console log get the joint values either way.

    ``model.fit(...)`` builds its trainer without taking callbacks, so fit users get neither the checkpointed
    auxiliary state nor joint clipping: their loss-owned parameters are trained unclipped. Use
    ``SentenceTransformerTrainer`` with this callback instead; in a hand-written loop call
    :func:`clip_gradients_jointly` before each optimizer step.

    Args:
        loss: the loss given to the trainer.
        resume_from: checkpoint folder to restore from. By default, when training starts at a step above 0 (a
            resume), the state is read from ``output_dir/checkpoint-<step>``, which is what
            ``trainer.train(resume_from_checkpoint=True)`` resumes from.
        clip_jointly: clip the model's and the loss's own gradients together under ``args.max_grad_norm``. With
            ``False`` the trainer clips the model alone, as it does without this callback.

    Example:
        ::

            from st_infocse import losses
            from st_infocse.training import AuxiliaryStateCallback

            loss = losses.InfoCSELoss(model, lambda_=1e-5)
            args = SentenceTransformerTrainingArguments(output_dir="out", max_grad_norm=1.0)
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=ds, loss=loss, callbacks=[AuxiliaryStateCallback(loss)]
            )
            trainer.train(resume_from_checkpoint=True)  # encoder, head and decoder clipped under one norm of 1.0
    """

    def __init__(
        self, loss: nn.Module, resume_from: str | os.PathLike | None = None, clip_jointly: bool = True
    ) -> None:
        self.loss = loss
        self.resume_from = resume_from
        self.clip_jointly = clip_jointly
        # Set at train begin when this callback does the clipping; None leaves clipping to the trainer.
        self.max_grad_norm: float | None = None
        self._trainer_clipping_off = False
        self._last_grad_norm: torch.Tensor | None = None

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            save_auxiliary_state(self.loss, checkpoint)

    def _set_deferred_checks(self, deferred: bool) -> None:
        for module in training_losses(self.loss):
            module.defer_step_checks(deferred)

    def _raise_deferred_checks(self) -> None:
        for module in training_losses(self.loss):
            module.raise_step_checks()

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._restore_trainer_clipping(args)  # a previous run of this callback that died mid-step
        self._set_deferred_checks(True)
        self._setup_clipping(args, kwargs.get("optimizer"))
        if self.resume_from is None and state.global_step == 0:
            return
        checkpoint = self.resume_from or Path(args.output_dir) / f"checkpoint-{state.global_step}"
        load_auxiliary_state(self.loss, checkpoint)
        logger.info("Auxiliary state restored from %s", checkpoint)

    def _setup_clipping(self, args: TrainingArguments, optimizer: Any) -> None:
        self.max_grad_norm = None
        self._last_grad_norm = None
        if not self.clip_jointly or not (args.max_grad_norm and args.max_grad_norm > 0):
            return
        engine = _engine_owning_clipping(args, optimizer)
        if engine is not None:
            logger.warning(
                "%s clips (sharded) gradients itself and its norm need not cover the loss's own modules; "
                "joint clipping (AuxiliaryStateCallback(clip_jointly=True)) is off.",
                engine,
            )
            return
        self.max_grad_norm = float(args.max_grad_norm)
        model = getattr(self.loss, "model", None)
        model_params = {id(p) for p in model.parameters()} if isinstance(model, nn.Module) else set()
        own = sum(1 for p in _jointly_trained_parameters(self.loss) if id(p) not in model_params)
        logger.info(
            "Gradient clipping: max_grad_norm=%s over the model and the loss's own modules together "
            "(%d trainable tensors of the loss's own)",
            self.max_grad_norm,
            own,
        )

    def _restore_trainer_clipping(self, args: TrainingArguments) -> None:
        if self._trainer_clipping_off:
            args.max_grad_norm = self.max_grad_norm
            self._trainer_clipping_off = False

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        # Lets a loss that meets a non-finite value say at which step.
        for module in training_losses(self.loss):
            module.training_step = state.global_step + 1
        if self.max_grad_norm is not None and not self._trainer_clipping_off:
            # No public hook replaces the trainer's clipping (it clips model.parameters() alone, in
            # Trainer._clip_grad_norm), and overriding it would mean a Trainer subclass every caller must use. The
            # trainer reads the public args.max_grad_norm once per step, after on_step_begin and right before
            # on_pre_optimizer_step (transformers 5.24.0, Trainer._run_epoch); zeroing it only for the
            # step keeps the real value in the model card and the saved training arguments. That order is not a
            # documented contract: tests/test_library_touchpoints.py pins it and fails when it changes.
            args.max_grad_norm = 0.0
            self._trainer_clipping_off = True

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs
    ) -> None:
        average_auxiliary_gradients(self.loss)
        if self.max_grad_norm is None:
            return
        self._restore_trainer_clipping(args)
        _unscale_once(kwargs.get("optimizer"))
        self._last_grad_norm = clip_gradients_jointly(self.loss, self.max_grad_norm).detach()

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        try:
            self._raise_deferred_checks()
        except Exception:
            # The loss keeps protecting itself if it is used again outside this run.
            self._set_deferred_checks(False)
            raise

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self.on_step_end(args, state, control, **kwargs)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._restore_trainer_clipping(args)
        try:
            self._raise_deferred_checks()
        finally:
            self._set_deferred_checks(False)

    def on_log(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, logs=None, **kwargs
    ) -> None:
        if not logs or "loss" not in logs:
            return
        extra: dict[str, float] = {}
        if self._last_grad_norm is not None:
            # The trainer's own grad_norm, if any, covers the model alone.
            extra["grad_norm"] = self._last_grad_norm.item()
        for module in training_losses(self.loss):
            extra.update({key: round(value, 4) for key, value in module.pop_metrics().items()})
        if extra:
            logs.update(extra)
            if state.log_history:
                state.log_history[-1].update(extra)
