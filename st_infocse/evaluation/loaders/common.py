"""What every evaluation loader shares: the task tables, the containers the loaders return, and the package's line
and JSON-lines readers. A loader raises a :class:`~st_infocse.files.FileFormatError` (text that is not UTF-8 or not
JSON, as every reader of the package words it) or a :class:`DataFormatError` naming the file and the line (or row) of
the first problem, so a malformed file never surfaces as a deep stack trace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from st_infocse.files import FileFormatError, existing_path, read_json_objects, read_lines
from st_infocse.modeling.random_state import global_random_state_kept

from .._deps import require

PathLike = str | Path
Rows = TypeVar("Rows")

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
#: The table's STS names -> mteb's task names.
MTEB_STS_NAMES: dict[str, str] = {**{task: task for task in STS_TASKS}, "STS-B": "STSBenchmark"}
_STS_ALIASES = {"stsb": "STS-B", "stsbenchmark": "STS-B", "sickr": "SICK-R", "sick": "SICK-R",
                "sickrelatedness": "SICK-R"}
_SPLIT_ALIASES = {"validation": "dev", "val": "dev", "trial": "dev"}


class DataFormatError(FileFormatError):
    """A data file is missing a column, has a non-numeric score, is empty, or is otherwise malformed (``path``, and
    ``line``: the 1-based line or row, ``None`` for whole-file problems)."""

    @classmethod
    def unless_any(cls, rows: Rows, path: Path, message: str = "file is empty") -> Rows:
        """``rows`` when they hold anything, else this error on the whole file saying ``message``: the loaders' one
        check that a file gave something to evaluate on."""
        if not rows:
            raise cls(path, None, message)
        return rows


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores (any scale; only ranks matter for Spearman).

    Attributes:
        source: Where the data came from, e.g. ``"senteval:/data/STS/STS12-en-test"`` or ``"mteb:STS12"``.
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
    """A BEIR-style retrieval dataset: document id -> ``{"title": ..., "text": ...}``, query id -> text (only queries
    that have qrels), and the qrels split's query id -> {document id -> relevance}."""

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    source: str
    split: str = "test"


@dataclass
class TransferData:
    """A SentEval classification task: sentences (sentence pairs for MRPC) and label ids (``classes`` names them).

    Tasks without a test split (MR, CR, SUBJ, MPQA) are evaluated by k-fold cross-validation over ``train``; SST2's
    ``dev`` chooses the regularisation.
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


def canonical_sts_name(name: str) -> str:
    """Map ``"stsb"``, ``"STSBenchmark"``, ``"SICKRelatedness"``... to the table names in :data:`STS_TASKS`; any
    other name is returned unchanged.

    Example:
        >>> canonical_sts_name("STSBenchmark"), canonical_sts_name("sick-r"), canonical_sts_name("sts12")
        ('STS-B', 'SICK-R', 'STS12')
    """
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return {re.sub(r"[^a-z0-9]", "", task.lower()): task for task in STS_TASKS}.get(key, _STS_ALIASES.get(key, name))


def data_lines(path: Path, fallback: str | None = None) -> list[str]:
    """The file's lines (:func:`st_infocse.files.read_lines`); a final newline does not make an extra line."""
    return [line for _, line in read_lines(existing_path(path), fallback_encoding=fallback)]


def json_objects(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """``(line, object)`` for each JSON object of a JSON-lines file (:func:`st_infocse.files.read_json_objects`)."""
    for where, row in read_json_objects(existing_path(path), error=DataFormatError):
        yield int(where.split()[1]), row


def parse_score(value: Any, path: Path, line: int, unit: str = "line", column: str = "score") -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise DataFormatError(path, line, f"{column} {value!r} is not a number", unit) from None
    if not math.isfinite(score):
        raise DataFormatError(path, line, f"{column} {value!r} is not a finite number", unit)
    return score


def parse_int(value: Any, path: Path, line: int, column: str, allowed: Sequence[int] | None = None) -> int:
    """An integer field (one of ``allowed`` where given), or a :class:`DataFormatError` naming the line."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise DataFormatError(path, line, f"{column} {value!r} is not an integer") from None
    if allowed is not None and number not in allowed:
        raise DataFormatError(path, line, f"{column} must be one of {', '.join(map(str, allowed))}, got {number}")
    return number


def normalise_split(split: str) -> str:
    return _SPLIT_ALIASES.get(split.lower(), split.lower())


def senteval_tokens(text: str) -> str:
    # SentEval splits sentences on whitespace and SimCSE's batcher re-joins them with single spaces
    return " ".join(text.split())


def pick_split(split: str, available: Sequence[str]) -> str | None:
    return next((candidate for candidate in available if normalise_split(candidate) == normalise_split(split)), None)


def mteb_task(task: Any, kind: str) -> Any:
    """The mteb task (by name or as given) with its data loaded; the global random states are kept (mteb seeds
    Python's, NumPy's and torch's when it builds or loads a task)."""
    mteb = require("mteb", f"Loading {kind} data from mteb")
    with global_random_state_kept():
        task = mteb.get_task(task) if isinstance(task, str) else task
        try:
            if not getattr(task, "data_loaded", False):
                task.load_data()
        except Exception as exc:  # hub errors come in many types; the message is what matters
            raise RuntimeError(
                f"could not load mteb task {task.metadata.name} from the Hugging Face hub ({type(exc).__name__}: "
                f"{exc}). Offline? Pass a local folder as the source instead (a SentEval data/downstream folder for "
                "STS, a BEIR folder for retrieval)."
            ) from exc
    return task
