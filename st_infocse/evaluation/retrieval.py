"""Retrieval: one evaluator for training time and the command line, its result types, and BM25 beside it (BEIR
datasets by name or folder are in :mod:`~st_infocse.evaluation.beir`).

:class:`RetrievalEvaluator` is sentence-transformers' ``InformationRetrievalEvaluator`` with every metric taken from
one pytrec_eval evaluation of its hits (graded relevance, trec_eval's tie order, as beir and mteb score), so each
query's score is kept and the logged mean is the queries' mean. Documents are read as ``title + " " + text`` as mteb
does; query-document id collisions are ignored only where mteb does so (:func:`beir_task_info`). Metrics stay in
[0, 1] as beir and mteb return them (``"scale": "0-1"`` in JSON); tables show them x100.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

from ._deps import require
from ._format import SCALE_UNIT, markdown_table, text_table, x100
from .beir_tasks import beir_task_info
from .encoding import PROGRESS_BAR_MIN_TEXTS
from .lexical import FUSION_DEPTH, LexicalSettings, Run, reference_runs
from .loaders import RetrievalData
from .paired import PairedChange, UnitScores, unit_change

DEFAULT_K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 100, 1000)

# sentence-transformers' metric name -> pytrec_eval's measure
_TREC_MEASURES = {"accuracy": "success", "precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "map": "map_cut"}
# the evaluator's cut-off attribute of each metric
_CUTOFFS = {"accuracy": "accuracy_at_k", "precision": "precision_recall_at_k", "recall": "precision_recall_at_k",
            "mrr": "mrr_at_k", "ndcg": "ndcg_at_k", "map": "map_at_k"}
# the metrics a result reports, as beir's EvaluateRetrieval and mteb's retrieval tasks name them
_BEIR_METRICS = ("ndcg", "map", "recall", "precision")
#: The loggers whose per-metric INFO lines ``st-infocse evaluate`` holds back unless given a level (``--verbose``).
RETRIEVAL_LOGGERS = ("beir", "sentence_transformers.sentence_transformer.evaluation.information_retrieval")


@contextmanager
def quiet_logs(names: Sequence[str] = RETRIEVAL_LOGGERS, level: int = logging.WARNING) -> Iterator[None]:
    """Hold back the INFO records of ``names`` (a line per metric and cut-off), keeping warnings; a level already set
    on one of them is the user's choice and is left alone (``level=logging.INFO`` sets that choice: the lines shown).

    Example:
        >>> with quiet_logs():
        ...     logging.getLogger("beir.retrieval.evaluation").isEnabledFor(logging.INFO)
        False
    """
    quieted = [logging.getLogger(name) for name in names if logging.getLogger(name).level == logging.NOTSET]
    for one in quieted:
        one.setLevel(level)
    try:
        yield
    finally:
        for one in quieted:
            one.setLevel(logging.NOTSET)


def per_query_metrics(qrels: Mapping[str, Mapping[str, int]], run: Run, metrics: Sequence[str] = ("ndcg@10",),
                      ignore_identical_ids: bool = False) -> dict[str, dict[str, float]]:
    """Metric -> {query id -> score in [0, 1]} from one pytrec_eval evaluation, for every query with judgements and
    results; their mean over queries is what beir and mteb report. ``metrics`` are ``"ndcg@10"``, ``"map@100"``,
    ``"recall@100"``, ``"precision@10"``, ``"accuracy@1"`` (a relevant document in the top k) or ``"mrr@10"``;
    ``ignore_identical_ids`` drops retrieved documents whose id is the query's.

    Example:
        >>> per_query_metrics({"q": {"d1": 1}}, {"q": {"d2": 0.9, "d1": 0.1}}, ["ndcg@1", "recall@2", "mrr@10"])
        {'ndcg@1': {'q': 0.0}, 'recall@2': {'q': 1.0}, 'mrr@10': {'q': 0.5}}
    """
    pytrec_eval = require("pytrec_eval", "Retrieval metrics")
    parsed = {}
    for metric in metrics:
        name, _, k = metric.partition("@")
        if name not in (*_TREC_MEASURES, "mrr") or not k.isdigit():
            raise ValueError(f"{metric!r}: expected one of {sorted(_CUTOFFS)} with '@k', e.g. 'ndcg@10'")
        parsed[metric] = (name, int(k))
    run = {q: {d: s for d, s in docs.items() if not (ignore_identical_ids and d == q)} for q, docs in run.items()}
    measures = {f"{_TREC_MEASURES[name]}.{k}" for name, k in parsed.values() if name != "mrr"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures | {"recip_rank"})
    scores = evaluator.evaluate(run)
    out = {metric: {q: float(s[f"{_TREC_MEASURES[name]}_{k}"]) for q, s in scores.items()}
           for metric, (name, k) in parsed.items() if name != "mrr"}
    for metric, (name, k) in parsed.items():
        if name == "mrr":  # recip_rank has no cut-off in trec_eval: the run is cut in trec_eval's own order
            top = {q: dict(sorted(docs.items(), key=lambda hit: (hit[1], hit[0]), reverse=True)[:k])
                   for q, docs in run.items()}
            out[metric] = {q: float(s["recip_rank"]) for q, s in evaluator.evaluate(top).items()}
    return {metric: out[metric] for metric in metrics}


def _means(scores: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    return {metric: float(np.mean(list(by_query.values()))) for metric, by_query in scores.items()}


class RetrievalEvaluator(InformationRetrievalEvaluator):
    """sentence-transformers' ``InformationRetrievalEvaluator`` scored by pytrec_eval, keeping each query's scores.

    It searches and logs as its parent does (``encode_query``/``encode_document``, the model's similarity, keys
    ``{name}_{similarity}_ndcg@10``...), but every metric is the queries' mean of :func:`per_query_metrics` on its
    hits. After a call, ``hits`` is the run, ``query_scores`` each query's score of every metric, and ``per_query``
    those of the primary metric (nDCG at the largest ``ndcg_at_k``). ``k_values`` sets every metric's cut-offs (None:
    the parent's keyword arguments or defaults); ``kwargs`` are the parent's (``name``, ``batch_size``...).

    Example:
        >>> evaluator = RetrievalEvaluator(queries, corpus, qrels, name="dev")  # doctest: +SKIP
        >>> evaluator(model)["dev_cosine_ndcg@10"] == np.mean(list(evaluator.per_query.values()))  # doctest: +SKIP
        True
    """

    hits: Run | None = None
    query_scores: dict[str, dict[str, float]] | None = None

    def __init__(self, queries: Mapping[str, str], corpus: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
                 k_values: Sequence[int] | None = None, ignore_identical_ids: bool = False, **kwargs: Any) -> None:
        if k_values is not None:
            kwargs |= {attribute: list(k_values) for attribute in set(_CUTOFFS.values())}
        super().__init__(dict(queries), dict(corpus), {q: dict(rel) for q, rel in qrels.items()}, **kwargs)
        self.ignore_identical_ids = ignore_identical_ids

    @property
    def metric_names(self) -> list[str]:
        """Every metric reported, ``"ndcg@10"``, ``"recall@100"``... (without the name and similarity)."""
        return [f"{metric}@{k}" for metric, attribute in _CUTOFFS.items() for k in getattr(self, attribute)]

    @property
    def primary_key(self) -> str:
        return f"ndcg@{max(self.ndcg_at_k)}"

    @property
    def per_query(self) -> dict[str, float] | None:
        return None if self.query_scores is None else self.query_scores[self.primary_key]

    def metrics_of(self, run: Run) -> dict[str, dict[str, float]]:
        """Each query's score of every metric for a run (query id -> {document id -> score})."""
        return per_query_metrics(self.relevant_docs, run, self.metric_names, self.ignore_identical_ids)

    def compute_metrics(self, queries_result_list: list[object]) -> dict[str, dict[int, float]]:
        self.hits = {query_id: {hit["corpus_id"]: float(hit["score"]) for hit in hits}
                     for query_id, hits in zip(self.queries_ids, queries_result_list, strict=True)}
        self.query_scores = self.metrics_of(self.hits)
        means: dict[str, dict[int, float]] = {}
        for metric, mean in _means(self.query_scores).items():
            name, _, k = metric.partition("@")
            means.setdefault(f"{name}@k", {})[int(k)] = mean
        return means

    def lexical_references(self, settings: LexicalSettings | None = None) -> dict[str, dict[str, float]]:
        """BM25's and the hybrid's primary metric per query, on this evaluator's queries and corpus."""
        return {name: scores[self.primary_key] for name, scores in self.reference_scores(settings).items()}

    def reference_scores(self, settings: LexicalSettings | None = None) -> dict[str, dict[str, dict[str, float]]]:
        """BM25's and the hybrid's (BM25 fused with the last call's hits, :func:`~.lexical.reference_runs`) score of
        every metric per query."""
        if self.hits is None:
            raise ValueError("the references fuse BM25 with the last evaluation's hits: call the evaluator first")
        depth = max(max(getattr(self, attribute)) for attribute in set(_CUTOFFS.values()))
        if depth < min(FUSION_DEPTH, len(self.corpus)):
            raise ValueError(f"the hybrid fuses the top {FUSION_DEPTH} hits; this evaluator keeps {depth}")
        runs = reference_runs(self.hits, dict(zip(self.corpus_ids, self.corpus, strict=True)),
                              dict(zip(self.queries_ids, self.queries, strict=True)), settings)
        return {name: self.metrics_of(run) for name, run in runs.items()}

    def units(self) -> dict[str, UnitScores]:
        """The last call's per-query scores of the primary metric and of recall at the deepest cut-off (the ranking's
        quality and what a reranker could still find), under the keys the evaluator returns, so that a start -> end
        of each gets its interval over the queries."""
        if self.query_scores is None or not self.primary_metric or not self.primary_metric.endswith(self.primary_key):
            return {}
        prefix = self.primary_metric[: -len(self.primary_key)]  # "{name}_{similarity}_", as the parent names keys
        recall = [f"recall@{max(self.precision_recall_at_k)}"] if self.precision_recall_at_k else []
        return {prefix + metric: UnitScores("queries", scores=dict(self.query_scores[metric]))
                for metric in dict.fromkeys([self.primary_key, *recall]) if metric in self.query_scores}


