"""``st-infocse evaluate`` end to end on a tiny model: one x100 scale, the length used, a quiet metric log."""

from __future__ import annotations

import json
import logging

import pytest

from st_infocse.cli import main
from st_infocse.evaluation import RETRIEVAL_LOGGERS

pytest.importorskip("beir")


@pytest.fixture
def beir_root(ev, tmp_path):
    corpus = {f"c{i}": " ".join(ev.WORDS[i : i + 5]) for i in range(12)}
    queries = {f"q{i}": " ".join(ev.WORDS[i : i + 3]) for i in range(4)}
    ev.write_beir(tmp_path / "beir" / "scifact", corpus, queries, [(f"q{i}", f"c{i}", 1) for i in range(4)])
    return tmp_path / "beir"


def _evaluate(tiny_bert_dir, out, *flags: str) -> list[str]:
    return ["evaluate", "--model", str(tiny_bert_dir), "--output_dir", str(out), "--plots", "false", *flags]


def _beir_info(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(RETRIEVAL_LOGGERS) and r.levelno < logging.WARNING]


def test_one_scale_and_the_length_everywhere(tiny_bert_dir, senteval_tree, beir_root, tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    out = tmp_path / "eval"
    argv = _evaluate(tiny_bert_dir, out, "--sts", str(senteval_tree), "--beir", "scifact")
    assert main([*argv, "--beir_source", str(beir_root)]) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "evaluation.json").read_text())
    markdown = (out / "evaluation.md").read_text()

    # the tiny checkpoint has 64 positions: the model's own length is used and reported
    assert data["settings"]["max_seq_length"] == 64
    assert "max_seq_length  64" in printed and "- max_seq_length: 64" in markdown

    # STS is x100 in the JSON as printed; BEIR keeps beir's [0, 1] in the JSON, labelled, and prints x100
    assert data["STS"]["scale"] == "x100" and data["BEIR"]["scale"] == "0-1"
    assert f"{data['STS']['average']:.2f}" in printed
    ndcg = data["BEIR"]["datasets"]["scifact"]["metrics"]["ndcg@10"]
    assert 0 <= ndcg <= 1
    assert printed.split("scifact")[1].split()[0] == f"{100 * ndcg:.2f}"
    assert f"| scifact | {100 * ndcg:.2f} |" in markdown

    # the evaluator logs every metric at every k at INFO: none of it by default
    assert _beir_info(caplog) == []
    assert "NDCG@" not in printed


