"""In-domain retrieval on STS-B test (paper 000, Table 11, after DiffCSE): query ``s1`` of each gold-5.0 pair and find
``s2`` among every sentence of the test set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._format import SCALE_X100, markdown_table
from .encoding import encode_unique
from .loaders import PathLike, STSPairs, load_sts


@dataclass
class InDomainRetrievalResult:
    """Recall@k x100 (k -> recall) of finding ``s2`` from ``s1`` among all STS-B test sentences: ``n_queries`` pairs
    with the gold score (97 on STS-B test) among ``n_corpus`` sentence slots (2,758)."""

    recall: dict[int, float]
    n_queries: int
    n_corpus: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"scale": SCALE_X100, "recall": {f"R@{k}": v for k, v in self.recall.items()},
                "n_queries": self.n_queries, "n_corpus": self.n_corpus, "source": self.source}

    def to_markdown(self) -> str:
        return markdown_table(["", *(f"R@{k}" for k in self.recall)],
                              [[f"recall ({self.n_queries} queries)", *(f"{v:.2f}" for v in self.recall.values())]])

    def __str__(self) -> str:
        return "  ".join(f"R@{k} {v:.2f}" for k, v in self.recall.items()) + f"  ({self.n_queries} queries)"


def evaluate_in_domain_retrieval(model: Any, source: PathLike | STSPairs, gold_score: float = 5.0,
                                 k_values: Sequence[int] = (1, 5, 10), batch_size: int = 64,
                                 show_progress_bar: bool | None = None) -> InDomainRetrievalResult:
    """In-domain retrieval on STS-B test (paper 000, Table 11): query ``s1`` of each pair scored ``gold_score``, find
    ``s2`` among every sentence slot of the test set (both sides of every pair); ``source`` is anything
    :func:`~st_infocse.evaluation.load_sts` reads.

    A query never retrieves itself: its own slot and other slots holding exactly its text are left out of its
    ranking (a duplicate of the query is not a neighbour), unless that text is also the answer. A hit at k: a slot
    holding the answer's text ranks in the top k (ties count in its favour).
    """
    pairs = load_sts(source, task="STS-B", split="test")
    slots = [*pairs.sentences1, *pairs.sentences2]
    queries = [i for i, score in enumerate(pairs.scores) if score == gold_score]
    if not queries:
        raise ValueError(f"{pairs.source}: no pair has gold score {gold_score}")
    embeddings = encode_unique(model, slots, batch_size, show_progress_bar, normalize_embeddings=True)
    texts = np.asarray(slots, dtype=object)
    # a row per query: its text, its answer's, its similarity to every slot, the slots it is ranked among
    query_texts, answer_texts = texts[queries, None], texts[[len(pairs) + i for i in queries], None]
    scores = embeddings[queries] @ embeddings.T
    candidate = (texts != query_texts) | (query_texts == answer_texts)
    candidate[np.arange(len(queries)), queries] = False
    best_answer = np.where(candidate & (texts == answer_texts), scores, -np.inf).max(axis=1, keepdims=True)
    ranks = 1 + (candidate & (scores > best_answer)).sum(axis=1)
    recall = {k: 100.0 * int((ranks <= k).sum()) / len(queries) for k in k_values}
    return InDomainRetrievalResult(recall, len(queries), len(slots), pairs.source)
