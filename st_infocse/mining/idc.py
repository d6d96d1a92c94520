"""Intra-Document Clustering (IDC, paper 002 section 3.1): positive pairs mined from documents.

Per document: similarities between its sentences (cosine by default, or the inner product of
eq. 2 with ``similarity="dot"``), an edge (i, j) whenever ``j`` is among the top-K of ``i`` or ``i``
among the top-K of ``j`` (eq. 3), clusters = connected components, positives = every unordered
pair inside a cluster (eq. 4).

The expensive part is encoding. It happens once per shard of documents, in a single ``encode``
call over the shard's unique sentences sorted by length. The graph work then runs on all
documents of a shard at once: documents of equal length are stacked and their similarity
matrices computed in one batched matmul, and a single ``connected_components`` call runs on the
shard's block-diagonal graph (blocks never connect, so components stay inside documents).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from datasets import Dataset, Features, Value, concatenate_datasets, load_from_disk
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components
from tqdm.auto import tqdm

from st_infocse.mining.sentences import SKIP_REASONS, PreparedDocument, Skipped, prepare_documents

logger = logging.getLogger(__name__)

PAIR_FEATURES = Features(
    {
        "anchor": Value("string"),
        "positive": Value("string"),
        "doc_id": Value("string"),
        "cluster_id": Value("int64"),
    }
)

# Bound on the floats held by one stacked group of equal-length documents (~32 MB in float32).
_MAX_GROUP_ELEMENTS = 1 << 23

# Edge scores: "cosine" (scale-invariant) or "dot", the raw inner product of paper 002 eq. 2.
Similarity = Literal["cosine", "dot"]
SIMILARITIES: tuple[str, ...] = ("cosine", "dot")


def check_similarity(similarity: str) -> str:
    """Return ``similarity`` if it is one of :data:`SIMILARITIES`, else raise a ``ValueError`` naming them."""
    if similarity not in SIMILARITIES:
        choices = " or ".join(repr(c) for c in SIMILARITIES)
        raise ValueError(f"similarity must be {choices}, got {similarity!r}")
    return similarity


# --------------------------------------------------------------------------------------------
# Pure graph part: embeddings in, cluster labels out.
# --------------------------------------------------------------------------------------------


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
    embeddings: np.ndarray,
    lengths: Iterable[int],
    k: int = 1,
    threshold: float | None = None,
    tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine",
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster the sentences of many documents at once (IDC partition-based clustering).

    Args:
        embeddings: ``(total_sentences, dim)`` sentence embeddings, documents stored one after
            another in the order given by ``lengths``. With cosine they need not be normalised;
            with dot their norms are part of the score.
        lengths: Number of sentences of each document (each >= 1).
        k: Keep edge (i, j) when j is among the top-``k`` most similar sentences of i, or i of j.
        threshold: Optional floor on the edge score in use (cosine in [-1, 1], or the raw inner
            product for dot): edges scoring below it are dropped, so a sentence whose best match
            is weak stays alone.
        tie_tolerance: Scores within this distance of the k-th largest one count as tied with it
            and are kept too (relative to that score when its magnitude exceeds 1).
        similarity: ``"cosine"`` (default; scale-invariant) or ``"dot"`` (inner product, paper 002
            eq. 2: a sentence with a large norm can become the top-1 of many others). For models
            that end with a ``Normalize`` module the two are the same.

    Returns:
        ``(labels, first)``: ``labels[s]`` is the cluster of sentence ``s`` numbered from 0 inside
        its document in order of each cluster's first sentence; ``first[s]`` is the global index of
        the first sentence of that cluster (a shard-wide cluster key).

    Example:
        >>> emb = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [1, 0], [0, 1]])
        >>> labels, first = cluster_documents(emb, lengths=[4, 2])
        >>> labels.tolist(), first.tolist()
        ([0, 0, 1, 1, 0, 0], [0, 0, 2, 2, 4, 4])
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    check_similarity(similarity)
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
    embeddings: np.ndarray,
    k: int = 1,
    threshold: float | None = None,
    tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine",
) -> np.ndarray:
    """Cluster one document's sentences; see :func:`cluster_documents` for the arguments.

    Args:
        embeddings: ``(sentences, dim)`` embeddings of one document.
        k: Top-K of eq. 3.
        threshold: Optional floor on the edge score (in the units of ``similarity``).
        tie_tolerance: Scores this close to the k-th largest count as ties.
        similarity: ``"cosine"`` or ``"dot"`` (inner product, eq. 2).

    Returns:
        Cluster label per sentence, numbered from 0 in order of first appearance.

    Example:
        >>> cluster_sentences(np.array([[1, 0], [0, 1], [1, 0.1], [0.1, 1]])).tolist()
        [0, 1, 0, 1]
    """
    embeddings = np.asarray(embeddings)
    check_similarity(similarity)
    if len(embeddings) == 0:
        return np.zeros(0, dtype=np.int64)
    labels, _ = cluster_documents(embeddings, [len(embeddings)], k, threshold, tie_tolerance, similarity)
    return labels


def _cluster_pairs(
    labels: np.ndarray,
    first: np.ndarray,
    doc_positions: np.ndarray,
    doc_of: np.ndarray,
    max_pairs_per_cluster: int | None,
    seed: int,
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


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


@dataclass
class MiningReport:
    """What one mining pass did. ``documents_seen == documents_used + sum(skipped.values())``.

    Attributes:
        method: ``"idc"`` or ``"adjacent"``.
        similarity: Edge score used (``"cosine"`` or ``"dot"``); ``None`` for adjacent pairs.
        k: Top-K of eq. 3; ``None`` for adjacent pairs.
        threshold: Floor on the edge score (in the units of ``similarity``), or ``None``.
        documents_seen: Input items read.
        documents_used: Documents that entered the graph step.
        skipped: Skipped documents by reason (``not_text``, ``empty``, ``too_few_sentences``,
            ``too_many_sentences``).
        skipped_examples: Up to five ``(doc_id, reason, detail)`` per reason, for debugging.
        sentences: Sentences of the used documents (after cleaning and deduplication).
        sentences_encoded: Distinct sentence texts encoded (identical texts are encoded once).
        duplicate_sentences_removed: Repeated sentences dropped inside documents.
        empty_sentences_removed: Empty sentences dropped inside used documents.
        clusters: Clusters found, including single-sentence ones.
        singleton_clusters: Clusters of one sentence (they give no pair).
        documents_without_pairs: Used documents that gave no pair (only possible with a threshold).
        pairs: Pairs in the output.
        pairs_dropped_by_cap: Pairs not emitted because of ``max_pairs_per_cluster``.
        shards: Encode calls made.
        prepare_seconds / encode_seconds / graph_seconds / output_seconds / total_seconds:
            Wall-clock split: reading and splitting, ``model.encode``, clustering and pair
            enumeration, building the Arrow dataset, everything.
    """

    method: str = "idc"
    similarity: str | None = None
    k: int | None = None
    threshold: float | None = None
    documents_seen: int = 0
    documents_used: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    sentences: int = 0
    sentences_encoded: int = 0
    duplicate_sentences_removed: int = 0
    empty_sentences_removed: int = 0
    clusters: int = 0
    singleton_clusters: int = 0
    documents_without_pairs: int = 0
    pairs: int = 0
    pairs_dropped_by_cap: int = 0
    shards: int = 0
    prepare_seconds: float = 0.0
    encode_seconds: float = 0.0
    graph_seconds: float = 0.0
    output_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def documents_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def pairs_per_document(self) -> float:
        return self.pairs / self.documents_used if self.documents_used else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field plus the derived counts."""
        out = asdict(self)
        out["documents_skipped"] = self.documents_skipped
        out["pairs_per_document"] = self.pairs_per_document
        return out

    def summary(self) -> str:
        """One line for logs."""
        skipped = ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items()) if v) or "none"
        setting = f" ({self.similarity}, k={self.k}, threshold={self.threshold})" if self.method == "idc" else ""
        return (
            f"{self.method}{setting}: {self.documents_seen} documents read, {self.documents_used} used, skipped: {skipped}; "
            f"{self.sentences} sentences, {self.clusters} clusters, {self.pairs} pairs "
            f"({self.pairs_per_document:.2f}/document, {self.pairs_dropped_by_cap} over the cap); "
            f"encode {self.encode_seconds:.1f}s, graph {self.graph_seconds:.2f}s, total {self.total_seconds:.1f}s"
        )

    def _skip(self, item: Skipped) -> None:
        self.skipped[item.reason] = self.skipped.get(item.reason, 0) + 1
        examples = self.skipped_examples.setdefault(item.reason, [])
        if len(examples) < 5:
            examples.append((item.doc_id, item.detail))


