"""Cleaning keeps real text only, typed as strings, whatever the column held; texts split into sentences."""

import gzip
import time

import pytest
from datasets import Dataset, Features, Value

from st_infocse.training.texts import clean_text_values, clean_texts, load_texts, read_text_file, split_sentences


def test_values_are_cleaned_and_counted():
    kept, report = clean_text_values(["a cat", 3, None, "  ", ["a"], "a cat", "a dog"], deduplicate=True)
    assert kept == ["a cat", "a dog"]
    assert (report.total, report.kept) == (7, 2)
    assert report.dropped == {"not text": 2, "missing": 1, "blank": 1, "duplicate": 1}


def test_cleaned_column_is_typed_as_strings():
    # A column with no string at all is typed as numbers by Arrow; after cleaning it must still be a string column.
    cleaned, report = clean_texts(Dataset.from_dict({"text": [1, 2], "id": [0, 1]}))
    assert len(cleaned) == 0 and cleaned.features == Features({"text": Value("string")})
    assert report.dropped == {"not text": 2}
    cleaned, _ = clean_texts(Dataset.from_dict({"text": [None, "a cat"]}))
    assert cleaned["text"] == ["a cat"] and cleaned.features["text"] == Value("string")


def test_report_is_logged_unless_told(caplog):
    data = Dataset.from_dict({"text": ["a cat", ""]})
    clean_texts(data, warn=False)
    assert "texts kept" not in caplog.text
    clean_texts(data)
    assert caplog.text.count("1 of 2 texts kept; dropped: 1 blank") == 1


def test_empty_text_file_gives_a_string_column(tmp_path):
    (tmp_path / "empty.txt").touch()
    assert read_text_file(tmp_path / "empty.txt").features["text"] == Value("string")
    (tmp_path / "lines.txt.gz").write_bytes(gzip.compress(b"a cat\n\nthe dog\n"))
    assert read_text_file(tmp_path / "lines.txt.gz")["text"] == ["a cat", "", "the dog"]


def test_a_hub_dataset_that_cannot_be_reached_is_one_line(monkeypatch):
    """Offline (as the tests run), the default wiki1m or any hub id is an InputError naming the fix, not a traceback."""
    import pytest

    from st_infocse.files import InputError
    from st_infocse.training.texts import load_texts

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for source in ("hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt", "someorg/somedata"):
        with pytest.raises(InputError, match=r"from the Hugging Face hub \(\w+\); offline\? pass --train_data") as info:
            load_texts(source)
        assert "\n" not in str(info.value)


def test_load_texts_splits_each_text_into_its_sentences_in_order(tmp_path, capsys):
    from st_infocse.mining import split_sentences as mining_splitter

    path = tmp_path / "texts.txt"
    path.write_text("A cat sat. It purred.\nDogs ran.\n")
    assert load_texts(str(path))["text"] == ["A cat sat. It purred.", "Dogs ran."]
    capsys.readouterr()
    split = load_texts(str(path), split_sentences=True)
    assert split["text"] == ["A cat sat.", "It purred.", "Dogs ran."]
    assert capsys.readouterr().out == "--split_sentences: 2 texts -> 3 sentences\n"
    assert mining_splitter is split_sentences  # one splitter for training text and mined documents


def test_split_keeps_abbreviations_and_breaks_lines():
    text = "Dr. Smith moved to Washington D.C. in 1990. He liked it!\n\nA heading\nIs it over? Yes."
    assert split_sentences(text) == [
        "Dr. Smith moved to Washington D.C. in 1990.",
        "He liked it!",
        "A heading",
        "Is it over?",
        "Yes.",
    ]
    assert split_sentences("") == [] and split_sentences(" \n\t ") == []
    with pytest.raises(TypeError):
        split_sentences(None)  # type: ignore[arg-type]


def test_split_does_not_hang_on_reference_lists():
    # pysbd (the former choice) never returns on this Wikipedia-style string (pySBD issue #79).
    start = time.perf_counter()
    out = split_sentences("See the list..[111 111 111 111 111 111 111 111 111 111 111 111] for details. " * 50)
    assert out and time.perf_counter() - start < 5
