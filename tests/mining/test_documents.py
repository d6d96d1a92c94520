"""Documents for mining are read through the one dataset reader, so an unreachable hub id is one line too."""

import pytest

from st_infocse.files import InputError
from st_infocse.mining.documents import load_documents


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
