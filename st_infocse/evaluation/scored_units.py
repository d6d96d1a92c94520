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
        self._embedded: list[np.ndarray] = []
        self._both_sides = None
        try:
            metrics = super().__call__(model, output_path, epoch, steps)
            if len(self._embedded) == 2 and not self.precision:  # sentences1, then sentences2
                from sentence_transformers.util import pairwise_cos_sim

                # the function the evaluator's Spearman is computed from, so the ranks are the same
                cosine = pairwise_cos_sim(*self._embedded).detach().cpu().numpy()
                self.similarities = tuple(float(x) for x in cosine)
        finally:
            self._embedded, self._both_sides = [], None
        return metrics

    def embed_inputs(self, model: Any, sentences: Any, **kwargs: Any) -> np.ndarray:
        if self._both_sides is None:  # the evaluation's first call: every distinct sentence of both sides at once
            distinct = list(dict.fromkeys([*self.sentences1, *self.sentences2]))
            embedded = super().embed_inputs(model, distinct, **kwargs)
            self._both_sides = {sentence: i for i, sentence in enumerate(distinct)}, embedded
        index, embedded = self._both_sides
        embeddings = embedded[[index[sentence] for sentence in sentences]]
        self._embedded.append(embeddings)
        return embeddings

    def units(self) -> dict[str, UnitScores]:
        if self.similarities is None or self.primary_metric != f"{self.name}_spearman_cosine":
            return {}
        gold = tuple(float(x) for x in self.scores)
        return {self.primary_metric: UnitScores("pairs", gold=gold, similarities=self.similarities)}


def unit_scores(evaluator: Any) -> dict[str, UnitScores]:
    """The unit scores of an evaluator's last call by metric name (as the evaluator returns it, no ``eval_``), from any
    evaluator with ``units()``, inside a ``SequentialEvaluator`` or a wrapper holding ``inner`` or ``evaluator`` too."""
    if evaluator is None:
        return {}
    if hasattr(evaluator, "units") and callable(evaluator.units):
        return evaluator.units()
    out: dict[str, UnitScores] = {}
    for inner in getattr(evaluator, "evaluators", None) or []:
        out |= unit_scores(inner)
    for name in ("inner", "evaluator"):
        wrapped = getattr(evaluator, name, None)
        if wrapped is not None and wrapped is not evaluator:
            out |= unit_scores(wrapped)
    return out


def primary_unit_key(evaluator: Any) -> str | None:
    """The metric of :func:`unit_scores` that an evaluator's primary score is: its ``primary_metric``, or for a
    ``SequentialEvaluator`` (whose default main score is its last evaluator's) the last evaluator's; None when that
    metric keeps no unit scores."""
    units = unit_scores(evaluator)
    primary = getattr(evaluator, "primary_metric", None)
    if primary in units:
        return primary
    inner = getattr(evaluator, "evaluators", None) or [getattr(evaluator, "inner", None)]
    return primary_unit_key(inner[-1]) if inner[-1] is not None and inner[-1] is not evaluator else None
