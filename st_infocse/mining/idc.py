"""Intra-Document Clustering (IDC, paper 002 section 3.1): positive pairs mined from documents.

Per document: similarities between its sentences (cosine by default, or the inner product of
eq. 2 with ``similarity="dot"``), an edge (i, j) whenever ``j`` is among the top-K of ``i`` or ``i``
among the top-K of ``j`` (eq. 3), clusters = connected components, positives = every unordered
pair inside a cluster (eq. 4).

The expensive part is encoding. It happens once per shard of documents, in a single ``encode``
call over the shard's unique sentences sorted by length. The graph work (``mining/graph.py``) then
runs on all documents of a shard at once.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from datasets import Dataset, Features, Value, concatenate_datasets, load_from_disk
from tqdm.auto import tqdm

from st_infocse.evaluation import encode_unique
from st_infocse.mining.graph import (
    Similarity,
    check_similarity,
    cluster_documents,
    cluster_pairs,
)
from st_infocse.mining.report import MiningReport
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

# The ``model.encode`` arguments mining sets itself, and where each comes from; encode_kwargs may not override them.
_ENCODE_SETTINGS = {
    "batch_size": "mine_pairs' batch_size",
    "pool": "mine_pairs' pool",
    "normalize_embeddings": "from similarity: normalised for cosine, raw for dot",
    "convert_to_numpy": "always NumPy",
    "convert_to_tensor": "always NumPy",
}


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


def _output_arguments(
    *, shard_sentences: int = 50_000, output_dir: str | Path | None = None, show_progress_bar: bool | None = None
) -> None:
    """Declares the output arguments every pair builder takes (see :data:`READING_ARGUMENTS`)."""


#: The keyword arguments every pair builder takes, declared once: :func:`prepare_documents`' (how documents are
#: read, split and skipped) and the output's (shards, folder, progress bar).
_READING = [
    *(p for p in inspect.signature(prepare_documents).parameters.values() if p.kind is p.KEYWORD_ONLY),
    *inspect.signature(_output_arguments).parameters.values(),
]
READING_ARGUMENTS = tuple(p.name for p in _READING)


def _reads_documents(builder: Callable[..., MinedPairs]) -> Callable[..., MinedPairs]:
    """``builder`` (whose ``**reading`` takes the shared arguments) with the shared arguments in its signature:
    checked and defaulted at the call, so every builder reads documents alike."""
    own = inspect.signature(builder)
    signature = own.replace(
        parameters=[*(p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD), *_READING]
    )

    @functools.wraps(builder)
    def call(*args: Any, **kwargs: Any) -> MinedPairs:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{builder.__name__}() {exc}") from None
        bound.apply_defaults()
        reading = {name: bound.arguments.pop(name) for name in READING_ARGUMENTS}
        return builder(**bound.arguments, **reading)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


def _mine(
    documents: Iterable[Any],
    model: Any,
    method: str,
    reading: dict[str, Any],
    *,
    k: int = 1,
    threshold: float | None = None,
    tie_tolerance: float = 0.0,
    similarity: str | None = None,
    max_pairs_per_cluster: int | None = None,
    seed: int = 0,
    batch_size: int = 1,
    pool: Any = None,
    encode_kwargs: dict[str, Any] | None = None,
) -> MinedPairs:
    if max_pairs_per_cluster is not None and max_pairs_per_cluster < 1:
        raise ValueError(f"max_pairs_per_cluster must be >= 1 or None, got {max_pairs_per_cluster}")
    shard_sentences, output_dir = reading.pop("shard_sentences"), reading.pop("output_dir")
    show_progress_bar = reading.pop("show_progress_bar")
    if shard_sentences < 1:
        raise ValueError(f"shard_sentences must be >= 1, got {shard_sentences}")
    if method == "idc" and model is None:
        raise ValueError("IDC mining needs a model with an encode() method")
    if method == "idc":
        check_similarity(similarity)
    overridden = sorted(set(encode_kwargs or {}) & set(_ENCODE_SETTINGS))
    if overridden:
        raise ValueError(
            f"encode_kwargs sets {', '.join(overridden)}, which mining sets itself "
            f"({'; '.join(_ENCODE_SETTINGS[key] for key in overridden)}): pass it that way instead."
        )
    start = time.perf_counter()
    report = MiningReport(method=method)
    if method == "idc":
        report.similarity, report.k, report.threshold = similarity, k, threshold
    documents = _select_input_columns(documents, (reading["sentences_key"], reading["text_key"], reading["id_key"]))
    prepared = prepare_documents(documents, **reading)  # checks its arguments now, reads the documents lazily below
    writer = _ShardWriter(output_dir)
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
            emb = encode_unique(
                model,
                texts,
                batch_size,
                longest_first=True,
                **{
                    "show_progress_bar": False,
                    "normalize_embeddings": normalize,
                    "pool": pool,
                    **(encode_kwargs or {}),
                },
            )
            report.sentences_encoded += len(set(texts))
            t1 = time.perf_counter()
            labels, first = cluster_documents(emb, lengths, k, threshold, tie_tolerance, similarity)
            a, b, dropped = cluster_pairs(labels, first, doc_positions, doc_of, max_pairs_per_cluster, seed)
            report.encode_seconds += t1 - t0
            sizes = np.unique(first, return_counts=True)[1]
            report.clusters += len(sizes)
            report.singleton_clusters += int((sizes == 1).sum())
            report.pairs_dropped_by_cap += dropped
        elif method == "adjacent":  # adjacent sentences (CONPONO-like first annotation): no model involved
            t1 = time.perf_counter()
            a = np.flatnonzero(np.r_[doc_of[1:] == doc_of[:-1], False])
            b = a + 1
            labels = a - starts[doc_of[a]]  # pair index inside the document
        else:  # context (ICT): every sentence and the rest of its document, no model involved
            t1 = time.perf_counter()
            a = np.arange(len(texts))
            b = None
            labels = a - starts[doc_of]  # the sentence's position inside its document
        report.graph_seconds += time.perf_counter() - t1
        t2 = time.perf_counter()
        pair_docs = doc_of[a]
        report.documents_without_pairs += int((np.bincount(pair_docs, minlength=len(pending)) == 0).sum())
        cluster_ids = labels[a] if method == "idc" else labels
        writer.add(
            {
                "anchor": [texts[i] for i in a.tolist()],
                "positive": [texts[i] for i in b.tolist()]
                if b is not None
                else [
                    " ".join(texts[starts[d] : i] + texts[i + 1 : starts[d] + lengths[d]])
                    for i, d in zip(a.tolist(), doc_of.tolist(), strict=True)
                ],
                "doc_id": [pending[d].doc_id for d in pair_docs.tolist()],
                "cluster_id": cluster_ids.tolist(),
            }
        )
        report.pairs += len(a)
        report.output_seconds += time.perf_counter() - t2
        pending, positions, pending_sentences = [], [], 0

    t_prepare = time.perf_counter()
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


@_reads_documents
def mine_pairs(
    documents: Iterable[Any],
    model: Any,
    *,
    k: int = 1,
    threshold: float | None = None,
    tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine",
    max_pairs_per_cluster: int | None = None,
    seed: int = 0,
    batch_size: int = 64,
    pool: Any = None,
    encode_kwargs: dict[str, Any] | None = None,
    **reading: Any,
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
        model: A ``SentenceTransformer`` (anything with a compatible ``encode``). Only its embeddings' neighbours
            matter, so an annotator on a faster runtime mines the same pairs where it encodes as fp32 torch does:
            ``SentenceTransformer(path, backend="onnx")`` or ``backend="openvino"`` (``model_kwargs={"file_name":
            ...}`` picks an exported file). An int8 copy encodes faster, and moves neighbours: int8 weights alone
            (OpenVINO's ``model_kwargs={"load_in_8bit": True}``) few, int8 activations (``quantize_dynamic``) many.
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
        min_sentences: Documents with fewer usable sentences are skipped (at least 2; a smaller
            value is refused).
        max_sentences: Documents with more sentences are skipped (``None``: no cap).
        deduplicate: Collapse identical sentences inside a document before clustering.
        max_pairs_per_cluster: Keep at most this many pairs per cluster (a seeded sample).
        seed: Seed for that sample; the same seed and data give the same pairs. Mining draws
            nothing else, so without ``max_pairs_per_cluster`` the seed has nothing to choose
            (every pair is kept whatever its value).
        batch_size: Encoding batch size.
        shard_sentences: Sentences per encode call; bounds memory.
        pool: A pool from ``model.start_multi_process_pool()`` for multi-process encoding.
        encode_kwargs: Extra keyword arguments for ``model.encode`` (e.g. ``{"device": [...]}``);
            the ones mining sets itself (``batch_size``, ``pool``, ``normalize_embeddings``,
            ``convert_to_numpy``, ``convert_to_tensor``) are refused with a ``ValueError``.
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
        "idc",
        reading,
        k=k,
        threshold=threshold,
        tie_tolerance=tie_tolerance,
        similarity=similarity,
        max_pairs_per_cluster=max_pairs_per_cluster,
        seed=seed,
        batch_size=batch_size,
        pool=pool,
        encode_kwargs=encode_kwargs,
    )


_READING_ARGS = """
    Args:
        documents: As for :func:`mine_pairs`.
        min_sentences: As for :func:`mine_pairs`{min_note}.
        max_sentences, deduplicate, output_dir, show_progress_bar, language, sentences_key, text_key, id_key: As for
            :func:`mine_pairs`.
        shard_sentences: Sentences per output shard.

    Returns:
        :class:`MinedPairs` with the same columns as :func:`mine_pairs`.
