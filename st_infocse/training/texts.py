"""Training text read from any form a user has it in, checked before anything heavy is loaded (the head of a file,
with the standard library; pyarrow for parquet), bad rows dropped and counted; every problem is one
:class:`~st_infocse.files.InputError` line naming the file.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentencex import segment

from st_infocse.files import (
    InputError,
    TextReport,
    check_at_least,
    check_local_file,
    check_saved_dataset,
    choose_column,
    clean_text_values,
    dataset_error,
    file_kind,
    is_text,
    read_json_objects,
    read_lines,
)

if TYPE_CHECKING:
    from datasets import Dataset

logger = logging.getLogger(__name__)


def _strings(values: list[str], column: str = "text") -> Dataset:
    """A one-column dataset typed as strings even when empty (a column of type null cannot train), and not as
    datasets' ``Json`` type where the source column mixed types."""
    from datasets import Dataset, Features, Value

    return Dataset.from_dict({column: values}, features=Features({column: Value("string")}))


def clean_texts(dataset: Dataset, column: str = "text", deduplicate: bool = False, warn: bool = True
                ) -> tuple[Dataset, TextReport]:
    """The ``column`` of ``dataset`` without rows whose text is missing, not a string or blank (and, with
    ``deduplicate``, repeats after stripping), as strings, and a :class:`TextReport` of what was dropped (logged
    when ``warn``). Tokenizers fail deep inside on ``None`` or non-strings, and blank rows train on special tokens.

    Example:
        >>> from datasets import Dataset
        >>> ds, report = clean_texts(Dataset.from_dict({"text": ["a cat", None, " ", "a cat"]}), deduplicate=True)
        >>> print(report)
        1 of 4 texts kept; dropped: 1 blank, 1 duplicate, 1 missing
    """
    choose_column("the dataset", dataset.column_names, (), column)  # the column asked for must be there
    kept, report = clean_text_values(dataset[column], deduplicate)
    # Rebuilt rather than selected: a column that mixed types or held no string at all would keep that type.
    cleaned = _strings(kept, column)
    if report.dropped and warn:
        logger.warning("Training texts: %s", report)
    return cleaned, report


def read_text_file(path: str | os.PathLike) -> Dataset:
    """One text per line of a UTF-8 ``.txt(.gz)`` file, as a ``text`` column of strings."""
    return _strings([line for _, line in read_lines(path)])


TEXT_FORMATS = (
    ".txt(.gz) (one text per line), .jsonl(.gz) or .json (objects with a text field), .csv, .tsv, .parquet, "
    "a save_to_disk folder, an hf:// file or a hub dataset id"
)


def _first_text(source: str, rows: Iterator[dict[str, Any]], column_of: Callable[[dict[str, Any]], str]) -> str:
    """The text column (``column_of`` the first row), once a row holds a non-blank string in it; reads no further."""
    column, count, present, keys = None, 0, 0, []
    for row in rows:
        count += 1
        if column is None:
            keys, column = list(row), column_of(row)
        present += column in row
        if is_text(row.get(column)):
            return column
    if count == 0:
        raise InputError(f"no records in {source}")
    if not present:
        raise InputError(f"no column {column!r} in {source} (columns of its first row: {keys})")
    raise InputError(f"no usable text in {source}: column {column!r} holds no non-blank string in any of {count} rows")


def _is_number(value: str | None) -> bool:
    try:
        float(value or "")
    except ValueError:
        return False
    return True


def _check_csv(source: str, path: Path, text_column: str | None) -> str:
    delimiter = "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","
    reader = csv.DictReader((line for _, line in read_lines(path)), delimiter=delimiter)
    columns = list(reader.fieldnames or [])
    if not columns:
        raise InputError(f"no header row in {source}")
    first = next(reader, None)
    if first is None:
        raise InputError(f"no rows in {source} (only a header: {columns})")
    # datasets types numeric columns as numbers, so only the others count as text columns.
    strings = [name for name in columns if not _is_number(first.get(name))]
    column = choose_column(source, columns, strings, text_column)
    return _first_text(source, chain([first], reader), lambda row: column)


