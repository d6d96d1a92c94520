"""Retrieval data: BEIR folders (corpus, queries, qrels) and mteb retrieval tasks."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from st_infocse.files import existing_path

from ..beir_tasks import beir_task_info
from .common import DataFormatError, PathLike, RetrievalData, data_lines, json_objects, mteb_task, parse_int

logger = logging.getLogger(__name__)


def _by_id(path: Path, value: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """``value`` of each row of a BEIR ``.jsonl`` file (corpus or queries) by its ``_id``, as a string; a row without
    ``_id`` or ``text``, a repeated id (beir keeps the last silently) or a file with no row is refused by line."""
    rows: dict[str, Any] = {}
    for number, row in json_objects(path):
        missing = [key for key in ("_id", "text") if key not in row or row[key] is None]
        if missing:
            raise DataFormatError(path, number, f"missing field(s) {', '.join(missing)}")
        if (row_id := str(row["_id"])) in rows:
            raise DataFormatError(path, number, f"duplicate _id {row_id!r}")
        rows[row_id] = value(row)
    return DataFormatError.unless_any(rows, path)


def load_beir_folder(folder: PathLike, split: str = "test", name: str | None = None, *,
                     refuse_unknown: bool = False) -> RetrievalData:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``; ``name`` defaults to the
    folder name. Judged documents missing from the corpus are counted and the first three named in a warning, or with
    ``refuse_unknown`` (the training-time evaluator) in the error.

    Read as beir's ``GenericDataLoader`` reads it (string ids, a missing title ``""``, the qrels header skipped, only
    queries with qrels kept), but not by it: it reports a bad file as a traceback without its line or not at all (a
    missing text is ``None``, a duplicate id overwrites the first). Here each is one :class:`DataFormatError` naming
    the file and the line, before any model loads.
    """
    folder = existing_path(folder, folder=True, expected="expected a BEIR dataset folder")
    corpus_path, queries_path, qrels_path = (
        existing_path(folder / part, expected="a BEIR folder needs corpus.jsonl, queries.jsonl, qrels/")
        for part in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"))
    corpus = _by_id(corpus_path, lambda row: {"title": str(row.get("title") or ""), "text": str(row["text"])})
    all_queries = _by_id(queries_path, lambda row: str(row["text"]))
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(data_lines(qrels_path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            found = f"found {len(fields)} field(s)"
            raise DataFormatError(qrels_path, number, f"expected query-id, corpus-id, score; {found}")
        if number == 1 and not re.fullmatch(r"-?\d+", fields[2].strip()):
            continue  # header ("query-id corpus-id score")
        query_id, doc_id = fields[0].strip(), fields[1].strip()
        score = parse_int(fields[2], qrels_path, number, "score")
        if query_id not in all_queries:
            raise DataFormatError(qrels_path, number, f"query id {query_id!r} is not in {queries_path.name}")
        qrels.setdefault(query_id, {})[doc_id] = score
    DataFormatError.unless_any(qrels, qrels_path, "no relevance judgements")
    unknown = list(dict.fromkeys(doc_id for rel in qrels.values() for doc_id in rel if doc_id not in corpus))
    if unknown:  # one message, refused or warned
        message = (f"names {len(unknown)} document id{'s' * (len(unknown) > 1)} not in {corpus_path.name} "
                   f"({'e.g. ' * (len(unknown) > 3)}{', '.join(repr(doc_id) for doc_id in unknown[:3])})")
        if refuse_unknown:
            raise DataFormatError(qrels_path, None, message)
        logger.warning("%s: %s", qrels_path, message)
    queries = {qid: all_queries[qid] for qid in qrels}
    return RetrievalData(name or folder.name, corpus, queries, qrels, source=f"beir-folder:{folder}", split=split)


def load_mteb_retrieval(task: Any, split: str | None = None) -> RetrievalData:
    """Load a retrieval task through mteb (from the Hugging Face hub unless cached): an mteb task name (``"SciFact"``;
    BEIR names such as ``"scifact"`` are mapped) or task object; ``split`` defaults to the task's evaluation split."""
    if isinstance(task, str):
        task = beir_task_info(task).mteb_name or task
    task_obj = mteb_task(task, "retrieval")
    # public but transitional in mteb: a task still in the old format (queries/corpus/relevant_docs) becomes
    # ``dataset``, a no-op for every BEIR task, as mteb's own evaluate() calls it; the touchpoint tests pin it
    task_obj.convert_v1_dataset_format_to_v2(num_proc=None)
    split = split or task_obj.metadata.eval_splits[0]
    subsets = task_obj.dataset
    if len(subsets) != 1:
        raise ValueError(f"mteb task {task_obj.metadata.name} has several subsets ({', '.join(subsets)}); load one")
    data = next(iter(subsets.values()))[split]
    corpus = {str(row["id"]): {"title": str(row.get("title") or ""), "text": str(row["text"])}
              for row in data["corpus"]}
    qrels = {str(q): {str(d): int(s) for d, s in rel.items()} for q, rel in data["relevant_docs"].items() if rel}
    queries = {str(row["id"]): str(row["text"]) for row in data["queries"] if str(row["id"]) in qrels}
    return RetrievalData(task_obj.metadata.name, corpus, queries, qrels, f"mteb:{task_obj.metadata.name}", split)
