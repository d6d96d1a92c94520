"""Document-aware batches: pairs from one document never share a batch.

IDC pairs are same-document by construction, and sentences of one document are often
related, so two pairs of one document in a batch would serve as each other's false in-batch
negatives (paper 002 section 3.2 uses "sentences from different documents" as negatives).

Assignment, in O(rows) per epoch: documents in random order, rows of each document in random
order, concatenated into one stream; row ``t`` of the stream goes to batch ``t mod M``. A
document's rows are contiguous in the stream and number at most ``M``, so they land in ``M``
distinct batches. ``M = max(ceil(rows / batch_size), largest document)`` gives the fewest
batches possible under the constraint; with ``drop_last`` every batch is full instead and a
document with more rows than batches contributes a random ``M`` of them that epoch.
"""

from __future__ import annotations

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
        usable = int(np.minimum(sizes, batches).sum())
        fewer = usable // batch_size
        if fewer == batches:
            return batches, batches
        batches = fewer


class DocumentAwareBatchSampler(DefaultBatchSampler):
    """Batch sampler that keeps rows of the same document out of each other's batch.

    Pass the class itself as ``batch_sampler`` when the training dataset has a ``doc_id``
    column the loss can ignore; with mined pairs (whose ``doc_id`` the trainer would tokenize)
    train on the text columns only and pass :meth:`for_pairs` instead.

    Args:
        dataset: The training dataset (only its length is used when ``doc_ids`` is given).
        batch_size: Rows per batch.
        drop_last: Only full batches; rows that cannot fill one are left out for that epoch
            (a different random subset each epoch).
        valid_label_columns: Unused; part of the trainer's sampler signature.
        generator: Optional generator, re-seeded with ``seed + epoch`` at each epoch.
        seed: Base seed; the same seed and epoch give the same batches.
        doc_ids: Document id of each row; read from ``doc_column`` when omitted.
        doc_column: Column holding document ids.

    Example:
        >>> from datasets import Dataset
        >>> ds = Dataset.from_dict({"anchor": list("abcdef"), "doc_id": ["x", "x", "x", "y", "y", "z"]})
        >>> batches = list(DocumentAwareBatchSampler(ds, batch_size=2, drop_last=False))
        >>> len(batches), sorted(len(b) for b in batches)
        (3, [2, 2, 2])
        >>> all(len({ds["doc_id"][i] for i in b}) == len(b) for b in batches)
        True
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
        doc_ids: Sequence[Any] | None = None,
        doc_column: str = "doc_id",
    ) -> None:
        super().__init__(
            dataset,
            batch_size=batch_size,
            drop_last=drop_last,
            valid_label_columns=valid_label_columns,
            generator=generator,
            seed=seed,
        )
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
                int(self._sizes.max()),
                len(codes),
                self.batch_size,
            )

    @classmethod
    def for_pairs(cls, pairs: Dataset | Sequence[Any], doc_column: str = "doc_id") -> DocumentAwareSamplerFactory:
        """A ``batch_sampler`` callable for training on ``pairs`` without its id columns.

        Args:
            pairs: Mined pairs (a dataset with ``doc_column``) or the document ids themselves.
            doc_column: Column holding document ids.

        Returns:
            A callable with the trainer's batch-sampler signature.

        Example:
            >>> from datasets import Dataset
            >>> pairs = Dataset.from_dict({"anchor": ["a", "b"], "positive": ["c", "d"], "doc_id": ["1", "2"]})
            >>> factory = DocumentAwareBatchSampler.for_pairs(pairs)
            >>> factory
            DocumentAwareBatchSampler.for_pairs(<2 rows, 2 documents>)
            >>> list(factory(pairs.select_columns(["anchor", "positive"]), batch_size=2, drop_last=False))
            [[0, 1]]
        """
        doc_ids = pairs[doc_column] if isinstance(pairs, Dataset) else list(pairs)
        return DocumentAwareSamplerFactory(list(doc_ids))

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
        batch_order = torch.randperm(self._num_batches, generator=generator).tolist()
        for b in batch_order:
            batch = stream[b :: self._num_batches]
            if len(batch):
                yield batch.tolist()

    def __len__(self) -> int:
        return self._num_batches


class DocumentAwareSamplerFactory:
    """Builds :class:`DocumentAwareBatchSampler` with fixed document ids; see ``for_pairs``."""

    def __init__(self, doc_ids: list[Any]) -> None:
        self.doc_ids = doc_ids

    def __call__(
        self,
        dataset: Dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
    ) -> DocumentAwareBatchSampler:
        return DocumentAwareBatchSampler(
            dataset,
            batch_size=batch_size,
            drop_last=drop_last,
            valid_label_columns=valid_label_columns,
            generator=generator,
            seed=seed,
            doc_ids=self.doc_ids,
        )

    def __repr__(self) -> str:
        # Kept short: training arguments are printed and logged.
        return f"DocumentAwareBatchSampler.for_pairs(<{len(self.doc_ids)} rows, {len(set(self.doc_ids))} documents>)"
