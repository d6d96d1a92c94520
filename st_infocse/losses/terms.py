"""A loss's named terms, as sentence-transformers' trainer logs them and as its loss wrappers combine them."""

from __future__ import annotations

from typing import Any

from torch import Tensor

#: The term a wrapper's own tensor joins when it is added to named terms (AdaptiveLayerLoss's KL divergence).
WRAPPER_TERM = "wrapper"


class LossTerms(dict):
    """Named loss terms (name -> scalar tensor): the trainer sums them into the loss and logs each one.

    The terms also take the arithmetic that sentence-transformers' loss wrappers apply to an inner loss
    (``MatryoshkaLoss``, ``Matryoshka2dLoss``, ``AdaptiveLayerLoss``), so a wrapped loss of this package keeps
    its names: ``weight * terms`` (or ``terms / n``) scales every term; ``terms + terms`` adds term by term (each
    width's or layer's ``contrastive`` joins the others' ``contrastive``); a plain tensor added to the terms (the
    wrapper's own, such as AdaptiveLayerLoss's KL divergence) becomes the term ``"wrapper"``; ``0 + terms`` is the
    terms themselves.

    Example:
        >>> import torch
        >>> terms = LossTerms(contrastive=torch.tensor(2.0), cmlm=torch.tensor(0.5))
        >>> total = 0.0
        >>> total += 1.0 * terms + 0.5 * terms
        >>> {name: float(value) for name, value in total.items()}
        {'contrastive': 3.0, 'cmlm': 0.75}
    """

    def _scaled(self, factor: Any) -> LossTerms:
        if isinstance(factor, int | float) or (isinstance(factor, Tensor) and factor.numel() == 1):
            return LossTerms({name: value * factor for name, value in self.items()})
        return NotImplemented

    def __mul__(self, factor: Any) -> LossTerms:
        return self._scaled(factor)

    __rmul__ = __mul__

    def __truediv__(self, divisor: Any) -> LossTerms:
        if isinstance(divisor, int | float | Tensor):
            return self._scaled(1 / divisor)
        return NotImplemented

    def __add__(self, other: Any) -> LossTerms:
        total = LossTerms(self)
        if isinstance(other, dict):
            for name, value in other.items():
                total[name] = total[name] + value if name in total else value
        elif isinstance(other, Tensor):
            total[WRAPPER_TERM] = total[WRAPPER_TERM] + other if WRAPPER_TERM in total else other
        elif not (isinstance(other, int | float) and other == 0):
            return NotImplemented
        return total

    __radd__ = __add__
