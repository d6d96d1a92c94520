"""Every sub-command end to end on tiny models and tiny local files (offline)."""

import json
import random
import re
from pathlib import Path
from typing import Literal

import pytest
from sentence_transformers import SentenceTransformer

from st_infocse.cli import main
from st_infocse.evaluation.loaders import SENTEVAL_STS_SUBSETS

from .conftest import WORDS, random_sentences, run_cli_listing_imports

FAST = ["--max_steps", "2", "--per_device_train_batch_size", "8", "--logging_steps", "1", "--use_cpu", "true"]


def _pairs(rng: random.Random, n: int) -> list[tuple[str, str, float]]:
    def sentence() -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(3, 8)))

    return [(sentence(), sentence(), round(rng.uniform(0, 5), 1)) for _ in range(n)]


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


@pytest.fixture
def workspace(tmp_path, tiny_bert_dir) -> dict[str, Path]:
    rng = random.Random(0)
    sentences = tmp_path / "sentences.txt"
    _write(sentences, random_sentences(40) + [""])
    docs = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "sentences": random_sentences(5, seed=i)} for i in range(12)]
    rows.append({"id": "short", "sentences": ["only one sentence here"]})
    _write(docs, [json.dumps(r) for r in rows])
    senteval = tmp_path / "downstream"
    for folder, subsets in SENTEVAL_STS_SUBSETS.values():
        for subset in subsets:
            pairs = _pairs(rng, 4)
            _write(senteval / "STS" / folder / f"STS.input.{subset}.txt", [f"{a}\t{b}" for a, b, _ in pairs])
            _write(senteval / "STS" / folder / f"STS.gs.{subset}.txt", [str(g) for _, _, g in pairs])
    for split in ("train", "dev", "test"):
        lines = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g}\t{a}\t{b}" for i, (a, b, g) in enumerate(_pairs(rng, 12))
        ]
        _write(senteval / "STS" / "STSBenchmark" / f"sts-{split}.csv", lines)
    sick = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
    sick += [f"{i}\t{a}\t{b}\t{g}\tNEUTRAL" for i, (a, b, g) in enumerate(_pairs(rng, 10), start=1)]
    _write(senteval / "SICK" / "SICK_test_annotated.txt", sick)
    beir = tmp_path / "beir" / "scifact"
    corpus = {f"c{i}": s for i, s in enumerate(random_sentences(20, seed=5))}
    _write(beir / "corpus.jsonl", [json.dumps({"_id": k, "title": "", "text": v}) for k, v in corpus.items()])
    _write(beir / "queries.jsonl", [json.dumps({"_id": f"q{i}", "text": corpus[f"c{i}"]}) for i in range(5)])
    _write(beir / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore", *(f"q{i}\tc{i}\t1" for i in range(5))])
    return {
        "model": tiny_bert_dir,
        "sentences": sentences,
        "docs": docs,
        "senteval": senteval,
        "beir": beir.parent,
        "root": tmp_path,
    }


def test_pretrain_aux_then_train_infocse_with_dev_selection(workspace, capsys):
    root = workspace["root"]
    code = main(
        [
            "pretrain-aux",
            "--model",
            str(workspace["model"]),
            "--train_data",
            str(workspace["sentences"]),
            "--output_dir",
            str(root / "stage1"),
            *FAST,
        ]
    )
    assert code == 0
    assert (root / "stage1" / "model" / "modules.json").is_file()
    assert (root / "stage1" / "decoder" / "auxiliary_decoder.safetensors").is_file()
    printed = capsys.readouterr().out
    assert "Stage-1 auxiliary pre-training done" in printed
    # Trained at --max_seq_length 32, saved with the tiny model's own 64 (its max_position_embeddings).
    assert "training max length 32, saved model max length 64" in printed
    assert SentenceTransformer(str(root / "stage1" / "model"), device="cpu").max_seq_length == 64

    code = main(
        [
            "train",
            "--objective",
            "infocse",
            "--model",
            str(root / "stage1" / "model"),
            "--decoder",
            str(root / "stage1" / "decoder"),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            str(workspace["senteval"]),
            "--eval_steps",
            "1",
            "--save_steps",
            "1",
            "--output_dir",
            str(root / "out"),
            "--lambda",
            "0.1",
            *FAST,
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert re.search(r"STS-B dev +\d+\.\d\d -> \d+\.\d\d", out), out
    assert re.search(r"saved +the (best checkpoint, step [12] |starting model|model at the last step)", out), out
    assert "kept the model's modules: Transformer, Pooling(cls)" in out  # stage 1 saved a CLS-pooled model
    card = (root / "out" / "README.md").read_text()
    assert "InfoCSELoss" in card and '"lambda_": 0.1' in card and "wu2022infocse" in card
    assert SentenceTransformer(str(root / "out"), device="cpu").encode(["a cat"]).shape == (1, 32)


@pytest.mark.parametrize("objective", ["simcse", "cmlm-cse", "informin", "cmlm"])
def test_train_each_objective(workspace, objective, capsys):
    out = workspace["root"] / objective
    code = main(
        [
            "train",
            "--objective",
            objective,
            "--model",
            str(workspace["model"]),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            "none",
            "--output_dir",
            str(out),
            *FAST,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "modules.json").is_file()


def test_train_from_a_config_file(workspace, capsys):
    config = workspace["root"] / "config.json"
    config.write_text(
        json.dumps(
            {
                "objective": "simcse",
                "model": str(workspace["model"]),
                "train_data": str(workspace["sentences"]),
                "stsb_dev": "none",
                "max_steps": 1,
                "per_device_train_batch_size": 8,
                "use_cpu": True,
            }
        )
    )
    out = workspace["root"] / "from-config"
    assert main(["train", "--config", str(config), "--output_dir", str(out)]) == 0
    assert re.search(r"^  steps +1$", capsys.readouterr().out, re.MULTILINE)


def test_train_idc_and_mine(workspace, capsys):
    out = workspace["root"] / "idc"
    code = main(
        [
            "train",
            "--objective",
            "idc",
            "--model",
            str(workspace["model"]),
            "--docs",
            str(workspace["docs"]),
            "--rounds",
            "1",
            "--stsb_dev",
            "none",
            "--output_dir",
            str(out),
            *FAST,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "modules.json").is_file()

    pairs = workspace["root"] / "pairs"
    code = main(
        ["mine", "--model", str(workspace["model"]), "--docs", str(workspace["docs"]), "--output_dir", str(pairs)]
    )
    assert code == 0
    from datasets import load_from_disk

    mined = load_from_disk(str(pairs / "pairs"))
    assert {"anchor", "positive", "doc_id", "cluster_id"} <= set(mined.column_names) and len(mined) > 0
    report = json.loads((pairs / "report.json").read_text())
    assert "short" not in set(mined["doc_id"])
    assert report  # the skipped one-sentence document is counted in the report
    assert "Mining done" in capsys.readouterr().out


def test_evaluate_sts_and_beir_offline(workspace, capsys):
    out = workspace["root"] / "eval"
    code = main(
        [
            "evaluate",
            "--model",
            str(workspace["model"]),
            "--sts",
            str(workspace["senteval"]),
            "--beir",
            "scifact",
            "--beir_source",
            str(workspace["beir"]),
            "--output_dir",
            str(out),
            "--plots",
            "false",
        ]
    )
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "evaluation.json").read_text())
    assert "STS" in results and "BEIR" in results
    printed = capsys.readouterr().out
    assert "STS12" in printed and "SICK-R" in printed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--objective", "diffcse", "--stsb_dev", "none"], "invalid choice: 'diffcse'"),
        (["train", "--model", "./missing-model", "--stsb_dev", "none"], "model not found"),
        (["train", "--train_data", "missing.txt", "--stsb_dev", "none"], "not found"),
        (["evaluate", "--sts", "./no-such-folder"], "not found"),
        (["evaluate"], "nothing to evaluate"),
        (["mine"], "--docs is required"),
        (["frobnicate"], "unknown command"),
        # Explicit zeros reach the loss, which refuses them, instead of being replaced by a default.
        (["pretrain-aux", "--n", "0", "--train_data", "sentences.txt", "--output_dir", "zero-out", "--max_steps", "1"], "n (fusion layers) must be a positive integer, got 0"),
        (["pretrain-aux", "--mask_rate", "0", "--train_data", "sentences.txt", "--output_dir", "zero-out", "--max_steps", "1"], "--mask_rate must lie in (0, 1), got 0"),
        (["train", "--n", "0", "--stsb_dev", "none", "--train_data", "sentences.txt", "--output_dir", "zero-out", "--max_steps", "1"], "n (fusion layers) must be a positive integer, got 0"),
        (["train", "--mask_rate", "0", "--stsb_dev", "none", "--train_data", "sentences.txt", "--output_dir", "zero-out", "--max_steps", "1"], "--mask_rate must lie in (0, 1), got 0"),
    ],
)
def test_clear_errors_exit_with_code_2(workspace, argv, message, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    if argv[0] in ("train", "pretrain-aux") and "--model" not in argv:
        argv = [*argv, "--model", str(workspace["model"])]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_incompatible_model_exits_with_code_2(workspace, tiny_bert_nomask_dir, capsys):
    code = main(
        [
            "train",
            "--objective",
            "infocse",
            "--model",
            str(tiny_bert_nomask_dir),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            "none",
            "--output_dir",
            str(workspace["root"] / "x"),
            *FAST,
        ]
    )
    assert code == 2
    assert "no mask token" in capsys.readouterr().err


def test_ctrl_c_in_any_command_is_one_line_and_exit_code_130(monkeypatch, capsys):
    import st_infocse.cli.mine as cli_mine

    def pressed(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_mine, "cmd_mine", pressed)  # training runs say what they saved: tests/test_cli_own_model
    assert main(["mine", "--docs", "docs.jsonl"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "st-infocse mine: interrupted\n" and "Traceback" not in captured.err


def test_unknown_flag_exits_with_code_2(capsys):
    assert main(["train", "--no_such_flag", "1"]) == 2
    assert "--no_such_flag" in capsys.readouterr().err


def test_resume_after_interruption_matches_uninterrupted_run(workspace):
    import shutil

    import torch

    root = workspace["root"]
    common = [
        "train",
        "--objective",
        "infocse",
        "--model",
        str(workspace["model"]),
        "--train_data",
        str(workspace["sentences"]),
        "--stsb_dev",
        "none",
        "--lambda",
        "0.1",
        "--max_steps",
        "4",
        "--save_steps",
        "2",
        "--per_device_train_batch_size",
        "8",
        "--use_cpu",
        "true",
        "--save_total_limit",
        "5",
    ]
    assert main([*common, "--output_dir", str(root / "full")]) == 0
    # A run killed after writing checkpoint-2 leaves exactly that folder; resuming continues from it.
    shutil.copytree(root / "full" / "checkpoint-2", root / "killed" / "checkpoint-2")
    assert main([*common, "--output_dir", str(root / "killed"), "--resume_from_checkpoint", "true"]) == 0
    full = SentenceTransformer(str(root / "full"), device="cpu").state_dict()
    resumed = SentenceTransformer(str(root / "killed"), device="cpu").state_dict()
    for key, value in full.items():
        assert torch.allclose(value, resumed[key], atol=1e-6), key
    from safetensors.torch import load_file

    aux_full = load_file(str(root / "full" / "checkpoint-4" / "auxiliary_state.safetensors"))
    aux_resumed = load_file(str(root / "killed" / "checkpoint-4" / "auxiliary_state.safetensors"))
    assert aux_full.keys() == aux_resumed.keys()
    for key, value in aux_full.items():
        assert torch.allclose(value, aux_resumed[key], atol=1e-6), key


@pytest.mark.parametrize(
    ("objective", "projection", "expected"),
    [
        ("simcse", None, "mlp"),
        ("infocse", None, "bn-mlp"),
        ("cmlm-cse", None, "mlp"),
        ("informin", None, "mlp"),
        ("infocse", "mlp", "mlp"),
        ("simcse", "none", None),
    ],
)
def test_each_objective_gets_its_papers_head_unless_told(make_model, objective, projection, expected):
    from st_infocse.cli.objectives import build_loss, entry_of

    loss = build_loss(make_model(), objective, entry_of(objective).loss_flags(projection=projection))
    contrastive = getattr(loss, "contrastive", loss)
    assert contrastive.projection_kind == expected
    if objective in ("infocse", "cmlm-cse"):
        assert loss.decoder.config.fusion_init == "fresh"


# ------------------------------------------------------------------------------ lengths, summaries, bad input


def _train_argv(workspace, data: Path, *flags: str) -> list[str]:
    return [
        "train",
        "--objective",
        "simcse",
        "--model",
        str(workspace["model"]),
        "--train_data",
        str(data),
        "--stsb_dev",
        "none",
        "--output_dir",
        str(workspace["root"] / "run"),
        "--overwrite_output_dir",  # these tests train into one folder, run after run
        "true",
        *FAST,
        *flags,
    ]


def test_trained_model_keeps_the_base_models_length(workspace, capsys):
    assert main(_train_argv(workspace, workspace["sentences"])) == 0
    out = capsys.readouterr().out
    start, done = out.index("Training simcse"), out.index("Training done")
    assert start < done
    plan = out[start:done]
    # a run shorter than the save interval names the one checkpoint it writes, at its last step
    checkpoints = (f"checkpoints      {workspace['root'] / 'run' / 'checkpoint-2'} at the last step only (the run is 2 "
                   f"steps, shorter than --save_steps 125")
    for row in ("texts            40", "batch size       8", "optimizer steps  2", checkpoints):
        assert row in plan
    assert "every 125 steps" not in plan
    assert out.count("training max length 32, saved model max length 64") == 2  # at the start and in the summary
    model = SentenceTransformer(str(workspace["root"] / "run"), device="cpu")
    assert model.max_seq_length == 64
    # Checkpoints are for resuming the run, so they keep the training length.
    checkpoint = SentenceTransformer(str(workspace["root"] / "run" / "checkpoint-2"), device="cpu")
    assert checkpoint.max_seq_length == 32


def test_saved_length_of_a_sentence_transformer_is_its_own(workspace, tmp_path, capsys):
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(workspace["model"]), max_seq_length=48)
    SentenceTransformer(modules=[transformer, Pooling(32, "mean")], device="cpu").save(str(tmp_path / "st"))
    argv = _train_argv(workspace, workspace["sentences"], "--pooling", "model", "--max_seq_length", "16")
    argv[argv.index("--model") + 1] = str(tmp_path / "st")
    assert main(argv) == 0
    assert "training max length 16, saved model max length 48" in capsys.readouterr().out
    assert SentenceTransformer(str(workspace["root"] / "run"), device="cpu").max_seq_length == 48


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("name", "content", "flags", "message"),
    [
        ("empty.txt", b"", [], "training data {path} is empty (0 bytes)"),
        ("empty.jsonl", b"", [], "training data {path} is empty (0 bytes)"),
        ("blank.txt", b"\n   \n\t\n", [], "no text in {path}: all of its 3 lines are blank"),
        ("blank.txt.gz", "gzip:\n \n", [], "no text in {path}: all of its 2 lines are blank"),
        ("notgzip.txt.gz", b"plain text", [], "cannot read {path}"),
        ("text.txt", b"a cat\n", ["--text_column", "sentence"], "is plain text, one text per line, without columns"),
        (
            "numbers.jsonl",
            b'{"text": 1}\n{"text": 2.5}\n',
            [],
            "no usable text in {path}: column 'text' holds no non-blank string in any of 2 rows",
        ),
        (
            "numbers.jsonl",
            b'{"text": 1}\n{"text": 2.5}\n',
            ["--text_column", "text"],
            "no usable text in {path}: column 'text' holds no non-blank string in any of 2 rows",
        ),
        ("two.jsonl", b'{"a": "x", "b": "y"}\n', [], "choose the text column with --text_column (columns in"),
        ("other.jsonl", b'{"text": "a cat"}\n', ["--text_column", "body"], "no column 'body' in {path}"),
        ("bad.jsonl", b'{"text": "fine"\n', [], "{path}, line 1: not valid JSON"),
        # The first line is usable, so the cheap check passes; the full read still names the bad line.
        ("late.jsonl", b'{"text": "a cat sat"}\n\n{"text": oops}\n', [], "{path}, line 3: not valid JSON"),
        ("list.jsonl", b'["a cat"]\n', [], "{path}, line 1: expected a JSON object with a text field, got list"),
        ("object.json", b'{\n  "text": "a cat"\n}\n', [], "{path} holds a single JSON dict"),
        ("header.csv", b"id,text\n", [], "no rows in {path}"),
        ("table.xml", b"<a/>", [], "unsupported file type for training data: {path}"),
    ],
)
def test_bad_training_files_fail_in_one_line(workspace, capsys, name, content, flags, message):
    import gzip

    path = workspace["root"] / name
    if isinstance(content, str):
        path.write_bytes(gzip.compress(content.removeprefix("gzip:").encode()))
    else:
        path.write_bytes(content)
    assert main(_train_argv(workspace, path, *flags)) == 2
    err = _one_line_error(capsys)
    assert err.startswith("st-infocse train: error: ") and message.format(path=path) in err


def test_dataset_empty_after_cleaning_fails_in_one_line(workspace, capsys):
    from datasets import Dataset

    folder = workspace["root"] / "saved"
    Dataset.from_dict({"text": [None, "  ", ""]}).save_to_disk(str(folder))
    capsys.readouterr()  # the save's progress bar
    assert main(_train_argv(workspace, folder)) == 2
    err = _one_line_error(capsys)
    assert f"no usable text in {folder}: 0 of 3 texts kept; dropped: 2 blank, 1 missing" in err


@pytest.mark.parametrize("flags", [[], ["--text_column", "text"]])
def test_mixed_json_rows_are_dropped_counted_once_and_train(workspace, capsys, flags):
    path = workspace["root"] / "mixed.jsonl"
    rows = [{"text": s} for s in random_sentences(20)]
    rows += [{"text": 3}, {"text": None}, {"text": "  "}, {"text": ["a", "list"]}, {"other": "no text field"}]
    _write(path, [json.dumps(row) for row in rows])
    assert main(_train_argv(workspace, path, *flags)) == 0
    captured = capsys.readouterr()
    report = f"{path}: 20 of 25 texts kept; dropped: 1 blank, 2 missing, 2 not text"
    assert captured.out.count(report) == 1
    assert "texts kept" not in captured.err
    assert "texts            20" in captured.out


def test_json_array_and_csv_train(workspace, capsys):
    array = workspace["root"] / "array.json"
    array.write_text(json.dumps([{"sentence": s, "id": i} for i, s in enumerate(random_sentences(10))], indent=2))
    assert main(_train_argv(workspace, array)) == 0
    one_line = workspace["root"] / "one-line.json"
    one_line.write_text(json.dumps([{"text": s} for s in random_sentences(10)]))
    assert main(_train_argv(workspace, one_line)) == 0
    table = workspace["root"] / "table.csv"
    _write(table, ["id,sentence", *(f"{i},{s}" for i, s in enumerate(random_sentences(10)))])
    assert main(_train_argv(workspace, table)) == 0
    from datasets import Dataset

    parquet = workspace["root"] / "table.parquet"
    Dataset.from_dict({"id": list(range(10)), "sentence": random_sentences(10)}).to_parquet(str(parquet))
    assert main(_train_argv(workspace, parquet)) == 0
    assert capsys.readouterr().out.count("texts            10") == 4


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--max_steps", "0", "--num_train_epochs", "0"],
            "--max_steps 0 with --num_train_epochs 0 makes no optimizer step",
        ),
        (["--max_steps", "0"], "--max_steps 0 with --num_train_epochs 1 makes no optimizer step"),
        (["--max_steps", "-1", "--num_train_epochs", "0"], "--max_steps -1 with --num_train_epochs 0 makes no"),
        (
            ["--max_steps", "-1", "--dataloader_drop_last", "true", "--per_device_train_batch_size", "64"],
            "this run makes no optimizer step: 40 texts, batch size 64 with --dataloader_drop_last",
        ),
    ],
)
def test_runs_without_an_optimizer_step_are_refused(workspace, capsys, flags, message):
    argv = _train_argv(workspace, workspace["sentences"], *flags)
    assert main(argv) == 2
    assert message in _one_line_error(capsys)
    assert not (workspace["root"] / "run").exists()


