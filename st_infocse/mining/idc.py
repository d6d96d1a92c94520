"""Intra-Document Clustering (IDC, paper 002 section 3.1): positive pairs mined from documents.

Per document: sentence similarities (cosine, or eq. 2's inner product), an edge (i, j) when either is among the
other's top-K (eq. 3), clusters = connected components, positives = every pair inside a cluster (eq. 4). Each shard
of documents is encoded in one ``encode`` call over its distinct sentences; the graph step (:mod:`.graph`) then runs
on the whole shard.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import torch
from datasets import Dataset, Features, Value, concatenate_datasets, load_from_disk
from tqdm.auto import tqdm

from st_infocse.evaluation import encode_unique
from st_infocse.files import check_at_least, check_choice
from st_infocse.mining.documents import check_document_columns
from st_infocse.mining.graph import Similarity, cluster_documents, cluster_pairs
from st_infocse.mining.report import MiningReport, skip_counts
from st_infocse.mining.sentences import PreparedDocument, Skipped, prepare_documents
from st_infocse.training import precision as training_precision

logger = logging.getLogger(__name__)

PAIR_FEATURES = Features(
    {"anchor": Value("string"), "positive": Value("string"), "doc_id": Value("string"), "cluster_id": Value("int64")}
)

# The ``model.encode`` arguments mining sets itself, and where each comes from; encode_kwargs may not override them.
_ENCODE_SETTINGS = {
    "batch_size": "mine_pairs' batch_size",
    "pool": "mine_pairs' pool",
    "normalize_embeddings": "from similarity: normalised for cosine, raw for dot",
    "convert_to_numpy": "always NumPy",
    "convert_to_tensor": "always NumPy",
}


Precision = Literal["fp32", "bf16"]


def encoding_precision(model: Any, precision: Precision) -> tuple[contextlib.AbstractContextManager, Precision]:
    """The context ``model`` encodes in for ``precision``, and the precision it gives: ``"bf16"`` is
    ``torch.autocast`` to bfloat16 on the model's device where that device computes in bf16 natively (a CPU with
    avx512_bf16 or AMX, a GPU that supports it); elsewhere bf16 is emulated, slower than fp32, so the model encodes
    in fp32 and one warning says why."""
    check_choice("precision", precision, Precision)
    if precision == "fp32":
        return contextlib.nullcontext(), "fp32"
    device = getattr(model, "device", None)
    kind = device.type if isinstance(device, torch.device) else "cpu"
    if kind == "cpu":
        native = training_precision.cpu_has_native_bf16()  # one reading of the CPU's flags for the package
        why = None if native else ("has no native bf16 (no avx512_bf16 / AMX)" if native is False
                                   else "may lack native bf16 (its flags are unreadable)")
    elif kind == "cuda":
        why = None if torch.cuda.is_bf16_supported() else "does not support bf16"
    else:
        why = None if torch.amp.is_autocast_available(kind) else "has no autocast"
    if why is not None:
        logger.warning("mining precision bf16: the %s device %s, where bf16 is slower than fp32; mining in fp32",
                       kind, why)
        return contextlib.nullcontext(), "fp32"
    return torch.autocast(kind, dtype=torch.bfloat16), "bf16"


class MinedPairs(NamedTuple):
    """``pairs``: ``datasets.Dataset`` with ``anchor``, ``positive``, ``doc_id``, ``cluster_id``; ``report``."""

    pairs: Dataset
    report: MiningReport

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write the pairs (read back by ``datasets.load_from_disk``) and the report, as ``st-infocse mine`` does;
        returns both paths.

        Args:
            folder: Where the pairs (a ``datasets`` folder, ``pairs``) and ``report.json`` go, created where missing.
        """
        written = {"dataset": Path(folder) / "pairs", "report": Path(folder) / "report.json"}
        self.pairs.save_to_disk(str(written["dataset"]))
        written["report"].write_text(json.dumps(self.report.to_dict(), indent=2, default=str) + "\n")
        return written


def _select_input_columns(documents: Any, keys: tuple[str, str, str]) -> Any:
    # Reading a Dataset row by row converts every column; keep only the ones mining reads.
    column_names = getattr(documents, "column_names", None)
    if not (isinstance(column_names, list) and hasattr(documents, "select_columns")):
        return documents
    check_document_columns("the dataset", column_names, *keys[:2])
    return documents.select_columns([c for c in keys if c in column_names])


def _output_arguments(
    *, shard_sentences: int = 50_000, output_dir: str | Path | None = None, show_progress_bar: bool | None = None
) -> None:
    """Declares the output arguments every pair builder takes."""


#: The keyword arguments every pair builder takes, declared once: :func:`prepare_documents`' and the output's.
_READING = [
    *(p for p in inspect.signature(prepare_documents).parameters.values() if p.kind is p.KEYWORD_ONLY),
    *inspect.signature(_output_arguments).parameters.values(),
]
READING_ARGUMENTS = tuple(p.name for p in _READING)


