"""Training text that is safe to hand to the trainer: bad rows dropped and counted, never silently."""

from __future__ import annotations

import gzip
import logging
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def clean_text_values(values: Iterable[Any], deduplicate: bool = False) -> tuple[list[str], TextReport]:
    """The non-blank strings of ``values`` in order, and a :class:`TextReport` of what was dropped and why.

    The plain-Python core of :func:`clean_texts`, for values that are not in a ``Dataset`` yet (Arrow cannot hold a
    column that mixes strings with numbers or lists, so such input is cleaned before it becomes one).
    """
    report = TextReport()
    seen: set[str] = set()
    kept: list[str] = []
    for value in values:
        report.total += 1
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
            kept.append(value)
    report.kept = len(kept)
    return kept, report


def clean_texts(
    dataset: Dataset, column: str = "text", deduplicate: bool = False, warn: bool = True
) -> tuple[Dataset, TextReport]:
    """Drop rows whose text is missing, not a string, or blank (and exact duplicates when asked), counting each.

    Tokenizers fail deep inside on ``None`` or non-string values, and blank rows train on nothing but special
    tokens; this keeps a one-column dataset of real text, typed as strings, and says what it removed.

    Args:
        dataset: a ``datasets.Dataset`` with a text column.
        column: the text column.
        deduplicate: also drop exact repeats (after stripping whitespace), keeping the first.
        warn: log the report as a warning when rows were dropped (callers that print it themselves pass False).

    Returns:
        The cleaned dataset (the text column only, ``Value("string")``) and a :class:`TextReport`.

    Example:
        ::

            from datasets import Dataset
            from st_infocse.training.data import clean_texts

            ds, report = clean_texts(Dataset.from_dict({"text": ["a cat", None, "  ", "a cat"]}), deduplicate=True)
            print(report)  # 1 of 4 texts kept; dropped: 1 blank, 1 duplicate, 1 missing
    """
    from datasets import Dataset, Features, Value

    if column not in dataset.column_names:
        raise ValueError(f"No column {column!r} in the dataset (columns: {dataset.column_names}).")
    kept, report = clean_text_values(dataset[column], deduplicate)
    # Rebuilt rather than selected: a column that mixed types (datasets' ``Json``) or held no string at all would
    # keep that type, which the tokenizer and the trainer's length estimates cannot use.
    cleaned = Dataset.from_dict({column: kept}, features=Features({column: Value("string")}))
    if report.dropped and warn:
        logger.warning("Training texts: %s", report)
    return cleaned, report


def read_text_file(path: str | os.PathLike) -> Dataset:
    """One text per line from a UTF-8 ``.txt`` or ``.txt.gz`` file, as a ``text`` column of strings.

    Raises:
        ValueError: naming the file and line when the file is not UTF-8.
    """
    from datasets import Dataset, Features, Value

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
    # Typed explicitly: an empty file would otherwise give a column of type null, not of strings.
    return Dataset.from_dict({"text": lines}, features=Features({"text": Value("string")}))
