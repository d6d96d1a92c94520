"""The one line reader and the one JSON-lines reader (st_infocse.files), and the training-text and document checks
built on them, fed random bytes, encodings, JSON shapes, and empty or huge lines: every input is read, or refused
with one :class:`~st_infocse.files.InputError` line naming the file; nothing else escapes."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from st_infocse.files import (
    FileFormatError,
    InputError,
    NotDecodableError,
    check_choice,
    check_range,
    check_sources,
    existing_path,
    is_text,
    out_of_range,
    read_json_objects,
    read_json_records,
    read_lines,
    text_problem,
)
from st_infocse.mining.documents import check_documents
from st_infocse.training.texts import check_text_source, clean_text_values

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Every generated input that reached a reader; the last test reports the count (pytest -s shows it).
RAN = {"inputs": 0}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["text", "sentences", "id", "x"]), children, max_size=4),
    max_leaves=10,
)
encodings = st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16", "cp1252"])
line_texts = st.lists(
    # a huge line: a short text repeated to 50,000-200,000 characters
    st.one_of(st.text(st.characters(exclude_characters="\n\r"), max_size=40), st.just(""), st.just("   "),
              st.builds(lambda text, n: (text or "x") * n, st.text(st.characters(exclude_characters="\n\r"), max_size=5), st.integers(50_000 // 5, 200_000 // 5))),
    max_size=6,
)


def _write(directory: Path, name: str, data: bytes, gzipped: bool) -> Path:
    path = directory / (name + (".gz" if gzipped else ""))
    path.write_bytes(gzip.compress(data) if gzipped else data)
    return path


def _one_line(error: Exception, path: Path) -> None:
    message = str(error)
    assert message and "\n" not in message, message
    assert str(path) in message, message


def _read_all(path: Path) -> None:
    """Every reader and check on ``path``: each returns or raises InputError, in one line naming the file."""
    RAN["inputs"] += 1
    for read in (lambda: list(read_lines(path)), lambda: list(read_json_records(path)),
                 lambda: check_text_source(str(path)), lambda: check_documents(str(path))):
        try:
            read()
        except InputError as error:
            _one_line(error, path)


@FUZZ
@given(data=st.binary(max_size=2_000), gzipped=st.booleans(), name=st.sampled_from(["t.txt", "t.jsonl", "t.json"]))
def test_random_bytes_are_read_or_refused_in_one_line(data, gzipped, name):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, data, gzipped)
        _read_all(path)


@FUZZ
@given(data=st.binary(min_size=1, max_size=500), cut=st.integers(min_value=0, max_value=40))
def test_truncated_or_fake_gzip_is_one_line(data, cut):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.txt.gz"
        compressed = gzip.compress(data)
        path.write_bytes(compressed[: max(1, len(compressed) - cut)] if cut else data)
        _read_all(path)


@FUZZ
@given(lines=line_texts, encoding=encodings, newline=st.sampled_from(["\n", "\r\n"]), gzipped=st.booleans())
def test_text_in_any_encoding(lines, encoding, newline, gzipped):
    text = newline.join(lines) + (newline if lines else "")
    try:
        data, exact = text.encode(encoding), True
    except UnicodeEncodeError:  # e.g. a lone surrogate, or a character the encoding lacks
        data, exact = text.encode("utf-8", "replace"), False
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "t.txt", data, gzipped)
        _read_all(path)
        if encoding in ("utf-8", "utf-8-sig") and exact:
            # UTF-8 comes back line for line, without terminators or the byte-order mark.
            assert [line for _, line in read_lines(path)] == lines


@FUZZ
@given(records=st.lists(json_values, max_size=6), layout=st.sampled_from(["lines", "array", "pretty"]),
       junk=st.sampled_from(["", "{oops", "]", "\x00"]))
def test_json_shapes(records, layout, junk):
    if layout == "lines":
        name, text = "t.jsonl", "\n".join(json.dumps(r) for r in records)
    else:
        name, text = "t.json", json.dumps(records, indent=2 if layout == "pretty" else None)
    text += ("\n" + junk) if junk else ""
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, text.encode(), False)
        _read_all(path)
        if not junk:
            assert [value for _, value in read_json_records(path)] == records


@FUZZ
@given(values=st.lists(json_values, max_size=20))
def test_text_values_are_kept_or_dropped_and_counted(values):
    RAN["inputs"] += 1
    kept, report = clean_text_values(values)
    assert report.total == len(values) and report.kept == len(kept)
    assert report.kept + sum(report.dropped.values()) == report.total
    assert all(isinstance(text, str) and text.strip() for text in kept)


def test_bad_bytes_name_the_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(NotDecodableError, match=r"latin1.txt, line 2: not UTF-8 \(invalid continuation byte"):
        list(read_lines(path))
    assert [line for _, line in read_lines(path, fallback_encoding="latin-1")] == ["ok", "caf\xe9"]


def test_a_truncated_gzip_is_one_line(tmp_path):
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(gzip.compress(b"a cat\n" * 100)[:30])
    with pytest.raises(FileFormatError, match=r"^cannot read .*cut.txt.gz: Compressed file ended"):
        list(read_lines(path))


def test_a_fuzz_test_runs_its_examples_and_reports_them(capsys):
    # hypothesis may stop early (a space it has exhausted, a health check); this one must run every example it is set to
    before = RAN["inputs"]
    test_text_values_are_kept_or_dropped_and_counted()
    ran = RAN["inputs"] - before
    with capsys.disabled():
        print(f"\nst_infocse.files fuzz: {ran} generated inputs through the text-value reader")
    assert ran >= FUZZ.max_examples


@pytest.mark.parametrize("name", ["t.jsonl", "t.json"])
def test_json_nested_too_deeply_is_one_line(tmp_path, name):
    # Found by the fuzzing above: the parser's RecursionError used to escape as a traceback.
    path = tmp_path / name
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(FileFormatError, match="nested too deeply"):
        list(read_json_records(path))


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [("t.jsonl", '{"text": "a"}\n\n["a"]\n', "line 3"), ("t.json", '[{"text": "a"}, "a"]', "item 2")],
)
def test_a_record_that_is_not_an_object_is_named(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FileFormatError, match=rf"{name}, {where}: expected an object with text, got (list|str)$"):
        list(read_json_objects(path, "an object with text"))


@pytest.mark.parametrize(
    ("value", "problem"), [(None, "missing"), (3, "not text"), (["a"], "not text"), (" \t\n", "blank"), ("", "blank"),
                           (" a ", None)],
)
def test_one_rule_says_why_a_value_is_not_text(value, problem):
    assert text_problem(value) == problem
    assert is_text(value) is (problem is None)


def test_a_value_outside_its_choices_or_range_is_named_in_one_line():
    from typing import Literal

    check_choice("masking", "token", Literal["whole_word", "token"])
    with pytest.raises(InputError, match=r"^masking must be one of whole_word, token, got 'word'$"):
        check_choice("masking", "word", Literal["whole_word", "token"])
    assert out_of_range(0.5, (0, 1, False, False)) is None and out_of_range(None, (0, 1, False, False)) is None
    assert out_of_range(0, (0, 1, False, False)) == "must lie in (0, 1)"
    assert out_of_range(2, (0, 1, True, True)) == "must lie in [0, 1]"
    assert out_of_range(-1, (0, None, True, False)) == "must be at least 0"
    assert out_of_range(0, (0, None, False, False)) == "must be positive"
    with pytest.raises(InputError, match=r"^temperature must be positive, got 0$"):
        check_range("temperature", 0, (0, None, False, False))


def test_a_missing_file_or_folder_is_one_line_naming_it_and_what_was_expected(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    assert existing_path(str(tmp_path / "a.txt")) == tmp_path / "a.txt"
    assert existing_path(tmp_path, folder=True) == tmp_path
    with pytest.raises(FileNotFoundError, match=r"a\.txt: folder not found \(expected a BEIR dataset folder\)$"):
        existing_path(tmp_path / "a.txt", folder=True, expected="expected a BEIR dataset folder")
    with pytest.raises(FileNotFoundError, match=r"b\.txt: file not found$"):
        existing_path(tmp_path / "b.txt")
    with pytest.raises(FileNotFoundError, match="file not found"):
        existing_path(tmp_path)  # a folder where a file was expected


def test_check_sources_says_where_each_set_is_read_and_refuses_what_is_not_there(tmp_path):
    for name, part in (("myset", ""), ("cqa", "gis"), ("cqa", "tex")):
        qrels = tmp_path / "beir" / name / part / "qrels"
        qrels.mkdir(parents=True)
        (qrels.parent / "corpus.jsonl").write_text("{}\n")
        (qrels / "dev.tsv").write_text("q\td\t1\n")
    (tmp_path / "beir" / "cqa" / "gis" / "qrels" / "test.tsv").write_text("q\td\t1\n")
    own = str(tmp_path / "beir" / "myset")  # a folder given by its path is named by it, whatever the source
    assert check_sources(beir=["scifact", own], hub=True) == {"scifact": ("scifact", "mteb"),
                                                              own: ("myset", Path(own))}
    assert check_sources(beir="cqa", beir_source=tmp_path / "beir", split="dev") == {
        "cqa": ("cqa", tmp_path / "beir")}
    # every part is checked for the split, not only the first one read
    with pytest.raises(FileNotFoundError, match=r"^beir cqa: .*tex/qrels/test\.tsv: file not found \(qrels/ holds "
                       r"dev\.tsv\)$"):
        check_sources(beir="cqa", beir_source=tmp_path / "beir", split="test")
    with pytest.raises(FileNotFoundError, match=r"^beir nfcorpus: .*no BEIR dataset 'nfcorpus'"):
        check_sources(beir=["myset", "nfcorpus"], beir_source=tmp_path / "beir")
    (tmp_path / "beir" / "myset" / "qrels" / "dev.tsv").rename(tmp_path / "beir" / "myset" / "qrels" / "train.tsv")
    with pytest.raises(FileNotFoundError, match=r"myset: neither qrels/test\.tsv nor qrels/dev\.tsv found \(qrels/ "
                       r"holds train\.tsv\); name the split to use$"):
        check_sources(beir=own)
    assert check_sources(beir=own, split="train")[own] == ("myset", Path(own))
    with pytest.raises(InputError, match=r"^beir scifact: no such folder, and the hub is offline"):
        check_sources(beir="scifact", hub=False)
    with pytest.raises(InputError, match=r"^sts mteb reads the Hugging Face hub, which is offline"):
        check_sources(sts="mteb", hub=False)
    check_sources(sts="mteb", transfer=tmp_path)  # the hub is STS's only, and read when it can be
    for argument in ("sts", "transfer"):  # the transfer tasks have no hub source: "mteb" is a path there
        with pytest.raises(FileNotFoundError, match=rf"^{argument}: not found: (mteb|{tmp_path}/x)$"):
            check_sources(**{argument: "mteb" if argument == "transfer" else str(tmp_path / "x")})
