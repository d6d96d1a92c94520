"""The package's one line reader, one JSON-lines reader and the checks every reader of user input applies.

Training texts, documents for mining and evaluation data are all read here, so that a file with bad bytes, a
truncated ``.gz`` or a malformed JSON line is reported the same way everywhere: one :class:`FileFormatError` naming
the file and the line, never a traceback. The checks on what was read live here too (a missing, empty or unsupported
file, a record that is not a JSON object, a missing text column, a saved dataset without a train split, what a usable
text is), the check of a value against its choices and of the sets an evaluation reads (:func:`check_sources`). Only
the standard library is imported, so the command line can check files before torch is loaded.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

_KINDS = {".txt": "txt", ".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}


class InputError(ValueError):
    """A problem with the user's input, said in one line (the command line prints it and exits with code 2)."""


class FileFormatError(InputError):
    """A file that cannot be used as it is: the message names the file (``path``) and, where there is one, the
    1-based line, row or item (``line``; None for a problem with the whole file)."""

    def __init__(self, path: str | Path, line: int | None, message: str, unit: str = "line", *, whole: bool = False):
        self.path = Path(path)
        self.line = line
        if whole:  # ``message`` is the whole sentence and names the file itself
            super().__init__(message)
            return
        where = f"{path}" if line is None else f"{path}, {unit} {line}"  # the name as the user gave it
        super().__init__(f"{where}: {message}")


class NotDecodableError(FileFormatError):
    """A line that is not text in the file's encoding; ``reason`` and ``start`` come from the decoder."""

    def __init__(self, path: str | Path, line: int, error: UnicodeDecodeError) -> None:
        self.reason, self.start = error.reason, error.start
        super().__init__(path, line, f"not UTF-8 ({error.reason} at byte {error.start}); re-encode the file as UTF-8")


def _loads(text: str) -> Any:
    """``json.loads``; a value nested too deeply for the parser is refused like any other invalid JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None


def file_kind(path: Path) -> str | None:
    """txt, json, csv or parquet from the file name (a trailing .gz is looked through), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return _KINDS.get(suffixes[-1]) if suffixes else None


def looks_local(source: str) -> bool:
    """Whether ``source`` names a local path (so a missing one is an error) rather than a hub id or a remote file."""
    if "://" in source:  # hf:// and other remote files are fetched, not looked up on disk
        return False
    return source.startswith((".", "/", "~")) or Path(source).suffix in (*_KINDS, ".gz")


# A byte-order mark opens the first line of files written by some editors; it is no part of the text.
_BOM = b"\xef\xbb\xbf"


