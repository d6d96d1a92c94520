"""Gradient scaling: the identity forward, a scaled gradient backward."""

from torch import Tensor


def scale_gradient(tensor: Tensor, scale: float) -> Tensor:
    """Return ``tensor`` unchanged, with the gradient that flows back through it multiplied by ``scale``.

    The forward value is exactly ``tensor`` (``x - x.detach()`` is exactly 0), so ``scale_gradient(x, lam)`` hands
    ``x`` the gradient that weighting the downstream loss by ``lam`` would, up to rounding.

    Example:
        >>> import torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> (scale_gradient(x, 0.5) * 3).sum().backward()
        >>> x.grad
        tensor([1.5000, 1.5000])
    """
    detached = tensor.detach()
    return detached + (tensor - detached) * scale
