"""Loaders for evaluation data: SentEval folders, jsonl/csv/Hugging Face folders, BEIR folders and mteb tasks.

Every loader validates what it reads and raises :class:`DataFormatError` naming the file and the line
(or row) of the first problem, so a malformed file never surfaces as a deep stack trace.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._deps import require
from .beir_tasks import beir_task_info

logger = logging.getLogger(__name__)

PathLike = str | Path

#: The papers' STS table, in the papers' column order.
STS_TASKS: tuple[str, ...] = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
#: SentEval's transfer tasks, in the papers' column order.
TRANSFER_TASKS: tuple[str, ...] = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")

# SentEval's subset lists (senteval/sts.py); STS13 has no SMT subset (licensing), as in SentEval.
SENTEVAL_STS_SUBSETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "STS12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "STS13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),
    "STS14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "STS15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "STS16": ("STS16-en-test", ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
}
MTEB_STS_NAMES: dict[str, str] = {
    "STS12": "STS12",
    "STS13": "STS13",
    "STS14": "STS14",
    "STS15": "STS15",
    "STS16": "STS16",
    "STS-B": "STSBenchmark",
    "SICK-R": "SICK-R",
}
_STS_ALIASES = {
    "stsb": "STS-B",
    "stsbenchmark": "STS-B",
    "sickr": "SICK-R",
    "sick": "SICK-R",
    "sickrelatedness": "SICK-R",
}
_SPLIT_ALIASES = {"validation": "dev", "val": "dev", "trial": "dev"}


class DataFormatError(ValueError):
    """A data file is missing a column, has a non-numeric score, is empty, or is otherwise malformed.

    Attributes:
        path: The offending file (or folder).
        line: 1-based line number (or row number for Hugging Face folders); ``None`` for whole-file problems.
    """

    def __init__(self, path: PathLike, line: int | None, message: str, unit: str = "line"):
        self.path = Path(path)
        self.line = line
        where = f"{self.path}" if line is None else f"{self.path}, {unit} {line}"
        super().__init__(f"{where}: {message}")


# --------------------------------------------------------------------------------------------------------------------
# result containers


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores.

    Attributes:
        name: Task name (``"STS12"``, ``"STS-B"``, a file stem...).
        sentences1, sentences2: The pairs.
        scores: Gold scores (any scale; only ranks matter for Spearman).
        source: Where the data came from, e.g. ``"senteval:/data/STS/STS12-en-test"`` or ``"mteb:STS12"``.
        split: Split name (``"test"``, ``"dev"``...).
        subsets: Subset name -> number of pairs, in file order (SentEval's STS12-16 subsets).
        note: Anything a reader of the results must know (e.g. which SICK-R split).
    """

    name: str
    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]
    source: str
    split: str = "test"
    subsets: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        if not (len(self.sentences1) == len(self.sentences2) == len(self.scores)):
            raise ValueError(
                f"{self.name}: {len(self.sentences1)} first sentences, {len(self.sentences2)} second sentences "
                f"and {len(self.scores)} scores; they must be equally long"
            )

    def __len__(self) -> int:
        return len(self.scores)


@dataclass
class RetrievalData:
    """A BEIR-style retrieval dataset.

    Attributes:
        name: Dataset name (``"scifact"``).
        corpus: Document id -> ``{"title": ..., "text": ...}``.
        queries: Query id -> text; only queries that have qrels.
        qrels: Query id -> {document id -> relevance}.
        source: Where it came from.
        split: The qrels split.
    """

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    source: str
    split: str = "test"


@dataclass
class TransferData:
    """A SentEval classification task.

    ``train``/``dev``/``test`` hold sentences (or sentence pairs for MRPC). Tasks without a test split (MR, CR,
    SUBJ, MPQA) are evaluated by k-fold cross-validation over ``train``.

    Attributes:
        name: Task name.
        train, train_labels: Training examples.
        test, test_labels: Test examples (``None`` for cross-validated tasks).
        dev, dev_labels: Development examples used to choose the regularisation (SST2 only).
        classes: Label names, indexed by label id.
        source: Where it came from.
    """

    name: str
    train: list[Any]
    train_labels: list[int]
    classes: tuple[str, ...]
    source: str
    test: list[Any] | None = None
    test_labels: list[int] | None = None
    dev: list[Any] | None = None
    dev_labels: list[int] | None = None

    @property
    def is_pair_task(self) -> bool:
        return bool(self.train) and isinstance(self.train[0], tuple)


