"""One CPU copy of a model's starting weights (those that train), shared by :class:`StartEndCallback` and
:class:`WeightAnchorCallback` so a run holds one copy, not one per callback."""

from __future__ import annotations

import torch
from torch import nn


def weights_snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached CPU copy of the parameters of ``model`` that train (a frozen weight needs no copy: an adapter run's
    copy is the adapter's), to put back with ``model.load_state_dict(copy, strict=False)``."""
    return {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters() if p.requires_grad}


class StartingWeights:
    """The weights of a model when training began: taken at the first :meth:`acquire` of a run, dropped when its
    last holder (each callback holds it at most once) calls :meth:`release`."""

    def __init__(self) -> None:
        self.weights: dict[str, torch.Tensor] | None = None
        self.holders: set[int] = set()

    def acquire(self, model: nn.Module, holder: object = None) -> None:
        if self.weights is None:
            self.weights = weights_snapshot(model)
        self.holders.add(id(holder))

    def release(self, holder: object = None) -> None:
        self.holders.discard(id(holder))
        if not self.holders:
            self.weights = None

    def held_by(self, holder: object) -> bool:
        return id(holder) in self.holders
