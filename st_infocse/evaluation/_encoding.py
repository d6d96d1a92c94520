"""Shared encoding helpers: one deduplicated, length-sorted ``model.encode`` call per evaluation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

# below this many texts a progress bar is noise
PROGRESS_BAR_MIN_TEXTS = 1000


def encode_texts(
    model: Any,
    texts: Sequence[str],
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    kind: str | None = None,
) -> torch.Tensor:
    """Embed ``texts`` with one ``model.encode`` call over their unique values.

    ``SentenceTransformer.encode`` sorts its inputs by length before batching, so a single call over every
    unique sentence of an evaluation pads least and shows one progress bar.

    Args:
        model: A ``SentenceTransformer`` (anything with a compatible ``encode``).
        texts: Texts, duplicates allowed.
        batch_size: Encoding batch size.
        show_progress_bar: ``None`` shows one when there are at least 1,000 unique texts.
        kind: ``"query"`` or ``"document"`` to use ``model.encode_query``/``encode_document`` (which apply the
            model's query/document prompts, as mteb does) when the model has them.

    Returns:
        A float32 CPU tensor with one row per entry of ``texts``.

    Example:
        >>> from sentence_transformers import SentenceTransformer
        >>> model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> encode_texts(model, ["a", "b", "a"]).shape  # doctest: +SKIP
        torch.Size([3, 384])
    """
    unique = list(dict.fromkeys(texts))
    if show_progress_bar is None:
        show_progress_bar = len(unique) >= PROGRESS_BAR_MIN_TEXTS
    if not unique:
        raise ValueError("nothing to encode")
    encode = getattr(model, f"encode_{kind}", None) if kind else None
    embeddings = (encode or model.encode)(
        unique, batch_size=batch_size, show_progress_bar=show_progress_bar, convert_to_tensor=True
    )
    embeddings = torch.as_tensor(embeddings).detach().to("cpu", torch.float32)
    index = {text: i for i, text in enumerate(unique)}
    return embeddings[torch.tensor([index[t] for t in texts], dtype=torch.long)]


def model_name(model: Any) -> str:
    """A short display name for ``model``: its model-card name, else the folder it was loaded from.

    Args:
        model: A ``SentenceTransformer`` or anything else.

    Returns:
        The name (``"model"`` when nothing better is known).

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