# --------------------------------------------------------------------------------------------------------------------
# small helpers


def canonical_sts_name(name: str) -> str:
    """Map ``"stsb"``, ``"STSBenchmark"``, ``"SICKRelatedness"``... to the table names in :data:`STS_TASKS`.

    Args:
        name: Any common spelling of an STS task.

    Returns:
        The canonical name, or ``name`` unchanged when it is not one of the papers' tasks.

    Example:
        >>> canonical_sts_name("STSBenchmark"), canonical_sts_name("sick-r"), canonical_sts_name("sts12")
        ('STS-B', 'SICK-R', 'STS12')
    """
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    if key in _STS_ALIASES:
        return _STS_ALIASES[key]
    for task in STS_TASKS:
        if re.sub(r"[^a-z0-9]", "", task.lower()) == key:
            return task
    return name


def _read_lines(path: Path, encoding: str = "utf-8", fallback: str | None = None) -> list[str]:
    """The file's lines without line terminators; a final newline does not make an extra line."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    data = path.read_bytes()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if fallback is None:
            line = data.count(b"\n", 0, exc.start) + 1
            raise DataFormatError(path, line, f"not valid {encoding} text") from None
        text = data.decode(fallback)
    text = text.removeprefix("\ufeff")
    # split on "\n" only: line numbers then match what an editor shows
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _parse_score(value: Any, path: Path, line: int, unit: str = "line", column: str = "score") -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise DataFormatError(path, line, f"{column} {value!r} is not a number", unit) from None
    if not math.isfinite(score):
        raise DataFormatError(path, line, f"{column} {value!r} is not a finite number", unit)
    return score


def _parse_int(value: Any, path: Path, line: int, column: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise DataFormatError(path, line, f"{column} {value!r} is not an integer") from None


def _normalise_split(split: str) -> str:
    return _SPLIT_ALIASES.get(split.lower(), split.lower())


def _tokens(text: str) -> str:
    # SentEval splits sentences on whitespace and SimCSE's batcher re-joins them with single spaces
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------------------------------
# STS: SentEval folders


def find_senteval_root(folder: PathLike) -> Path:
    """Locate SentEval's ``data/downstream`` folder under ``folder``.

    Accepts the ``downstream`` folder itself, a SentEval checkout (``data/downstream``), or a folder that holds a
    ``senteval`` or ``downstream`` subfolder (``../shared/data``).

    Args:
        folder: Where to look.

    Returns:
        The folder that contains ``STS/``, ``SICK/``, ``MR/``...

    Example:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "data" / "downstream" / "STS").mkdir(parents=True)
        >>> find_senteval_root(root) == root / "data" / "downstream"
        True
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: folder not found (expected a SentEval data/downstream folder)")
    for candidate in (folder, folder / "downstream", folder / "data" / "downstream", folder / "senteval"):
        if any((candidate / sub).is_dir() for sub in ("STS", "SICK", "MR", "SST", "TREC", "MRPC")):
            return candidate
    raise FileNotFoundError(
        f"{folder}: not a SentEval data/downstream folder (no STS/, SICK/ or transfer-task subfolder found)"
    )