def test_max_seq_length_override_is_recorded(tiny_bert_dir, senteval_tree, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main([*_evaluate(tiny_bert_dir, out, "--sts", str(senteval_tree)), "--max_seq_length", "16"]) == 0
    assert "max_seq_length  16" in capsys.readouterr().out
    assert json.loads((out / "evaluation.json").read_text())["settings"]["max_seq_length"] == 16
    assert "- max_seq_length: 16" in (out / "evaluation.md").read_text()


def test_verbose_shows_the_metric_log_and_leaves_the_loggers_as_found(tiny_bert_dir, beir_root, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    levels = {name: logging.getLogger(name).level for name in RETRIEVAL_LOGGERS}
    argv = _evaluate(tiny_bert_dir, tmp_path / "eval", "--beir", "scifact", "--beir_source", str(beir_root))
    assert main([*argv, "--verbose", "true"]) == 0
    assert any(r.getMessage().startswith("NDCG@10:") for r in _beir_info(caplog))
    # a second command in the same process is held back again
    assert {name: logging.getLogger(name).level for name in RETRIEVAL_LOGGERS} == levels


def test_a_comparison_of_several_rows_reads_its_verdicts_off_holms_p():
    from st_infocse.evaluation import PairedChange
    from st_infocse.evaluation.compare import Comparison

    rows = [("STS", "A", 70.0, 72.0, PairedChange(2.0, 0.5, 3.5, 0.01, 300, "pairs")),
            ("STS", "B", 70.0, 71.0, PairedChange(1.0, 0.1, 1.9, 0.04, 300, "pairs")),
            ("BEIR nDCG@10", "c", 30.0, 31.0, PairedChange(1.0, 0.2, 1.8, 0.03, 50)),
            ("BEIR nDCG@10", "d", 30.0, 30.5, None)]  # kept no per-query scores: not in the family
    comparison = Comparison("old", "new", rows)
    # raw p 0.01, 0.04, 0.03 over 3 rows -> 0.03, 0.06, 0.06: one gain left where each raw p gave three
    assert [c and round(c.p, 3) for c in comparison.adjusted()] == [0.03, 0.06, 0.06, None]
    recorded = comparison.to_dict()
    assert recorded["multiple_rows"] == {"rule": "holm", "family": 3}
    assert [row.get("verdict_holm") for row in recorded["rows"]] == ["a gain", "within noise", "within noise", None]
    assert recorded["rows"][1]["change"]["verdict"] == "a gain"  # the row's own test, kept beside
    printed = str(comparison)
    assert "p (Holm, 3 rows)" in printed and "adjusted by Holm's rule over the 3 rows judged" in printed
    assert "+1.00 (95% CI +0.10 to +1.90, p = 0.040, 300 pairs)" in printed and "p = 0.060" in printed
    assert "300 pairs): a gain" not in printed  # no raw verdict beside the adjusted one
    assert "Holm's rule over the 3 rows" in comparison.to_markdown()
    one = Comparison("old", "new", rows[:1])
    assert one.note == "" and one.to_dict()["multiple_rows"] is None and str(one).rstrip().endswith("a gain")


def _perturbed(model_dir, path, seed: int) -> str:
    """The tiny model with seeded noise on every weight, saved at ``path``: a second model to compare with."""
    import torch
    from sentence_transformers import SentenceTransformer

    other = SentenceTransformer(str(model_dir), device="cpu")
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    other.save(str(path))
    return str(path)


def test_evaluate_compare_on_several_sets_applies_holm_and_says_so(tiny_bert_dir, senteval_tree, beir_root, tmp_path,
                                                                      capsys):
    _perturbed(tiny_bert_dir, tmp_path / "other", seed=0)
    out = tmp_path / "eval"
    argv = _evaluate(tiny_bert_dir, out, "--sts", str(senteval_tree), "--beir", "scifact", "--beir_source",
                     str(beir_root), "--compare", str(tmp_path / "other"))
    assert main(argv) == 0
    printed = capsys.readouterr().out
    comparison = json.loads((out / "comparison.json").read_text())["comparison"]
    judged = [row for row in comparison["rows"] if row["change"] is not None]
    assert len(judged) > 1 and comparison["multiple_rows"] == {"rule": "holm", "family": len(judged)}
    assert all(row["p_holm"] >= row["change"]["p"] for row in judged)
    assert f"Holm's rule over the {len(judged)} rows judged" in printed
    assert "Holm" in (out / "comparison.md").read_text()


def test_evaluate_compare_with_several_models_judges_every_row_of_every_model_together(
        tiny_bert_dir, senteval_tree, beir_root, tmp_path, capsys):
    """Two models against --model: one family for Holm's rule, the rows of both, so a row's adjusted p is at least
    what it would be among its own model's rows alone."""
    others = [_perturbed(tiny_bert_dir, tmp_path / f"other{seed}", seed=seed) for seed in (0, 1)]
    out = tmp_path / "eval"
    argv = _evaluate(tiny_bert_dir, out, "--sts", str(senteval_tree), "--beir", "scifact", "--beir_source",
                     str(beir_root), "--compare", *others)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    comparisons = json.loads((out / "comparison.json").read_text())["comparisons"]
    assert len(comparisons) == 2 and [c["before"] for c in comparisons] == ["other0", "other1"]
    judged = [row for c in comparisons for row in c["rows"] if row["change"] is not None]
    assert all(c["multiple_rows"] == {"rule": "holm", "family": len(judged)} for c in comparisons)
    from st_infocse.evaluation.paired import holm

    assert [row["p_holm"] for row in judged] == pytest.approx(holm([row["change"]["p"] for row in judged]))
    assert f"Holm's rule over the {len(judged)} rows judged across every model compared" in printed
    assert (out / "comparison.md").read_text().count(" against ") == 2
