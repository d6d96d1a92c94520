"""Encoding for evaluation and mining: each distinct text encoded once, in one length-sorted ``model.encode`` call;
and a model's display name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# below this many texts a progress bar is noise
PROGRESS_BAR_MIN_TEXTS = 1000


def encode_unique(model: Any, texts: Sequence[str], batch_size: int = 64, show_progress_bar: bool | None = None,
                  longest_first: bool = False, **encode_kwargs: Any) -> np.ndarray:
    """A float32 row per entry of ``texts`` from one ``model.encode`` call over their distinct values, which pads
    least (``encode`` sorts its input by length) and shows one progress bar (by default from 1,000 texts).

    Args:
        longest_first: Hand ``encode`` the texts sorted longest first (mining does): a multi-process pool
            (``pool=`` in ``encode_kwargs``) splits its input into chunks before sorting, and sorted chunks pad
            little. Off, ``encode`` gets them in first-appearance order; the order changes a few embeddings in their
            last bits (batches are padded differently), so each caller keeps one order for repeatable numbers.

    Example:
        >>> class Lengths:  # a stand-in encoder: each text's length
        ...     def encode(self, texts, **kwargs):
        ...         return [[float(len(t))] for t in texts]
        >>> encode_unique(Lengths(), ["a", "bbb", "a"]).tolist()
        [[1.0], [3.0], [1.0]]
    """
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    unique = list(index)
    if not unique:
        raise ValueError("nothing to encode")
    if show_progress_bar is None:
        show_progress_bar = len(unique) >= PROGRESS_BAR_MIN_TEXTS
    by_length = np.argsort([-len(t) for t in unique], kind="stable") if longest_first else np.arange(len(unique))
    encoded = np.asarray(model.encode([unique[i] for i in by_length], batch_size=batch_size,
                                      show_progress_bar=show_progress_bar, convert_to_numpy=True, **encode_kwargs),
                         dtype=np.float32)
    if encoded.ndim != 2 or encoded.shape[0] != len(unique):
        raise ValueError(f"model.encode returned shape {encoded.shape} for {len(unique)} distinct texts")
    embeddings = np.empty_like(encoded)
    embeddings[by_length] = encoded
    return embeddings[inverse]


def model_name(model: Any) -> str:
    """A short display name for ``model``: its model-card name, else the folder it was loaded from, else ``"model"``.

    Example:
        >>> model_name(object())
        'model'
    """
    card = getattr(model, "model_card_data", None)
    for attribute in ("model_name", "model_id", "base_model"):
        value = getattr(card, attribute, None)
        if value:
            return str(value)
    try:
        path = Path(str(model[0].auto_model.config._name_or_path))
    except (TypeError, AttributeError, IndexError, KeyError):
        return "model"
    # wheels and checkpoints often store weights in a generic "model" folder
    if path.name in ("model", "models", "") and path.parent.name:
        return path.parent.name
    return path.name or "model"
