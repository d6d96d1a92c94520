"""``train --objective idc`` on a LoRA adapter, with the keep rule and the weight anchor, end to end on a tiny model."""

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer

from st_infocse.cli import main

from .test_cli import FAST, workspace  # noqa: F401 - the fixture of tiny files every command reads

pytest.importorskip("peft")

TEXTS = ["the cat sat on the road", "a king wrote a song", "two boys played a game"]


def _idc(workspace, out, *flags):  # noqa: F811 - the fixture imported above
    return ["train", "--objective", "idc", "--model", str(workspace["model"]), "--docs", str(workspace["docs"]),
            "--rounds", "1", "--stsb_dev", "none", "--eval_retrieval", str(workspace["beir"] / "scifact"),
            "--lora_r", "4", "--lora_target_modules", "query", "key", "value", "--learning_rate", "1e-2",
            "--output_dir", str(out), *FAST, *flags]


def _start(workspace):  # noqa: F811
    """The model as the command line loads it (a plain encoder, CLS-pooled)."""
    from st_infocse.training.builder import load_model

    return load_model(str(workspace["model"])).model


@pytest.fixture
def adapted_outputs(monkeypatch):
    """The model's embeddings of TEXTS just before the adapter is merged (the adapted model the rounds left)."""
    import st_infocse.training.lora as lora

    seen = {}
    merge = lora.merge_lora

    def spy(model):
        seen["lora"] = sorted(name for name, _ in model.named_parameters() if ".lora_" in name)
        seen["embeddings"] = model.encode(TEXTS, convert_to_tensor=True)
        return merge(model)

    monkeypatch.setattr(lora, "merge_lora", spy)
    return seen


def test_idc_trains_an_adapter_and_saves_it_merged(workspace, capsys, adapted_outputs):  # noqa: F811
    out = workspace["root"] / "idc-lora"
    assert main(_idc(workspace, out, "--keep_start_if_better", "false")) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "LoRA adapter            rank 4, alpha 16 on 12 layers (query, key, value)" in printed
    assert "; merged into the saved model" in printed and "saved                 the weights of round 1" in printed
    assert adapted_outputs["lora"]  # the rounds trained an adapter
    saved = SentenceTransformer(str(out), device="cpu")
    assert not any(".lora_" in name for name in saved.state_dict())
    assert [type(m).__name__ for m in saved] == ["Transformer", "Pooling"] and saved[1].pooling_mode == "cls"
    torch.testing.assert_close(saved.encode(TEXTS, convert_to_tensor=True), adapted_outputs["embeddings"],
                               rtol=1e-4, atol=1e-5)
    start = _start(workspace)
    assert not torch.allclose(start.encode(TEXTS, convert_to_tensor=True), adapted_outputs["embeddings"], atol=1e-4)
    record = json.loads((out / "run_summary.json").read_text())
    assert {key: record["settings"][key] for key in ("lora_r", "lora_alpha", "lora_target_modules")} == {
        "lora_r": 4, "lora_alpha": 16.0, "lora_target_modules": ["query", "key", "value"]}


def test_idc_whose_keep_rule_kept_the_start_says_the_adapter_is_not_saved(workspace, capsys):  # noqa: F811
    """Every query already ranks its document first: no round can gain reliably, and the start is saved."""
    out = workspace["root"] / "idc-lora-start"
    assert main(_idc(workspace, out, "--keep_trained_if", "reliable")) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "; not in the saved model, which is the starting model (see saved)" in printed
    assert "merged into the saved model" not in printed
    assert "the starting model: no round's gain was reliable" in printed
    saved = SentenceTransformer(str(out), device="cpu").encode(TEXTS, convert_to_tensor=True)
    start = _start(workspace)
    torch.testing.assert_close(saved, start.encode(TEXTS, convert_to_tensor=True), rtol=1e-5, atol=1e-6)


def test_idc_with_a_weight_anchor_and_the_infocse_loss_on_an_adapter(workspace, capsys, monkeypatch):  # noqa: F811
    """--weight_anchor reaches the rounds and is reported; --idc_loss infocse trains on the adapter too."""
    import st_infocse.mining as mining

    seen = {}
    real = mining.train_idc_rounds

    def spy(model, documents, factory, **kwargs):
        seen.update(kwargs)
        return real(model, documents, factory, **kwargs)

    monkeypatch.setattr(mining, "train_idc_rounds", spy)
    out = workspace["root"] / "idc-lora-infocse"
    argv = _idc(workspace, out, "--idc_loss", "infocse", "--weight_anchor", "0.5", "--keep_start_if_better", "false")
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert seen["weight_anchor"] == 0.5 and seen["keep_start_if_better"] is False
    assert "weight anchor           0.5 of each round's change kept (start + 0.5 x (trained - start))" in printed
    assert json.loads((out / "run_summary.json").read_text())["settings"]["weight_anchor"] == 0.5
    assert "; merged into the saved model" in printed


def test_idc_prints_one_line_per_round_with_its_time_and_verdict(workspace, capsys):  # noqa: F811
    out = workspace["root"] / "idc-rounds"
    argv = _idc(workspace, out, "--keep_start_if_better", "false")
    argv[argv.index("--rounds") + 1] = "2"
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    rounds = printed[printed.index("\nIDC rounds\n"):printed.index("IDC training done")]
    assert "round 1  idc: " in rounds and "mining " in rounds and "training " in rounds
    assert "from the start +0.00 (95% CI +0.00 to +0.00, p = 1.000, 5 queries): within noise (kept)" in rounds
    assert "Holm" not in rounds  # one round judged: nothing to adjust for
    record = json.loads((out / "run_summary.json").read_text())["rounds"]
    assert record["multiple_rounds"]["rule"] == "holm" and record["rounds"][0]["verdict"] == "within noise"


def test_an_annotator_that_cannot_load_is_refused_by_its_flag(workspace, capsys, tmp_path):  # noqa: F811
    """The rounds load the annotator and name their argument; the command line names the flag."""
    (tmp_path / "not-a-model").mkdir()
    command = _idc(workspace, workspace["root"] / "idc-annotator", "--idc_annotator", str(tmp_path / "not-a-model"))
    assert main(command) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("st-infocse train: error: --idc_annotator: Unrecognized model in ")


def test_idc_with_bf16_on_a_cpu_trains_every_round_in_bf16(workspace, capsys, monkeypatch):  # noqa: F811
    """--bf16 true on a CPU: the command adds use_cpu (transformers refuses bf16 without a GPU otherwise) and IDC's
    rounds, which take every flag set, receive both."""
    monkeypatch.setattr("st_infocse.training.precision.accelerator_type", lambda: "cpu")
    out = workspace["root"] / "idc-bf16"
    command = _idc(workspace, out, "--bf16", "true")
    at = command.index("--use_cpu")
    del command[at:at + 2]  # as a user types it
    assert main(command) == 0, capsys.readouterr().err
    record = json.loads((out / "run_summary.json").read_text())
    assert record["round_arguments"]["bf16"] is True and record["round_arguments"]["use_cpu"] is True
