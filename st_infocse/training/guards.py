"""A check of the training dataset before it reaches the trainer: an empty dataset fails in torch's sampler and a
``None`` text deep in the tokenizer (perhaps mid-training); this says in one message what is wrong and how to fix it."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pyarrow as pa
from datasets import Dataset, IterableDataset
from sentence_transformers.util.dataset import DEFAULT_LABEL_COLUMNS

from st_infocse.files import text_problem
from st_infocse.losses import clean_texts_hint

logger = logging.getLogger(__name__)

# Columns the data collator does not tokenize.
NON_TEXT_COLUMNS = frozenset(DEFAULT_LABEL_COLUMNS) | {"dataset_name"}
SHOWN_INDICES = 5


def _indices(found: list[int]) -> str:
    shown = ", ".join(str(i) for i in found[:SHOWN_INDICES])
    return f"{shown}, ..." if len(found) > SHOWN_INDICES else shown


def _column_problem(dataset: Dataset, column: str) -> str | None:
    """What stops ``column`` from training, or None; some blank texts are only logged."""
    # The arrow view honours select/shuffle indices; its type says whether the column holds text at all.
    values = dataset.with_format("arrow")[column]
    rows = len(values)
    if pa.types.is_null(values.type):
        return f"column {column!r} has no text at all ({rows} None rows)"
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return f"column {column!r} holds {values.type} values, not text"
    problems: dict[str, list[int]] = {"missing": [], "blank": []}
    for index, value in enumerate(values.to_pylist()):
        problem = text_problem(value)
        if problem is not None:
            problems[problem].append(index)
    if problems["missing"]:
        missing = len(problems["missing"])
        return (
            f"column {column!r} has {missing} None {'row' if missing == 1 else 'rows'} of {rows} "
            f"(at {_indices(problems['missing'])})"
        )
    blanks = len(problems["blank"])
    if blanks == rows:
        return f"column {column!r} has only blank texts (all {rows} empty or whitespace), which train on nothing"
    if blanks:
        logger.warning("Training dataset column %r: %d of %d texts are blank (at %s); they train on special tokens "
                       "only. %s", column, blanks, rows, _indices(problems["blank"]), clean_texts_hint(column))
    return None


def check_training_dataset(dataset: Dataset | Mapping[str, Dataset], column: str | None = None
                           ) -> Dataset | Mapping[str, Dataset]:
    """``dataset`` unchanged, or a ValueError naming every problem (no rows, ``None`` rows with their indices, a
    column that is not text, only blank texts) and pointing at :func:`~st_infocse.training.clean_texts`. A few blank
    texts are allowed (still sentences for a contrastive loss) and logged. ``dataset`` may be a dict of datasets;
    an ``IterableDataset`` is returned unchecked (reading it would consume a stream). ``column``: the text column to
    check (by default every column the trainer tokenizes).
    """
    if isinstance(dataset, Mapping):
        for name, part in dataset.items():
            _check(part, column, f"Training dataset {name!r}")
        return dataset
    _check(dataset, column, "Training dataset")
    return dataset


def _check(dataset: Dataset, column: str | None, label: str) -> None:
    if isinstance(dataset, IterableDataset):
        return
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{label}: expected a datasets.Dataset, got {type(dataset).__name__}.")
    if column is not None and column not in dataset.column_names:
        raise ValueError(f"{label}: no column {column!r} (columns: {dataset.column_names}).")
    columns = [column] if column is not None else [c for c in dataset.column_names if c not in NON_TEXT_COLUMNS]
    hint_column = columns[0] if len(columns) == 1 else None
    if len(dataset) == 0:
        raise ValueError(f"{label} cannot train: it has no rows. {clean_texts_hint(hint_column)}")
    if not columns:
        raise ValueError(f"{label} cannot train: it has no text column (columns: {dataset.column_names}).")
    problems = {name: problem for name in columns if (problem := _column_problem(dataset, name)) is not None}
    if problems:
        hint = clean_texts_hint(next(iter(problems)) if len(problems) == 1 else None)
        raise ValueError(f"{label} cannot train: {'; '.join(problems.values())}. {hint}")