def read_lines(path: str | Path, fallback_encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file, plain or gzipped (``.gz``), split on ``\\n`` only (numbers
    match what an editor shows), without terminators or a leading byte-order mark. With ``fallback_encoding`` (e.g.
    ``"latin-1"``, as SentEval reads its files) a file that is not UTF-8 is read whole in that encoding; without it,
    the first line that is not UTF-8 raises :class:`NotDecodableError`. A missing, unreadable, truncated or
    non-gzip ``.gz`` file raises :class:`FileFormatError`, in one line naming the file.
    """
    path = Path(path)
    number = 0
    try:
        with gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb") as handle:  # noqa: SIM115
            if fallback_encoding is not None:
                data = handle.read().removeprefix(_BOM)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = data.decode(fallback_encoding)  # a whole-file decision: a file has one encoding
                # a final newline does not open another line
                yield from enumerate((line.rstrip("\r") for line in text.removesuffix("\n").split("\n") if text), 1)
                return
            for number, raw in enumerate(handle, start=1):  # noqa: B007 - the count is used in the errors
                if number == 1 and raw == _BOM:
                    return  # a byte-order mark alone: an empty file
                yield number, (raw.removeprefix(_BOM) if number == 1 else raw).decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise NotDecodableError(path, number, exc) from None
    except (OSError, EOFError, zlib.error) as exc:  # a missing file, or a truncated or non-gzip .gz file
        raise FileFormatError(path, None, f"cannot read {path}: {exc}", whole=True) from None


def read_json_records(path: str | Path) -> Iterator[tuple[str, Any]]:
    """``(where, value)`` for each record of a JSON-lines file, or of a ``.json`` file holding one array (on one line
    or spread over many); ``where`` is ``"line N"`` or ``"item N"``. Blank lines are skipped. A
    :class:`FileFormatError` names the file and the line of the first problem."""
    path = Path(path)
    if path.name.lower().removesuffix(".gz").endswith(".json"):
        text = "\n".join(line for _, line in read_lines(path)).strip()
        try:
            whole = _loads(text)
        except ValueError:
            whole = None  # JSON lines, or an error that the line-by-line reading names
        if isinstance(whole, list):
            yield from ((f"item {index}", item) for index, item in enumerate(whole, start=1))
            return
        if whole is not None and "\n" in text:  # one value spread over lines, which is not a record per line
            message = f"{path} holds a single JSON {type(whole).__name__}; expected JSON lines or an array"
            raise FileFormatError(path, None, message, whole=True)
    for number, line in read_lines(path):
        if line.strip():
            try:
                yield f"line {number}", _loads(line)
            except ValueError as exc:
                raise FileFormatError(path, number,
                                      f"not valid JSON ({exc}); expected one JSON object per line") from None


def read_json_objects(path: str | Path, expected: str = "a JSON object",
                      error: type[FileFormatError] = FileFormatError) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each record of :func:`read_json_records`; a record that is not a JSON object raises
    ``error`` naming its line (or item): ``"<file>, line 3: expected <expected>, got list"``."""
    for where, record in read_json_records(path):
        if not isinstance(record, dict):
            unit, number = where.split()
            raise error(path, int(number), f"expected {expected}, got {type(record).__name__}", unit)
        yield where, record


def is_text(value: Any) -> bool:
    """Whether ``value`` is usable text: a string with something besides whitespace (what every reader keeps)."""
    return text_problem(value) is None


def text_problem(value: Any) -> str | None:
    """Why ``value`` cannot be trained on: ``"missing"`` (None), ``"not text"`` (not a string) or ``"blank"`` (only
    whitespace); None for usable text. The one rule behind every check of training text."""
    if value is None:
        return "missing"
    if not isinstance(value, str):
        return "not text"
    return None if value.strip() else "blank"


@dataclass
class TextReport:
    """What :func:`clean_text_values` kept and dropped, by reason."""

    total: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.dropped.items())) or "none"
        return f"{self.kept} of {self.total} texts kept; dropped: {reasons}"


def clean_text_values(values: Iterable[Any], deduplicate: bool = False) -> tuple[list[str], TextReport]:
    """The non-blank strings of ``values`` in order, and a :class:`TextReport` of what was dropped and why.

    Each row is dropped for its :func:`text_problem` or, with ``deduplicate``, as a ``duplicate`` of an earlier text
    after stripping whitespace; the rest are kept.
    """
    report = TextReport()
    seen: set[str] = set()
    kept: list[str] = []
    for value in values:
        report.total += 1
        problem = text_problem(value)
        if problem is not None:
            report.dropped[problem] += 1
        elif deduplicate and value.strip() in seen:
            report.dropped["duplicate"] += 1
        else:
            seen.add(value.strip())
            kept.append(value)
    report.kept = len(kept)
    return kept, report


def check_local_file(source: str, label: str, kinds: Collection[str], formats: str,
                     noun: str | None = None) -> tuple[Path, str | None] | None:
    """The path of a user's ``source`` and its kind (see :func:`file_kind`; None for a folder), or None for a hub id
    or a remote file; an :class:`InputError` for a local path that does not exist, a file of a kind not in ``kinds``
    (naming ``formats``) or an empty one (naming ``noun``, default ``label``)."""
    path = Path(source).expanduser()
    if not path.exists():
        if looks_local(source):
            raise InputError(f"{label} not found: {source}")
        return None
    if path.is_dir():
        return path, None
    kind = file_kind(path)
    if kind not in kinds:
        raise InputError(f"unsupported file type for {label}: {source}; use {formats}")
    if path.stat().st_size == 0:
        raise InputError(f"{noun or label} {source} is empty (0 bytes)")
    return path, kind