class MinedPairs(NamedTuple):
    """``pairs``: ``datasets.Dataset`` with ``anchor``, ``positive``, ``doc_id``, ``cluster_id``; ``report``."""

    pairs: Dataset
    report: MiningReport


# --------------------------------------------------------------------------------------------
# Mining over a corpus
# --------------------------------------------------------------------------------------------


def _select_input_columns(documents: Any, keys: tuple[str, str, str]) -> Any:
    # Reading a Dataset row by row converts every column; keep only the ones mining reads.
    column_names = getattr(documents, "column_names", None)
    if isinstance(column_names, list) and hasattr(documents, "select_columns"):
        sentences_key, text_key, id_key = keys
        wanted = [c for c in keys if c in column_names]
        if not any(c in column_names for c in (sentences_key, text_key)):
            raise ValueError(
                f"the documents dataset has neither a {sentences_key!r} nor a {text_key!r} column "
                f"(columns: {column_names})"
            )
        return documents.select_columns(wanted)
    return documents


class _ShardWriter:
    """Collects per-shard pair datasets in memory, or saves each to ``output_dir`` (memory-mapped)."""

    def __init__(self, output_dir: str | Path | None) -> None:
        self.output_dir = None if output_dir is None else Path(output_dir)
        if self.output_dir is not None:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            if any(self.output_dir.glob("shard-*")):
                raise FileExistsError(f"{self.output_dir} already holds shard-* folders; use an empty folder")
        self.parts: list[Dataset] = []

    def add(self, columns: dict[str, list[Any]]) -> None:
        if not columns["anchor"]:
            return
        part = Dataset.from_dict(columns, features=PAIR_FEATURES)
        if self.output_dir is not None:
            path = self.output_dir / f"shard-{len(self.parts):05d}"
            part.save_to_disk(str(path))
            part = load_from_disk(str(path))
        self.parts.append(part)

    def result(self) -> Dataset:
        if not self.parts:
            return Dataset.from_dict({name: [] for name in PAIR_FEATURES}, features=PAIR_FEATURES)
        return self.parts[0] if len(self.parts) == 1 else concatenate_datasets(self.parts)


