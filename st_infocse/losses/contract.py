"""What a loss offers the training loop: the public contract behind ``AuxiliaryStateCallback``.

Every loss of this package derives from :class:`TrainingLoss`. A trainer callback (or a hand-written loop) reaches
the losses inside a combined loss through :func:`training_losses` and, for each, may:

- set :attr:`TrainingLoss.training_step` before a step, so that a failing check names the step;
- :meth:`~TrainingLoss.defer_step_checks` for the length of a run: the NaN / empty-batch / overflow checks then
  keep their flags on the device instead of reading them every forward pass (no host synchronisation), and
  :meth:`~TrainingLoss.raise_step_checks` reads them once the step has ended and raises as the check would have;
- :meth:`~TrainingLoss.pop_metrics` at each log: the loss's own metrics (e.g. the auxiliary MLM's loss and
  accuracy) averaged since the last call;
- :meth:`~TrainingLoss.separately_clipped_parameters`: parameters to clip under a norm of their own rather than
  with the model's (empty unless a loss says otherwise).

A loss of this package gets all of this by deriving from :class:`TrainingLoss` and passing its terms through the
package's step check (``check_finite`` in ``losses/_checks.py``) in ``forward``.
"""

from __future__ import annotations

from collections.abc import Iterator

from torch import nn

from st_infocse.losses._checks import raise_deferred_checks


class TrainingLoss(nn.Module):
    """Base class of the package's losses: the hooks a training loop may call (see the module docstring)."""

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
        raise_deferred_checks(self)

    def pop_metrics(self) -> dict[str, float]:
        """The loss's own metrics since the last call (none by default)."""
        metrics = getattr(self, "metrics", None)
        return metrics.pop() if metrics is not None and hasattr(metrics, "pop") else {}

    def separately_clipped_parameters(self) -> list[nn.Parameter]:
        """Parameters that joint gradient clipping puts under a norm of their own (none by default)."""
        return []


def training_losses(loss: nn.Module) -> Iterator[TrainingLoss]:
    """``loss`` and the losses inside it (e.g. InfoCSE's contrastive and MLM parts) that follow the contract."""
    return (module for module in loss.modules() if isinstance(module, TrainingLoss))
