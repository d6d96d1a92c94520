"""What an evaluator's score is made of (each pair's similarity, each query's score), so that two evaluations of the
same set (a run's start and its end, or two models) can be compared unit by unit
(:func:`~st_infocse.evaluation.paired_changes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from .paired import UnitScores


class PairScoredSimilarityEvaluator(EmbeddingSimilarityEvaluator):
    """``EmbeddingSimilarityEvaluator`` that keeps each pair's cosine similarity of its last call (``similarities``),
    for resampling its Spearman correlation over pairs (``main_similarity="cosine"``). Both sides are encoded in one
    ``encode`` call over their distinct sentences; the metrics are computed as the parent computes them."""

    similarities: tuple[float, ...] | None = None
    _both_sides: tuple[dict[str, int], Any] | None = None

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        self._both_sides = None
        try:
            metrics = super().__call__(model, output_path, epoch, steps)
            if self._both_sides is not None and not self.precision:  # with precision, it scores other (quantized) rows
                from sentence_transformers.util import pairwise_cos_sim

                # the function and rows the evaluator's Spearman is computed from, so the ranks are the same
                sides = (self.embed_inputs(model, sentences) for sentences in (self.sentences1, self.sentences2))
                self.similarities = tuple(float(x) for x in pairwise_cos_sim(*sides).detach().cpu().numpy())
        finally:
            self._both_sides = None
        return metrics

    def embed_inputs(self, model: Any, sentences: Any, **kwargs: Any) -> np.ndarray:
        if self._both_sides is None:  # the evaluation's first call: every distinct sentence of both sides at once
            distinct = list(dict.fromkeys([*self.sentences1, *self.sentences2]))
            self._both_sides = {s: i for i, s in enumerate(distinct)}, super().embed_inputs(model, distinct, **kwargs)
        index, embedded = self._both_sides
        return embedded[[index[sentence] for sentence in sentences]]

    def units(self) -> dict[str, UnitScores]:
        if self.similarities is None or self.primary_metric != f"{self.name}_spearman_cosine":
            return {}
        gold = tuple(float(x) for x in self.scores)
        return {self.primary_metric: UnitScores("pairs", gold=gold, similarities=self.similarities)}


def _inner(evaluator: Any) -> list[Any]:
    """The evaluators inside ``evaluator``: a ``SequentialEvaluator``'s, or the one a wrapper holds as ``inner``."""
    inner = getattr(evaluator, "evaluators", None) or [getattr(evaluator, "inner", None)]
    return [one for one in inner if one is not None and one is not evaluator]


def unit_scores(evaluator: Any) -> dict[str, UnitScores]:
    """The unit scores of an evaluator's last call by metric name (as the evaluator returns it, no ``eval_``), from any
    evaluator with ``units()``, inside a ``SequentialEvaluator`` or a wrapper holding ``inner`` too (none: ``{}``)."""
    if hasattr(evaluator, "units") and callable(evaluator.units):
        return evaluator.units()
    return {key: units for inner in _inner(evaluator) for key, units in unit_scores(inner).items()}


def primary_unit_key(evaluator: Any) -> str | None:
    """The metric of :func:`unit_scores` that an evaluator's primary score is: its ``primary_metric``, or for a
    ``SequentialEvaluator`` (whose default main score is its last evaluator's) the last evaluator's; None when that
    metric keeps no unit scores."""
    primary = getattr(evaluator, "primary_metric", None)
    if primary in unit_scores(evaluator):
        return primary
    inner = _inner(evaluator)
    return primary_unit_key(inner[-1]) if inner else None