def _encode_unique(
    model: Any, texts: list[str], batch_size: int, pool: Any, encode_kwargs: dict, normalize: bool = True
) -> np.ndarray:
    """Encode each distinct text once, longest first, and return one row per input text."""
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    unique = list(index)
    # encode() sorts by length itself, but a multi-process pool splits the input into chunks
    # before sorting: pre-sorting keeps every chunk's padding short.
    by_length = np.argsort([-len(t) for t in unique], kind="stable")
    kwargs = {"batch_size": batch_size, "convert_to_numpy": True, "normalize_embeddings": normalize}
    kwargs.update(encode_kwargs)
    if pool is not None:
        kwargs["pool"] = pool
    encoded = np.asarray(model.encode([unique[i] for i in by_length], **kwargs), dtype=np.float32)
    if encoded.ndim != 2 or encoded.shape[0] != len(unique):
        raise ValueError(f"model.encode returned shape {encoded.shape} for {len(unique)} sentences")
    embeddings = np.empty_like(encoded)
    embeddings[by_length] = encoded
    return embeddings[inverse]


def _mine(
    documents: Iterable[Any],
    model: Any,
    *,
    method: str,
    k: int,
    threshold: float | None,
    tie_tolerance: float,
    similarity: str | None,
    min_sentences: int,
    max_sentences: int | None,
    deduplicate: bool,
    max_pairs_per_cluster: int | None,
    seed: int,
    batch_size: int,
    shard_sentences: int,
    pool: Any,
    encode_kwargs: dict[str, Any] | None,
    output_dir: str | Path | None,
    show_progress_bar: bool | None,
    language: str,
    sentences_key: str,
    text_key: str,
    id_key: str,
) -> MinedPairs:
    if max_pairs_per_cluster is not None and max_pairs_per_cluster < 1:
        raise ValueError(f"max_pairs_per_cluster must be >= 1 or None, got {max_pairs_per_cluster}")
    if shard_sentences < 1:
        raise ValueError(f"shard_sentences must be >= 1, got {shard_sentences}")
    if method == "idc" and model is None:
        raise ValueError("IDC mining needs a model with an encode() method")
    if method == "idc":
        check_similarity(similarity)
    start = time.perf_counter()
    report = MiningReport(method=method)
    if method == "idc":
        report.similarity, report.k, report.threshold = similarity, k, threshold
    writer = _ShardWriter(output_dir)
    documents = _select_input_columns(documents, (sentences_key, text_key, id_key))
    total = len(documents) if hasattr(documents, "__len__") else None
    if show_progress_bar is None:
        show_progress_bar = logger.getEffectiveLevel() <= logging.INFO
    pending: list[PreparedDocument] = []
    positions: list[int] = []
    pending_sentences = 0

    def flush() -> None:
        nonlocal pending, positions, pending_sentences
        if not pending:
            return
        report.shards += 1
        lengths = np.array([len(d.sentences) for d in pending], dtype=np.int64)
        texts = [s for d in pending for s in d.sentences]
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        doc_of = np.repeat(np.arange(len(pending)), lengths)
        doc_positions = np.asarray(positions, dtype=np.int64)
        if method == "idc":
            t0 = time.perf_counter()
            # Dot needs the model's own norms, so the encoder must not normalise for it.
            normalize = similarity == "cosine"
            emb = _encode_unique(model, texts, batch_size, pool, encode_kwargs or {}, normalize)
            report.sentences_encoded += len(set(texts))
            t1 = time.perf_counter()
            labels, first = cluster_documents(emb, lengths, k, threshold, tie_tolerance, similarity)
            a, b, dropped = _cluster_pairs(labels, first, doc_positions, doc_of, max_pairs_per_cluster, seed)
            report.encode_seconds += t1 - t0
            sizes = np.unique(first, return_counts=True)[1]
            report.clusters += len(sizes)
            report.singleton_clusters += int((sizes == 1).sum())
            report.pairs_dropped_by_cap += dropped
        else:  # adjacent sentences (CONPONO-like first annotation): no model involved
            t1 = time.perf_counter()
            a = np.flatnonzero(np.r_[doc_of[1:] == doc_of[:-1], False])
            b = a + 1
            labels = a - starts[doc_of[a]]  # pair index inside the document
        report.graph_seconds += time.perf_counter() - t1
        t2 = time.perf_counter()
        pair_docs = doc_of[a]
        report.documents_without_pairs += int((np.bincount(pair_docs, minlength=len(pending)) == 0).sum())
        cluster_ids = labels[a] if method == "idc" else labels
        writer.add(
            {
                "anchor": [texts[i] for i in a.tolist()],
                "positive": [texts[i] for i in b.tolist()],
                "doc_id": [pending[d].doc_id for d in pair_docs.tolist()],
                "cluster_id": cluster_ids.tolist(),
            }
        )
        report.pairs += len(a)
        report.output_seconds += time.perf_counter() - t2
        pending, positions, pending_sentences = [], [], 0

    t_prepare = time.perf_counter()
    prepared = prepare_documents(
        documents,
        min_sentences=min_sentences,
        max_sentences=max_sentences,
        deduplicate=deduplicate,
        language=language,
        sentences_key=sentences_key,
        text_key=text_key,
        id_key=id_key,
    )
    with tqdm(total=total, desc=f"Mining pairs ({method})", unit="doc", disable=not show_progress_bar) as bar:
        for position, item in enumerate(prepared):
            report.documents_seen += 1
            bar.update(1)
            if isinstance(item, Skipped):
                report._skip(item)
                continue
            report.documents_used += 1
            report.sentences += len(item.sentences)
            report.duplicate_sentences_removed += item.duplicates_removed
            report.empty_sentences_removed += item.empty_removed
            pending.append(item)
            positions.append(position)
            pending_sentences += len(item.sentences)
            if pending_sentences >= shard_sentences:
                report.prepare_seconds += time.perf_counter() - t_prepare
                flush()
                t_prepare = time.perf_counter()
        report.prepare_seconds += time.perf_counter() - t_prepare
        flush()
    t3 = time.perf_counter()
    pairs = writer.result()
    report.output_seconds += time.perf_counter() - t3
    report.total_seconds = time.perf_counter() - start
    for reason in SKIP_REASONS:
        report.skipped.setdefault(reason, 0)
    if report.documents_skipped:
        logger.warning(
            "skipped %d of %d documents: %s",
            report.documents_skipped,
            report.documents_seen,
            ", ".join(f"{r}={n}" for r, n in report.skipped.items() if n),
        )
    if report.documents_seen and not report.pairs:
        logger.warning("no pairs were mined from %d documents", report.documents_seen)
    logger.info(report.summary())
    return MinedPairs(pairs, report)


