import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.cli import main
from st_infocse.training import AuxiliaryStateCallback
from st_infocse.training.texts import clean_texts, read_text_file

from ..conftest import random_sentences


def test_bad_rows_are_dropped_and_counted():
    data = Dataset.from_dict({"text": ["a cat sat", None, "   ", "", "a cat sat", "the dog ran"], "id": list(range(6))})
    cleaned, report = clean_texts(data, deduplicate=True)
    assert cleaned["text"] == ["a cat sat", "the dog ran"]
    assert (report.total, report.kept) == (6, 2)
    assert report.dropped == {"missing": 1, "blank": 2, "duplicate": 1}
    assert "2 of 6 texts kept" in str(report)
    with pytest.raises(ValueError, match=r"no column 'sentence' in the dataset \(columns: \['text', 'id'\]\)"):
        clean_texts(data, column="sentence")


def test_non_utf8_file_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("first line\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt, line 2: not UTF-8"):
        read_text_file(path)


def test_cli_reports_non_utf8_training_file(tmp_path, tiny_bert_dir, capsys):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\n\xff\xfe broken\n")
    code = main(
        [
            "train",
            "--model",
            str(tiny_bert_dir),
            "--train_data",
            str(path),
            "--stsb_dev",
            "none",
            "--output_dir",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2
    assert "bad.txt, line 2: not UTF-8" in capsys.readouterr().err


def test_very_long_texts_are_truncated_not_fatal(make_model):
    model = make_model()
    texts = [" ".join(random_sentences(300, seed=3)), *random_sentences(7)]
    features = model.preprocess(texts)
    assert features["input_ids"].shape[1] == 32  # max_seq_length
    out = losses.InfoCSELoss(model, lambda_=0.1)([features])
    assert all(torch.isfinite(v) for v in out.values())


def test_nan_loss_is_reported_with_the_step(make_model, run_trainer):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    with torch.no_grad():
        model[0].auto_model.embeddings.LayerNorm.weight.fill_(float("nan"))
    with pytest.raises(
        losses.NonFiniteLossError, match=r"InfoCSELoss: non-finite loss at training step 1 \(contrastive=nan"
    ):
        run_trainer(
            model, loss, Dataset.from_dict({"text": random_sentences(16)}), callbacks=[AuxiliaryStateCallback(loss)]
        )


def test_same_seed_same_loss_curve(make_model, run_trainer):
    curves = []
    for _ in range(2):
        model = make_model(seed=0)
        torch.manual_seed(0)
        loss = losses.InfoCSELoss(model, lambda_=0.1, fusion_init="fresh")
        trainer = run_trainer(
            model,
            loss,
            Dataset.from_dict({"text": random_sentences(32)}),
            steps=3,
            callbacks=[AuxiliaryStateCallback(loss)],
        )
        curves.append([(e["loss"], e["cmlm_loss"]) for e in trainer.state.log_history if "loss" in e])
    assert len(curves[0]) == 3
    assert curves[0] == curves[1]


@pytest.mark.parametrize("name", ["infocse", "cmlm-cse", "informin", "stage1"])
def test_bf16_autocast_trains_on_cpu(make_model, run_trainer, name):
    model = make_model()
    loss = {
        "infocse": lambda: losses.InfoCSELoss(model, lambda_=0.1, projection="bn-mlp", informin_weight=0.5),
        "cmlm-cse": lambda: losses.CMLMCSELoss(model),
        "informin": lambda: losses.InforMinReconstructionLoss(model, mlm_weight=0.1),
        "stage1": lambda: losses.AuxiliaryPretrainingLoss(model),
    }[name]()
    trainer = run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(16)}), steps=2, bf16=True)
    history = [e for e in trainer.state.log_history if "loss" in e]
    assert len(history) == 2 and all(e["loss"] == e["loss"] for e in history)  # no NaN
