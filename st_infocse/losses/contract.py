"""What a loss offers the training loop: the public contract behind ``AuxiliaryStateCallback``.

Every loss of this package derives from :class:`TrainingLoss`. A trainer callback (or a hand-written loop) reaches
the losses inside a combined loss through :func:`training_losses` and, for each, may set
:attr:`~TrainingLoss.training_step` (a failing check names the step); :meth:`~TrainingLoss.defer_step_checks` for a
run, so that the NaN / empty-batch / overflow checks keep their flags on the device and
:meth:`~TrainingLoss.raise_step_checks` reads them once the step has ended; :meth:`~TrainingLoss.pop_metrics` at each
log; and clip :meth:`~TrainingLoss.separately_clipped_parameters` under a norm of their own.

A loss that trains modules of its own without the callback (a plain ``SentenceTransformerTrainer`` or
``model.fit``) warns once per process: those modules then escape joint gradient clipping and are not saved in
checkpoints. A loss in evaluation mode or under ``torch.no_grad`` says nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn

from st_infocse.losses._checks import raise_failed_check
from st_infocse.losses.registry import OBJECTIVES, STAGE1

#: Whether a loss has already warned that it trains without ``AuxiliaryStateCallback`` (once per process).
warned_without_callback = False


def _warn_without_callback(module: TrainingLoss, args: Any) -> None:
    global warned_without_callback
    if warned_without_callback or not module.training or module.defer_checks or not torch.is_grad_enabled():
        return
    own = own_parameters(module)
    if not own:
        return
    warned_without_callback = True
    warnings.warn(
        f"{type(module).__name__} is training {len(own)} tensors of its own (projection head, decoder) without "
        "st_infocse.training.AuxiliaryStateCallback: they are not clipped with the model's gradients and not saved in "
        "checkpoints, so a resumed run restarts them. Train with st_infocse.training.AuxiliaryLossTrainer (or "
        "pass callbacks=[AuxiliaryStateCallback(loss)] to SentenceTransformerTrainer to keep them in checkpoints).",
        UserWarning,
        stacklevel=3,
    )


class TrainingLoss(nn.Module):
    """Base class of the package's losses: the hooks a training loop may call (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_forward_pre_hook(_warn_without_callback)

    #: The trainer's step being run (1-based); quoted in the step checks' errors. None outside a trainer.
    training_step: int | None = None
    #: Keep the step checks' flags on the device until :meth:`raise_step_checks` (set by :meth:`defer_step_checks`).
    defer_checks: bool = False

    def defer_step_checks(self, deferred: bool = True) -> None:
        """Defer the step checks (``True``) or go back to checking at every forward pass, forgetting pending ones."""
        self.defer_checks = deferred
        if not deferred:
            self.__dict__.pop("_pending_checks", None)

    def raise_step_checks(self) -> None:
        """Read the deferred checks' flags (one host synchronisation), raise if one failed, then forget them."""
        pending: dict[tuple[str, ...], tuple[Tensor, ...]] = self.__dict__.pop("_pending_checks", None) or {}
        for names, (values, empty, overflow, broken) in pending.items():
            if bool(broken):
                raise_failed_check(self, names, values, empty, overflow)

    def pop_metrics(self) -> dict[str, float]:
        """The loss's own metrics since the last call (none by default)."""
        metrics = getattr(self, "metrics", None)
        return metrics.pop() if metrics is not None and hasattr(metrics, "pop") else {}

    def separately_clipped_parameters(self) -> list[nn.Parameter]:
        """Parameters that joint gradient clipping puts under a norm of their own (none by default)."""
        return []

    @property
    def citation(self) -> str:
        """BibTeX of the loss's paper, for the model card: the citation of the registry entry naming the loss's class
        (or the nearest class above it)."""
        by_class = {entry.loss.rpartition(":")[2]: entry.citation for entry in (*OBJECTIVES.values(), STAGE1)
                    if entry.loss}
        return next(by_class[cls.__name__] for cls in type(self).__mro__ if cls.__name__ in by_class)


def own_parameters(loss: nn.Module) -> list[nn.Parameter]:
    """The loss's own trainable parameters: those that are not the model's (heads, decoders)."""
    model = getattr(loss, "model", None)
    model_params = {id(p) for p in model.parameters()} if isinstance(model, nn.Module) else set()
    return [p for p in loss.parameters() if p.requires_grad and id(p) not in model_params]


def training_losses(loss: nn.Module) -> Iterator[TrainingLoss]:
    """``loss`` and the losses inside it (e.g. InfoCSE's contrastive and MLM parts) that follow the contract."""
    return (module for module in loss.modules() if isinstance(module, TrainingLoss))