def _senteval_sts_year(root: Path, name: str) -> STSPairs:
    folder_name, subsets = SENTEVAL_STS_SUBSETS[name]
    folder = root / "STS" / folder_name
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: folder not found (needed for {name})")
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    sizes: dict[str, int] = {}
    for subset in subsets:
        input_path = folder / f"STS.input.{subset}.txt"
        gs_path = folder / f"STS.gs.{subset}.txt"
        inputs = _read_lines(input_path)
        gold = _read_lines(gs_path)
        if len(inputs) != len(gold):
            raise DataFormatError(
                gs_path, None, f"{len(gold)} scores for {len(inputs)} sentence pairs in {input_path.name}"
            )
        kept = 0
        for number, (pair, score) in enumerate(zip(inputs, gold, strict=True), start=1):
            if not score.strip():
                continue  # SentEval: pairs without a gold score are not evaluated
            fields = pair.split("\t")
            if len(fields) != 2:
                raise DataFormatError(input_path, number, f"expected 2 tab-separated sentences, found {len(fields)}")
            s1.append(_tokens(fields[0]))
            s2.append(_tokens(fields[1]))
            scores.append(_parse_score(score.strip(), gs_path, number))
            kept += 1
        sizes[subset] = kept
    if not scores:
        raise DataFormatError(folder, None, "no scored sentence pairs")
    return STSPairs(
        name,
        s1,
        s2,
        scores,
        source=f"senteval:{folder}",
        split="test",
        subsets=sizes,
        note="subsets concatenated (SentEval 'all')",
    )