def test_zero_steps_in_pretrain_aux_too(workspace, capsys):
    argv = ["pretrain-aux", "--model", str(workspace["model"]), "--train_data", str(workspace["sentences"])]
    assert main([*argv, "--max_steps", "0"]) == 2
    assert "makes no optimizer step" in _one_line_error(capsys)


@pytest.mark.parametrize(("values", "message"), [({"max_steps": 0}, "makes no optimizer step"),
                                               ({"max_steps": -5}, "--max_steps must be a positive number of steps"),
                                               ({"learning_rate": 0.0}, "--learning_rate must be positive, got 0")])
def test_the_training_arguments_refuse_a_run_that_trains_nothing_from_python_too(tmp_path, values, message):
    from st_infocse.training import PaperTrainingArguments

    with pytest.raises(ValueError, match=re.escape(message)):
        PaperTrainingArguments(output_dir=str(tmp_path), use_cpu=True, **values)


def test_cpu_runs_do_not_pin_memory(make_model, tmp_path):
    from datasets import Dataset

    from st_infocse.losses import SimCSELoss
    from st_infocse.training import PaperTrainingArguments, build_trainer

    args = PaperTrainingArguments(
        output_dir=str(tmp_path), use_cpu=True, report_to="none", eval_strategy="no", load_best_model_at_end=False
    )
    model = make_model()
    build_trainer(model, SimCSELoss(model), Dataset.from_dict({"text": ["a cat", "a dog"]}), args)
    assert args.dataloader_pin_memory is False


