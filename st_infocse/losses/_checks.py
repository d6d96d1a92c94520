"""Checks shared by the losses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from st_infocse.modeling.masking import OnDevice


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


def refuse_labels(loss: nn.Module, labels: Tensor | None, features: Sequence[Any] = (), takes: int | None = None) -> None:
    """Refuse, in one line, labels handed to a loss that reads none (the trainer passes a dataset's ``label`` or
    ``score`` column as ``labels``), and more than ``takes`` text columns: either would be dropped unread. A check on
    the arguments alone: nothing is read back from the device."""
    if labels is not None:
        raise ValueError(
            f"{type(loss).__name__} reads no labels, but the batch has some (the dataset's 'label' or 'score' "
            "column): remove that column, or use a loss that reads it."
        )
    if takes is not None and len(features) > takes:
        raise ValueError(
            f"{type(loss).__name__} reads {takes} text column{'s' if takes > 1 else ''}, but the batch has "
            f"{len(features)}: select the text column(s) first, e.g. dataset.select_columns(['text'])."
        )


def refuse_unused(reason: str, **given: Any) -> None:
    """Refuse, in one line, arguments given (not None) for a term that ``reason`` says does not run."""
    names = [name for name, value in given.items() if value is not None]
    if names:
        raise ValueError(
            f"{reason}, so {', '.join(names)} would not apply: leave {'it' if len(names) == 1 else 'them'} at the "
            "default or turn the term on."
        )


class EmptyTextDetector:
    """Says, as a device tensor, whether every text of a batch is empty (only special and padding tokens); nothing is
    read back to the host until :func:`check_finite` reads the flag."""

    def __init__(self, tokenizer: Any) -> None:
        unk = getattr(tokenizer, "unk_token_id", None)
        # A text of unknown characters still has content: only the tokens a tokenizer adds around text count.
        self.special_ids = sorted(set(tokenizer.all_special_ids) - {unk})
        self._ids = OnDevice(special=torch.tensor(self.special_ids, dtype=torch.long))

    @classmethod
    def for_model(cls, model: nn.Module) -> EmptyTextDetector | None:
        """The detector for the tokenizer of the model's first module; None when it has no text tokenizer."""
        tokenizer = getattr(model, "tokenizer", None)  # a SentenceTransformer's is its first module's
        if tokenizer is None or not hasattr(tokenizer, "all_special_ids"):
            return None
        return cls(tokenizer)

    def __call__(self, features: Iterable[dict[str, Any]]) -> Tensor | None:
        """True when no column has a real token in any row; None when the features carry no token ids."""
        has_text = []
        for column in features:
            ids = column.get("input_ids")
            if not isinstance(ids, Tensor):
                return None
            real = ~torch.isin(ids, self._ids("special", ids.device))
            mask = column.get("attention_mask")
            if isinstance(mask, Tensor):
                real &= mask.bool()
            has_text.append(real.any())
        if not has_text:
            return None
        return ~torch.stack(has_text).any()


def check_finite(loss: torch.nn.Module, components: dict[str, Tensor], empty: Tensor | None = None,
                 overflow: Tensor | None = None) -> None:
    """Raise :class:`EmptyBatchError` when ``empty`` is true, else :class:`NonFiniteLossError` when any component
    is NaN or infinite, else :class:`PredictionBoundError` when ``overflow`` is true: training stops at the step
    that broke, before NaN weights are saved. Reading the flags is one host synchronisation; with
    ``loss.defer_checks`` set (for a training run, by ``AuxiliaryStateCallback``) they stay on the device until
    :meth:`~st_infocse.losses.TrainingLoss.raise_step_checks` reads them after the step, before any checkpoint.
    """
    values = torch.stack([value.detach().float().reshape(()) for value in components.values()])
    false = torch.zeros((), dtype=torch.bool, device=values.device)
    empty = false if empty is None else empty.to(values.device)
    # a copy: kept past the step, the flag must not be a compiled graph's output, which its next CUDA-graph replay
    # overwrites
    overflow = false if overflow is None else overflow.to(values.device, copy=True)
    broken = ~torch.isfinite(values).all() | empty | overflow
    names, check = tuple(components), (values, empty, overflow, broken)
    if not getattr(loss, "defer_checks", False):
        if bool(broken):
            raise_failed_check(loss, names, *check[:3])
        return
    # The flags of the passes since the last read, per set of term names: the values of the first broken pass (so
    # the error quotes the pass that broke), else the latest.
    pending: dict[tuple[str, ...], tuple[Tensor, ...]] = loss.__dict__.setdefault("_pending_checks", {})
    before = pending.get(names)
    if before is not None:
        keep = before[3]
        check = (*(torch.where(keep, old, new) for old, new in zip(before[:3], check[:3], strict=True)), keep | broken)
    pending[names] = check


def raise_failed_check(loss: torch.nn.Module, names: tuple[str, ...], values: Tensor, empty: Tensor,
                       overflow: Tensor) -> None:
    """Raise the error :func:`check_finite` found for ``loss``, with the flags it kept (read here)."""
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
