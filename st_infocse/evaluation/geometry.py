"""Alignment and uniformity of the embedding space (Wang & Isola 2020), measured on STS-B as SimCSE does.

On L2-normalised embeddings ``f``:

- alignment  = E_{(x, y) ~ positive pairs} ||f(x) - f(y)||^2 (alpha = 2), positive pairs being the STS pairs
  whose gold score is above ``positive_above`` (SimCSE: 4.0);
- uniformity = log E_{x, y ~ data, x != y} exp(-t ||f(x) - f(y)||^2) (t = 2), over every distinct sentence.

Lower is better for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from ._format import cell, markdown_table
from .encoding import encode_unique
from .loaders import PathLike, STSPairs, load_sts


@dataclass
class GeometryResult:
    """Alignment over ``n_positive_pairs`` and uniformity over ``n_sentences`` distinct sentences (lower is better)."""

    alignment: float
    uniformity: float
    n_positive_pairs: int
    n_sentences: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def to_markdown(self) -> str:
        return markdown_table(["metric", "value"], [[k, cell(v)] for k, v in self.to_dict().items()])

    def __str__(self) -> str:
        return (f"alignment {self.alignment:.4f} ({self.n_positive_pairs} positive pairs)  "
                f"uniformity {self.uniformity:.4f} ({self.n_sentences} sentences)")


def alignment_loss(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> float:
    """Mean ``||x_i - y_i||^alpha`` over the rows of two L2-normalised ``(n, d)`` embedding matrices.

    Example:
        >>> round(alignment_loss(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])), 4)
        2.0
    """
    return float((x - y).norm(dim=1).pow(alpha).mean())


def uniformity_loss(x: torch.Tensor, t: float = 2.0, chunk_size: int = 4096) -> float:
    """``log mean_{i<j} exp(-t ||x_i - x_j||^2)`` over the rows (2 or more) of an L2-normalised ``(n, d)`` matrix,
    ``chunk_size`` rows at a time so that tens of thousands of sentences fit in memory.

    Example:
        >>> round(uniformity_loss(torch.tensor([[1.0, 0.0], [-1.0, 0.0]])), 4)  # distance^2 = 4: log e^-8
        -8.0
    """
    n = x.shape[0]
    if n < 2:
        raise ValueError("uniformity needs at least two distinct sentences")
    x = x.double()
    # every ordered pair counts each unordered one twice; the n pairs of a row with itself add exp(0) = 1 each
    total = sum(torch.exp(-t * torch.cdist(block, x).pow(2)).sum() for block in x.split(chunk_size)) - n
    return float(torch.log(total / (n * (n - 1))))


def evaluate_alignment_uniformity(model: Any, source: PathLike | STSPairs, positive_above: float = 4.0,
                                  batch_size: int = 64, show_progress_bar: bool | None = None) -> GeometryResult:
    """Alignment and uniformity of ``model`` on STS-B test pairs (anything :func:`~st_infocse.evaluation.load_sts`
    reads), as SimCSE's Figure 2 and paper 001's Figure 3: positives are pairs scored above ``positive_above``."""
    pairs = load_sts(source, task="STS-B", split="test")
    positives = [i for i, s in enumerate(pairs.scores) if s > positive_above]
    if not positives:
        raise ValueError(f"{pairs.source}: no pair scores above {positive_above}")
    sentences = list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))
    embeddings = torch.from_numpy(encode_unique(model, sentences, batch_size, show_progress_bar,
                                                normalize_embeddings=True))
    index = {s: i for i, s in enumerate(sentences)}
    x = embeddings[[index[pairs.sentences1[i]] for i in positives]]
    y = embeddings[[index[pairs.sentences2[i]] for i in positives]]
    alignment = alignment_loss(x, y)
    uniformity = uniformity_loss(embeddings)
    if not math.isfinite(uniformity):
        raise FloatingPointError("uniformity is not finite")
    return GeometryResult(alignment, uniformity, len(positives), len(sentences), pairs.source)
