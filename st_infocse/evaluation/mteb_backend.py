"""The ``"mteb"`` backend of :func:`~st_infocse.evaluation.evaluate_retrieval`: the data handed to an mteb
retrieval task through mteb's public API and scored by ``mteb.evaluate``, with the caller's random states kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._deps import require
from .beir_tasks import beir_task_info
from .loaders import RetrievalData
from .random_state import global_random_state_kept

__all__ = ["evaluate_with_mteb", "mteb_local_task"]


def mteb_local_task(data: RetrievalData, ignore_identical_ids: bool, k_values: Sequence[int]) -> Any:
    """An mteb retrieval task holding ``data``: the registered task of that name (its own settings and scores), or
    a local one, through mteb's public API only (mteb 2.26.24).

    ``k_values`` is a documented attribute of ``AbsTaskRetrieval``; the task's search depth is derived from it when
    the task is built, so it is set on a subclass before building rather than by writing the private ``_top_k``
    afterwards. The data goes into the documented ``dataset`` attribute with ``data_loaded`` set, as a task's own
    ``load_data`` leaves them.
    """
    from datasets import Dataset

    mteb = require("mteb", "the mteb retrieval backend")
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    info = beir_task_info(data.name)
    if info.mteb_name:
        base = type(mteb.get_task(info.mteb_name))
    else:
        from mteb.abstasks.task_metadata import TaskMetadata

        class LocalRetrieval(AbsTaskRetrieval):
            metadata = TaskMetadata(
                name=f"Local-{data.name}",
                description=f"Local BEIR folder {data.source}",
                reference=None,
                dataset={"path": "local", "revision": "local"},
                type="Retrieval",
                category="t2t",
                modalities=["text"],
                eval_splits=[data.split],
                eval_langs=["eng-Latn"],
                main_score="ndcg_at_10",
                date=None,
                domains=None,
                task_subtypes=None,
                license=None,
                annotations_creators=None,
                dialect=None,
                sample_creation=None,
                bibtex_citation="",
            )

        base = LocalRetrieval
    # mteb's score dict always reads recall@1 and its main score nDCG@10; its search depth is the largest k (at
    # least 10 then: the cut-offs asked for are computed from the same top documents, as in the native backend).
    wanted = tuple(sorted(set(k_values) | {1, 10}))
    task = type(base.__name__, (base,), {"__module__": __name__, "k_values": wanted})()
    task.ignore_identical_ids = ignore_identical_ids
    corpus = Dataset.from_list(
        [{"id": d, "title": doc.get("title") or "", "text": doc["text"]} for d, doc in data.corpus.items()]
    )
    queries = Dataset.from_list([{"id": q, "text": text} for q, text in data.queries.items()])
    task.dataset = {
        "default": {data.split: {"corpus": corpus, "queries": queries, "relevant_docs": data.qrels, "top_ranked": None}}
    }
    task.data_loaded = True
    task.filter_eval_splits([data.split])
    return task


def evaluate_with_mteb(
    model: Any,
    data: RetrievalData,
    k_values: Sequence[int],
    ignore_identical_ids: bool,
    batch_size: int,
    progress: bool,
) -> dict[str, float]:
    """``data`` scored by ``mteb.evaluate`` on :func:`mteb_local_task`: ``{"ndcg@10": ..., "recall@100": ...}`` for
    every metric and cut-off in ``k_values``, the caller's random states left as found."""
    mteb = require("mteb", "the mteb retrieval backend")
    with global_random_state_kept():
        task = mteb_local_task(data, ignore_identical_ids, k_values)
        result = mteb.evaluate(
            model,
            task,
            cache=None,
            overwrite_strategy="always",
            encode_kwargs={"batch_size": batch_size, "show_progress_bar": progress},
            show_progress_bar=progress,
        )
    scores = result.task_results[0].scores[data.split][0]
    return {
        f"{metric}@{k}": float(scores[f"{name}_at_{k}"])
        for metric, name in (("ndcg", "ndcg"), ("map", "map"), ("recall", "recall"), ("precision", "precision"))
        for k in k_values
    }