def mine_pairs(
    documents: Iterable[Any],
    model: Any,
    *,
    k: int = 1,
    threshold: float | None = None,
    tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine",
    min_sentences: int = 2,
    max_sentences: int | None = 1000,
    deduplicate: bool = True,
    max_pairs_per_cluster: int | None = None,
    seed: int = 0,
    batch_size: int = 64,
    shard_sentences: int = 50_000,
    pool: Any = None,
    encode_kwargs: dict[str, Any] | None = None,
    output_dir: str | Path | None = None,
    show_progress_bar: bool | None = None,
    language: str = "en",
    sentences_key: str = "sentences",
    text_key: str = "text",
    id_key: str = "id",
) -> MinedPairs:
    """Mine IDC positive pairs from documents with the model as it is now.

    Documents are read lazily and processed in shards of about ``shard_sentences`` sentences: one
    ``model.encode`` call per shard (distinct sentences, longest first), then batched graph work
    over the whole shard. Pairs of a shard are turned into Arrow right away (and written to
    ``output_dir`` when given), so corpora larger than memory can be mined.

    Args:
        documents: Iterable of documents (lists of sentences, raw texts, or mappings with
            ``sentences``/``text`` and ``id``), a ``datasets.Dataset`` or a streaming
            ``datasets.IterableDataset`` with those columns.
        model: A ``SentenceTransformer`` (anything with a compatible ``encode``).
        k: Top-K of eq. 3 (paper default 1).
        threshold: Optional floor on the edge score in use (cosine, or the raw inner product for
            ``similarity="dot"``, whose scale depends on the model); sentences with no neighbour
            above it stay alone.
        tie_tolerance: Scores this close to a row's k-th largest are ties and kept (relative to
            that score when its magnitude exceeds 1).
        similarity: Edge score: ``"cosine"`` (default, scale-invariant) or ``"dot"`` (inner
            product of the un-normalised embeddings, paper 002 eq. 2; a sentence with a large
            norm can become the top-1 of many others). Identical for models ending in
            ``Normalize``. Recorded in the report.
        min_sentences: Documents with fewer usable sentences are skipped (at least 2).
        max_sentences: Documents with more sentences are skipped (``None``: no cap).
        deduplicate: Collapse identical sentences inside a document before clustering.
        max_pairs_per_cluster: Keep at most this many pairs per cluster (a seeded sample).
        seed: Seed for that sample; the same seed and data give the same pairs.
        batch_size: Encoding batch size.
        shard_sentences: Sentences per encode call; bounds memory.
        pool: A pool from ``model.start_multi_process_pool()`` for multi-process encoding.
        encode_kwargs: Extra keyword arguments for ``model.encode`` (e.g. ``{"device": [...]}``).
        output_dir: Folder for per-shard Arrow files; the result is memory-mapped from there.
        show_progress_bar: Show a progress bar over documents (default: when logging at INFO).
        language: Language for splitting raw text.
        sentences_key: Field/column with a sentence list.
        text_key: Field/column with raw text.
        id_key: Field/column with the document id.

    Returns:
        :class:`MinedPairs` ``(pairs, report)``; ``pairs`` has ``anchor``, ``positive`` (earlier
        and later sentence of the pair), ``doc_id`` (str) and ``cluster_id`` (per document).
        Train on ``pairs.select_columns(["anchor", "positive"])``: the trainer would tokenize the
        id columns as text.

    Example:
        >>> from sentence_transformers import SentenceTransformer
        >>> model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> docs = [["The cat sat.", "A cat was sitting.", "Stocks fell.", "Markets dropped."]]
        >>> pairs, report = mine_pairs(docs, model)  # doctest: +SKIP
        >>> list(zip(pairs["anchor"], pairs["positive"]))  # doctest: +SKIP
        [('The cat sat.', 'A cat was sitting.'), ('Stocks fell.', 'Markets dropped.')]
    """
    return _mine(
        documents,
        model,
        method="idc",
        k=k,
        threshold=threshold,
        tie_tolerance=tie_tolerance,
        similarity=similarity,
        min_sentences=min_sentences,
        max_sentences=max_sentences,
        deduplicate=deduplicate,
        max_pairs_per_cluster=max_pairs_per_cluster,
        seed=seed,
        batch_size=batch_size,
        shard_sentences=shard_sentences,
        pool=pool,
        encode_kwargs=encode_kwargs,
        output_dir=output_dir,
        show_progress_bar=show_progress_bar,
        language=language,
        sentences_key=sentences_key,
        text_key=text_key,
        id_key=id_key,
    )