def _check_parquet(source: str, path: Path, text_column: str | None) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read {source} as parquet: {exc}") from exc
    schema = parquet.schema_arrow
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    column = choose_column(source, schema.names, strings, text_column)
    if parquet.metadata.num_rows == 0:
        raise InputError(f"no rows in {source}")
    return column


def check_text_source(source: str, text_column: str | None = None) -> str | None:
    """The text column of a local source (None for hub data), which must exist, parse as far as read and hold a
    non-blank text; reading stops at the first one, so this is quick on any size of file."""
    found = check_local_file(source, "training data", ("txt", "json", "csv", "parquet"), TEXT_FORMATS)
    if found is None:
        return text_column  # a hub dataset or hf:// file: checked when it is loaded
    path, kind = found
    if kind is None:
        features = check_saved_dataset(source, path)
        if not features:
            return text_column
        strings = [name for name, f in features.items() if isinstance(f, dict) and f.get("dtype") == "string"]
        return choose_column(source, list(features), strings, text_column)
    if kind == "txt":
        if text_column not in (None, "text"):
            raise InputError(f"{source} is plain text, one text per line, without columns: leave out --text_column")
        lines = 0
        for lines, line in read_lines(path):  # noqa: B007 - the count is used in the error
            if line.strip():
                return "text"
        raise InputError(f"no text in {source}: all of its {lines} lines are blank")
    if kind == "json":
        records = (record for _, record in read_json_objects(path, "a JSON object with a text field"))
        return _first_text(source, records, lambda first: text_column or choose_column(
            source, list(first), [key for key, value in first.items() if isinstance(value, str)], None))
    if kind == "csv":
        return _check_csv(source, path, text_column)
    return _check_parquet(source, path, text_column)


def read_dataset(source: str, kind: str | None = None, what: str = "training data",
                 fix: str = "pass --train_data with a local file (one sentence per line), e.g. --train_data demo",
                 ) -> Dataset:
    """The train split of a ``save_to_disk`` folder, a txt, csv or parquet file (``kind``), an ``hf://`` file or a
    hub dataset; a failure of datasets, or of the hub (naming ``what`` and the ``fix``), is one
    :class:`~st_infocse.files.InputError` line."""
    from datasets import Dataset, load_dataset, load_from_disk

    path = Path(source).expanduser()
    try:
        if path.is_dir():
            dataset = load_from_disk(str(path))
        elif kind == "txt":
            dataset = read_text_file(path)
        elif kind in ("csv", "parquet"):
            extra = {"delimiter": "\t"} if ".tsv" in [s.lower() for s in path.suffixes] else {}
            dataset = load_dataset(kind, data_files=str(path), split="train", **extra)
        elif source.startswith("hf://"):
            dataset = load_dataset("text", data_files=source, split="train")
        else:
            dataset = load_dataset(source, split="train")
    except (ValueError, FileNotFoundError):
        raise
    except Exception as exc:  # noqa: BLE001 - datasets wraps a bad file in several exception types
        if type(exc).__module__.startswith(("datasets", "pyarrow")):
            raise dataset_error(source, exc) from exc
        if not path.exists() and (isinstance(exc, OSError)  # ConnectionError included
                                  or type(exc).__module__.startswith(("huggingface_hub", "requests", "httpx"))):
            raise InputError(
                f"cannot load {what} {source!r} from the Hugging Face hub ({type(exc).__name__}); offline? {fix}"
            ) from exc
        raise
    return dataset["train"] if hasattr(dataset, "keys") and not isinstance(dataset, Dataset) else dataset


def split_sentences(text: str, language: str = "en") -> list[str]:
    """The sentences of ``text``, stripped, in order: lines are hard boundaries (paragraphs, list items, headings),
    each line is segmented by ``sentencex`` for ``language`` (an ISO 639 code; unknown ones get generic rules).

    ``sentencex`` (rule-based, ~300 languages, no downloads) rather than ``pysbd``, whose regular expressions
    backtrack catastrophically on strings such as ``"..[111 111 111 ...]"`` (pySBD issue #79). Mining splits
    documents with it too (:func:`~st_infocse.mining.prepare_documents`).

    Example:
        >>> split_sentences("Dr. Smith went to Washington. He liked it.\\nA new paragraph")
        ['Dr. Smith went to Washington.', 'He liked it.', 'A new paragraph']
    """
    if not isinstance(text, str):
        raise TypeError(f"split_sentences expects a str, got {type(text).__name__}")
    return [s.strip() for line in text.splitlines() if line.strip() for s in segment(language, line) if s.strip()]


