"""Checks shared by the losses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn


class NonFiniteLossError(FloatingPointError):
    """A loss component became NaN or infinite; the message names the components and the step."""


class EmptyBatchError(ValueError):
    """Every text of a training batch was empty, so the step would have trained on special tokens alone."""


class PredictionBoundError(RuntimeError):
    """More positions were masked than a bounded MLM gather (``mlm_gather="bounded"``) had room for."""


def clean_texts_hint(column: str | None = None) -> str:
    """The remedy quoted by every empty-or-missing-text error, so that they all point at the same fix."""
    where = f"column={column!r}" if column is not None else "column=..."
    return (
        f"Training texts must be non-blank strings: st_infocse.training.clean_texts(dataset, {where}) keeps only "
        "those and reports what it dropped."
    )


def refuse_labels(loss: nn.Module, labels: Tensor | None) -> None:
    """Refuse, in one line, labels handed to a loss that reads none (the dataset's ``label`` or ``score`` column).

    The trainer passes a column named ``label`` or ``score`` as ``labels``; the package's losses are unsupervised
    and would otherwise drop it unread. A check on the argument alone: nothing is read back from the device.
    """
    if labels is not None:
        raise ValueError(
            f"{type(loss).__name__} reads no labels, but the batch has some (the dataset's 'label' or 'score' "
            "column): remove that column, or use a loss that reads it."
        )


def refuse_columns(loss: nn.Module, features: list[Any], takes: int) -> None:
    """Refuse, in one line, more text columns than the loss reads (they would be tokenized and dropped unread)."""
    if len(features) > takes:
        raise ValueError(
            f"{type(loss).__name__} reads {takes} text column{'s' if takes > 1 else ''}, but the batch has "
            f"{len(features)}: select the text column(s) first, e.g. dataset.select_columns(['text'])."
        )


class EmptyTextDetector:
    """Says, as a device tensor, whether every text of a batch is empty: only special and padding tokens.

    Nothing here reads a value back to the host; :func:`check_finite` reads the flag with the loss's own check.
    """

    def __init__(self, tokenizer: Any) -> None:
        unk = getattr(tokenizer, "unk_token_id", None)
        # A text of unknown characters still has content: only the tokens a tokenizer adds around text count.
        self.special_ids = sorted(set(tokenizer.all_special_ids) - {unk})
        self._on_device: dict[torch.device, Tensor] = {}

    @classmethod
    def for_model(cls, model: nn.Module) -> EmptyTextDetector | None:
        """The detector for the tokenizer of the model's first module; None when it has no text tokenizer."""
        first = model[0] if isinstance(model, nn.Sequential) and len(model) else None
        tokenizer = getattr(first, "tokenizer", None)
        if tokenizer is None or not hasattr(tokenizer, "all_special_ids"):
            return None
        return cls(tokenizer)

    def _ids(self, device: torch.device) -> Tensor:
        # Cached per device: building it each step would cost a host-to-device copy per step.
        if device not in self._on_device:
            self._on_device[device] = torch.tensor(self.special_ids, dtype=torch.long, device=device)
        return self._on_device[device]

    def __call__(self, features: Iterable[dict[str, Any]]) -> Tensor | None:
        """True when no column has a real token in any row; None when the features carry no token ids."""
        has_text = []
        for column in features:
            ids = column.get("input_ids")
            if not isinstance(ids, Tensor):
                return None
            real = ~torch.isin(ids, self._ids(ids.device))
            mask = column.get("attention_mask")
            if isinstance(mask, Tensor):
                real &= mask.bool()
            has_text.append(real.any())
        if not has_text:
            return None
        return ~torch.stack(has_text).any()


@dataclass
class _PendingCheck:
    """The flags of the forward passes since the last read: the values of the first broken one, else the latest."""

    values: Tensor
    empty: Tensor
    overflow: Tensor
    broken: Tensor


def check_finite(
    loss: torch.nn.Module,
    components: dict[str, Tensor],
    empty: Tensor | None = None,
    overflow: Tensor | None = None,
) -> None:
    """Raise :class:`EmptyBatchError` when ``empty`` is true, else :class:`NonFiniteLossError` when any component
    is NaN or infinite, else :class:`PredictionBoundError` when ``overflow`` is true.

    It stops training at the step where the loss broke instead of letting NaN weights be saved in later
    checkpoints, or a run train on blank text. Reading the flags is one host synchronisation; with
    ``loss.defer_checks`` set (``AuxiliaryStateCallback`` sets it for the length of a training run) the flags stay
    on the device and :func:`raise_deferred_checks` reads them once the step has ended, before any checkpoint.
    """
    values = torch.stack([value.detach().float().reshape(()) for value in components.values()])
    false = torch.zeros((), dtype=torch.bool, device=values.device)
    empty = false if empty is None else empty.to(values.device)
    # a copy: kept past the step, the flag must not be a compiled graph's output, which its next CUDA-graph replay
    # overwrites
    overflow = false if overflow is None else overflow.to(values.device, copy=True)
    broken = ~torch.isfinite(values).all() | empty | overflow
    names = tuple(components)
    if not getattr(loss, "defer_checks", False):
        if bool(broken):
            _raise(loss, names, values, empty, overflow)
        return
    pending: dict[tuple[str, ...], _PendingCheck] = loss.__dict__.setdefault("_pending_checks", {})
    before = pending.get(names)
    if before is None:
        pending[names] = _PendingCheck(values, empty, overflow, broken)
        return
    # Keep the first broken pass's values, so the error quotes the pass that broke.
    keep = before.broken
    pending[names] = _PendingCheck(
        values=torch.where(keep, before.values, values),
        empty=torch.where(keep, before.empty, empty),
        overflow=torch.where(keep, before.overflow, overflow),
        broken=keep | broken,
    )


def raise_deferred_checks(loss: torch.nn.Module) -> None:
    """Read the flags :func:`check_finite` kept on the device for ``loss`` and raise as it would have; then forget
    them."""
    pending: dict[tuple[str, ...], _PendingCheck] = loss.__dict__.pop("_pending_checks", None) or {}
    for names, check in pending.items():
        if bool(check.broken):
            _raise(loss, names, check.values, check.empty, check.overflow)


def _raise(loss: torch.nn.Module, names: tuple[str, ...], values: Tensor, empty: Tensor, overflow: Tensor) -> None:
    step = getattr(loss, "training_step", None)
    where = f" at training step {step}" if step else ""
    # An all-empty batch also gives zero or NaN MLM terms; the emptiness is the cause to report.
    if bool(empty):
        raise EmptyBatchError(
            f"{type(loss).__name__}: every text in the batch{where} is empty (only special and padding tokens), "
            f"so the step would train on nothing. {clean_texts_hint()}"
        )
    if bool(torch.isfinite(values).all()) and bool(overflow):
        raise PredictionBoundError(
            f"{type(loss).__name__}: the batch{where} had more masked positions than the bounded MLM gather has "
            "room for (mlm_gather='bounded'); nothing was dropped silently. Use mlm_gather='exact', or a larger "
            "batch, whose bound is relatively looser."
        )
    listed = ", ".join(f"{name}={value.item():.4g}" for name, value in zip(names, values, strict=True))
    raise NonFiniteLossError(
        f"{type(loss).__name__}: non-finite loss{where} ({listed}). Common causes: a learning rate too high for the "
        "auxiliary modules, fp16 overflow (prefer bf16), or an input batch the model cannot encode."
    )


def refuse_inside_wrapper(loss: torch.nn.Module, model: torch.nn.Module, what: str, instead: str) -> None:
    """Refuse, in one line, a part of ``loss`` that cannot run under a sentence-transformers wrapper which has put
    its own decorator on the model's forward (``MatryoshkaLoss`` and ``Matryoshka2dLoss`` cache the first call's
    outputs for the other widths; ``AdaptiveLayerLoss`` re-pools cached layers): ``what`` names the part,
    ``instead`` the setting that works."""
    inner = model[0] if isinstance(model, torch.nn.Sequential) and len(model) else None
    for module in (model, inner):
        decorator = vars(module).get("forward") if module is not None else None
        # only a loss wrapper's decorator object replays outputs (not the bound method it puts back, nor a compiled
        # forward)
        home = type(decorator).__module__ if decorator is not None else ""
        if home.startswith("sentence_transformers.") and ".losses." in home:
            wrapper = home.rsplit(".", 1)[-1]
            # Matryoshka2dLoss wraps the other two: its decorators come from their modules
            name = {"matryoshka": "MatryoshkaLoss", "adaptive_layer": "AdaptiveLayerLoss"}.get(
                wrapper, type(decorator).__name__)
            raise ValueError(f"{type(loss).__name__}: {what} cannot run inside {name}, which replays the model's "
                             f"cached outputs instead of running it again; use {instead}")
