"""Documents for mining, read from the forms a user has them in and checked (the head of a file, with the standard
library) before anything heavy is loaded; every problem is one :class:`~st_infocse.files.InputError` line."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path
from typing import Any

from st_infocse.files import (
    InputError,
    check_at_least,
    check_local_file,
    check_saved_dataset,
    file_kind,
    read_json_records,
    read_lines,
)
from st_infocse.mining.sentences import raw_sentences
from st_infocse.training.texts import read_dataset

DOCUMENT_FORMATS = (
    ".txt(.gz) (documents separated by blank lines), .jsonl(.gz) or .json (objects with 'sentences' (list) or "
    "'text'), a save_to_disk folder or a hub dataset id"
)


def check_document_columns(source: str, columns: list[str], sentences_key: str = "sentences",
                           text_key: str = "text") -> None:
    """Refuse documents in ``source`` whose ``columns`` hold neither a sentence list nor a text."""
    if not ({sentences_key, text_key} & set(columns)):
        raise InputError(f"documents in {source} need a {sentences_key!r} (list) or {text_key!r} column; found {columns}")


def check_documents(source: str) -> None:
    """Cheap checks of the documents for mining: a local file must exist, be non-empty and hold a usable document."""
    found = check_local_file(source, "documents", ("txt", "json"), DOCUMENT_FORMATS, noun="documents file")
    if found is None:
        return
    path, kind = found
    if kind is None:
        features = check_saved_dataset(source, path)
        if features:
            check_document_columns(source, list(features))
        return
    if kind == "txt":
        if not any(line.strip() for _, line in read_lines(path)):
            raise InputError(f"no text in {source}: all of its lines are blank")
        return
    records = 0
    for _, record in read_json_records(path):
        records += 1
        if any(sentence.strip() for sentence in raw_sentences(record)[1] or ()):
            return
    raise InputError(
        f"no usable document in {source} ({records} records): each needs a 'sentences' list or a 'text' string"
    )


def load_documents(source: str, max_docs: int | None = None) -> Any:
    """Documents for mining: a ``datasets.Dataset`` (folder, hub) or a list of records (local files), unusable ones
    included (the miner counts what it skips)."""
    check_at_least("--max_docs", max_docs)
    check_documents(source)
    path = Path(source).expanduser()
    if path.is_file():
        if file_kind(path) == "txt":  # documents separated by blank lines, numbered from 0
            blocks = groupby((line for _, line in read_lines(path)), key=lambda line: bool(line.strip()))
            docs: Any = [{"id": str(i), "text": "\n".join(b)} for i, b in enumerate(b for text, b in blocks if text)]
        else:
            docs = [record for _, record in read_json_records(path)]
        return docs if max_docs is None else docs[:max_docs]
    docs = read_dataset(source, what="documents", fix="pass --docs with a local file")
    check_document_columns(source, docs.column_names)
    return docs if max_docs is None else docs.select(range(min(max_docs, len(docs))))
