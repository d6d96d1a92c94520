"""The graph step of Intra-Document Clustering (paper 002 eq. 2-4): similarities inside each document, top-K edges,
connected components and the pairs inside each cluster. Documents of equal length share one batched matmul, and one
``connected_components`` call runs on a shard's block-diagonal graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from st_infocse.files import check_at_least, check_choice

# Bound on the floats held by one stacked group of equal-length documents (~32 MB in float32).
_MAX_GROUP_ELEMENTS = 1 << 23

# Edge scores: "cosine" (scale-invariant) or "dot", the raw inner product of paper 002 eq. 2.
Similarity = Literal["cosine", "dot"]


def _prepare(embeddings: np.ndarray, similarity: str) -> np.ndarray:
    """Checked float32 embeddings, unit rows for cosine and untouched for dot."""
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (sentences x dim), got shape {embeddings.shape}")
    if not np.isfinite(embeddings).all():
        bad = int((~np.isfinite(embeddings).all(axis=1)).sum())
        raise ValueError(f"{bad} sentence embedding(s) contain NaN or inf; the model's output is broken")
    if similarity == "dot":
        return embeddings
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    # A zero vector stays zero (cosine 0 with everything) instead of dividing by zero.
    return embeddings / np.maximum(norms, 1e-12)


def _edges_for_group(
    emb: np.ndarray, k: int, threshold: float | None, tie_tolerance: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-K edges for C documents of equal length n, given ``emb`` of shape (C, n, d) as scored."""
    n = emb.shape[1]
    sims = emb @ emb.transpose(0, 2, 1)
    diag = np.arange(n)
    sims[:, diag, diag] = -np.inf
    k_eff = min(k, n - 1)
    # The k-th largest similarity of each row; every value tied with it is also "in the top-K"
    # (eq. 3 is a statement about values), which makes the result independent of sentence order.
    kth = np.partition(sims, n - k_eff, axis=-1)[..., n - k_eff]
    # Relative above magnitude 1: inner products can be large, and float32 rounding grows with them.
    # Cosine scores never exceed 1, so there the tolerance stays absolute.
    keep = sims >= (kth - tie_tolerance * np.maximum(1.0, np.abs(kth)))[..., None]
    if threshold is not None:
        keep &= sims >= threshold
    return np.nonzero(keep)


def cluster_documents(
    embeddings: np.ndarray, lengths: Iterable[int], k: int = 1, threshold: float | None = None,
    tie_tolerance: float = 1e-6, similarity: Similarity = "cosine",
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster the sentences of many documents at once (IDC partition-based clustering).

    ``embeddings`` (``(total_sentences, dim)``) hold the documents one after another, ``lengths[d]`` sentences
    each; the other arguments are :func:`~st_infocse.mining.mine_pairs`'. Returns ``(labels, first)``: ``labels[s]``,
    the cluster of sentence ``s`` numbered from 0 inside its document; ``first[s]``, the global index of that
    cluster's first sentence (a shard-wide key).

    Example:
        >>> emb = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [1, 0], [0, 1]])
        >>> labels, first = cluster_documents(emb, lengths=[4, 2])
        >>> labels.tolist(), first.tolist()
        ([0, 0, 1, 1, 0, 0], [0, 0, 2, 2, 4, 4])
    """
    check_at_least("k", k)
    check_choice("similarity", similarity, Similarity)
    lengths = np.asarray(list(lengths), dtype=np.int64)
    if (lengths < 1).any():
        raise ValueError("every document needs at least one sentence")
    emb = _prepare(embeddings, similarity)
    if emb.shape[0] != lengths.sum():
        raise ValueError(f"{emb.shape[0]} embeddings for documents totalling {lengths.sum()} sentences")
    total = emb.shape[0]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    rows, cols = [], []
    for n in np.unique(lengths):
        if n < 2:
            continue
        docs = np.flatnonzero(lengths == n)
        chunk = max(1, _MAX_GROUP_ELEMENTS // (int(n) * max(int(n), emb.shape[1])))
        for begin in range(0, len(docs), chunk):
            base = starts[docs[begin : begin + chunk]]
            index = base[:, None] + np.arange(n)
            c, i, j = _edges_for_group(emb[index], k, threshold, tie_tolerance)
            rows.append(base[c] + i)
            cols.append(base[c] + j)
    rows_a = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    cols_a = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    graph = csr_array((np.ones(len(rows_a), dtype=np.int8), (rows_a, cols_a)), shape=(total, total))
    # "weak" connectivity on the directed top-K graph = the union of both directions of eq. 3.
    n_components, component = connected_components(graph, directed=True, connection="weak")
    first = np.full(n_components, total, dtype=np.int64)
    np.minimum.at(first, component, np.arange(total))
    # Number clusters inside each document by their first sentence.
    order = np.argsort(first, kind="stable")
    doc_of = np.repeat(np.arange(len(lengths)), lengths)
    doc_sorted = doc_of[first[order]]
    local = np.empty(n_components, dtype=np.int64)
    local[order] = np.arange(n_components) - np.searchsorted(doc_sorted, doc_sorted, side="left")
    return local[component], first[component]


def cluster_sentences(
    embeddings: np.ndarray, k: int = 1, threshold: float | None = None, tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine",
) -> np.ndarray:
    """Cluster labels of one document's ``(sentences, dim)`` embeddings, numbered from 0 in order of first
    appearance; the other arguments are :func:`cluster_documents`'.

    Example:
        >>> cluster_sentences(np.array([[1, 0], [0, 1], [1, 0.1], [0.1, 1]])).tolist()
        [0, 1, 0, 1]
    """
    if not len(embeddings):  # no sentence: no document, rather than an empty one ([] has no width to check)
        return cluster_documents(np.zeros((0, 0)), [], k, threshold, tie_tolerance, similarity)[0]
    return cluster_documents(embeddings, [len(embeddings)], k, threshold, tie_tolerance, similarity)[0]


def cluster_pairs(
    labels: np.ndarray, first: np.ndarray, doc_positions: np.ndarray, doc_of: np.ndarray,
    max_pairs_per_cluster: int | None, seed: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """All unordered pairs (a < b, global sentence indices) inside each cluster, capped per cluster."""
    order = np.lexsort((np.arange(len(first)), first))  # members grouped by cluster, in document order
    keys, block_start, sizes = np.unique(first[order], return_index=True, return_counts=True)
    a_parts, b_parts, dropped = [], [], 0
    for m in np.unique(sizes):
        if m < 2:
            continue
        blocks = np.flatnonzero(sizes == m)
        members = order[block_start[blocks][:, None] + np.arange(m)]  # (clusters, m)
        iu, ju = np.triu_indices(m, 1)
        if max_pairs_per_cluster is None or len(iu) <= max_pairs_per_cluster:
            a_parts.append(members[:, iu].ravel())
            b_parts.append(members[:, ju].ravel())
            continue
        dropped += (len(iu) - max_pairs_per_cluster) * len(blocks)
        for row in members:
            # Seeded by (seed, document position, cluster) so the sample does not depend on shards.
            doc = doc_of[row[0]]
            rng = np.random.default_rng([seed, int(doc_positions[doc]), int(labels[row[0]])])
            pick = np.sort(rng.choice(len(iu), size=max_pairs_per_cluster, replace=False))
            a_parts.append(row[iu[pick]])
            b_parts.append(row[ju[pick]])
    if not a_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), dropped
    a, b = np.concatenate(a_parts), np.concatenate(b_parts)
    order = np.lexsort((b, a, first[a]))
    return a[order], b[order], dropped