@dataclass
class RetrievalResult:
    """Retrieval metrics for one dataset, in [0, 1] as BEIR reports them.

    Attributes:
        metrics: ``"ndcg@10"``, ``"recall@100"``, ``"map@10"``, ``"precision@1"``... -> value.
        parts: For a dataset made of several (CQADupStack), each part's result; ``metrics`` is their mean.
        per_query: Metric -> {query id -> score} for the metrics asked for; their mean is ``metrics[metric]``.
        references: ``"BM25"`` and ``"hybrid"`` (BM25 fused with this model) on the same queries, each with its
            nDCG@10 per query; ``lexical`` describes their settings.
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

    def units(self) -> UnitScores:
        """Each query's nDCG@10, for a paired comparison."""
        return UnitScores("queries", scores=self.per_query.get("ndcg@10"))

    def reference_changes(self) -> dict[str, PairedChange]:
        """This model's nDCG@10 (x100) against each reference's, query by query, with its 95% interval."""
        changes = {name: unit_change(ref.units(), self.units()) for name, ref in self.references.items()}
        return {name: change for name, change in changes.items() if change is not None}

    def reference_lines(self) -> list[str]:
        """``BM25 68.63; this model against it: -4.12 (95% CI ...): a loss`` for each reference."""
        changes = self.reference_changes()
        return [f"{name} {x100(ref.ndcg_at_10)}" + (f"; this model against it: {changes[name].describe()}"
                                                    if name in changes else "")
                for name, ref in self.references.items()]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scale": SCALE_UNIT, "metrics": self.metrics, "n_queries": self.n_queries,
                               "n_documents": self.n_documents, "source": self.source, "split": self.split,
                               "seconds": self.seconds}
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


