"""Retrieval: exact search, nDCG@10 and recall@k of one dataset, its result types, and BM25 beside it (the BEIR
datasets by name or folder are read and averaged in :mod:`~st_infocse.evaluation.beir`).

The model encodes with ``encode_query``/``encode_document`` (one length-sorted call each); the search is exact, with
the model's own similarity; the metrics are beir's ``EvaluateRetrieval.evaluate`` (pytrec_eval), the numbers mteb
gives on the same data (``benchmarks/evaluation_reference.py`` checks it on SciFact).

Documents are read as ``title + " " + text`` (stripped) as mteb does, and query-document id collisions are
ignored only for the datasets where mteb does so (ArguAna, FiQA, Quora, FEVER, MS MARCO), not beir's blanket
default.

Scales: the BEIR metrics stay in [0, 1] as beir and mteb return them (attributes and ``to_dict``, labelled
``"scale": "0-1"``); printed and markdown tables show them x100 as the papers do. In-domain recall is x100.
beir's INFO logging (about 30 lines per evaluated dataset) is held back unless the ``beir`` logger has been
given a level (``logging.getLogger("beir").setLevel(logging.INFO)``, or ``st-infocse evaluate --verbose``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ._deps import require
from ._format import SCALE_UNIT, markdown_table, text_table, x100
from .beir_tasks import beir_task_info
from .encoding import encode_unique
from .lexical import LexicalSettings, bm25_search, fuse_runs
from .loaders import RetrievalData
from .paired import PairedChange, paired_change

logger = logging.getLogger(__name__)

DEFAULT_K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 100, 1000)
@contextmanager
def quiet_beir() -> Iterator[None]:
    """Hold back beir's INFO records (it logs every metric at every k) while keeping its warnings and errors.

    A level already set on the ``beir`` logger is the user's choice and is left alone.

    Example:
        >>> with quiet_beir():
        ...     logging.getLogger("beir.retrieval.evaluation").isEnabledFor(logging.INFO)
        False
    """
    beir_logger = logging.getLogger("beir")
    if beir_logger.level != logging.NOTSET:
        yield
        return
    beir_logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        beir_logger.setLevel(logging.NOTSET)


@dataclass
class RetrievalResult:
    """Retrieval metrics for one dataset, in [0, 1] as BEIR reports them (``to_dict`` says so in ``"scale"``).

    Attributes:
        name: Dataset name.
        metrics: ``"ndcg@10"``, ``"recall@100"``, ``"map@10"``, ``"precision@1"`` ... -> value.
        n_queries, n_documents: Sizes.
        source: Where the data came from.
        split: Qrels split.
        seconds: Wall time.
        parts: For datasets made of several (CQADupStack): each part's result; ``metrics`` is their mean.
        per_query: Metric -> {query id -> that query's score}, for the metrics asked for (``per_query=`` of
            :func:`evaluate_retrieval`); their mean over queries is ``metrics[metric]``.
        references: ``"BM25"`` and ``"hybrid"`` (BM25 fused with this model) on the same queries, each with its
            nDCG@10 per query (``lexical=`` of :func:`evaluate_retrieval`).
    """

    name: str
    metrics: dict[str, float]
    n_queries: int
    n_documents: int
    source: str
    split: str
    seconds: float = 0.0
    parts: dict[str, RetrievalResult] = field(default_factory=dict)
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    references: dict[str, RetrievalResult] = field(default_factory=dict)
    lexical: str = ""

    @property
    def ndcg_at_10(self) -> float:
        return self.metrics["ndcg@10"]

    def reference_changes(self) -> dict[str, PairedChange]:
        """This model's nDCG@10 (x100) against each reference's, query by query, with its 95% interval."""
        own = self.per_query.get("ndcg@10", {})
        return {name: paired_change({q: 100 * v for q, v in ref.per_query["ndcg@10"].items()},
                                    {q: 100 * v for q, v in own.items()})
                for name, ref in self.references.items() if own and "ndcg@10" in ref.per_query}

    def reference_lines(self) -> list[str]:
        """``BM25 68.63, this model -4.12 (95% CI ...): a loss`` for each reference."""
        changes = self.reference_changes()
        return [f"{name} {x100(ref.ndcg_at_10)}" + (f"; this model against it: {changes[name].describe()}"
                                                    if name in changes else "")
                for name, ref in self.references.items()]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scale": SCALE_UNIT,
            "metrics": self.metrics,
            "n_queries": self.n_queries,
            "n_documents": self.n_documents,
            "source": self.source,
            "split": self.split,
            "seconds": self.seconds,
        }
        if self.parts:
            out["parts"] = {name: part.to_dict() for name, part in self.parts.items()}
        if self.per_query:
            out["per_query"] = self.per_query
        if self.references:
            changes = self.reference_changes()
            out["lexical"] = self.lexical
            out["references"] = {name: {**ref.to_dict(), **({"model_against_it": changes[name].to_dict()}
                                                             if name in changes else {})}
                                 for name, ref in self.references.items()}
        return out


@dataclass
class BEIRResult:
    """nDCG@10 (and the other metrics) of one model on several BEIR datasets; prints like paper 000's Table 3.

    Values are kept in [0, 1]; ``print()`` and :meth:`to_markdown` show them x100.

    Attributes:
        model: Model name.
        datasets: Dataset name -> result.
    """

    model: str
    datasets: dict[str, RetrievalResult]

    @property
    def average(self) -> float:
        """Mean nDCG@10 over the datasets."""
        return float(np.mean([r.ndcg_at_10 for r in self.datasets.values()]))

    def _rows(self, metrics: Sequence[str]) -> list[list[str]]:
        rows = [[name] + [x100(r.metrics.get(m, float("nan"))) for m in metrics] for name, r in self.datasets.items()]
        averages = [float(np.mean([r.metrics.get(m, np.nan) for r in self.datasets.values()])) for m in metrics]
        return [*rows, ["average"] + [x100(a) for a in averages]]

    def to_markdown(self, metrics: Sequence[str] = ("ndcg@10", "recall@100")) -> str:
        """A markdown table (x100): one row per dataset, one column per metric, then the average; then BM25's and
        the hybrid's nDCG@10 on the same queries where they were scored."""
        notes = [f"- {name}, on the same queries: {line}" for name, result in self.datasets.items()
                 for line in result.reference_lines()]
        lexical = next((result.lexical for result in self.datasets.values() if result.lexical), "")
        notes += [f"- references: {lexical}"] if lexical else []
        return "\n".join([markdown_table(["Dataset", *metrics], self._rows(metrics)), "", *notes,
                          f"- {_BEIR_SCALE_NOTE}"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "scale": SCALE_UNIT,
            "average_ndcg@10": self.average,
            "datasets": {name: r.to_dict() for name, r in self.datasets.items()},
        }

    def __str__(self) -> str:
        table = text_table(["Dataset", "nDCG@10"], self._rows(["ndcg@10"]))
        references = [f"  {name}: {line}" for name, result in self.datasets.items()
                      for line in result.reference_lines()]
        lexical = next((result.lexical for result in self.datasets.values() if result.lexical), "")
        notes = ([f"  on the same queries ({lexical}):", *references] if references else [])
        return "\n".join([self.model, table, *notes, f"  {_BEIR_SCALE_NOTE}"])


# the change of scale between tables and JSON is easy to miss, so every table says it
_BEIR_SCALE_NOTE = "scores x100 (the JSON keeps beir's 0-1 values)"


def document_text(doc: dict[str, str]) -> str:
    """A BEIR document as one text, as mteb's ``_corpus_to_dict`` and beir join it: the title, a space, the text,
    stripped; the text alone when there is no title."""
    title = doc.get("title") or ""
    return (title + " " + doc["text"]).strip() if title else doc["text"].strip()


def search(
    model: Any,
    data: RetrievalData,
    top_k: int = 1000,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    corpus_chunk_size: int = 50_000,
    query_chunk_size: int = 1024,
) -> dict[str, dict[str, float]]:
    """Exact nearest-neighbour search of every query over the corpus.

    Args:
        model: A ``SentenceTransformer``; ``encode_query``/``encode_document`` and ``similarity`` are used when
            present (so models with query/document prompts get them, as in mteb), else ``encode`` and cosine.
        data: The dataset.
        top_k: Documents kept per query.
        batch_size: Encoding batch size.
        show_progress_bar: ``None``: shown for 1,000+ texts.
        corpus_chunk_size, query_chunk_size: Bound the size of each similarity matrix.

    Returns:
        Query id -> {document id -> score}, the format pytrec_eval, beir and mteb read.

    Example:
        >>> results = search(model, load_beir_folder("../shared/data/beir/scifact"))  # doctest: +SKIP
    """
    from sentence_transformers.util import cos_sim, semantic_search

    doc_ids = list(data.corpus)
    query_ids = list(data.queries)
    if not doc_ids or not query_ids:
        raise ValueError(f"{data.name}: empty corpus or no queries")
    documents = encode_unique(
        model, [document_text(data.corpus[d]) for d in doc_ids], batch_size, show_progress_bar, kind="document"
    )
    queries = encode_unique(model, [data.queries[q] for q in query_ids], batch_size, show_progress_bar, kind="query")
    similarity = getattr(model, "similarity", None) or cos_sim
    hits = semantic_search(
        torch.as_tensor(queries),
        torch.as_tensor(documents),
        query_chunk_size=query_chunk_size,
        corpus_chunk_size=corpus_chunk_size,
        top_k=min(top_k, len(doc_ids)),
        score_function=lambda a, b: torch.as_tensor(similarity(a, b)).float(),
    )
    return {
        query_id: {doc_ids[hit["corpus_id"]]: float(hit["score"]) for hit in query_hits}
        for query_id, query_hits in zip(query_ids, hits, strict=True)
    }


def retrieval_metrics(
    qrels: dict[str, dict[str, int]],
    results: dict[str, dict[str, float]],
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    ignore_identical_ids: bool = False,
) -> dict[str, float]:
    """nDCG, MAP, recall and precision at each k through beir's ``EvaluateRetrieval.evaluate`` (pytrec_eval).

    Args:
        qrels: Query id -> {document id -> relevance}.
        results: Query id -> {document id -> score}.
        k_values: Cut-offs.
        ignore_identical_ids: Drop retrieved documents whose id equals the query id.

    Returns:
        ``{"ndcg@10": ..., "map@10": ..., "recall@10": ..., "precision@10": ...}`` for each k, in [0, 1].

    Example:
        >>> retrieval_metrics({"q": {"d1": 1}}, {"q": {"d1": 0.9, "d2": 0.1}}, k_values=(1,))["ndcg@1"]
        1.0
    """
    evaluation = require("beir.retrieval.evaluation", "BEIR metrics")
    # beir edits ``results`` in place when ignoring identical ids
    results = {q: dict(docs) for q, docs in results.items()}
    with quiet_beir():
        ndcg, _map, recall, precision = evaluation.EvaluateRetrieval.evaluate(
            qrels, results, list(k_values), ignore_identical_ids=ignore_identical_ids
        )
    out: dict[str, float] = {}
    for prefix, scores in (("ndcg", ndcg), ("map", _map), ("recall", recall), ("precision", precision)):
        for key, value in scores.items():
            out[f"{prefix}@{key.split('@')[1]}"] = float(value)
    return out


# pytrec_eval's measure for each of beir's metric names (beir asks pytrec_eval for the same ones)
_TREC_MEASURES = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P"}


def per_query_metrics(
    qrels: dict[str, dict[str, int]],
    results: dict[str, dict[str, float]],
    metrics: Sequence[str] = ("ndcg@10",),
    ignore_identical_ids: bool = False,
) -> dict[str, dict[str, float]]:
    """Each query's score for ``metrics``, the values whose mean :func:`retrieval_metrics` reports (pytrec_eval).

    Args:
        qrels: Query id -> {document id -> relevance}.
        results: Query id -> {document id -> score}.
        metrics: beir's names: ``"ndcg@10"``, ``"recall@100"``, ``"map@10"``, ``"precision@1"``.
        ignore_identical_ids: Drop retrieved documents whose id equals the query id.

    Returns:
        Metric -> {query id -> score in [0, 1]}, for every query that has both judgements and results.

    Example:
        >>> per_query_metrics({"q": {"d1": 1}}, {"q": {"d2": 0.9, "d1": 0.1}}, ["ndcg@1", "recall@2"])
        {'ndcg@1': {'q': 0.0}, 'recall@2': {'q': 1.0}}
    """
    pytrec_eval = require("pytrec_eval", "Per-query retrieval metrics")
    measures = {}
    for metric in metrics:
        name, _, k = metric.partition("@")
        if name not in _TREC_MEASURES or not k.isdigit():
            raise ValueError(f"{metric!r}: expected one of {sorted(_TREC_MEASURES)} with '@k', e.g. 'ndcg@10'")
        measures[metric] = (f"{_TREC_MEASURES[name]}.{k}", f"{_TREC_MEASURES[name]}_{k}")
    results = {q: {d: s for d, s in docs.items() if not (ignore_identical_ids and d == q)} for q, docs in results.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _ in measures.values()})
    scores = evaluator.evaluate(results)
    return {metric: {q: float(s[key]) for q, s in scores.items()} for metric, (_, key) in measures.items()}