# ---------------------------------------------------------------------------------------------- documents


def test_mine_plain_text_documents(workspace, capsys):
    corpus = workspace["root"] / "corpus.txt"
    # Documents are separated by blank lines; each line is split into sentences.
    lines = [*random_sentences(3, seed=1), "", "", *random_sentences(2, seed=2), "", "One lonely sentence.", ""]
    lines[0] = lines[0] + ". The second sentence of this line."
    _write(corpus, lines)
    out = workspace["root"] / "pairs"
    assert main(["mine", "--model", str(workspace["model"]), "--docs", str(corpus), "--output_dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 documents read, 2 used, skipped: too_few_sentences=1; 6 sentences" in printed
    assert printed.count("documents read") == 1 and "MiningReport(" not in printed
    from datasets import load_from_disk

    assert set(load_from_disk(str(out / "pairs"))["doc_id"]) == {"0", "1"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.jsonl", b"", "documents file {path} is empty (0 bytes)"),
        ("empty.txt", b"", "documents file {path} is empty (0 bytes)"),
        ("blank.txt", b"\n\n", "no text in {path}: all of its lines are blank"),
        ("bad.jsonl", b"{bad\n", "{path}, line 1: not valid JSON"),
        ("fields.jsonl", b'{"id": 1, "body": "x"}\n', "no usable document in {path} (1 records)"),
        ("docs.csv", b"id,text\n1,a\n", "unsupported file type for documents: {path}; use .txt(.gz) (documents"),
        ("missing.jsonl", None, "documents not found: {path}"),
    ],
)
def test_bad_documents_fail_in_one_line(workspace, capsys, name, content, message):
    path = workspace["root"] / name
    if content is not None:
        path.write_bytes(content)
    for argv in (
        ["mine", "--model", str(workspace["model"]), "--docs", str(path)],
        ["train", "--objective", "idc", "--model", str(workspace["model"]), "--docs", str(path)],
    ):
        assert main(argv) == 2
        assert message.format(path=path) in _one_line_error(capsys)


# --------------------------------------------------------------------------------------- speed and help


# The flags are parsed by transformers' HfArgumentParser, which loads without torch (about 2 s); the model, torch,
# sentence-transformers and datasets come only after the input checks.
HEAVY = ("torch", "sentence_transformers", "datasets")


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--train_data", "empty.txt"],
        ["pretrain-aux", "--train_data", "empty.txt"],
        ["train", "--objective", "idc", "--docs", "empty.txt"],
        ["mine", "--docs", "empty.txt"],
        ["train", "--config", "run.json"],
        ["train", "--config=run.json"],
        ["train", "--train_data", "corpus.txt", "--objective", "simcse", "--lambda", "0.1"],
    ],
)
def test_input_errors_come_before_heavy_imports(tmp_path, argv):
    (tmp_path / "empty.txt").touch()
    (tmp_path / "corpus.txt").write_text("a cat sat\n")
    (tmp_path / "run.json").write_text(json.dumps({"train_data": "empty.txt"}))
    result, imported = run_cli_listing_imports(argv, tmp_path)
    assert result.returncode == 2
    assert "st_infocse.cli" in imported  # the listing works
    assert not {name for name in imported if name.split(".")[0] in HEAVY}
    errors = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert len(errors) == 1 and "error:" in errors[0] and ("empty" in errors[0] or "is not a flag of" in errors[0])