# the change of scale between tables and JSON is easy to miss, so every table says it
_BEIR_SCALE_NOTE = "scores x100 (the JSON keeps beir's 0-1 values)"


@dataclass
class BEIRResult:
    """One model's results on several BEIR datasets (dataset name -> result); prints like paper 000's Table 3, x100."""

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

    def _references(self) -> tuple[list[tuple[str, str]], str]:
        lines = [(name, line) for name, result in self.datasets.items() for line in result.reference_lines()]
        return lines, next((result.lexical for result in self.datasets.values() if result.lexical), "")

    def to_markdown(self, metrics: Sequence[str] = ("ndcg@10", "recall@100")) -> str:
        """A row per dataset, a column per metric, the average; then BM25's and the hybrid's nDCG@10 where scored."""
        lines, lexical = self._references()
        notes = [f"- {name}, on the same queries: {line}" for name, line in lines]
        notes += [f"- references: {lexical}"] if lexical else []
        return "\n".join([markdown_table(["Dataset", *metrics], self._rows(metrics)), "", *notes,
                          f"- {_BEIR_SCALE_NOTE}"])

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "scale": SCALE_UNIT, "average_ndcg@10": self.average,
                "datasets": {name: r.to_dict() for name, r in self.datasets.items()}}

    def __str__(self) -> str:
        table = text_table(["Dataset", "nDCG@10"], self._rows(["ndcg@10"]))
        lines, lexical = self._references()
        notes = [f"  on the same queries ({lexical}):", *(f"  {name}: {line}" for name, line in lines)] if lines else []
        return "\n".join([self.model, table, *notes, f"  {_BEIR_SCALE_NOTE}"])


