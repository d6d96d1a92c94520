"""LoRA adapters (training.lora): every loss trains the adapter alone, the weight anchor scales it, the start -> end
copy holds it alone, and the saved model is the user's modules with the adapter merged in."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback, StartingWeights, WeightAnchorCallback, toward_start
from st_infocse.training.lora import ADAPTER_FILE, LoRASettings, add_lora, has_lora, lora_parameters, merge_lora

pytest.importorskip("peft")  # the lora extra; installed with the dev extra, so CI runs these

LOSSES = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1),
    "cmlm-cse": lambda model: losses.CMLMCSELoss(model),
    "informin": lambda model: losses.InforMinReconstructionLoss(model),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_every_loss_trains_the_adapter_alone(make_model, sentences, run_trainer, name):
    model = make_model()
    base = {k: v.detach().clone() for k, v in model.state_dict().items()}
    adapted = add_lora(model, LoRASettings(r=4, alpha=8))
    assert adapted and all(".attention.self." in layer for layer in adapted)
    loss = LOSSES[name](model)
    if name in ("infocse", "cmlm-cse"):  # the frozen lower copy holds the base weights, not base + adapter
        copied = loss.decoder.lower.encoder.layer[0].attention.self.query.weight
        key = next(k for k in base if k.endswith("encoder.layer.0.attention.self.query.weight"))
        torch.testing.assert_close(copied, base[key])
    own = {k: v.detach().clone() for k, v in loss.named_parameters() if not k.startswith("model.") and v.requires_grad}
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    run_trainer(model, loss, Dataset.from_dict({"text": sentences[:16]}), steps=2,
                callbacks=[AuxiliaryStateCallback(loss)])
    changed = {k for k, v in model.named_parameters() if not torch.equal(before[k], v)}
    assert changed and all(".lora_A." in k or ".lora_B." in k for k in changed)
    assert any(not torch.equal(own[k], v) for k, v in loss.named_parameters() if k in own) == bool(own)


def test_the_merged_model_is_the_users_modules_with_the_adapted_weights(make_model, sentences, tmp_path):
    model = make_model()
    names = set(model.state_dict())
    add_lora(model, LoRASettings(r=4))
    with torch.no_grad():
        for _, parameter in lora_parameters(model):
            parameter.normal_(std=0.1)  # an adapter that has learnt something
    model.eval()
    adapted = model.encode(sentences[:4], convert_to_tensor=True)
    assert merge_lora(model) == 4 * 3 and not has_lora(model)  # four layers, query/key/value
    assert set(model.state_dict()) == names and all(p.requires_grad for p in model.parameters())
    torch.testing.assert_close(model.encode(sentences[:4], convert_to_tensor=True), adapted, atol=1e-5, rtol=1e-4)
    model.save(str(tmp_path / "saved"))
    loaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    torch.testing.assert_close(loaded.encode(sentences[:4], convert_to_tensor=True), adapted, atol=1e-5, rtol=1e-4)


def test_the_weight_anchor_scales_the_adapters_change_exactly(make_model, sentences, run_trainer):
    model = make_model()
    add_lora(model, LoRASettings(r=4))
    start = StartingWeights()
    start.acquire(model)
    assert set(start.weights) == {k for k, _ in lora_parameters(model)}  # the start copy: the adapter alone
    with torch.no_grad():
        for _, parameter in lora_parameters(model):
            parameter.add_(torch.randn_like(parameter) * 0.1)
    trained = {k: v.detach().clone() for k, v in model.state_dict().items() if k in start.weights}
    anchored = toward_start(start.weights, trained, 0.25)
    for key, value in anchored.items():
        expected = trained[key] if ".lora_A." in key else start.weights[key] + 0.25 * (trained[key] - start.weights[key])
        torch.testing.assert_close(value, expected)
    # B starts at zero, so B @ A becomes a quarter of the trained change: the merged delta scales exactly
    copy = make_model()
    add_lora(copy, LoRASettings(r=4))
    copy.load_state_dict(model.state_dict())
    model.load_state_dict(anchored, strict=False)
    with torch.no_grad():  # the adapter's change B @ A with B at a quarter of its trained value
        for name, parameter in lora_parameters(copy):
            if ".lora_B." in name:
                parameter.mul_(0.25)
    for (name, a), (_, b) in zip(lora_parameters(model), lora_parameters(copy), strict=True):
        torch.testing.assert_close(a, b, msg=name)


def test_a_run_with_the_anchor_callback_moves_only_the_adapter(make_model, sentences, run_trainer):
    model = make_model()
    add_lora(model, LoRASettings(r=4))
    frozen = {k: v.detach().clone() for k, v in model.named_parameters() if not v.requires_grad}
    loss = losses.SimCSELoss(model)
    run_trainer(model, loss, Dataset.from_dict({"text": sentences[:16]}), steps=2,
                callbacks=[AuxiliaryStateCallback(loss), WeightAnchorCallback(0.5)])
    assert all(torch.equal(frozen[k], v) for k, v in model.named_parameters() if k in frozen)


def test_an_adapter_that_matches_no_layer_is_refused_naming_the_layers(make_model):
    model = make_model()
    with pytest.raises(ValueError, match=r"no linear layer of the encoder is named q, v; its linear layers are named"):
        add_lora(model, LoRASettings(target_modules=("q", "v")))
    add_lora(model)
    with pytest.raises(ValueError, match="already carries a LoRA adapter"):
        add_lora(model)
    with pytest.raises(ValueError, match="rank must be at least 1"):
        LoRASettings(r=0)


def test_the_description_counts_the_adapted_layers_and_the_weights_that_train(make_model):
    model = make_model()  # 4 layers of width 32: each adapted projection gains a 4 x 32 A and a 32 x 4 B
    before = sum(p.numel() for p in model.parameters())
    settings = LoRASettings(r=4, alpha=8, target_modules=("query", "value"))
    add_lora(model, settings)
    trained = 4 * 2 * (4 * 32 + 32 * 4)
    assert settings.describe(model) == (f"rank 4, alpha 8 on 8 layers (query, value); {trained:,} of "
                                        f"{before + trained:,} weights train")


def _train(model, dataset, out, steps, resume=None):
    from sentence_transformers import SentenceTransformerTrainingArguments

    from st_infocse.training import AuxiliaryLossTrainer

    args = SentenceTransformerTrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=8,
                                                learning_rate=1e-2, report_to="none", save_strategy="steps",
                                                save_steps=2, seed=0, disable_tqdm=True, use_cpu=True)
    trainer = AuxiliaryLossTrainer(model=model, args=args, train_dataset=dataset, loss=losses.SimCSELoss(model))
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def test_a_checkpoint_loads_as_the_merged_model_at_its_step_and_resumes(make_model, sentences, tmp_path):
    import copy

    dataset = Dataset.from_dict({"text": sentences[:32]})
    model = make_model()
    add_lora(model, LoRASettings(r=4))
    _train(model, dataset, tmp_path / "two", steps=2)
    merged = copy.deepcopy(model)
    merge_lora(merged)
    merged.eval()
    loaded = SentenceTransformer(str(tmp_path / "two" / "checkpoint-2"), device="cpu")
    expected = merged.encode(sentences[:4], convert_to_tensor=True)
    assert not torch.allclose(make_model().encode(sentences[:4], convert_to_tensor=True), expected, atol=1e-4)
    torch.testing.assert_close(loaded.encode(sentences[:4], convert_to_tensor=True), expected, atol=1e-5, rtol=1e-4)
    # resuming reads the checkpoint's adapter back (a run whose last step is the checkpoint's trains nothing more),
    # and a resumed run goes on from there
    resumed = make_model()
    add_lora(resumed, LoRASettings(r=4))
    _train(resumed, dataset, tmp_path / "two", steps=2, resume=str(tmp_path / "two" / "checkpoint-2"))
    for (name, a), (_, b) in zip(lora_parameters(model), lora_parameters(resumed), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    longer = _train(resumed, dataset, tmp_path / "two", steps=4, resume=str(tmp_path / "two" / "checkpoint-2"))
    assert longer.state.global_step == 4 and (tmp_path / "two" / "checkpoint-4" / ADAPTER_FILE).is_file()

def test_resuming_from_a_checkpoint_without_an_adapter_is_refused(make_model, sentences, tmp_path):
    from st_infocse.training.lora import load_adapter_checkpoint

    model = make_model()
    add_lora(model, LoRASettings(r=4))
    with pytest.raises(ValueError, match="holds no LoRA adapter"):
        load_adapter_checkpoint(model, tmp_path)


def test_settings_that_adapt_nothing_are_refused():
    with pytest.raises(ValueError, match="needs at least one target module"):
        LoRASettings(target_modules=())