def test_train_help_lists_own_flags_first(capsys):
    assert main(["train", "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: st-infocse train [flags]")
    sections = ["\nmodel:", "\nobjective:", "\ntraining data:", "\nthe loss (unset: the objective's own default):",
                "\ntraining (every SentenceTransformer"]
    positions = [text.index(section) for section in sections]
    assert positions == sorted(positions)
    assert text.index("--objective") < positions[-1] < text.index("--gradient_accumulation_steps")


@pytest.mark.parametrize(
    ("argv", "shown", "hidden"),
    [
        (["--objective", "informin"], ["--temperature", "--lambda", "--train_data", "--weight_anchor"],
         ["--k ", "--informin_weight", "--docs", "--tie_head", "--decoder_warmup_steps"]),
        (["--objective", "idc"], ["--docs", "--rounds", "--idc_loss {mnrl,infocse}", "--temperature", "--weight_anchor",
                                   "--keep_start_if_better", "--lora_r"],
         ["--lambda", "--train_data", "--aux_learning_rate"]),
        (["--objective", "idc", "--idc_loss", "infocse"], ["--docs", "--lambda", "--aux_learning_rate"],
         ["--train_data", "--decoder_warmup_steps"]),
        (["--objective", "ict"], ["--docs", "--weight_anchor"], ["--temperature", "--lambda", "--rounds"]),
    ],
)
def test_help_of_an_objective_lists_only_its_flags(capsys, argv, shown, hidden):
    assert main(["train", *argv, "--help"]) == 0
    text = capsys.readouterr().out
    assert all(flag in text for flag in shown), [flag for flag in shown if flag not in text]
    assert not [flag for flag in hidden if flag in text]


def test_pretrain_aux_help_lists_stage_1_flags(capsys):
    assert main(["pretrain-aux", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--tie_head" in text and "--masking {whole_word,token}" in text and "--train_data" in text
    assert "--stsb_dev" not in text and "--lambda" not in text and "--objective" not in text


# ----------------------------------------------------------------------------------------------------- demo


def test_demo_is_listed_and_runs_lazily(monkeypatch, capsys):
    import sys
    import types

    main(["--help"])
    assert "demo" in capsys.readouterr().out
    received: list[list[str]] = []
    demo = types.ModuleType("st_infocse.cli.demo")
    demo.cmd_demo = lambda argv: received.append(list(argv)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "st_infocse.cli.demo", demo)
    assert main(["demo", "--output_dir", "x"]) == 0
    assert received == [["--output_dir", "x"]]


def test_demo_missing_is_one_line(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "st_infocse.cli.demo", None)  # an import of it then fails as if absent
    assert main(["demo"]) == 2
    assert "st-infocse demo: error: the demo is not part of this installation" in _one_line_error(capsys)


def test_an_optional_package_missing_is_one_line(monkeypatch, capsys):
    """A command that reaches an optional package not installed (the eval extra's scikit-learn for --transfer, say)
    ends in one line saying what to install, not a traceback."""
    import sys
    import types

    from st_infocse.evaluation._deps import require

    demo = types.ModuleType("st_infocse.cli.demo")
    demo.cmd_demo = lambda argv: require("no_such_package_here", "Transfer tasks")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "st_infocse.cli.demo", demo)
    assert main(["demo"]) == 2
    assert ("st-infocse demo: error: Transfer tasks needs the optional package 'no_such_package_here', which is not "
            "installed: pip install \"st-infocse[eval]\"") in _one_line_error(capsys)


def test_train_on_the_bundled_demo_data(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["train", "--objective", "simcse", "--model", str(tiny_bert_dir), "--train_data", "demo",
            "--max_train_samples", "64", "--stsb_dev", "demo", "--eval_steps", "2", "--save_strategy", "no",
            "--load_best_model_at_end", "false", "--output_dir", str(out), *FAST]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "64" in printed
    assert (out / "config.json").exists() or any(out.rglob("config.json"))


def test_explicit_zero_weight_is_used_as_given(make_model):
    from st_infocse.cli.objective_flags import ConditionalMLMFlags, InforMinFlags
    from st_infocse.cli.objectives import build_loss

    assert build_loss(make_model(), "informin", InforMinFlags(lambda_=0.0)).lambda_ == 0.0
    assert build_loss(make_model(), "informin", InforMinFlags()).lambda_ == 0.4  # the loss's own default
    assert build_loss(make_model(), "infocse", ConditionalMLMFlags(lambda_=0.0)).lambda_ == 0.0


_TRAIN_ONE_STEP = ["--stsb_dev", "none", "--output_dir", "zero-out", "--max_steps", "1", "--use_cpu", "true"]
_STAGE1_ONE_STEP = _TRAIN_ONE_STEP[2:]  # stage 1 evaluates nothing: --stsb_dev is not its flag


def _one_step(command: str) -> list[str]:
    return _STAGE1_ONE_STEP if command == "pretrain-aux" else _TRAIN_ONE_STEP


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--k", "0", "--train_data", "sentences.txt"], "k (frozen lower layers) must be between 1 and 3"),
        (["train", "--temperature", "0", "--train_data", "sentences.txt"], "--temperature must be positive, got 0"),
        (["pretrain-aux", "--k", "0", "--train_data", "sentences.txt"], "k (frozen lower layers) must be between 1"),
        (["train", "--max_train_samples", "0", "--train_data", "sentences.txt"], "--max_train_samples must be at least 1, got 0"),
        (["train", "--objective", "idc", "--docs", "docs.jsonl", "--rounds", "0"], "rounds must be at least 1, got 0"),
        (["train", "--objective", "idc", "--docs", "docs.jsonl", "--idc_k", "0"], "k must be at least 1, got 0"),
        # MultipleNegativesRankingLoss takes 1 / temperature as its scale.
        (["train", "--objective", "idc", "--docs", "docs.jsonl", "--temperature", "0"], "--temperature must be positive, got 0"),
        (["mine", "--docs", "docs.jsonl", "--max_docs", "0"], "--max_docs must be at least 1, got 0"),
        (["mine", "--docs", "docs.jsonl", "--min_sentences", "0"], "--min_sentences must be at least 2 (a pair needs two sentences), got 0"),
        (["mine", "--docs", "docs.jsonl", "--k", "0"], "k must be at least 1, got 0"),
        (["mine", "--docs", "docs.jsonl", "--batch_size", "0"], "batch_size must be a positive integer, got 0"),
        (["mine", "--docs", "docs.jsonl", "--max_pairs_per_cluster", "0"], "max_pairs_per_cluster must be at least 1, got 0"),
        (["evaluate", "--sts", "downstream", "--batch_size", "0"], "batch_size must be a positive integer, got 0"),
    ],
)
def test_explicit_zeros_are_refused_in_one_line(workspace, argv, message, capsys, monkeypatch):
    """A 0 the user typed is never replaced by a default: where it cannot be used, the command says so."""
    monkeypatch.chdir(workspace["root"])
    argv = [*argv, "--model", str(workspace["model"])]
    argv += _one_step(argv[0]) if argv[0] in ("train", "pretrain-aux") else ["--output_dir", "zero-out"]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], errors


def test_idc_with_the_infocse_loss_takes_its_flags(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    argv = ["train", "--objective", "idc", "--idc_loss", "infocse", "--docs", "docs.jsonl", "--lambda_", "0.1",
            "--model", "no-such-org/no-such-model", *_TRAIN_ONE_STEP]
    assert main(argv) == 2  # gets past the flag check to the model, which does not exist
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "cannot load model" in errors[0], errors


def test_explicit_zero_threshold_is_used(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    argv = ["mine", "--model", str(workspace["model"]), "--docs", "docs.jsonl", "--output_dir", "pairs0"]
    assert main([*argv, "--threshold", "0"]) == 0
    report = json.loads((workspace["root"] / "pairs0" / "report.json").read_text())
    assert report["threshold"] == 0.0, report


def test_explicit_zero_weights_reach_every_loss(make_model):
    from st_infocse.cli.objective_flags import ConditionalMLMFlags
    from st_infocse.cli.objectives import build_loss, entry_of

    for objective in ("infocse", "cmlm-cse", "informin"):
        flags = entry_of(objective).loss_flags
        assert build_loss(make_model(), objective, flags(lambda_=0.0)).lambda_ == 0.0
    assert build_loss(make_model(), "infocse", ConditionalMLMFlags(informin_weight=0.0)).informin_weight == 0.0
    # Unset, each takes the registry's default.
    from st_infocse.losses.registry import INFORMIN_LAMBDA, PRESETS

    for objective, default in (("infocse", PRESETS["infocse"].lambda_), ("cmlm-cse", PRESETS["cmlm-cse"].lambda_),
                               ("informin", INFORMIN_LAMBDA)):
        assert build_loss(make_model(), objective).lambda_ == default


def test_explicit_zero_decoder_sizes_reach_the_loss(make_model):
    from st_infocse.cli.objective_flags import DecoderFlags
    from st_infocse.cli.objectives import build_loss

    for name, message in (("k", "k (frozen lower layers) must be between 1"), ("n", "n (fusion layers) must be")):
        with pytest.raises(ValueError, match=re.escape(message)):
            build_loss(make_model(), "cmlm", DecoderFlags(**{name: 0}))
    with pytest.raises(ValueError, match="objective 'idc' has no loss of its own"):  # its rounds train pair losses
        build_loss(make_model(), "idc")


def test_decoder_warmup_trains_a_decoder_first_and_the_loss_starts_from_it(workspace, capsys, monkeypatch):
    import torch

    import st_infocse.cli.objectives as cli_objectives
    from st_infocse.modeling import AuxiliaryDecoder

    monkeypatch.chdir(workspace["root"])
    seen = {}
    real_build_loss = cli_objectives.build_loss

    def spy(model, args, objective=None):
        loss = real_build_loss(model, args, objective)
        seen["decoder"] = {k: v.detach().clone() for k, v in loss.decoder.state_dict().items()}
        seen["config"] = loss.get_config_dict()
        return loss

    monkeypatch.setattr(cli_objectives, "build_loss", spy)
    argv = ["train", "--objective", "infocse", "--train_data", "sentences.txt", "--model", str(workspace["model"]),
            "--decoder_warmup_steps", "3", "--per_device_train_batch_size", "8", "--lambda_", "1",
            "--aux_gradient", "full", *_TRAIN_ONE_STEP]
    assert main(argv) == 0
    assert "Decoder warm-up: 3 steps" in capsys.readouterr().out
    warmed = AuxiliaryDecoder.from_pretrained(workspace["root"] / "zero-out" / "decoder_warmup")
    assert warmed.config.k == seen["config"]["k"] and warmed.config.n == seen["config"]["n"]
    saved = warmed.state_dict()
    # The loss's decoder, as built, is the warmed one: every saved tensor, value for value.
    shared = [k for k, v in seen["decoder"].items() if k in saved and v.is_floating_point()]
    assert shared and all(torch.equal(seen["decoder"][k], saved[k]) for k in shared)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--objective", "simcse"], "--decoder_warmup_steps (a flag of infocse, cmlm-cse, cmlm) is not a flag of "
         "--objective simcse"),
        (["--objective", "informin"], "--decoder_warmup_steps (a flag of infocse, cmlm-cse, cmlm) is not a flag of "
         "--objective informin"),
        (["--decoder_warmup_learning_rate", "0"], "--decoder_warmup_learning_rate must be positive, got 0"),
    ],
)
def test_decoder_warmup_is_refused_where_it_cannot_apply(workspace, extra, message, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    argv = ["train", "--train_data", "sentences.txt", "--model", "no-such-org/no-such-model",
            "--decoder_warmup_steps", "2", *extra, *_TRAIN_ONE_STEP]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], errors