def _senteval_stsb(root: Path, split: str) -> STSPairs:
    path = root / "STS" / "STSBenchmark" / f"sts-{split}.csv"
    lines = _read_lines(path)
    s1, s2, scores = [], [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        # genre, file, year, id, score, sentence1, sentence2 [, source columns]
        if len(fields) < 7:
            raise DataFormatError(path, number, f"expected at least 7 tab-separated columns, found {len(fields)}")
        scores.append(_parse_score(fields[4], path, number))
        s1.append(_tokens(fields[5]))
        s2.append(_tokens(fields[6]))
    if not scores:
        raise DataFormatError(path, None, "file is empty (no sentence pairs)")
    return STSPairs("STS-B", s1, s2, scores, source=f"senteval:{path}", split=split)


_SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def _senteval_sick(root: Path, split: str) -> STSPairs:
    if split not in _SICK_FILES:
        raise ValueError(f"SICK-R split must be one of {sorted(_SICK_FILES)}, got {split!r}")
    path = root / "SICK" / _SICK_FILES[split]
    lines = _read_lines(path)
    if not lines:
        raise DataFormatError(path, None, "file is empty")
    header = lines[0].split("\t")
    wanted = ("sentence_A", "sentence_B", "relatedness_score")
    missing = [c for c in wanted if c not in header]
    if missing:
        raise DataFormatError(path, 1, f"header lacks column(s) {', '.join(missing)} (found: {', '.join(header)})")
    ia, ib, iscore = (header.index(c) for c in wanted)
    s1, s2, scores = [], [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(ia, ib, iscore):
            raise DataFormatError(path, number, f"expected {len(header)} tab-separated columns, found {len(fields)}")
        scores.append(_parse_score(fields[iscore], path, number, column="relatedness_score"))
        s1.append(_tokens(fields[ia]))
        s2.append(_tokens(fields[ib]))
    if not scores:
        raise DataFormatError(path, None, "no sentence pairs after the header")
    note = f"SentEval SICK {split} split ({len(scores):,} pairs)"
    return STSPairs("SICK-R", s1, s2, scores, source=f"senteval:{path}", split=split, note=note)


def load_senteval_sts(folder: PathLike, task: str, split: str = "test") -> STSPairs:
    """Load one STS task from a SentEval ``data/downstream`` folder.

    STS12-16 return all subsets concatenated (SentEval's "all" setting, which is also what mteb's STS12-16 test
    sets hold); unscored pairs (empty gold lines, e.g. in STS16) are skipped as SentEval does. Sentences are
    whitespace-normalised like SentEval's tokenise-and-rejoin.

    Args:
        folder: The ``data/downstream`` folder (or a folder containing it, see :func:`find_senteval_root`).
        task: ``"STS12"`` ... ``"STS16"``, ``"STS-B"`` or ``"SICK-R"`` (aliases accepted).
        split: ``"test"``, ``"dev"`` or ``"train"`` for STS-B and SICK-R; STS12-16 only have ``"test"``.

    Returns:
        The pairs, with ``subsets`` filled for STS12-16.

    Example:
        >>> pairs = load_senteval_sts("../shared/data/senteval", "STS-B", split="dev")  # doctest: +SKIP
        >>> len(pairs)  # doctest: +SKIP
        1500
    """
    root = find_senteval_root(folder)
    name = canonical_sts_name(task)
    split = _normalise_split(split)
    if name in SENTEVAL_STS_SUBSETS:
        if split != "test":
            raise ValueError(f"{name} has only a test split in SentEval, got split={split!r}")
        return _senteval_sts_year(root, name)
    if name == "STS-B":
        return _senteval_stsb(root, split)
    if name == "SICK-R":
        return _senteval_sick(root, split)
    raise ValueError(f"unknown SentEval STS task {task!r}; expected one of {', '.join(STS_TASKS)}")


# --------------------------------------------------------------------------------------------------------------------
# STS: jsonl / csv / tsv files and Hugging Face folders


def _rows_to_pairs(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    path: Path,
    columns: tuple[str, str, str],
    unit: str,
) -> tuple[list[str], list[str], list[float]]:
    c1, c2, cs = columns
    s1, s2, scores = [], [], []
    for number, row in rows:
        missing = [c for c in columns if c not in row or row[c] is None]
        if missing:
            found = ", ".join(str(k) for k in row) or "nothing"
            raise DataFormatError(path, number, f"missing column(s) {', '.join(missing)} (found: {found})", unit)
        for column in (c1, c2):
            if not isinstance(row[column], str):
                raise DataFormatError(path, number, f"{column} must be a string, got {row[column]!r}", unit)
        scores.append(_parse_score(row[cs], path, number, unit, column=cs))
        s1.append(row[c1])
        s2.append(row[c2])
    return s1, s2, scores


def _jsonl_rows(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, f"invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(row).__name__}")
        yield number, row


def _delimited_rows(path: Path, delimiter: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    lines = _read_lines(path)
    if not lines:
        return
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)
    header: list[str] | None = None
    for row in reader:
        number = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [h.strip() for h in row]
            continue
        if len(row) != len(header):
            raise DataFormatError(path, number, f"expected {len(header)} columns like the header, found {len(row)}")
        yield number, dict(zip(header, row, strict=True))


def load_sts_file(
    path: PathLike,
    name: str | None = None,
    sentence1_column: str = "sentence1",
    sentence2_column: str = "sentence2",
    score_column: str = "score",
    split: str = "test",
) -> STSPairs:
    """Load sentence pairs from a ``.jsonl``, ``.csv`` or ``.tsv`` file with sentence1/sentence2/score columns.

    jsonl files hold one JSON object per line; csv/tsv files start with a header row.

    Args:
        path: The file.
        name: Task name for the results (default: the file stem).
        sentence1_column, sentence2_column, score_column: Column names.
        split: Split label recorded in the results.

    Returns:
        The pairs.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "mine.jsonl"
        >>> _ = f.write_text('{"sentence1": "a cat", "sentence2": "a dog", "score": 1.5}\\n')
        >>> load_sts_file(f).scores
        [1.5]
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        rows = _jsonl_rows(path)
    elif suffix in (".csv", ".tsv"):
        rows = _delimited_rows(path, "\t" if suffix == ".tsv" else ",")
    else:
        raise ValueError(f"{path}: unsupported file type {suffix!r} (expected .jsonl, .csv or .tsv)")
    columns = (sentence1_column, sentence2_column, score_column)
    s1, s2, scores = _rows_to_pairs(rows, path, columns, "line")
    if not scores:
        raise DataFormatError(path, None, "file is empty (no sentence pairs)")
    return STSPairs(canonical_sts_name(name or path.stem), s1, s2, scores, source=f"file:{path}", split=split)


def load_sts_hf(
    path: PathLike,
    split: str = "test",
    name: str | None = None,
    sentence1_column: str = "sentence1",
    sentence2_column: str = "sentence2",
    score_column: str = "score",
) -> STSPairs:
    """Load sentence pairs from a local Hugging Face dataset folder.

    Either a folder written by ``Dataset.save_to_disk``/``DatasetDict.save_to_disk`` or a folder of data files
    that ``datasets.load_dataset(folder)`` understands (``test.jsonl``, ``data/test-*.parquet``, ...).

    Args:
        path: The folder.
        split: Which split (``"validation"`` and ``"dev"`` are tried for each other).
        name: Task name for the results (default: the folder name).
        sentence1_column, sentence2_column, score_column: Column names.

    Returns:
        The pairs.

    Example:
        >>> from datasets import Dataset
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"], "score": [4.0]}).save_to_disk(folder)
        >>> load_sts_hf(folder).scores
        [4.0]
    """
    import datasets

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: folder not found")
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            available = list(loaded)
            chosen = _pick_split(split, available)
            if chosen is None:
                raise DataFormatError(path, None, f"no split {split!r} (available: {', '.join(available)})")
            ds = loaded[chosen]
        else:
            ds = loaded
    else:
        try:
            loaded = datasets.load_dataset(str(path))
        except Exception as exc:  # datasets raises many types for unreadable folders
            raise DataFormatError(path, None, f"not a readable Hugging Face dataset folder ({exc})") from None
        available = list(loaded)
        chosen = _pick_split(split, available)
        if chosen is None:
            raise DataFormatError(path, None, f"no split {split!r} (available: {', '.join(available)})")
        ds = loaded[chosen]
    columns = (sentence1_column, sentence2_column, score_column)
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataFormatError(
            path, None, f"missing column(s) {', '.join(missing)} (found: {', '.join(ds.column_names)})"
        )
    rows = ((i, row) for i, row in enumerate(ds.select_columns(list(columns)), start=1))
    s1, s2, scores = _rows_to_pairs(rows, path, columns, "row")
    if not scores:
        raise DataFormatError(path, None, f"split {split!r} is empty (no sentence pairs)")
    return STSPairs(canonical_sts_name(name or path.name), s1, s2, scores, source=f"hf:{path}", split=split)


def _pick_split(split: str, available: Sequence[str]) -> str | None:
    wanted = _normalise_split(split)
    for candidate in available:
        if _normalise_split(candidate) == wanted:
            return candidate
    return None


# --------------------------------------------------------------------------------------------------------------------
# STS: mteb tasks (online)


def _mteb_task(task: Any, kind: str) -> Any:
    mteb = require("mteb", f"Loading {kind} data from mteb")
    if isinstance(task, str):
        return mteb.get_task(task)
    return task


def _load_mteb_data(task: Any) -> None:
    if getattr(task, "data_loaded", False):
        return
    try:
        task.load_data()
    except Exception as exc:  # hub errors come in many types; the message is what matters
        raise RuntimeError(
            f"could not load mteb task {task.metadata.name} from the Hugging Face hub ({type(exc).__name__}: {exc}). "
            "Offline? Pass a local folder as the source instead (a SentEval data/downstream folder for STS, "
            "a BEIR folder for retrieval)."
        ) from exc


def load_mteb_sts(task: Any, split: str = "test") -> STSPairs:
    """Load an STS task through mteb (downloads from the Hugging Face hub unless cached).

    mteb's ``SICK-R`` holds all 9,927 SICK pairs, not the papers' 4,927-pair test split; the returned
    ``note`` says so.

    Args:
        task: An mteb task name (``"STS12"``, ``"STSBenchmark"``, ``"SICK-R"``; our names such as ``"STS-B"``
            are mapped) or an mteb task object.
        split: The split.

    Returns:
        The pairs.

    Example:
        >>> pairs = load_mteb_sts("STS-B")  # doctest: +SKIP
        >>> len(pairs)  # doctest: +SKIP
        1379
    """
    if isinstance(task, str):
        task = MTEB_STS_NAMES.get(canonical_sts_name(task), task)
    task_obj = _mteb_task(task, "STS")
    _load_mteb_data(task_obj)
    dataset = task_obj.dataset
    if split not in dataset and "default" in dataset:
        dataset = dataset["default"]
    if split not in dataset:
        raise ValueError(f"mteb task {task_obj.metadata.name} has no split {split!r} (has: {', '.join(dataset)})")
    ds = dataset[split]
    c1, c2 = task_obj.column_names
    name = canonical_sts_name(task_obj.metadata.name)
    scores = [float(s) for s in ds["score"]]
    note = ""
    if name == "SICK-R":
        note = f"mteb SICK-R: all of SICK ({len(scores):,} pairs), not the papers' 4,927-pair test split"
    return STSPairs(
        name,
        list(ds[c1]),
        list(ds[c2]),
        scores,
        source=f"mteb:{task_obj.metadata.name}",
        split=split,
        note=note,
    )


def load_sts(source: PathLike | STSPairs, task: str | None = None, split: str = "test") -> STSPairs:
    """Load STS pairs from any supported source.

    Args:
        source: ``"mteb"`` (online), a SentEval folder (with ``task``), a ``.jsonl/.csv/.tsv`` file, a Hugging Face
            dataset folder, or already loaded :class:`STSPairs` (returned as is).
        task: Task name; required for ``"mteb"`` and SentEval folders.
        split: The split.

    Returns:
        The pairs.

    Example:
        >>> pairs = load_sts("../shared/data/senteval", "STS12")  # doctest: +SKIP
        >>> pairs.subsets["MSRpar"]  # doctest: +SKIP
        750
    """
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


# --------------------------------------------------------------------------------------------------------------------
# retrieval: BEIR folders and mteb tasks


def _beir_jsonl(path: Path, required: tuple[str, ...]) -> Iterable[tuple[int, dict[str, Any]]]:
    lines = _read_lines(path)
    if not any(line.strip() for line in lines):
        raise DataFormatError(path, None, "file is empty")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, f"invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(row).__name__}")
        missing = [key for key in required if key not in row or row[key] is None]
        if missing:
            raise DataFormatError(path, number, f"missing field(s) {', '.join(missing)}")
        yield number, row


def load_beir_folder(folder: PathLike, split: str = "test", name: str | None = None) -> RetrievalData:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    Like beir's ``GenericDataLoader``: ids are strings, a missing title is ``""``, the qrels header line is
    skipped, and only queries with qrels are kept. Unlike it, every problem is reported with file and line.

    Args:
        folder: The dataset folder (e.g. ``.../beir/scifact``).
        split: Which qrels file.
        name: Dataset name (default: the folder name).

    Returns:
        The dataset.

    Example:
        >>> data = load_beir_folder("../shared/data/beir/scifact")  # doctest: +SKIP
        >>> len(data.corpus), len(data.queries)  # doctest: +SKIP
        (5183, 300)
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: folder not found (expected a BEIR dataset folder)")
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: file not found (a BEIR folder needs corpus.jsonl, queries.jsonl, qrels/)")

    corpus: dict[str, dict[str, str]] = {}
    for number, row in _beir_jsonl(corpus_path, ("_id", "text")):
        doc_id = str(row["_id"])
        if doc_id in corpus:
            raise DataFormatError(corpus_path, number, f"duplicate _id {doc_id!r}")
        corpus[doc_id] = {"title": str(row.get("title") or ""), "text": str(row["text"])}

    all_queries: dict[str, str] = {}
    for _number, row in _beir_jsonl(queries_path, ("_id", "text")):
        all_queries[str(row["_id"])] = str(row["text"])

    qrels: dict[str, dict[str, int]] = {}
    lines = _read_lines(qrels_path)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise DataFormatError(
                qrels_path, number, f"expected query-id, corpus-id, score; found {len(fields)} field(s)"
            )
        if number == 1 and not re.fullmatch(r"-?\d+", fields[2].strip()):
            continue  # header ("query-id corpus-id score")
        query_id, doc_id = fields[0].strip(), fields[1].strip()
        score = _parse_int(fields[2], qrels_path, number, "score")
        if query_id not in all_queries:
            raise DataFormatError(qrels_path, number, f"query id {query_id!r} is not in {queries_path.name}")
        qrels.setdefault(query_id, {})[doc_id] = score
    if not qrels:
        raise DataFormatError(qrels_path, None, "no relevance judgements")
    unknown = sum(doc_id not in corpus for rel in qrels.values() for doc_id in rel)
    if unknown:
        logger.warning("%s: %d judged document id(s) are not in %s", qrels_path, unknown, corpus_path.name)
    queries = {qid: all_queries[qid] for qid in qrels}
    return RetrievalData(name or folder.name, corpus, queries, qrels, source=f"beir-folder:{folder}", split=split)


def load_mteb_retrieval(task: Any, split: str | None = None) -> RetrievalData:
    """Load a retrieval task through mteb (downloads from the Hugging Face hub unless cached).

    Args:
        task: An mteb task name (``"SciFact"``; BEIR names such as ``"scifact"`` are mapped) or task object.
        split: The split (default: the task's evaluation split).

    Returns:
        The dataset.

    Example:
        >>> data = load_mteb_retrieval("SciFact")  # doctest: +SKIP
    """

    if isinstance(task, str):
        task = beir_task_info(task).mteb_name or task
    task_obj = _mteb_task(task, "retrieval")
    _load_mteb_data(task_obj)
    task_obj.convert_v1_dataset_format_to_v2(num_proc=None)
    split = split or task_obj.metadata.eval_splits[0]
    subsets = task_obj.dataset
    if len(subsets) != 1:
        raise ValueError(f"mteb task {task_obj.metadata.name} has several subsets ({', '.join(subsets)}); load one")
    data = next(iter(subsets.values()))[split]
    corpus = {
        str(row["id"]): {"title": str(row.get("title") or ""), "text": str(row["text"])} for row in data["corpus"]
    }
    qrels = {str(q): {str(d): int(s) for d, s in rel.items()} for q, rel in data["relevant_docs"].items() if rel}
    queries = {str(row["id"]): str(row["text"]) for row in data["queries"] if str(row["id"]) in qrels}
    return RetrievalData(
        task_obj.metadata.name, corpus, queries, qrels, source=f"mteb:{task_obj.metadata.name}", split=split
    )


# --------------------------------------------------------------------------------------------------------------------
# transfer tasks: SentEval folders

_BINARY_FILES = {
    "MR": ("MR", "rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("CR", "custrev.pos", "custrev.neg"),
    "SUBJ": ("SUBJ", "subj.objective", "subj.subjective"),  # SentEval: objective = 1
    "MPQA": ("MPQA", "mpqa.pos", "mpqa.neg"),
}
_TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
_TRANSFER_ALIASES = {"sst": "SST2", "sst2": "SST2", "subj": "SUBJ"}


def canonical_transfer_name(name: str) -> str:
    """Map ``"sst-2"``, ``"mr"``... to the names in :data:`TRANSFER_TASKS`.

    Args:
        name: Any common spelling.

    Returns:
        The canonical name.

    Example:
        >>> canonical_transfer_name("SST-2")
        'SST2'
    """
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    if key in _TRANSFER_ALIASES:
        return _TRANSFER_ALIASES[key]
    for task in TRANSFER_TASKS:
        if task.lower() == key:
            return task
    raise ValueError(f"unknown transfer task {name!r}; expected one of {', '.join(TRANSFER_TASKS)}")


def _sentences(path: Path) -> list[tuple[int, str]]:
    # SentEval reads these files as latin-1; utf-8 first keeps real non-ASCII text intact
    return [(n, _tokens(line)) for n, line in enumerate(_read_lines(path, fallback="latin-1"), start=1)]


def _labelled_lines(path: Path) -> list[tuple[str, int]]:
    out = []
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.rstrip().rsplit("\t", 1)
        if len(fields) != 2:
            raise DataFormatError(path, number, "expected '<sentence>\\t<label>'")
        out.append((_tokens(fields[0]), _parse_int(fields[1], path, number, "label")))
    if not out:
        raise DataFormatError(path, None, "file is empty")
    return out


def _trec(path: Path) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    for number, line in _sentences(path):
        if not line:
            continue
        target, _, rest = line.partition(":")
        if target not in _TREC_CLASSES or " " not in rest:
            raise DataFormatError(path, number, "expected '<COARSE>:<fine> <question>' with a TREC coarse label")
        texts.append(rest.split(" ", 1)[1])
        labels.append(_TREC_CLASSES.index(target))
    if not texts:
        raise DataFormatError(path, None, "file is empty")
    return texts, labels


def _mrpc(path: Path) -> tuple[list[tuple[str, str]], list[int]]:
    lines = _read_lines(path)
    if len(lines) < 2:
        raise DataFormatError(path, None, "file is empty (expected a header and sentence pairs)")
    pairs, labels = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            raise DataFormatError(path, number, f"expected 5 tab-separated columns, found {len(fields)}")
        label = _parse_int(fields[0], path, number, "Quality")
        if label not in (0, 1):
            raise DataFormatError(path, number, f"Quality must be 0 or 1, got {label}")
        pairs.append((_tokens(fields[3]), _tokens(fields[4])))
        labels.append(label)
    if not pairs:
        raise DataFormatError(path, None, "no sentence pairs after the header")
    return pairs, labels


def load_senteval_transfer(folder: PathLike, task: str) -> TransferData:
    """Load a SentEval transfer task (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC) from a ``data/downstream`` folder.

    Blank lines are skipped (SentEval keeps them as empty sentences: 4 of CR's 3,775 lines, 3 of MPQA's 10,606).

    Args:
        folder: The ``data/downstream`` folder (or a folder containing it).
        task: The task name.

    Returns:
        The task's data; MR, CR, SUBJ and MPQA have only ``train`` (k-fold cross-validation).

    Example:
        >>> data = load_senteval_transfer("../shared/data/senteval", "TREC")  # doctest: +SKIP
        >>> len(data.train), len(data.test)  # doctest: +SKIP
        (5452, 500)
    """
    root = find_senteval_root(folder)
    name = canonical_transfer_name(task)
    if name in _BINARY_FILES:
        sub, positive, negative = _BINARY_FILES[name]
        texts: list[str] = []
        labels: list[int] = []
        for filename, label in ((positive, 1), (negative, 0)):
            path = root / sub / filename
            lines = [text for _, text in _sentences(path) if text]
            if not lines:
                raise DataFormatError(path, None, "file is empty")
            texts += lines
            labels += [label] * len(lines)
        classes = ("subjective", "objective") if name == "SUBJ" else ("negative", "positive")
        return TransferData(name, texts, labels, classes, source=f"senteval:{root / sub}")
    if name == "SST2":
        base = root / "SST" / "binary"
        splits = {s: _labelled_lines(base / f"sentiment-{s}") for s in ("train", "dev", "test")}
        for s, rows in splits.items():
            bad = next((i for i, (_, y) in enumerate(rows) if y not in (0, 1)), None)
            if bad is not None:
                raise DataFormatError(base / f"sentiment-{s}", None, f"label {rows[bad][1]} is not 0 or 1")
        return TransferData(
            name,
            [t for t, _ in splits["train"]],
            [y for _, y in splits["train"]],
            ("negative", "positive"),
            source=f"senteval:{base}",
            test=[t for t, _ in splits["test"]],
            test_labels=[y for _, y in splits["test"]],
            dev=[t for t, _ in splits["dev"]],
            dev_labels=[y for _, y in splits["dev"]],
        )
    if name == "TREC":
        train, train_labels = _trec(root / "TREC" / "train_5500.label")
        test, test_labels = _trec(root / "TREC" / "TREC_10.label")
        return TransferData(
            name, train, train_labels, _TREC_CLASSES, f"senteval:{root / 'TREC'}", test=test, test_labels=test_labels
        )
    train_pairs, train_labels = _mrpc(root / "MRPC" / "msr_paraphrase_train.txt")
    test_pairs, test_labels = _mrpc(root / "MRPC" / "msr_paraphrase_test.txt")
    return TransferData(
        name,
        train_pairs,
        train_labels,
        ("not paraphrase", "paraphrase"),
        f"senteval:{root / 'MRPC'}",
        test=test_pairs,
        test_labels=test_labels,
    )
