"""sentence-transformers' evaluators that also keep what their score is made of, so that two evaluations of the same
set (a run's start and its end, or two models) can be compared unit by unit (:mod:`st_infocse.evaluation.paired`).

- :class:`QueryScoredRetrievalEvaluator`: ``InformationRetrievalEvaluator`` keeping each query's nDCG@k (its primary
  metric's k), computed as that evaluator computes it, so the queries' mean is the logged nDCG@k;
- :class:`PairScoredSimilarityEvaluator`: ``EmbeddingSimilarityEvaluator`` keeping each pair's similarity, so
  Spearman's correlation can be resampled over the pairs.

:func:`unit_scores` collects them from any evaluator, inside ``SequentialEvaluator`` and wrappers that hold an
``inner`` or ``evaluator`` attribute; :func:`paired_changes` turns two collections into changes with intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import (
    EmbeddingSimilarityEvaluator,
    InformationRetrievalEvaluator,
)

from .paired import PairedChange, paired_change, paired_spearman_change

__all__ = [
    "PairScoredSimilarityEvaluator",
    "QueryScoredRetrievalEvaluator",
    "UnitScores",
    "paired_changes",
    "primary_unit_key",
    "unit_scores",
]


@dataclass(frozen=True)
class UnitScores:
    """What one evaluation's primary metric is made of.

    Attributes:
        kind: ``"queries"`` (the metric is the mean of ``scores``) or ``"pairs"`` (Spearman of ``gold`` and
            ``similarities``).
        scores: Query id -> score in [0, 1] (``"queries"``).
        gold, similarities: The gold scores and the model's similarity of each pair, in order (``"pairs"``).
    """

    kind: str
    scores: dict[str, float] | None = None
    gold: tuple[float, ...] = ()
    similarities: tuple[float, ...] = ()


class QueryScoredRetrievalEvaluator(InformationRetrievalEvaluator):
    """``InformationRetrievalEvaluator`` that keeps each query's nDCG@k of its last call (``per_query``), for the
    largest k of ``ndcg_at_k`` (its primary metric's); the queries' mean equals the metric it logs.

    Example:
        >>> evaluator = QueryScoredRetrievalEvaluator(queries, corpus, relevant_docs, name="dev")  # doctest: +SKIP
        >>> evaluator(model)["dev_cosine_ndcg@10"] == np.mean(list(evaluator.per_query.values()))  # doctest: +SKIP
        True
    """

    per_query: dict[str, float] | None = None
    hits: dict[str, dict[str, float]] | None = None

    def compute_metrics(self, queries_result_list: list[object]) -> dict[str, Any]:
        # one similarity function (the model's): the last call is the primary metric's
        self.hits = {query_id: {hit["corpus_id"]: float(hit["score"]) for hit in hits}
                     for query_id, hits in zip(self.queries_ids, queries_result_list, strict=True)}
        self.per_query = self.score_run(self.hits)
        return super().compute_metrics(queries_result_list)

    def score_run(self, run: dict[str, dict[str, float]]) -> dict[str, float]:
        """Each query's nDCG@k of a run (query id -> {corpus id -> score}) as this evaluator computes it: its order,
        ties broken by corpus id, and its binary gain."""
        k = max(self.ndcg_at_k)
        scores = {}
        for query_id in self.queries_ids:
            hits = run.get(query_id, {})
            top = sorted(hits, key=lambda doc: (-hits[doc], doc))[:k]
            relevant = self.relevant_docs[query_id]
            found = [1 if doc in relevant else 0 for doc in top]
            scores[query_id] = float(self.compute_dcg_at_k(found, k) / self.compute_dcg_at_k([1] * len(relevant), k))
        return scores

    def lexical_references(self, settings: Any = None) -> dict[str, dict[str, float]]:
        """BM25's and the hybrid's nDCG@k per query on this evaluator's queries and corpus, the hybrid fusing BM25
        with the model of the last call (its hits); ``settings``: a
        :class:`~st_infocse.evaluation.LexicalSettings`."""
        from .lexical import bm25_search, fuse_runs

        if self.hits is None:
            raise ValueError("lexical_references fuses BM25 with the last evaluation's hits: call the evaluator first")
        top_k = max([*self.ndcg_at_k, *self.map_at_k, *self.mrr_at_k, *self.precision_recall_at_k, *self.accuracy_at_k])
        bm25 = bm25_search(dict(zip(self.corpus_ids, self.corpus, strict=True)),
                           dict(zip(self.queries_ids, self.queries, strict=True)), top_k=top_k, settings=settings)
        return {"BM25": self.score_run(bm25), "hybrid": self.score_run(fuse_runs(self.hits, bm25, settings))}

    def units(self) -> dict[str, UnitScores]:
        if self.per_query is None or not self.primary_metric:
            return {}
        return {self.primary_metric: UnitScores("queries", scores=dict(self.per_query))}


class PairScoredSimilarityEvaluator(EmbeddingSimilarityEvaluator):
    """``EmbeddingSimilarityEvaluator`` that keeps each pair's cosine similarity of its last call
    (``similarities``), for resampling its Spearman correlation over pairs. Cosine only (``main_similarity``).

    Both sides of the pairs are encoded in one ``encode`` call over their distinct sentences (one call per dataset,
    a sentence on both sides encoded once); the evaluator's metrics are then computed as it computes them.

    Example:
        >>> evaluator = PairScoredSimilarityEvaluator(s1, s2, gold, main_similarity="cosine")  # doctest: +SKIP
        >>> evaluator(model); len(evaluator.similarities) == len(gold)  # doctest: +SKIP
        True
    """

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
    """The unit scores of an evaluator's last call, by metric name (as the evaluator returns it, no ``eval_``):
    from :class:`QueryScoredRetrievalEvaluator` and :class:`PairScoredSimilarityEvaluator`, also inside a
    ``SequentialEvaluator`` or a wrapper holding ``inner`` or ``evaluator``; empty for any other evaluator."""
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


def paired_changes(before: dict[str, UnitScores], after: dict[str, UnitScores], scale: float = 100.0,
                   seed: int = 0) -> dict[str, PairedChange]:
    """Each metric's change from ``before`` to ``after`` (x``scale``, as the scores are printed), with its
    bootstrap interval over the units, for the metrics both hold on the same units."""
    out = {}
    for key, first in before.items():
        second = after.get(key)
        if second is None or second.kind != first.kind:
            continue
        if first.kind == "queries" and first.scores is not None and second.scores is not None:
            if set(first.scores) == set(second.scores) and first.scores:
                out[key] = paired_change({q: scale * v for q, v in first.scores.items()},
                                         {q: scale * v for q, v in second.scores.items()}, seed=seed)
        elif first.kind == "pairs" and first.gold == second.gold and len(first.similarities) == len(second.similarities):
            out[key] = paired_spearman_change(first.gold, first.similarities, second.similarities, seed=seed,
                                              scale=scale)
    return out
