"""Document-aware batches: pairs from one document never share a batch, where they would be each other's false
in-batch negatives (paper 002 section 3.2 takes negatives from other documents). Per epoch, in O(rows): documents in random
order, each one's rows shuffled, concatenated into one stream whose row ``t`` goes to batch ``t mod M``; a document's
rows are contiguous and at most ``M``, so they land in distinct batches. ``M = max(ceil(rows / batch_size), largest
document)`` is the fewest batches the constraint allows; with ``drop_last`` every batch is full instead, and a
document with more rows than batches gives a random ``M`` of them that epoch.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from sentence_transformers.base.sampler import DefaultBatchSampler

logger = logging.getLogger(__name__)


def _plan(sizes: np.ndarray, batch_size: int, drop_last: bool) -> tuple[int, int]:
    """Number of batches and the per-document cap for one epoch."""
    total = int(sizes.sum())
    if total == 0:
        return 0, 0
    if not drop_last:
        batches = max(math.ceil(total / batch_size), int(sizes.max()))
        return batches, batches
    batches = total // batch_size
    while True:  # capping documents at `batches` rows may leave too few rows for `batches` full batches
        fewer = int(np.minimum(sizes, batches).sum()) // batch_size
        if fewer == batches:
            return batches, batches
        batches = fewer


class DocumentAwareBatchSampler(DefaultBatchSampler):
    """Batch sampler that keeps rows of the same document out of each other's batch.

    Pass the class itself as ``batch_sampler`` when the training dataset has a ``doc_id`` column the loss can
    ignore; with mined pairs (whose ``doc_id`` the trainer would tokenize) train on the text columns and pass
    :meth:`for_pairs` instead. The other arguments are ``DefaultBatchSampler``'s; the same seed and epoch give the
    same batches; ``doc_ids`` gives each row's document, read from ``doc_column`` when omitted.

    Example:
        >>> from datasets import Dataset
        >>> ds = Dataset.from_dict({"anchor": list("abcdef"), "doc_id": ["x", "x", "x", "y", "y", "z"]})
        >>> batches = list(DocumentAwareBatchSampler(ds, batch_size=2, drop_last=False))
        >>> len(batches), sorted(len(b) for b in batches)
        (3, [2, 2, 2])
    """

    def __init__(
        self, dataset: Dataset, batch_size: int, drop_last: bool, valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None, seed: int = 0, doc_ids: Sequence[Any] | None = None,
        doc_column: str = "doc_id",
    ) -> None:
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last,
                         valid_label_columns=valid_label_columns, generator=generator, seed=seed)
        if doc_ids is None:
            columns = getattr(dataset, "column_names", None) or []
            if doc_column not in columns:
                raise ValueError(
                    f"DocumentAwareBatchSampler needs document ids: the dataset has no {doc_column!r} column "
                    f"(columns: {columns}); pass doc_ids= or use DocumentAwareBatchSampler.for_pairs(pairs)"
                )
            doc_ids = dataset[doc_column]
        if len(doc_ids) != len(dataset):
            raise ValueError(
                f"{len(doc_ids)} document ids for a dataset of {len(dataset)} rows: the sampler was built for "
                "another dataset (an eval_dataset needs its own ids, or no document-aware sampler)"
            )
        _, codes = np.unique(np.asarray(doc_ids, dtype=object).astype(str), return_inverse=True)
        self._codes = codes.astype(np.int64)
        self._sizes = np.bincount(self._codes) if len(codes) else np.zeros(0, dtype=np.int64)
        self._num_batches, self._cap = _plan(self._sizes, self.batch_size, self.drop_last)
        left_out = len(codes) - self._num_batches * self.batch_size if drop_last else 0
        if left_out > 0:
            logger.info("document-aware batches: %d of %d rows left out per epoch (drop_last)", left_out, len(codes))
        if self._sizes.size and self._sizes.max() > math.ceil(len(codes) / self.batch_size) and not drop_last:
            logger.warning(
                "document-aware batches: one document has %d rows, more than ceil(%d rows / batch %d); batches will "
                "be smaller than batch_size (cap pairs per cluster when mining to avoid this)",
                int(self._sizes.max()), len(codes), self.batch_size,
            )

    @classmethod
    def for_pairs(cls, pairs: Dataset | Sequence[Any], doc_column: str = "doc_id") -> DocumentAwareSamplerFactory:
        """A ``batch_sampler`` with the trainer's signature for training on ``pairs`` (mined pairs, or their
        document ids) without its id columns.

        Example:
            >>> pairs = Dataset.from_dict({"anchor": ["a", "b"], "positive": ["c", "d"], "doc_id": ["1", "2"]})
            >>> list(DocumentAwareBatchSampler.for_pairs(pairs)(pairs.select_columns(["anchor"]), 2, False))
            [[0, 1]]
        """
        doc_ids = pairs[doc_column] if isinstance(pairs, Dataset) else list(pairs)
        return DocumentAwareSamplerFactory(cls, doc_ids=list(doc_ids))

    def __iter__(self) -> Iterator[list[int]]:
        generator = self.generator if self.generator is not None else torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        if self._num_batches == 0:
            return
        n = len(self._codes)
        group_rank = torch.randperm(len(self._sizes), generator=generator).numpy()[self._codes]
        jitter = torch.rand(n, generator=generator).numpy()
        stream = np.lexsort((jitter, group_rank))  # documents in random order, rows shuffled inside
        doc_in_stream = group_rank[stream]
        first_of_doc = np.r_[0, np.flatnonzero(np.diff(doc_in_stream)) + 1]
        rank = np.arange(n) - np.repeat(first_of_doc, np.diff(np.r_[first_of_doc, n]))
        stream = stream[rank < self._cap]
        if self.drop_last:
            stream = stream[: self._num_batches * self.batch_size]
        for b in torch.randperm(self._num_batches, generator=generator).tolist():
            batch = stream[b :: self._num_batches]
            if len(batch):
                yield batch.tolist()

    def __len__(self) -> int:
        return self._num_batches


class DocumentAwareSamplerFactory(functools.partial):
    """:class:`DocumentAwareBatchSampler` with fixed document ids (see ``for_pairs``), printed short, as training
    arguments are printed and logged."""

    def __repr__(self) -> str:
        doc_ids = self.keywords["doc_ids"]
        return f"DocumentAwareBatchSampler.for_pairs(<{len(doc_ids)} rows, {len(set(doc_ids))} documents>)"