def test_decoder_warmup_zero_steps_is_refused(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    argv = ["train", "--train_data", "sentences.txt", "--model", "no-such-org/no-such-model",
            "--decoder_warmup_steps", "0", *_TRAIN_ONE_STEP]
    assert main(argv) == 2
    assert "--decoder_warmup_steps must be at least 1, got 0" in capsys.readouterr().err


def test_the_same_seed_builds_the_same_loss(workspace, monkeypatch):
    """--seed fixes the loss's fresh modules too (fusion layers, MLM head, projection), which are built before the
    trainer seeds: two runs with one seed start from the same weights, another seed from others."""
    import torch

    import st_infocse.cli.objectives as cli_objectives

    monkeypatch.chdir(workspace["root"])
    starts = []
    real_build_loss = cli_objectives.build_loss

    def spy(model, args, objective=None):
        loss = real_build_loss(model, args, objective)
        starts.append({k: v.detach().clone() for k, v in loss.state_dict().items() if not k.startswith("model.")})
        return loss

    monkeypatch.setattr(cli_objectives, "build_loss", spy)
    for seed in ("7", "7", "8"):
        argv = ["train", "--objective", "infocse", "--train_data", "sentences.txt", "--model", str(workspace["model"]),
                "--seed", seed, *_TRAIN_ONE_STEP, "--overwrite_output_dir", "true"]  # one folder, three runs
        torch.manual_seed(int(seed) * 1000 + len(starts))  # whatever the global state was before the command
        assert main(argv) == 0
    first, again, other = starts
    floats = [k for k, v in first.items() if v.is_floating_point() and "running" not in k]
    assert floats and all(torch.equal(first[k], again[k]) for k in floats)
    assert any(not torch.equal(first[k], other[k]) for k in floats)


def test_evaluate_compare_gives_each_change_an_interval(workspace, tmp_path, capsys):
    import torch
    from sentence_transformers import SentenceTransformer

    other = SentenceTransformer(str(workspace["model"]), device="cpu")
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    other.save(str(tmp_path / "other"))
    out = tmp_path / "eval"
    argv = ["evaluate", "--model", str(workspace["model"]), "--compare", str(tmp_path / "other"), "--sts",
            str(workspace["senteval"]), "--beir", "scifact", "--beir_source", str(workspace["beir"]), "--output_dir",
            str(out), "--plots", "false"]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    comparison = json.loads((out / "comparison.json").read_text())["comparison"]
    rows = {(row["kind"], row["name"]): row for row in comparison["rows"]}
    assert ("BEIR nDCG@10", "scifact") in rows and ("STS", "STS-B") in rows
    for row in rows.values():
        change = row["change"]
        assert change["delta"] == pytest.approx(row["after"] - row["before"], abs=1e-6)
        assert change["low"] <= change["delta"] <= change["high"] and change["verdict"]
    assert rows[("BEIR nDCG@10", "scifact")]["change"]["unit"] == "queries"
    assert rows[("STS", "STS-B")]["change"]["unit"] == "pairs"
    assert "95% CI" in printed and "against other" in printed
    assert (out / "comparison.md").is_file() and (out / "evaluation.json").is_file()


def test_evaluate_compare_with_a_missing_model_fails_in_one_line(workspace, capsys):
    argv = ["evaluate", "--model", str(workspace["model"]), "--compare", "./no-such-model", "--sts", "x"]
    assert main(argv) == 2
    assert "--compare: model not found: ./no-such-model" in capsys.readouterr().err


def test_evaluate_reads_a_beir_folder_of_any_name_by_its_layout_and_its_dev_split(workspace, tmp_path, capsys,
                                                                                   monkeypatch):
    import shutil

    own = tmp_path / "myset"  # not a BEIR dataset's name; only qrels/dev.tsv, as the guide has users write
    shutil.copytree(workspace["beir"] / "scifact", own)
    (own / "qrels" / "test.tsv").rename(own / "qrels" / "dev.tsv")
    out = tmp_path / "eval"
    assert main(["evaluate", "--model", str(workspace["model"]), "--beir", str(own), "--output_dir", str(out),
                 "--plots", "false"]) == 0, capsys.readouterr().err
    result = json.loads((out / "evaluation.json").read_text())["BEIR"]["datasets"]["myset"]
    assert result["split"] == "dev" and result["n_queries"] == 5
    capsys.readouterr()
    assert main(["evaluate", "--model", str(workspace["model"]), "--beir", str(own), "--split", "test"]) == 2
    assert f"--beir {own}: {own}/qrels/test.tsv: file not found (qrels/ holds dev.tsv)" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["evaluate", "--model", str(workspace["model"]), "--beir", "myset"]) == 2
    assert "--beir myset: no such folder, and the hub is offline" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--learning_rate", "-1"], "--learning_rate must be positive, got -1"),
        (["train", "--recipe", "simcse-bert-base", "--learning_rate", "0"], "--learning_rate must be positive, got 0"),
        (["train", "--aux_learning_rate", "-0.1"], "--aux_learning_rate must be positive, got -0.1"),
        (["pretrain-aux", "--learning_rate", "-1"], "--learning_rate must be positive, got -1"),
        (["train", "--output_dir", "/proc/no-such-place/out"], "--output_dir: cannot write into /proc/no-such-place/out"),
        (["train", "--resume_from_checkpoint", "checkpoint-9"], "--resume_from_checkpoint: no checkpoint folder at "
                                                                  "checkpoint-9"),
        # every bad value names its flag (not the Python name), from the loss's own bounds
        (["train", "--lambda", "-1"], "--lambda must be at least 0, got -1"),
        (["train", "--objective", "cmlm", "--mask_rate", "1.5"], "--mask_rate must lie in (0, 1), got 1.5"),
        (["train", "--eval_retrieval", "beir/scifact", "--bm25_language", "klingon"],
         "--bm25_language klingon is not a language of the stemmer"),
        (["train", "--eval_retrieval", "beir/scifact", "--bm25_language", "armenian"],
         "--bm25_language armenian: bm25s has no stop-word list for it"),
        (["train", "--eval_retrieval", "beir/scifact", "--hybrid_weight", "2"], "--hybrid_weight must lie in [0, 1]"),
        # the sections read from the library keep their bounds and choices, under the flags' names
        (["train", "--weight_anchor", "0"], "--weight_anchor must lie in (0, 1] (the share of the trained change kept)"),
        (["train", "--eval_retrieval", "beir/scifact", "--keep_trained_if", "reliable", "--confirm_share", "1"],
         "--confirm_share must lie in (0, 1)"),
        (["train", "--eval_retrieval_max_corpus", "-1"], "--eval_retrieval_max_corpus must be at least 0"),
        (["train", "--objective", "simcse", "--lora_r", "-1"], "--lora_r must be at least 0 (0: no adapter), got -1"),
        (["train", "--objective", "simcse", "--lora_r", "2", "--lora_dropout", "1"], "--lora_dropout must lie in [0, 1)"),
        (["train", "--keep_trained_if", "maybe"], "invalid choice: 'maybe' (choose from 'better', 'reliable')"),
        (["train", "--objective", "distill", "--docs", "docs.jsonl", "--distill_loss", "mse"],
         "invalid choice: 'mse' (choose from 'kl', 'margin_mse')"),
        (["train", "--lamda", "0.1"], "--lamda is not a flag of --objective infocse"),
        (["train", "--lamda", "0.1"], "did you mean --lambda?"),
        (["train", "--learning_rat", "0.1"], "did you mean --learning_rate?"),
    ],
)
def test_input_errors_come_before_the_model_loads(workspace, argv, message, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    # a model that cannot load offline: our one-line error shows the check ran before any loading was tried
    full = [*argv, "--train_data", "sentences.txt", "--model", "no-such-org/no-such-model", *_one_step(argv[0])]
    if "--output_dir" in argv:
        full = [*argv[:1], "--train_data", "sentences.txt", "--model", "no-such-org/no-such-model", "--stsb_dev",
                "none", "--max_steps", "1", *argv[1:]]
    assert main(full) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "--sts", "downstream", "--bm25_language", "klingon"], "--bm25_language klingon is not a"),
        (["evaluate", "--sts", "downstream", "--hybrid_weight", "2"], "--hybrid_weight must lie in [0, 1]"),
        (["evaluate", "--sts", "downstream", "--splt", "dev"], "did you mean --split?"),
        (["mine", "--docs", "docs.jsonl", "--similarty", "dot"], "did you mean --similarity?"),
        (["demo", "--steps", "3"], "did you mean --max_steps?"),  # the demo takes train's flags
    ],
)
def test_every_command_names_the_flag_at_fault_before_loading(workspace, argv, message, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    assert main([*argv, "--model", "no-such-org/no-such-model"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], errors


def test_a_yaml_config_gives_typed_values_and_the_command_line_wins(workspace, capsys, monkeypatch):
    """The file is read as a mapping (floats, lists and booleans as they are), a key no section takes is refused by
    name, and a flag given on the command line wins over the file's."""
    from st_infocse.cli import train as cli_train

    monkeypatch.chdir(workspace["root"])
    config = workspace["root"] / "run.yaml"
    config.write_text("objective: simcse\ntemperature: 0.07\nlearning_rate: 1e-4\nlora_r: 2\n"
                      "lora_target_modules: [query, value]\nsplit_sentences: true\nmax_steps: 3\n")
    seen = {}

    def stop(argv, command):
        seen["flags"] = real(argv, command)
        raise SystemExit(0)

    real = cli_train.read_training_flags
    monkeypatch.setattr(cli_train, "read_training_flags", stop)
    with pytest.raises(SystemExit):
        main(["train", "--config", str(config), "--train_data", "sentences.txt", "--max_steps", "1"])
    flags = seen["flags"]
    assert flags.objective == "simcse" and flags.loss.temperature == pytest.approx(0.07)
    assert flags.trainer.learning_rate == pytest.approx(1e-4) and flags.trainer.max_steps == 1
    assert flags.lora.lora_target_modules == ["query", "value"] and flags.data.split_sentences is True
    config.write_text("objective: simcse\nlambda: 0.1\n")
    assert main(["train", "--config", str(config), "--train_data", "sentences.txt"]) == 2
    assert "--lambda (a flag of" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", [["--no_keep_start_if_better"], ["--keep-start-if-better", "false"]])
def test_another_objectives_flag_is_named_in_every_spelling_its_parser_takes(spelling, capsys):
    """The complement HfArgumentParser adds to a boolean that defaults to True, and the dashed spelling, are refused
    as the training objectives' flag before anything is read, not left to the trainer's stage."""
    assert main(["pretrain-aux", "--model", "m", "--train_data", "missing.txt", *spelling]) == 2
    assert f"{spelling[0]} (a flag of simcse, " in capsys.readouterr().err


def test_a_config_value_that_is_not_a_yes_or_no_is_one_line_naming_its_flag(workspace, capsys):
    """A file's string for a true/false flag is converted as the command line's would be, and refused in one line."""
    config = workspace["root"] / "run.yaml"
    config.write_text("objective: simcse\nbm25: maybe\n")
    assert main(["train", "--config", str(config), "--train_data", "sentences.txt"]) == 2
    assert capsys.readouterr().err.startswith("st-infocse train: error: --bm25: Truthy value expected: got maybe")


def test_a_config_list_is_read_as_the_command_lines_values(workspace, capsys):
    """A file's list goes through the command line's parser: an empty one, for a flag of one value or more, is
    refused there in one line naming the flag (LoRASettings refuses it for a script)."""
    config = workspace["root"] / "run.yaml"
    config.write_text("objective: simcse\nlora_r: 2\nlora_target_modules: []\n")
    assert main(["train", "--config", str(config), "--train_data", "sentences.txt"]) == 2
    assert "error: --lora_target_modules/--lora-target-modules: expected at least one argument" in capsys.readouterr().err


def test_the_training_time_stsb_dev_evaluator_reads_the_dev_split(workspace, monkeypatch):
    """The SentEval folder holds dev and test pairs that differ: the evaluator the trainer gets holds dev's."""
    import st_infocse.cli.train as cli_train

    seen = {}

    def capture(model, loss, dataset, training_args, evaluator, *args, **kwargs):
        seen["evaluator"] = evaluator
        raise _Built

    monkeypatch.setattr(cli_train, "run_trainer", capture)
    monkeypatch.chdir(workspace["root"])
    with pytest.raises(_Built):
        main(["train", "--objective", "simcse", "--train_data", "sentences.txt", "--model", str(workspace["model"]),
              *_TRAIN_ONE_STEP, "--stsb_dev", "downstream"])
    folder = workspace["senteval"] / "STS" / "STSBenchmark"
    first = {split: (folder / f"sts-{split}.csv").read_text().splitlines()[0].split("\t")[5] for split in ("dev", "test")}
    assert first["dev"] != first["test"]
    evaluator = getattr(seen["evaluator"], "inner", seen["evaluator"])  # scored at the model's own length
    assert evaluator.sentences1[0] == first["dev"]


def test_an_unknown_idc_loss_is_refused_by_the_parser_with_its_choices(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    argv = ["train", "--objective", "idc", "--docs", "docs.jsonl", "--idc_loss", "mnlr", *_TRAIN_ONE_STEP]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line]
    assert errors == ["st-infocse train: error: --idc_loss/--idc-loss: invalid choice: 'mnlr' "
                      "(choose from 'mnrl', 'infocse')"]


def test_evaluate_refuses_the_hub_offline_in_one_line(workspace, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["evaluate", "--model", str(workspace["model"]), "--sts", "mteb"]) == 2
    assert "--sts mteb reads the Hugging Face hub, which is offline" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the transfer tasks have no hub source, online or not
    for flag, value in (("--transfer", "mteb"), ("--sts", "hub")):
        assert main(["evaluate", "--model", str(workspace["model"]), flag, value]) == 2
        assert f"{flag}: not found: {value}" in capsys.readouterr().err


# Each objective's loss flags, as the command line should take them (pretrain-aux: stage 1; "idc infocse": IDC with
# --idc_loss infocse). Every other objective's flag must be refused by name; each of these must reach the loss.
_CONTRASTIVE = {"temperature", "projection", "gather_across_devices"}
_DECODER = {"k", "n", "mask_rate", "fusion_init", "detach", "decoder"}
_CONDITIONAL_MLM = {"lambda_", "aux_gradient", "informin_weight", *_CONTRASTIVE, *_DECODER}
EXPECTED_LOSS_FLAGS = {
    "simcse": _CONTRASTIVE,
    "infocse": _CONDITIONAL_MLM,
    "cmlm-cse": _CONDITIONAL_MLM,
    "informin": {"lambda_", *_CONTRASTIVE},
    "cmlm": _DECODER,
    "ict": set(),
    "distill": set(),  # sentence-transformers' DistillKLDivLoss / MarginMSELoss, set by its own flags below
    "idc": {"temperature"},
    "idc infocse": _CONDITIONAL_MLM,
    "pretrain-aux": {"k", "n", "mask_rate", "fusion_init", "tie_head", "masking"},
}
# The objectives' other own flags: the auxiliary modules' rate, the decoder warm-up, the documents, IDC's rounds.
_IDC = {"docs", "rounds", "idc_loss", "idc_k", "idc_similarity", "initial_annotation", "idc_annotator", "idc_max_docs",
        "idc_precision"}
_LORA = {"lora_r", "lora_alpha", "lora_target_modules", "lora_dropout"}
EXPECTED_OWN_FLAGS = {
    "simcse": {"aux_learning_rate", *_LORA},
    "infocse": {"aux_learning_rate", "decoder_warmup_steps", "decoder_warmup_learning_rate", *_LORA},
    "cmlm-cse": {"aux_learning_rate", "decoder_warmup_steps", "decoder_warmup_learning_rate", *_LORA},
    "informin": {"aux_learning_rate", *_LORA},
    "cmlm": {"aux_learning_rate", "decoder_warmup_steps", "decoder_warmup_learning_rate", *_LORA},
    "ict": {"docs", *_LORA},
    "distill": {"docs", "distill_queries", "distill_loss", "distill_candidates", "student_temperature",
                "teacher_temperature", "distill_max_queries", *_LORA},
    "idc": {*_IDC, *_LORA},
    "idc infocse": {*_IDC, "aux_learning_rate", *_LORA},
    "pretrain-aux": {"aux_learning_rate"},
}
# A non-default value for every such flag (--decoder: a folder that exists, from the test's working directory).
_FLAG_VALUES = {
    "lambda_": "0.3", "temperature": "0.1", "projection": "bn-mlp", "k": "1", "n": "1", "mask_rate": "0.2",
    "fusion_init": "copy", "decoder": ".", "detach": "false", "tie_head": "false", "masking": "token",
    "informin_weight": "0.5", "gather_across_devices": "true", "aux_gradient": "full", "aux_learning_rate": "0.01",
    "decoder_warmup_steps": "2", "decoder_warmup_learning_rate": "0.01", "docs": "docs.jsonl", "rounds": "1",
    "idc_loss": "infocse", "idc_k": "2", "idc_similarity": "dot", "initial_annotation": "adjacent",
    "idc_annotator": ".", "idc_max_docs": "3", "idc_precision": "bf16", "distill_queries": "title",
    "distill_loss": "margin_mse", "distill_candidates": "3", "student_temperature": "0.1", "teacher_temperature": "0.2", "distill_max_queries": "5",
    "lora_r": "4", "lora_alpha": "8", "lora_target_modules": "q", "lora_dropout": "0.1",
}
# The text-corpus flags, which the document objectives refuse.
_TEXT_FLAGS = {"train_data": "sentences.txt", "text_column": "text", "max_train_samples": "4", "split_sentences": "true"}


def _objective_argv(objective: str) -> list[str]:
    if objective == "pretrain-aux":
        return ["pretrain-aux", "--train_data", "sentences.txt"]
    if objective.startswith("idc"):
        return ["train", "--objective", "idc", "--docs", "docs.jsonl",
                *(["--idc_loss", "infocse"] if objective == "idc infocse" else [])]
    if objective in ("ict", "distill"):
        return ["train", "--objective", objective, "--docs", "docs.jsonl"]
    return ["train", "--objective", objective, "--train_data", "sentences.txt"]


def _refused_cases():
    every = {*_FLAG_VALUES, *_TEXT_FLAGS}
    for objective, loss_flags in EXPECTED_LOSS_FLAGS.items():
        documents = objective in ("idc", "idc infocse", "ict", "distill")
        takes = loss_flags | EXPECTED_OWN_FLAGS[objective] | (set() if documents else set(_TEXT_FLAGS))
        for flag in sorted(every - takes):
            yield objective, flag


@pytest.mark.parametrize(("objective", "flag"), list(_refused_cases()))
def test_a_flag_the_objective_does_not_take_is_refused_by_name_before_loading(workspace, objective, flag, capsys,
                                                                             monkeypatch):
    monkeypatch.chdir(workspace["root"])
    value = {**_FLAG_VALUES, **_TEXT_FLAGS}[flag]
    # a model that cannot load offline: the refusal must come before any loading
    argv = [*_objective_argv(objective), "--model", "no-such-org/no-such-model", f"--{flag}", value,
            *_one_step(objective)]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"--{flag} (a flag of " in errors[0] and "is not a flag of" in errors[0], errors


def test_every_objective_takes_exactly_its_flags():
    """The sections each objective reads hold exactly the flags above (beside the model's, run's and trainer's)."""
    from dataclasses import fields

    from st_infocse.cli.arguments import DataArguments, KeepArguments
    from st_infocse.cli.objectives import entry_of

    for objective, loss_flags in EXPECTED_LOSS_FLAGS.items():
        name, _, idc_loss = objective.partition(" ")
        sections = entry_of(name, idc_loss or "mnrl")
        loss = {item.name for item in fields(sections.loss_flags)} if sections.loss_flags is not None else set()
        assert loss == loss_flags or (objective == "idc" and loss == {"temperature"}), objective
        own = {item.name for dtype in sections.sections if dtype not in (DataArguments, KeepArguments)
               for item in fields(dtype)}
        assert own == EXPECTED_OWN_FLAGS[objective], objective


class _Built(Exception):
    """Raised in place of training, once the command has built its loss."""


@pytest.mark.parametrize("objective", [name for name, flags in EXPECTED_LOSS_FLAGS.items() if flags])
def test_every_loss_flag_given_reaches_the_loss_the_command_builds(workspace, objective, monkeypatch):
    """All of an objective's loss flags at once, each at a non-default value: the loss the command line builds (whose
    get_config_dict is what the model card shows) carries every one, and --aux_learning_rate reaches the trainer."""
    import st_infocse.cli.train as cli_train
    import st_infocse.mining as mining

    monkeypatch.chdir(workspace["root"])
    seen: dict = {}

    def capture(model, loss, dataset, training_args, *args, **kwargs):
        seen.update(loss=loss, training_args=training_args)
        raise _Built

    def capture_rounds(model, documents, factory, **kwargs):
        seen.update(loss=factory(model), training_args=kwargs["training_args"])
        raise _Built

    monkeypatch.setattr(cli_train, "run_trainer", capture)
    monkeypatch.setattr(mining, "train_idc_rounds", capture_rounds)
    flags = EXPECTED_LOSS_FLAGS[objective] - {"decoder"}  # --decoder loads a trained decoder: its own test below
    argv = [*_objective_argv(objective), "--model", str(workspace["model"]), *_one_step(objective)]
    for flag in sorted(flags):
        argv += [f"--{flag}", _FLAG_VALUES[flag]]
    takes_rate = "aux_learning_rate" in EXPECTED_OWN_FLAGS[objective]
    if takes_rate:
        argv += ["--aux_learning_rate", _FLAG_VALUES["aux_learning_rate"]]
    with pytest.raises(_Built):
        main(argv)
    loss = seen["loss"]
    if objective == "idc":  # MultipleNegativesRankingLoss: its scale is 1 / temperature
        assert loss.scale == pytest.approx(1 / float(_FLAG_VALUES["temperature"]))
        return
    config = loss.get_config_dict()
    for flag in flags:
        expected = {"true": True, "false": False}.get(_FLAG_VALUES[flag], _FLAG_VALUES[flag])
        got = config[flag]
        assert str(got) == str(expected) or got == pytest.approx(float(expected)), (flag, got, expected)
    rates = seen["training_args"]
    rates = rates.get("learning_rate_mapping") if isinstance(rates, dict) else rates.learning_rate_mapping
    assert rates == {r"^(?!model\.)": float(_FLAG_VALUES["aux_learning_rate"])}


def test_no_args_file_is_read(workspace, tmp_path, capsys, monkeypatch):
    """HfArgumentParser can read flags from ``<program>.args``; a stray such file must not inject flags."""
    import sys

    monkeypatch.setattr(sys, "argv", [str(tmp_path / "st-infocse")])
    (tmp_path / "st-infocse.args").write_text("--no_such_flag 1\n")  # read, it would be refused
    assert main(["evaluate", "--model", "./no-such-model", "--sts", "x"]) == 2
    assert "model not found: ./no-such-model" in capsys.readouterr().err


def test_distillation_trains_the_model_on_its_hybrid_teachers_scores(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    out = workspace["root"] / "distilled"
    argv = ["train", "--objective", "distill", "--docs", "docs.jsonl", "--model", str(workspace["model"]),
            "--distill_candidates", "3", "--hybrid_weight", "0.3", "--stsb_dev", "none", "--output_dir", str(out),
            *FAST]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "--objective distill: 12 held_out pseudo-queries over 12 documents; skipped documents: too_few_sentences=1" in printed
    assert "3 candidates each (kl); teacher: BM25 (bm25s; english stemmer, english stop words); hybrid: min-max sum, BM25 weight 0.3" in printed
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["objective"] == "distill" and summary["steps"] == 2
    assert "DistillKLDivLoss" in printed and (out / "model.safetensors").exists()
    capsys.readouterr()
    assert main([*argv[:-len(FAST)], "--bm25", "false", "--overwrite_output_dir", "true", *FAST]) == 2
    assert "--bm25 false leaves --objective distill no teacher" in capsys.readouterr().err


# ------------------------------------------------------------------------------ flags read from the library


def library_function(documents, *, count: int = 3, kind: Literal["near", "far"] = "far", cap: float | None = None):
    """A function of the library, whose signature and docstring the command line reads.

    Args:
        count: How many
            neighbours.
        kind: Which ones.
        cap: A floor on the score.
    """


def test_a_derived_section_takes_the_functions_types_defaults_choices_and_help():
    import typing
    from dataclasses import fields

    from st_infocse.cli import CLIError
    from st_infocse.cli.arguments import derived, flag

    source = f"{__name__}:library_function"
    section = derived("a section", {"count": source, "near_or_far": f"{source}.kind", "cap": (source, {"help": "own"}),
                                    "extra": (int, flag(7, "The command line's own."))},
                      {"count": ((1, None, True, False), "")}, name="ReadFlags")
    items = {item.name: item for item in fields(section)}
    hints = typing.get_type_hints(section)
    assert {name: item.default for name, item in items.items()} == {"count": 3, "near_or_far": "far", "cap": None,
                                                                      "extra": 7}
    assert hints["count"] is int and typing.get_args(hints["near_or_far"]) == ("near", "far")
    assert hints["cap"] == float | None
    assert {name: item.metadata["help"] for name, item in items.items()} == {
        "count": "How many neighbours.", "near_or_far": "Which ones.", "cap": "own", "extra": "The command line's own."}
    assert section(count=5).count == 5
    with pytest.raises(CLIError, match="--count must be at least 1, got 0"):
        section(count=0)
    with pytest.raises(TypeError, match="--documents: .* has no docstring entry"):  # a flag never goes without help
        derived("a section", {"documents": source})
    unset = derived("a loss", dict.fromkeys(("count", "kind"), source), unset=True)
    assert [item.default for item in fields(unset)] == [None, None] and unset.loss_defaults == {"count": "3",
                                                                                               "kind": "'far'"}


class LibrarySettings:
    """A class of the library whose arguments are documented on the class, not on its ``__init__``.

    Args:
        names: The layers adapted (95% of them).
        share: The share kept.
    """

    def __init__(self, names: tuple[str, ...] = ("query", "value"), share: float = 0.5) -> None:
        self.names, self.share = names, share

    def save(self, folder: str = "out") -> None:
        """Write the settings.

        Args:
            folder: where they go.
        """


def test_a_derived_section_reads_a_methods_argument_and_follows_a_base_sections_flags():
    from dataclasses import fields

    from st_infocse.cli.arguments import derived

    source = f"{__name__}:LibrarySettings"
    first = derived("first", {"share": source}, name="First")
    section = derived("a section", {"folder": f"{source}.save.folder"}, base=first, name="Second")
    assert [item.name for item in fields(section)] == ["share", "folder"]
    folder = fields(section)[1]
    assert folder.default == "out" and folder.metadata["help"] == "Where they go."  # a sentence in --help
    assert section(share=0.3).share == 0.3 and issubclass(section, first)


def test_a_derived_section_takes_sequences_the_class_docstring_and_the_command_lines_own_default():
    import typing
    from dataclasses import fields

    from transformers import HfArgumentParser

    from st_infocse.cli.arguments import derived

    source = f"{__name__}:LibrarySettings"
    section = derived("a section", {"names": source, "kept": (f"{source}.share", {"default": 1.0, "metavar": "SHARE"})},
                      name="ClassFlags")
    items = {item.name: item for item in fields(section)}
    assert typing.get_type_hints(section)["names"] == list[str]
    assert section().names == ["query", "value"] and section().names is not section().names  # a list per instance
    assert items["kept"].default == 1.0 and items["kept"].metadata["metavar"] == "SHARE"
    parser = HfArgumentParser([section])
    (parsed,) = parser.parse_args_into_dataclasses(["--names", "q", "k", "v", "--kept", "0.5"])
    assert parsed.names == ["q", "k", "v"] and parsed.kept == 0.5
    text = " ".join(parser.format_help().split())
    assert "The layers adapted (95% of them)." in text and "--kept SHARE" in text and "The share kept." in text


Reach = Literal["near", "far"]
WORDS_PER_SENTENCE = (3, 12)  # a module's literal, read by declared() from the source


class LibraryChild(LibrarySettings):
    def __init__(self, reach: Reach | None = "near", **kwargs) -> None:
        """A subclass that passes its base's arguments on.

        Args:
            reach: How far.
            **kwargs: any argument of :class:`LibrarySettings` (``names``, ``share``).
        """
        super().__init__(**kwargs)
        self.reach = reach


def test_a_derived_section_takes_a_base_classs_arguments_passed_on_and_follows_a_literal_alias():
    import typing
    from dataclasses import fields

    from st_infocse.cli.arguments import declared, derived

    section = derived("a section", dict.fromkeys(("reach", "share"), f"{__name__}:LibraryChild"), name="ChildFlags")
    items = {item.name: item for item in fields(section)}
    assert typing.get_args(typing.get_type_hints(section)["reach"]) == (typing.Literal["near", "far"], type(None))
    assert {name: (item.default, item.metadata["help"]) for name, item in items.items()} == {
        "reach": ("near", "How far."), "share": (0.5, "The share kept.")}  # **kwargs' own entry is no flag's help
    assert declared(__name__, "WORDS_PER_SENTENCE") == (3, 12)


def test_the_mining_idc_distillation_run_and_evaluation_flags_take_the_librarys_defaults():
    import inspect
    from dataclasses import fields

    from st_infocse.cli.arguments import (
        DataArguments,
        EvaluateArguments,
        KeepArguments,
        LexicalArguments,
        MineArguments,
        RunEvaluationArguments,
        SavedModelArguments,
    )
    from st_infocse.cli.objective_flags import AuxiliaryRateFlags, DistillFlags, IDCFlags, LoRAFlags
    from st_infocse.evaluation import evaluate_beir, save_report
    from st_infocse.evaluation.lexical import LexicalSettings
    from st_infocse.evaluation.run_evaluators import run_evaluation
    from st_infocse.mining import distillation_loss, mine_pairs, pseudo_queries, train_idc_rounds
    from st_infocse.training import StartEndCallback, load_model
    from st_infocse.training.builder import learning_rate_mapping
    from st_infocse.training.lora import LoRASettings
    from st_infocse.training.texts import load_texts

    def defaults(function, **renamed):
        return {flag: inspect.signature(function).parameters[name].default for flag, name in renamed.items()}

    def flags(section, *names):
        return {item.name: item.default for item in fields(section) if item.name in names}

    mined = defaults(mine_pairs, k="k", threshold="threshold", similarity="similarity", seed="seed",
                     max_pairs_per_cluster="max_pairs_per_cluster", batch_size="batch_size")
    assert flags(MineArguments, *mined) == mined
    rounds = {**defaults(train_idc_rounds, rounds="rounds", initial_annotation="initial_annotation",
                         idc_annotator="annotator"),
              **defaults(mine_pairs, idc_k="k", idc_similarity="similarity", idc_precision="precision")}
    assert flags(IDCFlags, *rounds) == rounds
    distill = {**defaults(pseudo_queries, distill_queries="query_kind", distill_max_queries="max_queries"),
               **defaults(distillation_loss, student_temperature="student_temperature",
                          teacher_temperature="teacher_temperature", distill_loss="loss")}
    assert flags(DistillFlags, *distill) == distill
    lexical = LexicalSettings()
    assert flags(LexicalArguments, "bm25_language", "bm25_stem", "bm25_stopwords", "hybrid_fusion", "hybrid_weight") == {
        "bm25_language": lexical.language, "bm25_stem": lexical.stem, "bm25_stopwords": lexical.stopwords,
        "hybrid_fusion": lexical.fusion, "hybrid_weight": lexical.weight}
    run = {**defaults(run_evaluation, eval_retrieval_split="split", eval_retrieval_max_corpus="max_corpus"),
           **defaults(StartEndCallback, keep_trained_if="keep_trained_if", confirm_share="confirm_share")}
    assert flags(RunEvaluationArguments, *run) == run
    # an argument without a default: the flag is unset (None), which learning_rate_mapping reads as "none of its own"
    (aux,) = fields(AuxiliaryRateFlags)
    assert aux.default is None and learning_rate_mapping(None, aux.default) == {}
    assert aux.metadata["help"].split(";")[0] in inspect.getdoc(learning_rate_mapping)
    kept = defaults(StartEndCallback, keep_start_if_better="keep_start_if_better")
    assert flags(KeepArguments, *kept) == kept
    texts = defaults(load_texts, text_column="text_column", max_train_samples="max_samples",
                     split_sentences="split_sentences")
    assert flags(DataArguments, *texts) == texts
    loaded = defaults(load_model, max_seq_length="max_seq_length", pooling="pooling")
    assert flags(SavedModelArguments, *loaded) == loaded
    evaluated = {**defaults(evaluate_beir, beir_source="source", split="split", batch_size="batch_size"),
                 **defaults(save_report, plots="plots")}
    assert flags(EvaluateArguments, *evaluated) == evaluated
    adapter = LoRASettings()
    assert {item.name: item.default_factory() if item.name == "lora_target_modules" else item.default
            for item in fields(LoRAFlags) if item.name != "lora_r"} == {
        "lora_alpha": adapter.alpha, "lora_dropout": adapter.dropout,
        "lora_target_modules": list(adapter.target_modules)}
