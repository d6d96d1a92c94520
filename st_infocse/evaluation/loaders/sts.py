"""STS pairs: SentEval folders, jsonl/csv/tsv files, Hugging Face folders and mteb tasks."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from st_infocse.files import check_choice, existing_path, innermost_message

from .common import (
    MTEB_STS_NAMES,
    SENTEVAL_STS_SUBSETS,
    STS_TASKS,
    DataFormatError,
    PathLike,
    STSPairs,
    canonical_sts_name,
    data_lines,
    json_objects,
    mteb_task,
    normalise_split,
    parse_score,
    pick_split,
    senteval_tokens,
)


def find_senteval_root(folder: PathLike) -> Path:
    """SentEval's ``data/downstream`` folder: ``folder`` itself, or its ``downstream``, ``data/downstream`` or
    ``senteval`` subfolder (the one holding ``STS/``, ``SICK/``, ``MR/``...).

    Example:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "data" / "downstream" / "STS").mkdir(parents=True)
        >>> find_senteval_root(root) == root / "data" / "downstream"
        True
    """
    folder = existing_path(folder, folder=True, expected="expected a SentEval data/downstream folder")
    for candidate in (folder, folder / "downstream", folder / "data" / "downstream", folder / "senteval"):
        if any((candidate / sub).is_dir() for sub in ("STS", "SICK", "MR", "SST", "TREC", "MRPC")):
            return candidate
    raise FileNotFoundError(
        f"{folder}: not a SentEval data/downstream folder (no STS/, SICK/ or transfer-task subfolder found)"
    )


def _senteval_sts_year(root: Path, name: str) -> STSPairs:
    folder_name, subsets = SENTEVAL_STS_SUBSETS[name]
    folder = existing_path(root / "STS" / folder_name, folder=True, expected=f"needed for {name}")
    s1, s2, scores, sizes = [], [], [], {}
    for subset in subsets:
        input_path, gs_path = folder / f"STS.input.{subset}.txt", folder / f"STS.gs.{subset}.txt"
        inputs, gold = data_lines(input_path), data_lines(gs_path)
        if len(inputs) != len(gold):
            raise DataFormatError(gs_path, None, f"{len(gold)} scores for {len(inputs)} sentence pairs in "
                                  f"{input_path.name}")
        before = len(scores)
        for number, (pair, score) in enumerate(zip(inputs, gold, strict=True), start=1):
            if not score.strip():
                continue  # SentEval: pairs without a gold score are not evaluated
            fields = pair.split("\t")
            if len(fields) != 2:
                raise DataFormatError(input_path, number, f"expected 2 tab-separated sentences, found {len(fields)}")
            s1.append(senteval_tokens(fields[0]))
            s2.append(senteval_tokens(fields[1]))
            scores.append(parse_score(score.strip(), gs_path, number))
        sizes[subset] = len(scores) - before
    DataFormatError.unless_any(scores, folder, "no scored sentence pairs")
    return STSPairs(name, s1, s2, scores, source=f"senteval:{folder}", split="test", subsets=sizes,
                    note="subsets concatenated (SentEval 'all')")


def _tab_pairs(path: Path, lines: Iterable[tuple[int, str]], columns: tuple[int, int, int], expected: str,
               score_column: str = "score") -> tuple[list[str], list[str], list[float]]:
    """Sentence 1, sentence 2 and score from the tab-separated ``(number, line)`` rows at ``columns``."""
    s1, s2, scores = [], [], []
    for number, line in lines:
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(columns):
            raise DataFormatError(path, number, f"expected {expected} tab-separated columns, found {len(fields)}")
        scores.append(parse_score(fields[columns[2]], path, number, column=score_column))
        s1.append(senteval_tokens(fields[columns[0]]))
        s2.append(senteval_tokens(fields[columns[1]]))
    return s1, s2, scores


def _senteval_stsb(root: Path, split: str) -> STSPairs:
    path = root / "STS" / "STSBenchmark" / f"sts-{split}.csv"
    # genre, file, year, id, score, sentence1, sentence2 [, source columns]
    s1, s2, scores = _tab_pairs(path, enumerate(data_lines(path), start=1), (5, 6, 4), "at least 7")
    DataFormatError.unless_any(scores, path, "file is empty (no sentence pairs)")
    return STSPairs("STS-B", s1, s2, scores, source=f"senteval:{path}", split=split)


_SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def _senteval_sick(root: Path, split: str) -> STSPairs:
    check_choice("SICK-R split", split, _SICK_FILES)
    path = root / "SICK" / _SICK_FILES[split]
    lines = DataFormatError.unless_any(data_lines(path), path)
    header = lines[0].split("\t")
    wanted = ("sentence_A", "sentence_B", "relatedness_score")
    missing = [c for c in wanted if c not in header]
    if missing:
        raise DataFormatError(path, 1, f"header lacks column(s) {', '.join(missing)} (found: {', '.join(header)})")
    columns = tuple(header.index(c) for c in wanted)
    s1, s2, scores = _tab_pairs(path, enumerate(lines[1:], start=2), columns, str(len(header)), "relatedness_score")
    DataFormatError.unless_any(scores, path, "no sentence pairs after the header")
    note = f"SentEval SICK {split} split ({len(scores):,} pairs)"
    return STSPairs("SICK-R", s1, s2, scores, source=f"senteval:{path}", split=split, note=note)


def load_senteval_sts(folder: PathLike, task: str, split: str = "test") -> STSPairs:
    """Load one STS task from a SentEval ``data/downstream`` folder (or one holding it, :func:`find_senteval_root`).

    STS12-16 hold all subsets concatenated (SentEval's "all" setting, as mteb's STS12-16 test sets do), with
    ``subsets`` giving each one's size; pairs without a gold score are skipped and sentences whitespace-normalised,
    as SentEval does. ``task`` is ``"STS12"`` ... ``"STS16"``, ``"STS-B"`` or ``"SICK-R"`` (aliases accepted);
    ``split`` is ``"test"``, or ``"dev"``/``"train"`` for STS-B and SICK-R.
    """
    root = find_senteval_root(folder)
    name = canonical_sts_name(task)
    split = normalise_split(split)
    if name in SENTEVAL_STS_SUBSETS:
        if split != "test":
            raise ValueError(f"{name} has only a test split in SentEval, got split={split!r}")
        return _senteval_sts_year(root, name)
    if name == "STS-B":
        return _senteval_stsb(root, split)
    if name == "SICK-R":
        return _senteval_sick(root, split)
    raise ValueError(f"unknown SentEval STS task {task!r}; expected one of {', '.join(STS_TASKS)}")


def _rows_to_pairs(ds: Any, path: Path, columns: tuple[str, str, str], locate: Callable[[int], tuple[int, str]],
                   header: int | None = None, per_row: bool = False) -> tuple[list[str], list[str], list[float]]:
    """The three columns of a ``Dataset``'s rows, checked: a column the dataset lacks is named at ``header`` (its
    line; with ``per_row``, as JSON rows carry their own columns, at the first row without it unless the dataset
    has none of the three); row ``index`` is named by ``locate(index)``, its ``(number, unit)`` in the file (a line
    of a text file, a row of a Hugging Face folder)."""
    missing = [c for c in columns if c not in ds.column_names]
    if missing and (not per_row or len(missing) == len(columns)):
        found = ", ".join(ds.column_names) or "nothing"
        raise DataFormatError(path, header, f"missing column(s) {', '.join(missing)} (found: {found})")
    c1, c2, cs = columns
    s1, s2, scores = [], [], []
    for index, row in enumerate(ds.select_columns([c for c in columns if c in ds.column_names])):
        number, unit = locate(index)
        missing = [c for c in columns if row.get(c) is None]
        if missing:
            found = ", ".join(k for k, v in row.items() if v is not None) or "nothing"
            raise DataFormatError(path, number, f"missing column(s) {', '.join(missing)} (found: {found})", unit)
        for column in (c1, c2):
            if not isinstance(row[column], str):
                raise DataFormatError(path, number, f"{column} must be a string, got {row[column]!r}", unit)
        scores.append(parse_score(row[cs], path, number, unit, column=cs))
        s1.append(row[c1])
        s2.append(row[c2])
    return s1, s2, scores


def _csv_record_lines(lines: list[str], delimiter: str) -> list[int]:
    """The first line of each non-blank record (the header's first), as pandas counts records (a quoted field may
    span lines); only to name the line of a bad row."""
    starts, end = [], 0
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)
    for row in reader:
        start, end = end + 1, reader.line_num
        if any(cell.strip() for cell in row):
            starts.append(start)
    return starts


#: JSON value kinds as pyarrow types a column (an integer column holding a float is promoted, not refused)
_JSON_KINDS = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", dict: "object"}


def _locate_json_error(path: Path) -> None:
    """Name the line datasets could not read: invalid JSON or a non-object line (the JSON-lines reader names it), or
    a column whose JSON type changes between lines (pyarrow reads one type per column and names no line)."""
    first: dict[str, tuple[int, str]] = {}
    for number, row in json_objects(path):
        for column, value in row.items():
            if value is None:
                continue
            kind = _JSON_KINDS.get(type(value), type(value).__name__)
            seen = first.setdefault(column, (number, kind))
            if seen[1] != kind:
                raise DataFormatError(path, number, f"{column} is a {kind} where line {seen[0]} has a {seen[1]} "
                                      "(one JSON type per column)")


def load_sts_file(path: PathLike, name: str | None = None, sentence1_column: str = "sentence1",
                  sentence2_column: str = "sentence2", score_column: str = "score", split: str = "test") -> STSPairs:
    """Load sentence pairs from a ``.jsonl``, ``.json``, ``.csv`` or ``.tsv`` file, read by ``datasets.load_dataset``
    (its ``json`` and ``csv`` builders); a bad row is named by its line. ``name`` defaults to the file stem; ``split``
    is only recorded.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "mine.jsonl"
        >>> _ = f.write_text('{"sentence1": "a cat", "sentence2": "a dog", "score": 1.5}\\n')
        >>> load_sts_file(f).scores
        [1.5]
    """
    path = existing_path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv", ".tsv"):
        raise ValueError(f"{path}: unsupported file type {suffix!r} (expected .jsonl, .csv or .tsv)")
    columns = (sentence1_column, sentence2_column, score_column)
    lines = data_lines(path)  # also refuses text that is not utf-8, naming the line
    delimiter = "\t" if suffix == ".tsv" else ","
    is_json = suffix in (".jsonl", ".json")
    if is_json:  # blank lines skipped, as datasets' JSON reader skips them
        record_lines = [number for number, line in enumerate(lines, start=1) if line.strip()]
    else:
        record_lines = _csv_record_lines(lines, delimiter)
    if len(record_lines) < (1 if is_json else 2):  # nothing, or a csv header alone
        raise DataFormatError(path, None, "file is empty (no sentence pairs)")
    json_array = is_json and lines[record_lines[0] - 1].lstrip().startswith("[")  # a .json list of objects
    import datasets

    # csv: every field as written (no NaN for empty fields: an empty score is then named, not read as missing)
    options = {} if is_json else {"delimiter": delimiter, "na_filter": False}
    try:
        ds = datasets.load_dataset("json" if is_json else "csv", data_files=str(path), split="train", **options)
    except Exception as exc:  # datasets wraps the reader's error (pandas' ParserError, pyarrow's ArrowInvalid)
        if is_json and not json_array:
            _locate_json_error(path)
        raise DataFormatError(path, None, f"not readable by datasets ({innermost_message(exc)})") from None
    if is_json:
        locate = (lambda i: (i + 1, "record")) if json_array else (lambda i: (record_lines[i], "line"))
    else:
        locate = lambda i: (record_lines[i + 1], "line")  # noqa: E731 (record 0 is the header)
        if "__index_level_0__" in ds.column_names:  # pandas made a first row wider than the header an index
            header = len(ds.column_names) - 1
            raise DataFormatError(path, record_lines[1], f"expected {header} columns like the header, found more")
    s1, s2, scores = _rows_to_pairs(ds, path, columns, locate, None if is_json else record_lines[0], per_row=is_json)
    DataFormatError.unless_any(scores, path, "file is empty (no sentence pairs)")
    return STSPairs(canonical_sts_name(name or path.stem), s1, s2, scores, source=f"file:{path}", split=split)


def load_sts_hf(path: PathLike, split: str = "test", name: str | None = None, sentence1_column: str = "sentence1",
                sentence2_column: str = "sentence2", score_column: str = "score") -> STSPairs:
    """Load sentence pairs from a local Hugging Face dataset folder: one written by ``save_to_disk``, or data files
    that ``datasets.load_dataset(folder)`` reads (``test.jsonl``, ``data/test-*.parquet``...). ``"validation"`` and
    ``"dev"`` name the same split; ``name`` defaults to the folder name.

    Example:
        >>> from datasets import Dataset
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"], "score": [4.0]}).save_to_disk(folder)
        >>> load_sts_hf(folder).scores
        [4.0]
    """
    import datasets

    path = existing_path(path, folder=True)
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        ds = datasets.load_from_disk(str(path))
    else:
        try:
            ds = datasets.load_dataset(str(path))
        except Exception as exc:  # datasets raises many types for unreadable folders
            raise DataFormatError(path, None, f"not a readable Hugging Face dataset folder ({exc})") from None
    if isinstance(ds, datasets.DatasetDict):
        chosen = pick_split(split, list(ds))
        if chosen is None:
            raise DataFormatError(path, None, f"no split {split!r} (available: {', '.join(ds)})")
        ds = ds[chosen]
    columns = (sentence1_column, sentence2_column, score_column)
    s1, s2, scores = _rows_to_pairs(ds, path, columns, lambda i: (i + 1, "row"))
    DataFormatError.unless_any(scores, path, f"split {split!r} is empty (no sentence pairs)")
    return STSPairs(canonical_sts_name(name or path.name), s1, s2, scores, source=f"hf:{path}", split=split)


def load_mteb_sts(task: Any, split: str = "test") -> STSPairs:
    """Load an STS task through mteb (from the Hugging Face hub unless cached): an mteb task name (``"STS12"``,
    ``"STSBenchmark"``; the table's names such as ``"STS-B"`` are mapped) or task object. mteb's ``SICK-R`` holds
    all 9,927 SICK pairs, not the papers' 4,927-pair test split; the returned ``note`` says so."""
    if isinstance(task, str):
        task = MTEB_STS_NAMES.get(canonical_sts_name(task), task)
    task_obj = mteb_task(task, "STS")
    dataset = task_obj.dataset
    if split not in dataset and "default" in dataset:
        dataset = dataset["default"]
    if split not in dataset:
        raise ValueError(f"mteb task {task_obj.metadata.name} has no split {split!r} (has: {', '.join(dataset)})")
    ds = dataset[split]
    c1, c2 = task_obj.column_names
    name = canonical_sts_name(task_obj.metadata.name)
    scores = [float(s) for s in ds["score"]]
    note = (f"mteb SICK-R: all of SICK ({len(scores):,} pairs), not the papers' 4,927-pair test split"
            if name == "SICK-R" else "")
    return STSPairs(name, list(ds[c1]), list(ds[c2]), scores, source=f"mteb:{task_obj.metadata.name}", split=split,
                    note=note)


def load_sts(source: PathLike | STSPairs, task: str | None = None, split: str = "test") -> STSPairs:
    """STS pairs from ``"mteb"`` (online, needs ``task``), a SentEval folder (with ``task``), a ``.jsonl/.csv/.tsv``
    file, a Hugging Face dataset folder, or already loaded :class:`STSPairs` (returned as they are)."""
    if isinstance(source, STSPairs):
        return source
    if isinstance(source, str) and source == "mteb":
        if task is None:
            raise ValueError("source='mteb' needs a task name")
        return load_mteb_sts(task, split)
    path = Path(source)
    if path.is_file():
        return load_sts_file(path, name=task, split=split)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    try:
        root = find_senteval_root(path)
    except FileNotFoundError:
        root = None
    if root is not None and task is not None and canonical_sts_name(task) in STS_TASKS:
        return load_senteval_sts(root, task, split)
    return load_sts_hf(path, split=split, name=task)