def _sentences_of(texts: list[str]) -> list[str]:
    sentences = [sentence for text in texts for sentence in split_sentences(text)]
    print(f"--split_sentences: {len(texts):,} texts -> {len(sentences):,} sentences")
    return sentences


def load_texts(source: str, text_column: str | None = None, max_samples: int | None = None,
               split_sentences: bool = False) -> Dataset:
    """A one-column ``text`` dataset of strings from any form :func:`check_text_source` accepts; missing, non-string
    and blank rows are dropped and counted (printed once, naming the file). No text left is an error.

    Args:
        source: the training data: a local file or folder, an ``hf://`` file or a hub dataset id.
        text_column: the column holding the texts (None: the one text column, or ``text``).
        max_samples: read at most this many rows (None: all).
        split_sentences: train on each text's sentences (:func:`split_sentences`), in order; prints how many
            texts gave how many sentences. Texts longer than the training length are otherwise cut.
    """
    check_at_least("--max_train_samples", max_samples)
    column = check_text_source(source, text_column)
    path = Path(source).expanduser()
    kind = file_kind(path) if path.is_file() else None
    if kind == "json":
        # Read here rather than by datasets: one field is kept, whatever its type, and cleaned before Arrow types it
        # (a field mixing strings and numbers becomes datasets' Json type, which cannot train).
        values: Any = [record.get(column) for _, record in islice(read_json_objects(path), max_samples)]
    else:
        dataset = read_dataset(source, kind)
        if column is None or column not in dataset.column_names:
            strings = [n for n, f in dataset.features.items() if getattr(f, "dtype", None) == "string"]
            column = choose_column(source, dataset.column_names, strings, text_column)
        values = dataset.select(range(min(max_samples or len(dataset), len(dataset))))[column]
    kept, report = clean_text_values(values)
    if report.dropped:
        print(f"{source}: {report}")
    if not kept:
        raise InputError(f"no usable text in {source}: {report}")
    return _strings(_sentences_of(kept) if split_sentences else kept)


@dataclass(frozen=True)
class LengthReport:
    """How many of the ``counted`` texts (all ``total``, or a seeded sample) are ``longer`` than the training
    length ``max_length`` (special tokens included), and so are cut to it."""

    longer: int
    counted: int
    total: int
    max_length: int

    def message(self, already_split: bool = False) -> str | None:
        """One line for the start of a run, or None when no text is cut; ``already_split``: the texts are sentences
        already, so only a longer training length helps."""
        if self.longer == 0:
            return None
        share = f"{self.longer:,} of {self.total:,} texts are" if self.counted == self.total else (
            f"about {100 * self.longer / self.counted:.0f}% of {self.total:,} texts ({self.longer:,} of a "
            f"{self.counted:,}-text sample) are")
        fix = "raise --max_seq_length"
        if not already_split:
            fix = f"pass --split_sentences to train on their sentences, or {fix}"
        return f"{share} longer than {self.max_length} tokens and will be cut to their first {self.max_length}; {fix}"


def count_long_texts(
    tokenizer: Any, texts: Sequence[str], max_length: int, sample: int = 20_000, seed: int = 0
) -> LengthReport:
    """Count the texts the model would cut at ``max_length`` tokens, on a seeded sample of ``sample`` texts when
    the corpus is larger (a million-line corpus costs seconds)."""
    import random

    total = len(texts)
    chosen = list(texts) if total <= sample else random.Random(seed).sample(list(texts), sample)
    batches = (chosen[start : start + 1024] for start in range(0, len(chosen), 1024))
    longer = sum(len(row) > max_length for batch in batches
                 for row in tokenizer(batch, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
    return LengthReport(longer, len(chosen), total, max_length)
