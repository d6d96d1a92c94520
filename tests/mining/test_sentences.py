"""Document preparation (the splitter it uses is tested with training text's, tests/training/test_texts.py)."""

from __future__ import annotations

import pytest

from st_infocse.mining import PreparedDocument, Skipped, prepare_documents


def test_prepare_documents_one_result_per_input():
    docs = [
        ["A.", " B. ", "", "A."],
        "Only one sentence.",
        {"id": 7, "text": "First one. Second one."},
        {"id": "s", "sentences": "Given as text. Still split."},
        {"title": "no body"},
        ["ok", None],
        b"bytes",
        [],
        ["x", "y", "z"],
    ]
    out = list(prepare_documents(docs, max_sentences=2))
    assert len(out) == len(docs)
    assert out[0] == PreparedDocument("0", ["A.", "B."], duplicates_removed=1, empty_removed=1)
    assert out[1] == Skipped("1", "too_few_sentences", "1 sentence(s)")
    assert out[2] == PreparedDocument("7", ["First one.", "Second one."])
    assert out[3] == PreparedDocument("s", ["Given as text.", "Still split."])
    assert [o.reason for o in out[4:7]] == ["not_text"] * 3
    assert out[5].detail == "sentence of type NoneType"
    assert out[7] == Skipped("7", "empty")
    assert out[8] == Skipped("8", "too_many_sentences", "3 sentences")


def test_prepare_documents_options():
    docs = [["a", "a", "b"]]
    assert next(iter(prepare_documents(docs, deduplicate=False))).sentences == ["a", "a", "b"]
    assert next(iter(prepare_documents(docs, min_sentences=3))).reason == "too_few_sentences"
    # Refused at the call, not raised to 2 in silence, and before a document is read.
    with pytest.raises(ValueError, match="min_sentences must be at least 2"):
        prepare_documents(iter([]), min_sentences=0)
    with pytest.raises(ValueError, match="max_sentences"):
        prepare_documents(docs, min_sentences=5, max_sentences=3)