def choose_column(source: str, columns: Sequence[str], strings: Sequence[str], text_column: str | None) -> str:
    """The text column: the one asked for, else ``text``, else the only string column."""
    if text_column is not None:
        if text_column not in columns:
            raise InputError(f"no column {text_column!r} in {source} (columns: {list(columns)})")
        return text_column
    if "text" in columns:
        return "text"
    if len(strings) == 1:
        return strings[0]
    raise InputError(f"choose the text column with --text_column (columns in {source}: {list(columns)}; "
                     f"holding strings: {list(strings)})")


def check_saved_dataset(source: str, path: Path) -> dict[str, Any]:
    """The features of a ``save_to_disk`` folder (empty when not recorded); fails when it is not one."""
    if (path / "dataset_dict.json").is_file():
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
        if "train" not in splits:
            raise InputError(f"{source} is a DatasetDict without a 'train' split (splits: {splits})")
        path = path / "train"
    if not (path / "state.json").is_file():
        raise InputError(f"{source} is not a dataset folder written by save_to_disk")
    try:
        return json.loads((path / "dataset_info.json").read_text()).get("features") or {}
    except (OSError, ValueError):
        return {}


def check_choice(name: str, value: Any, choices: Any) -> None:
    """Refuse, in one line naming ``name``, a ``value`` not among ``choices`` (a sequence, or a ``Literal`` type)."""
    options = get_args(choices) or tuple(choices)
    if value not in options:
        raise InputError(f"{name} must be one of {', '.join(map(str, options))}, got {value!r}")


#: A range as ``(low, high, low included, high included)``; None for an open end.
Bounds = tuple[float | None, float | None, bool, bool]


def out_of_range(value: float | None, bounds: Bounds | None) -> str | None:
    """Why ``value`` lies outside ``bounds``, e.g. ``"must be at least 0"``; None inside (or without bounds)."""
    if bounds is None or value is None:
        return None
    low, high, low_in, high_in = bounds
    below = low is not None and (value < low or (value == low and not low_in))
    if below and high is None:
        return f"must be {'at least' if low_in else 'above' if low else 'positive'}{f' {low:g}' if low_in or low else ''}"
    if below or (high is not None and (value > high or (value == high and not high_in))):
        return f"must lie in {'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"
    return None


def check_range(name: str, value: float | None, bounds: Bounds) -> None:
    """Refuse, in one line naming ``name``, a ``value`` outside ``bounds`` (see :func:`out_of_range`)."""
    why = out_of_range(value, bounds)
    if why:
        raise InputError(f"{name} {why}, got {value:g}")


def check_at_least(flag: str, value: int | None, least: int = 1) -> None:
    """A count the user gave is used as given: one that selects nothing is refused rather than ignored."""
    check_range(flag, value, (least, None, True, False))


