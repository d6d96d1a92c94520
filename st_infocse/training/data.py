"""Training text that is safe to hand to the trainer: bad rows dropped and counted, never silently."""

from __future__ import annotations

import gzip
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from datasets import Dataset

logger = logging.getLogger(__name__)


@dataclass
class TextReport:
    """What :func:`clean_texts` kept and dropped, by reason."""

    total: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.dropped.items())) or "none"
        return f"{self.kept} of {self.total} texts kept; dropped: {reasons}"


def clean_texts(dataset: Dataset, column: str = "text", deduplicate: bool = False) -> tuple[Dataset, TextReport]:
    """Drop rows whose text is missing, not a string, or blank (and exact duplicates when asked), counting each.

    Tokenizers fail deep inside on ``None`` or non-string values, and blank rows train on nothing but special
    tokens; this keeps a one-column dataset of real text and says what it removed.

    Args:
        dataset: a ``datasets.Dataset`` with a text column.
        column: the text column.
        deduplicate: also drop exact repeats (after stripping whitespace), keeping the first.

    Returns:
        The cleaned dataset (the text column only) and a :class:`TextReport`.

    Example:
        ::

            from datasets import Dataset
            from st_infocse.training.data import clean_texts

            ds, report = clean_texts(Dataset.from_dict({"text": ["a cat", None, "  ", "a cat"]}), deduplicate=True)
            print(report)  # 1 of 4 texts kept; dropped: 1 blank, 1 duplicate, 1 missing
    """
    if column not in dataset.column_names:
        raise ValueError(f"No column {column!r} in the dataset (columns: {dataset.column_names}).")
    report = TextReport(total=len(dataset))
    seen: set[str] = set()
    keep: list[int] = []
    for index, value in enumerate(dataset[column]):
        if value is None:
            report.dropped["missing"] += 1
        elif not isinstance(value, str):
            report.dropped["not text"] += 1
        elif not value.strip():
            report.dropped["blank"] += 1
        elif deduplicate and value.strip() in seen:
            report.dropped["duplicate"] += 1
        else:
            seen.add(value.strip())
            keep.append(index)
    report.kept = len(keep)
    cleaned = dataset.select_columns([column]).select(keep)
    if report.dropped:
        logger.warning("Training texts: %s", report)
    return cleaned, report


def read_text_file(path: str | os.PathLike) -> Dataset:
    """One text per line from a UTF-8 ``.txt`` or ``.txt.gz`` file, as a ``text`` column.

    Raises:
        ValueError: naming the file and line when the file is not UTF-8.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    lines: list[str] = []
    with opener(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path}, line {number}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8."
                ) from exc
    return Dataset.from_dict({"text": lines})
