"""SentEval's transfer tasks (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC) from a SentEval folder."""

from __future__ import annotations

import re
from pathlib import Path

from .common import TRANSFER_TASKS, DataFormatError, PathLike, TransferData, data_lines, parse_int, senteval_tokens
from .sts import find_senteval_root

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

    Example:
        >>> canonical_transfer_name("SST-2")
        'SST2'
    """
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    if found := {task.lower(): task for task in TRANSFER_TASKS}.get(key, _TRANSFER_ALIASES.get(key)):
        return found
    raise ValueError(f"unknown transfer task {name!r}; expected one of {', '.join(TRANSFER_TASKS)}")


def _sentences(path: Path) -> list[tuple[int, str]]:
    # SentEval reads these files as latin-1; utf-8 first keeps real non-ASCII text intact
    return [(n, senteval_tokens(line)) for n, line in enumerate(data_lines(path, fallback="latin-1"), start=1)]


def _labelled_lines(path: Path) -> list[tuple[str, int]]:
    out = []
    for number, line in enumerate(data_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.rstrip().rsplit("\t", 1)
        if len(fields) != 2:
            raise DataFormatError(path, number, "expected '<sentence>\\t<label>'")
        out.append((senteval_tokens(fields[0]), parse_int(fields[1], path, number, "label", (0, 1))))
    return DataFormatError.unless_any(out, path)


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
    return DataFormatError.unless_any(texts, path), labels


def _mrpc(path: Path) -> tuple[list[tuple[str, str]], list[int]]:
    lines = data_lines(path)
    if len(lines) < 2:
        raise DataFormatError(path, None, "file is empty (expected a header and sentence pairs)")
    pairs, labels = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            raise DataFormatError(path, number, f"expected 5 tab-separated columns, found {len(fields)}")
        pairs.append((senteval_tokens(fields[3]), senteval_tokens(fields[4])))
        labels.append(parse_int(fields[0], path, number, "Quality", (0, 1)))
    return DataFormatError.unless_any(pairs, path, "no sentence pairs after the header"), labels


def load_senteval_transfer(folder: PathLike, task: str) -> TransferData:
    """Load a SentEval transfer task (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC) from a ``data/downstream`` folder (or one
    holding it); MR, CR, SUBJ and MPQA have only ``train`` (k-fold cross-validation). Blank lines are skipped
    (SentEval keeps them as empty sentences: 4 of CR's 3,775 lines, 3 of MPQA's 10,606)."""
    root = find_senteval_root(folder)
    name = canonical_transfer_name(task)
    if name in _BINARY_FILES:
        sub, positive, negative = _BINARY_FILES[name]
        texts: list[str] = []
        labels: list[int] = []
        for filename, label in ((positive, 1), (negative, 0)):
            path = root / sub / filename
            lines = DataFormatError.unless_any([text for _, text in _sentences(path) if text], path)
            texts += lines
            labels += [label] * len(lines)
        classes = ("subjective", "objective") if name == "SUBJ" else ("negative", "positive")
        return TransferData(name, texts, labels, classes, source=f"senteval:{root / sub}")
    if name == "SST2":
        base = root / "SST" / "binary"
        splits = {s: _labelled_lines(base / f"sentiment-{s}") for s in ("train", "dev", "test")}
        (train, train_labels), (dev, dev_labels), (test, test_labels) = (
            ([t for t, _ in rows], [y for _, y in rows]) for rows in splits.values())
        return TransferData(name, train, train_labels, ("negative", "positive"), f"senteval:{base}", test=test,
                            test_labels=test_labels, dev=dev, dev_labels=dev_labels)
    if name == "TREC":
        train, train_labels = _trec(root / "TREC" / "train_5500.label")
        test, test_labels = _trec(root / "TREC" / "TREC_10.label")
        return TransferData(name, train, train_labels, _TREC_CLASSES, f"senteval:{root / 'TREC'}", test=test,
                            test_labels=test_labels)
    train_pairs, train_labels = _mrpc(root / "MRPC" / "msr_paraphrase_train.txt")
    test_pairs, test_labels = _mrpc(root / "MRPC" / "msr_paraphrase_test.txt")
    return TransferData(name, train_pairs, train_labels, ("not paraphrase", "paraphrase"), f"senteval:{root / 'MRPC'}",
                        test=test_pairs, test_labels=test_labels)