def innermost_message(exc: BaseException) -> str:
    """The first line of the innermost cause of ``exc``: behind datasets' wrappers, the reader's own message
    (pandas' or pyarrow's), which names the problem and often its line."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def dataset_error(source: str, exc: Exception) -> InputError:
    """One line from a datasets loading failure (:func:`innermost_message`)."""
    return InputError(f"cannot read {source}: {innermost_message(exc)}")


def existing_path(path: str | Path, folder: bool = False, expected: str = "") -> Path:
    """``path`` as a Path when it is a file (with ``folder``, a folder); else one FileNotFoundError naming it and what
    was ``expected`` there: the one check of a file or folder a reader was given."""
    path = Path(path)
    if not (path.is_dir() if folder else path.is_file()):
        raise FileNotFoundError(f"{path}: {'folder' if folder else 'file'} not found{f' ({expected})' * bool(expected)}")
    return path


def qrels_split(folder: Path, split: str | None, candidates: Sequence[str]) -> str:
    """The qrels split read in a BEIR-layout folder, by its listing only: ``split`` where ``qrels/<split>.tsv``
    exists, or with None the first of ``candidates`` there; else a FileNotFoundError naming what is missing and what
    ``qrels/`` holds.

    Args:
        folder: The dataset's folder (corpus.jsonl, queries.jsonl, qrels/).
        split: The split asked for, or None.
        candidates: The splits tried in order when none is asked for.
    """
    qrels = folder / "qrels"
    for name in [split] if split else candidates:
        if (qrels / f"{name}.tsv").is_file():
            return name
    held = sorted(path.name for path in qrels.glob("*.tsv"))
    holds = f"qrels/ holds {', '.join(held) or 'no .tsv file'}" if qrels.is_dir() else f"{folder} has no qrels/ folder"
    if split:
        raise FileNotFoundError(f"{qrels / f'{split}.tsv'}: file not found ({holds})")
    tried = " nor ".join(f"qrels/{name}.tsv" for name in candidates)
    raise FileNotFoundError(f"{folder}: neither {tried} found ({holds}); name the split to use")


def beir_parts(name: str, source: str | Path, split: str | None, default: str = "test") -> tuple[dict[str, Path], str]:
    """The BEIR-layout folders of dataset ``name`` under ``source`` (a folder of datasets, or the dataset's own
    folder), ``{"": folder}`` or one per part (CQADupStack's forums, each with its corpus.jsonl), and the qrels split
    read in them: ``split``, else the first of ``default``, ``dev`` and ``test`` that the first part holds
    (:func:`qrels_split`), found in every part. Reads folder listings only; FileNotFoundError names what is
    missing."""
    root = existing_path(Path(source).expanduser(), folder=True, expected="expected BEIR dataset folders or 'mteb'")
    folder = root / name
    if not folder.is_dir():
        if not ((root / "corpus.jsonl").is_file() and root.name.lower() == name.lower()):
            raise FileNotFoundError(f"{folder}: folder not found (no BEIR dataset {name!r} under {root})")
        folder = root
    parts = {"": folder} if (folder / "corpus.jsonl").is_file() else {
        p.name: p for p in sorted(folder.iterdir()) if (p / "corpus.jsonl").is_file()}
    if not parts:
        raise FileNotFoundError(f"{folder}: no corpus.jsonl here or in its subfolders")
    for part in parts.values():  # the first part chooses the split, which every part must hold
        split = qrels_split(part, split, tuple(dict.fromkeys((default, "dev", "test"))))
    return parts, split


def check_sources(sts: str | Path | None = None, beir: str | Sequence[str] = (), beir_source: str | Path = "mteb",
                  split: str | None = None, transfer: str | Path | None = None,
                  hub: bool = True) -> dict[str, tuple[str, str | Path]]:
    """What an evaluation will read, checked by folder listings (so before any model loads): a source, BEIR dataset
    or qrels split that is not there is a FileNotFoundError, an ``"mteb"`` source with ``hub`` False an
    :class:`InputError`, each starting with the argument's name (``beir scifact: ...``). Returns each dataset of
    ``beir`` as given -> its name and the source it is read from, as :func:`beir_parts` takes them.

    Args:
        sts: The STS suite's source: ``"mteb"`` (the Hugging Face hub) or a SentEval data/downstream folder.
        beir: BEIR datasets by name, or BEIR-layout folders (read by their layout, named by the folder).
        beir_source: ``"mteb"``, a folder holding one subfolder per dataset, or one dataset's folder.
        split: The qrels split read in a local BEIR folder (None: as :func:`beir_parts` chooses it).
        transfer: A SentEval data/downstream folder (the transfer tasks have no hub source).
        hub: False where the hub is switched off (``HF_HUB_OFFLINE``), so that an ``"mteb"`` source is refused
            before the model loads rather than after.
    """
    if sts == "mteb" and not hub:
        raise InputError("sts mteb reads the Hugging Face hub, which is offline (HF_HUB_OFFLINE); give a SentEval "
                         "data/downstream folder")
    for argument, value in (("sts", None if sts == "mteb" else sts), ("transfer", transfer)):
        if value is not None and not Path(value).expanduser().exists():
            raise FileNotFoundError(f"{argument}: not found: {value}")
    where: dict[str, tuple[str, str | Path]] = {}
    for given in [beir] if isinstance(beir, str) else beir:
        local = Path(given).expanduser()  # a folder given by its path: read by its layout, whatever its name
        name, source = where[given] = (local.name, local) if local.is_dir() else (given, beir_source)
        if source == "mteb" and not hub:
            raise InputError(f"beir {given}: no such folder, and the hub is offline (HF_HUB_OFFLINE); give the "
                             "dataset's folder, or a folder of datasets as beir_source")
        if source != "mteb":
            try:
                beir_parts(name, source, split)
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"beir {given}: {exc}") from None
    return where
