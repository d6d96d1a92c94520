"""Checks shared by the losses."""

from __future__ import annotations

import torch
from torch import Tensor


class NonFiniteLossError(FloatingPointError):
    """A loss component became NaN or infinite; the message names the components and the step."""


def check_finite(loss: torch.nn.Module, components: dict[str, Tensor]) -> None:
    """Raise :class:`NonFiniteLossError` when any component is NaN or infinite.

    One host synchronisation per step; it stops training at the step where the loss broke instead of letting
    NaN weights be saved in later checkpoints.
    """
    values = torch.stack([value.detach().float().reshape(()) for value in components.values()])
    if bool(torch.isfinite(values).all()):
        return
    step = getattr(loss, "training_step", None)
    where = f" at training step {step}" if step else ""
    listed = ", ".join(f"{name}={value.item():.4g}" for name, value in zip(components, values, strict=True))
    raise NonFiniteLossError(
        f"{type(loss).__name__}: non-finite loss{where} ({listed}). Common causes: a learning rate too high for the "
        "auxiliary modules, fp16 overflow (prefer bf16), or an input batch the model cannot encode."
    )