"""


def _structure_pairs(method: str, summary: str, example: str, min_note: str = "") -> Any:
    """A pair builder from document structure alone (no model, no clusters): one signature for both such builders,
    documents read, split and skipped exactly as :func:`mine_pairs` reads them."""

    def build(documents: Iterable[Any], **reading: Any) -> MinedPairs:
        return _mine(documents, None, method, reading)

    build.__name__ = build.__qualname__ = f"{method}_pairs"
    build.__doc__ = summary + _READING_ARGS.format(min_note=min_note) + example
    return _reads_documents(build)


adjacent_pairs = _structure_pairs(
    "adjacent",
    """Adjacent-sentence pairs ``(s_i, s_i+1)`` (CONPONO-like first annotation, no model needed).

    Documents are read, split and skipped exactly as in :func:`mine_pairs` (duplicates dropped before neighbours
    are paired); ``cluster_id`` is the pair's position ``i`` inside its document.
""",
    """
    Example:
        >>> pairs, report = adjacent_pairs([["A.", "B.", "C."], ["Only one."]])
        >>> list(zip(pairs["anchor"], pairs["positive"])), report.skipped["too_few_sentences"]
        ([('A.', 'B.'), ('B.', 'C.')], 1)
""",
)

context_pairs = _structure_pairs(
    "context",
    """Inverse cloze task pairs ``(s_i, the rest of its document)`` for every sentence (ICT, Lee et al. 2019; paper
    002's strongest context baseline). No model is needed.

    Documents are read, split and skipped exactly as in :func:`mine_pairs`; the rest of a document is its other
    sentences joined by spaces, in order; ``cluster_id`` is the sentence's position ``i``. Train on the text columns
    with :meth:`DocumentAwareBatchSampler.for_pairs`, so that no two pairs of one document share a batch (each
    would be the other's false negative).
""",
    """
    Example:
        >>> pairs, report = context_pairs([["A.", "B.", "C."], ["Only one."]])
        >>> list(zip(pairs["anchor"], pairs["positive"])), report.skipped["too_few_sentences"]
        ([('A.', 'B. C.'), ('B.', 'A. C.'), ('C.', 'A. B.')], 1)
""",
    min_note=" (at least 2: a lone sentence has no rest)",
)