def evaluate_retrieval(
    model: Any,
    data: RetrievalData,
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    ignore_identical_ids: bool | None = None,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    per_query: Sequence[str] = (),
    lexical: LexicalSettings | None = None,
) -> RetrievalResult:
    """Zero-shot retrieval metrics of ``model`` on one dataset.

    Args:
        model: A ``SentenceTransformer``.
        data: The dataset (:func:`~st_infocse.evaluation.load_beir_folder`, ``load_mteb_retrieval``).
        k_values: Cut-offs for nDCG/MAP/recall/precision.
        ignore_identical_ids: ``None``: mteb's setting for this dataset (see :func:`beir_task_info`).
        batch_size: Encoding batch size.
        show_progress_bar: ``None``: shown for 1,000+ texts.
        per_query: Metrics also kept query by query (``RetrievalResult.per_query``), for a paired comparison of two
            models on the same queries (:func:`~st_infocse.evaluation.paired_change`).
        lexical: Also score BM25 and the hybrid of BM25 with this model on the same queries
            (``RetrievalResult.references``, with nDCG@10 per query; :mod:`~st_infocse.evaluation.lexical`).

    Returns:
        The metrics.

    Example:
        >>> data = load_beir_folder("../shared/data/beir/scifact")  # doctest: +SKIP
        >>> evaluate_retrieval(model, data).ndcg_at_10  # doctest: +SKIP
        0.64508
    """
    if ignore_identical_ids is None:
        ignore_identical_ids = beir_task_info(data.name).ignore_identical_ids
    start = time.perf_counter()
    results = search(model, data, top_k=max(k_values), batch_size=batch_size, show_progress_bar=show_progress_bar)
    metrics = retrieval_metrics(data.qrels, results, k_values, ignore_identical_ids)
    if lexical is not None:
        per_query = sorted({*per_query, "ndcg@10"})
    kept = per_query_metrics(data.qrels, results, per_query, ignore_identical_ids) if per_query else {}
    references = {}
    if lexical is not None:
        texts = {doc_id: document_text(doc) for doc_id, doc in data.corpus.items()}
        bm25 = bm25_search(texts, data.queries, top_k=max(k_values), settings=lexical)
        for name, run in (("BM25", bm25), ("hybrid", fuse_runs(results, bm25, lexical))):
            references[name] = RetrievalResult(
                name=f"{data.name} {name}", metrics=retrieval_metrics(data.qrels, run, k_values, ignore_identical_ids),
                n_queries=len(data.queries), n_documents=len(data.corpus), source=data.source, split=data.split,
                per_query=per_query_metrics(data.qrels, run, ["ndcg@10"], ignore_identical_ids),
            )
    return RetrievalResult(
        name=data.name,
        metrics=metrics,
        n_queries=len(data.queries),
        n_documents=len(data.corpus),
        source=data.source,
        split=data.split,
        seconds=time.perf_counter() - start,
        per_query=kept,
        references=references,
        lexical=lexical.describe() if lexical is not None else "",
    )