def _reads_documents(builder: Callable[..., MinedPairs]) -> Callable[..., MinedPairs]:
    """``builder`` with the shared reading arguments in its signature, checked and defaulted at the call."""
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
    documents: Iterable[Any], model: Any, method: str, reading: dict[str, Any], *, k: int | None = None,
    threshold: float | None = None, tie_tolerance: float | None = None, similarity: Similarity | None = None,
    max_pairs_per_cluster: int | None = None, seed: int | None = None, batch_size: int | None = None,
    pool: Any = None, encode_kwargs: dict[str, Any] | None = None, precision: Precision | None = None,
) -> MinedPairs:
    # IDC's settings come from mine_pairs, whose defaults apply; the builders from structure alone read none of them
    check_at_least("max_pairs_per_cluster", max_pairs_per_cluster)
    shard_sentences, output_dir = reading.pop("shard_sentences"), reading.pop("output_dir")
    show_progress_bar = reading.pop("show_progress_bar")
    check_at_least("shard_sentences", shard_sentences)
    overridden = sorted(set(encode_kwargs or {}) & set(_ENCODE_SETTINGS))
    if overridden:
        raise ValueError(
            f"encode_kwargs sets {', '.join(overridden)}, which mining sets itself "
            f"({'; '.join(_ENCODE_SETTINGS[key] for key in overridden)}): pass it that way instead."
        )
    start = time.perf_counter()
    report = MiningReport(method=method)
    autocast: contextlib.AbstractContextManager = contextlib.nullcontext()
    if method == "idc":
        if model is None:
            raise ValueError("IDC mining needs a model with an encode() method")
        check_choice("similarity", similarity, Similarity)
        if precision == "bf16" and pool is not None:  # autocast is this process's; the pool's workers encode in fp32
            raise ValueError("precision='bf16' encodes in this process: pass no pool (or precision='fp32')")
        autocast, precision = encoding_precision(model, precision)
        report.similarity, report.k, report.threshold, report.precision = similarity, k, threshold, precision
    documents = _select_input_columns(documents, (reading["sentences_key"], reading["text_key"], reading["id_key"]))
    prepared = prepare_documents(documents, **reading)  # checks its arguments now, reads the documents lazily below
    folder = None if output_dir is None else Path(output_dir)  # each shard's pairs saved there and memory-mapped
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.glob("shard-*")):
            raise FileExistsError(f"{folder} already holds shard-* folders; use an empty folder")
    parts: list[Dataset] = []
    if show_progress_bar is None:
        show_progress_bar = logger.getEffectiveLevel() <= logging.INFO

    def flush(pending: list[PreparedDocument], positions: list[int]) -> None:
        report.shards += 1
        lengths = np.array([len(d.sentences) for d in pending], dtype=np.int64)
        texts = [s for d in pending for s in d.sentences]
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        doc_of = np.repeat(np.arange(len(pending)), lengths)
        t0 = time.perf_counter()
        if method == "idc":
            settings = {"show_progress_bar": False, "normalize_embeddings": similarity == "cosine", "pool": pool}
            with autocast:
                emb = encode_unique(model, texts, batch_size, longest_first=True, **{**settings, **(encode_kwargs or {})})
            report.sentences_encoded += len(set(texts))
            report.encode_seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            labels, first = cluster_documents(emb, lengths, k, threshold, tie_tolerance, similarity)
            doc_positions = np.asarray(positions, dtype=np.int64)
            a, b, dropped = cluster_pairs(labels, first, doc_positions, doc_of, max_pairs_per_cluster, seed)
            sizes = np.unique(first, return_counts=True)[1]
            report.clusters += len(sizes)
            report.singleton_clusters += int((sizes == 1).sum())
            report.pairs_dropped_by_cap += dropped
            cluster_ids = labels[a]
        elif method == "adjacent":  # each sentence and the next; the pair's position in its document
            a = np.flatnonzero(np.r_[doc_of[1:] == doc_of[:-1], False])
            b, cluster_ids = a + 1, a - starts[doc_of[a]]
        else:  # context (ICT): each sentence and the rest of its document; the sentence's position
            a, b = np.arange(len(texts)), None
            cluster_ids = a - starts[doc_of]
        report.graph_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        pair_docs = doc_of[a]
        report.documents_without_pairs += int((np.bincount(pair_docs, minlength=len(pending)) == 0).sum())
        if b is not None:
            positive = [texts[i] for i in b.tolist()]
        else:
            positive = [" ".join(texts[starts[d] : i] + texts[i + 1 : starts[d] + lengths[d]])
                        for i, d in zip(a.tolist(), doc_of.tolist(), strict=True)]
        if len(a):
            part = Dataset.from_dict({"anchor": [texts[i] for i in a.tolist()], "positive": positive,
                                      "doc_id": [pending[d].doc_id for d in pair_docs.tolist()],
                                      "cluster_id": cluster_ids.tolist()}, features=PAIR_FEATURES)
            if folder is not None:
                part.save_to_disk(str(folder / f"shard-{len(parts):05d}"))
                part = load_from_disk(str(folder / f"shard-{len(parts):05d}"))
            parts.append(part)
        report.pairs += len(a)
        report.output_seconds += time.perf_counter() - t0

    pending: list[PreparedDocument] = []
    positions: list[int] = []
    sentences = 0
    t_prepare = time.perf_counter()
    total = len(documents) if hasattr(documents, "__len__") else None
    with tqdm(total=total, desc=f"Mining pairs ({method})", unit="doc", disable=not show_progress_bar) as bar:
        for position, item in enumerate(prepared):
            bar.update(1)
            report.add(item)
            if isinstance(item, Skipped):
                continue
            pending.append(item)
            positions.append(position)
            sentences += len(item.sentences)
            if sentences >= shard_sentences:
                report.prepare_seconds += time.perf_counter() - t_prepare
                flush(pending, positions)
                pending, positions, sentences = [], [], 0
                t_prepare = time.perf_counter()
        report.prepare_seconds += time.perf_counter() - t_prepare
        if pending:
            flush(pending, positions)
    t0 = time.perf_counter()
    if not parts:
        parts = [Dataset.from_dict({name: [] for name in PAIR_FEATURES}, features=PAIR_FEATURES)]
    pairs = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    report.output_seconds += time.perf_counter() - t0
    report.total_seconds = time.perf_counter() - start
    if report.documents_skipped:
        logger.warning("skipped %d of %d documents: %s", report.documents_skipped, report.documents_seen,
                       skip_counts(report.skipped))
    if report.documents_seen and not report.pairs:
        logger.warning("no pairs were mined from %d documents", report.documents_seen)
    logger.info(report.summary())
    return MinedPairs(pairs, report)


