"""Gradient scaling: the identity forward, a scaled gradient backward."""

from __future__ import annotations

import torch
from torch import Tensor


class _ScaleGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor: Tensor, scale: float) -> Tensor:  # noqa: ANN001
        ctx.scale = scale
        # A view, not the tensor itself: autograd needs a new output to attach the backward to.
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # noqa: ANN001
        return grad * ctx.scale, None


def scale_gradient(tensor: Tensor, scale: float) -> Tensor:
    """Return ``tensor`` unchanged, with the gradient that flows back through it multiplied by ``scale``.

    Everything downstream sees the same values and receives its own full gradient; only what flows back into
    ``tensor`` is scaled. The product is a single multiplication, so ``scale_gradient(x, lam)`` hands ``x`` exactly
    the gradient that weighting the downstream loss by ``lam`` would, up to rounding.

    Example:
        >>> import torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> (scale_gradient(x, 0.5) * 3).sum().backward()
        >>> x.grad
        tensor([1.5000, 1.5000])
    """
    return _ScaleGradient.apply(tensor, scale)