def adjacent_pairs(
    documents: Iterable[Any],
    *,
    min_sentences: int = 2,
    max_sentences: int | None = 1000,
    deduplicate: bool = True,
    shard_sentences: int = 50_000,
    output_dir: str | Path | None = None,
    show_progress_bar: bool | None = None,
    language: str = "en",
    sentences_key: str = "sentences",
    text_key: str = "text",
    id_key: str = "id",
) -> MinedPairs:
    """Adjacent-sentence pairs ``(s_i, s_i+1)`` (CONPONO-like first annotation, no model needed).

    Documents are read, split and skipped exactly as in :func:`mine_pairs`; ``cluster_id`` is
    the pair's position ``i`` inside its document.

    Args:
        documents: As for :func:`mine_pairs`.
        min_sentences: As for :func:`mine_pairs`.
        max_sentences: As for :func:`mine_pairs`.
        deduplicate: As for :func:`mine_pairs` (runs before neighbours are paired).
        shard_sentences: Sentences per output shard.
        output_dir: As for :func:`mine_pairs`.
        show_progress_bar: As for :func:`mine_pairs`.
        language: As for :func:`mine_pairs`.
        sentences_key: As for :func:`mine_pairs`.
        text_key: As for :func:`mine_pairs`.
        id_key: As for :func:`mine_pairs`.

    Returns:
        :class:`MinedPairs` with the same columns as :func:`mine_pairs`.

    Example:
        >>> pairs, report = adjacent_pairs([["A.", "B.", "C."], ["Only one."]])
        >>> list(zip(pairs["anchor"], pairs["positive"])), report.skipped["too_few_sentences"]
        ([('A.', 'B.'), ('B.', 'C.')], 1)
    """
    return _mine(
        documents,
        None,
        method="adjacent",
        k=1,
        threshold=None,
        tie_tolerance=0.0,
        similarity=None,
        min_sentences=min_sentences,
        max_sentences=max_sentences,
        deduplicate=deduplicate,
        max_pairs_per_cluster=None,
        seed=0,
        batch_size=1,
        shard_sentences=shard_sentences,
        pool=None,
        encode_kwargs=None,
        output_dir=output_dir,
        show_progress_bar=show_progress_bar,
        language=language,
        sentences_key=sentences_key,
        text_key=text_key,
        id_key=id_key,
    )
