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
