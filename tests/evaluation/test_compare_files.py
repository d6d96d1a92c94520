"""The comparison files, written from Python as ``st-infocse evaluate --compare`` writes them."""

from __future__ import annotations

import json

from st_infocse.evaluation import PairedChange, judge_together, save_comparisons
from st_infocse.evaluation.compare import Comparison

ROWS = [("STS", "A", 70.0, 72.0, PairedChange(2.0, 0.5, 3.5, 0.01, 300, "pairs")),
        ("BEIR nDCG@10", "c", 30.0, 31.0, PairedChange(1.0, 0.2, 1.8, 0.03, 50))]


def test_one_comparison_is_written_as_one_record_and_one_table(tmp_path):
    path = save_comparisons([Comparison("old", "new", ROWS)], tmp_path / "out")
    assert path == tmp_path / "out" / "comparison.json"
    record = json.loads(path.read_text())
    assert record["comparison"]["before"] == "old" and len(record["comparison"]["rows"]) == 2
    assert "environment" in record  # write_json's record of the versions, as for evaluation.json
    markdown = (tmp_path / "out" / "comparison.md").read_text()
    assert markdown.startswith("|") and " against " not in markdown and markdown.endswith("\n")


def test_several_comparisons_keep_their_family_and_are_headed_by_their_models(tmp_path):
    together = judge_together([Comparison("first", "new", ROWS), Comparison("second", "new", ROWS[:1])])
    record = json.loads(save_comparisons(together, tmp_path).read_text())
    assert [c["before"] for c in record["comparisons"]] == ["first", "second"]
    assert {c["multiple_rows"]["family"] for c in record["comparisons"]} == {3}
    markdown = (tmp_path / "comparison.md").read_text()
    assert markdown.startswith("new against first\n\n|") and "\n\nnew against second\n\n|" in markdown
