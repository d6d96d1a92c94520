"""One CPU copy of a model's starting weights (those that train), shared by :class:`StartEndCallback` and
:class:`WeightAnchorCallback` so a run holds one copy, not one per callback."""

from __future__ import annotations

import torch
from torch import nn


def weights_snapshot(model: nn.Module, trainable_only: bool = False) -> dict[str, torch.Tensor]:
    """A detached CPU copy of ``model.state_dict()``; with ``trainable_only``, of the parameters that train."""
    tensors = ((n, v) for n, v in model.named_parameters() if v.requires_grad) if trainable_only else \
        model.state_dict().items()
    return {name: value.detach().to("cpu", copy=True) for name, value in tensors}


class StartingWeights:
    """The weights of a model when training began: taken at the first :meth:`acquire` of a run, dropped when its
    last holder (each callback holds it at most once) calls :meth:`release`."""

    def __init__(self) -> None:
        self.weights: dict[str, torch.Tensor] | None = None
        self.holders: set[int] = set()

    def acquire(self, model: nn.Module, holder: object = None) -> None:
        if self.weights is None:  # what training can change: a frozen weight needs no copy
            self.weights = weights_snapshot(model, trainable_only=True)
        self.holders.add(id(holder))

    def release(self, holder: object = None) -> None:
        self.holders.discard(id(holder))
        if not self.holders:
            self.weights = None

    def held_by(self, holder: object) -> bool:
        return id(holder) in self.holders