def document_text(doc: Mapping[str, str]) -> str:
    """A BEIR document as one text, as mteb and beir join it: title, a space, text, stripped."""
    title = doc.get("title") or ""
    return (title + " " + doc["text"]).strip() if title else doc["text"].strip()


def data_evaluator(data: RetrievalData, k_values: Sequence[int] | None, ignore_identical_ids: bool, batch_size: int,
                   show_progress_bar: bool | None, **kwargs: Any) -> RetrievalEvaluator:
    """The one builder of a :class:`RetrievalEvaluator` on loaded data (each document read by :func:`document_text`,
    no CSV); ``show_progress_bar`` None: shown for 1,000+ documents; ``kwargs`` are the evaluator's (``name``...)."""
    if not data.corpus or not data.queries:
        raise ValueError(f"{data.name}: empty corpus or no queries")
    if show_progress_bar is None:
        show_progress_bar = len(data.corpus) >= PROGRESS_BAR_MIN_TEXTS
    return RetrievalEvaluator(data.queries, {d: document_text(doc) for d, doc in data.corpus.items()}, data.qrels,
                              k_values, ignore_identical_ids, batch_size=batch_size,
                              show_progress_bar=show_progress_bar, write_csv=False, **kwargs)


def search(model: Any, data: RetrievalData, top_k: int = 1000, batch_size: int = 64,
           show_progress_bar: bool | None = None) -> Run:
    """Each judged query's ``top_k`` documents by the model's own similarity: a :class:`RetrievalEvaluator`'s hits."""
    evaluator = data_evaluator(data, (top_k,), False, batch_size, show_progress_bar)
    with quiet_logs():
        evaluator(model)
    return evaluator.hits or {}


def evaluate_retrieval(model: Any, data: RetrievalData, k_values: Sequence[int] = DEFAULT_K_VALUES,
                       ignore_identical_ids: bool | None = None, batch_size: int = 64,
                       show_progress_bar: bool | None = None, per_query: Sequence[str] = (),
                       lexical: LexicalSettings | None = None) -> RetrievalResult:
    """Zero-shot retrieval metrics of ``model`` on one dataset, by a :class:`RetrievalEvaluator`.

    Args:
        k_values: Cut-offs of nDCG, MAP, recall and precision (the metrics reported, as beir reports them).
        ignore_identical_ids: ``None``: mteb's setting for this dataset (see :func:`beir_task_info`).
        show_progress_bar: ``None``: shown for 1,000+ texts.
        per_query: Metrics also kept query by query, for a paired comparison of two models on the same queries
            (:func:`~st_infocse.evaluation.compare_results`).
        lexical: Also score BM25 and its hybrid with this model on the same queries (``references``).
    """
    if ignore_identical_ids is None:
        ignore_identical_ids = beir_task_info(data.name).ignore_identical_ids
    start = time.perf_counter()
    evaluator = data_evaluator(data, k_values, ignore_identical_ids, batch_size, show_progress_bar)
    with quiet_logs():
        evaluator(model)
    if lexical is not None:
        per_query = sorted({*per_query, "ndcg@10"})

    def result(name: str, scores: dict[str, dict[str, float]], keep: Sequence[str]) -> RetrievalResult:
        means = {metric: mean for metric, mean in _means(scores).items() if metric.partition("@")[0] in _BEIR_METRICS}
        return RetrievalResult(name, means, len(data.queries), len(data.corpus), data.source, data.split,
                               per_query={metric: scores[metric] for metric in keep})

    own = result(data.name, evaluator.query_scores or {}, per_query)
    if lexical is not None:
        own.references = {name: result(f"{data.name} {name}", scores, ["ndcg@10"])
                          for name, scores in evaluator.reference_scores(lexical).items()}
        own.lexical = lexical.describe()
    own.seconds = time.perf_counter() - start
    return own