@_reads_documents
def mine_pairs(
    documents: Iterable[Any], model: Any, *, k: int = 1, threshold: float | None = None, tie_tolerance: float = 1e-6,
    similarity: Similarity = "cosine", max_pairs_per_cluster: int | None = None, seed: int = 0, batch_size: int = 64,
    pool: Any = None, encode_kwargs: dict[str, Any] | None = None, precision: Precision = "fp32", **reading: Any,
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
        precision: ``"bf16"``: the model encodes under ``torch.autocast`` to bfloat16 (its weights stay fp32,
            the matrix products run in bf16), several times faster on a CPU with avx512_bf16 or AMX; the embeddings
            only choose neighbours, and nearly all pairs stay those of fp32. On a device without native bf16
            (emulated, slower than fp32) it mines in fp32 and warns; not with ``pool``. The report's ``precision``
            says which was used.
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
    return _mine(documents, model, "idc", reading, k=k, threshold=threshold, tie_tolerance=tie_tolerance,
                 similarity=similarity, max_pairs_per_cluster=max_pairs_per_cluster, seed=seed,
                 batch_size=batch_size, pool=pool, encode_kwargs=encode_kwargs, precision=precision)


def _structure_pairs(method: str, doc: str) -> Any:
    """A pair builder from document structure alone (no model), reading documents as :func:`mine_pairs` does."""

    def build(documents: Iterable[Any], **reading: Any) -> MinedPairs:
        return _mine(documents, None, method, reading)

    build.__name__ = build.__qualname__ = f"{method}_pairs"
    build.__doc__ = doc
    return _reads_documents(build)


adjacent_pairs = _structure_pairs("adjacent", """Adjacent-sentence pairs ``(s_i, s_i+1)`` (CONPONO-like first
    annotation, no model needed); ``cluster_id`` is ``i``. Documents are read as by :func:`mine_pairs` (duplicates
    dropped before neighbours are paired), which the other arguments are as for.

    Example:
        >>> pairs, report = adjacent_pairs([["A.", "B.", "C."], ["Only one."]])
        >>> list(zip(pairs["anchor"], pairs["positive"])), report.skipped["too_few_sentences"]
        ([('A.', 'B.'), ('B.', 'C.')], 1)
""")

context_pairs = _structure_pairs("context", """Inverse cloze task pairs ``(s_i, the rest of its document)`` (ICT, Lee
    et al. 2019; paper 002's strongest context baseline), no model needed; the rest is the other sentences joined by
    spaces, and ``cluster_id`` is ``i``. Documents are read as by :func:`mine_pairs`, which the other arguments are
    as for. Train with :meth:`DocumentAwareBatchSampler.for_pairs`: two pairs of one document in a batch would be
    each other's false negatives.

    Example:
        >>> pairs, report = context_pairs([["A.", "B.", "C."], ["Only one."]])
        >>> list(zip(pairs["anchor"], pairs["positive"])), report.skipped["too_few_sentences"]
        ([('A.', 'B. C.'), ('B.', 'A. C.'), ('C.', 'A. B.')], 1)
""")
