"""One CPU copy of a model's starting weights (those that train), shared by whatever needs it during a run.

:class:`StartEndCallback` (to hand the start back) and :class:`WeightAnchorCallback` (to move back toward it) both
need the weights the run started from; given the same :class:`StartingWeights`, a run holds one copy, not one per
callback (for a 7B model, 28 GB instead of 56). :func:`weights_snapshot` is the copy itself, also used by the IDC
rounds for their best round.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["StartingWeights", "weights_snapshot"]


def weights_snapshot(model: nn.Module, trainable_only: bool = False) -> dict[str, torch.Tensor]:
    """A CPU copy of every tensor of ``model.state_dict()``, detached; with ``trainable_only``, of the parameters that
    train (all of them in a full fine-tune, an adapter's alone when only it trains: see ``training.lora``)."""
    if trainable_only:
        return {name: value.detach().to("cpu", copy=True) for name, value in model.named_parameters()
                if value.requires_grad}
    return {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}


class StartingWeights:
    """The weights of a model when training began, taken once by the first user and dropped by the last.

    Each user calls :meth:`acquire` when training begins and :meth:`release` when it no longer needs them; the copy
    is taken at the first ``acquire`` of a run and dropped at the last ``release``.

    Example:
        >>> import torch
        >>> start = StartingWeights()
        >>> layer = torch.nn.Linear(2, 2)
        >>> start.acquire(layer); start.acquire(layer)  # two users, one copy
        >>> start.release(); start.weights is not None
        True
        >>> start.release(); start.weights is None
        True
    """

    def __init__(self) -> None:
        self.weights: dict[str, torch.Tensor] | None = None
        self.users = 0

    def acquire(self, model: nn.Module) -> None:
        if self.weights is None:  # what training can change: a frozen weight needs no copy
            self.weights = weights_snapshot(model, trainable_only=True)
        self.users += 1

    def release(self) -> None:
        self.users = max(0, self.users - 1)
        if self.users == 0:
            self.weights = None
