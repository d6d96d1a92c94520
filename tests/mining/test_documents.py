"""Documents for mining are read through the one dataset reader, so an unreachable hub id is one line too."""

import pytest

from st_infocse.files import InputError
from st_infocse.mining.documents import check_documents, load_documents


def test_a_hub_id_that_cannot_be_reached_is_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match=r"cannot load documents 'someorg/somedocs' from the Hugging Face hub "
                                         r"\(\w+\); offline\? pass --docs") as info:
        load_documents("someorg/somedocs")
    assert "\n" not in str(info.value)


def test_blank_lines_separate_the_documents_of_a_text_file(tmp_path):
    (tmp_path / "docs.txt").write_text("\n\nA cat sat.\nIt purred.\n\n\n Dogs ran.\n")
    assert load_documents(str(tmp_path / "docs.txt")) == [
        {"id": "0", "text": "A cat sat.\nIt purred."}, {"id": "1", "text": " Dogs ran."}]
    assert load_documents(str(tmp_path / "docs.txt"), max_docs=1) == [{"id": "0", "text": "A cat sat.\nIt purred."}]


def test_a_file_passes_the_check_only_with_a_document_mining_reads(tmp_path):
    """The check reads each record as mining does: a sentence list holding a non-string (skipped as not_text) or an
    empty one beside a text (the list is read, and is empty) is no usable document."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": 1, "sentences": [null, "A cat sat."]}\n{"id": 2, "sentences": [], "text": "A dog ran."}\n')
    with pytest.raises(InputError, match=r"no usable document in .*docs.jsonl \(2 records\)"):
        check_documents(str(path))
    path.write_text('{"id": 1, "sentences": [null]}\n{"id": 2, "text": "A dog ran. It barked."}\n')
    check_documents(str(path))
