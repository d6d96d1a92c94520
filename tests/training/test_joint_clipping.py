"""Joint gradient clipping: AuxiliaryLossTrainer clips the model's and the loss's own gradients under one norm."""

import logging

import pytest
import torch
from datasets import Dataset
from transformers import TrainerCallback

from st_infocse import losses
from st_infocse.training import AuxiliaryLossTrainer, AuxiliaryStateCallback, clip_gradients_jointly

from ..conftest import random_sentences

LR = 0.5
BLOW_UP = 1e4  # the head's gradient, multiplied by this, dominates the joint norm


def _grads(loss: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in loss.named_parameters() if p.grad is not None}


class GradientSnapshot(TrainerCallback):
    """Copies every trainable gradient at the first ``on_pre_optimizer_step``, after the trainer's clipping step."""

    def __init__(self, loss: torch.nn.Module) -> None:
        self.loss = loss
        self.grads: dict[str, torch.Tensor] = {}

    def on_pre_optimizer_step(self, args, state, control, **kwargs) -> None:
        if state.global_step == 0:
            self.grads = _grads(self.loss)


def _trainer(model, loss, dataset, tmp_path, steps=1, callbacks=None, clip_jointly=True, **kwargs):
    from sentence_transformers import SentenceTransformerTrainingArguments

    settings = dict(
        output_dir=str(tmp_path / "run"),
        max_steps=steps,
        per_device_train_batch_size=8,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        use_cpu=True,
    )
    settings.update(kwargs)
    args = SentenceTransformerTrainingArguments(**settings)
    return AuxiliaryLossTrainer(
        model=model, args=args, train_dataset=dataset, loss=loss, callbacks=callbacks, clip_jointly=clip_jointly
    )


def _one_step(make_model, tmp_path, clip_jointly: bool = True):
    model = make_model(seed=0)
    torch.manual_seed(0)
    loss = losses.SimCSELoss(model, projection="mlp")
    head = [p for n, p in loss.named_parameters() if n.startswith("projection.")]
    assert head
    for p in head:
        p.register_hook(lambda g: g * BLOW_UP)
    before = {n: p.detach().clone() for n, p in loss.named_parameters()}
    clipped = GradientSnapshot(loss)
    trainer = _trainer(
        model,
        loss,
        Dataset.from_dict({"text": random_sentences(8)}),
        tmp_path,
        callbacks=[clipped],
        clip_jointly=clip_jointly,
        max_grad_norm=1.0,
        optim="sgd",
        learning_rate=LR,
        lr_scheduler_type="constant",
    )
    raw: dict[str, torch.Tensor] = {}
    clip_step = trainer._clip_grad_norm

    def snapshot_then_clip(model):  # the gradients as the trainer's clipping step receives them
        raw.update(_grads(loss))
        return clip_step(model)

    trainer._clip_grad_norm = snapshot_then_clip
    trainer.train()
    # Plain SGD without momentum or decay: the gradient it applied is the parameter change over -lr.
    applied = {n: (before[n] - p.detach()) / LR for n, p in loss.named_parameters() if n in raw}
    return trainer, loss, raw, clipped.grads, applied


def _norm(grads: dict[str, torch.Tensor], prefix: str = "") -> float:
    return torch.linalg.vector_norm(torch.stack([g.norm() for n, g in grads.items() if n.startswith(prefix)])).item()


def test_model_and_loss_owned_gradients_are_clipped_under_one_norm(make_model, tmp_path):
    trainer, _, raw, clipped, applied = _one_step(make_model, tmp_path)
    total = _norm(raw)
    assert _norm(raw, "projection.") > 100
    assert _norm(raw, "model.") > 1.0  # above the bound: nothing clipped the model on its own first
    # What clip_grad_norm_ over everything at once would do.
    factor = 1.0 / (total + 1e-6)
    assert _norm(clipped) == pytest.approx(1.0, abs=1e-5)
    for name, grad in raw.items():
        torch.testing.assert_close(clipped[name], grad * factor, rtol=1e-5, atol=1e-9)
        torch.testing.assert_close(applied[name], grad * factor, rtol=1e-3, atol=2e-7)

    # The logged grad_norm is the joint norm before clipping, not the model's alone.
    logged = [e["grad_norm"] for e in trainer.state.log_history if "loss" in e]
    assert logged == [pytest.approx(total, rel=1e-5)]


def test_without_joint_clipping_the_trainer_clips_the_model_alone(make_model, tmp_path):
    trainer, _, raw, clipped, applied = _one_step(make_model, tmp_path, clip_jointly=False)
    assert _norm(raw, "model.") > 1.0 and _norm(raw, "projection.") > 100
    # The model's part is brought within the bound on its own; the head's is untouched.
    assert _norm(clipped, "model.") == pytest.approx(1.0, abs=1e-5)
    for name, grad in raw.items():
        if name.startswith("projection."):
            torch.testing.assert_close(clipped[name], grad)
    for name, grad in clipped.items():
        torch.testing.assert_close(applied[name], grad, rtol=1e-3, atol=2e-7)
    logged = [e["grad_norm"] for e in trainer.state.log_history if "loss" in e]
    assert logged[0] == pytest.approx(_norm(raw, "model."), rel=1e-5)  # the trainer's norm covers the model alone


def test_max_grad_norm_is_never_rewritten(make_model, tmp_path):
    seen: list[float] = []

    class Watch(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs) -> None:
            seen.append(args.max_grad_norm)

        def on_pre_optimizer_step(self, args, state, control, **kwargs) -> None:
            seen.append(args.max_grad_norm)

        def on_log(self, args, state, control, **kwargs) -> None:
            seen.append(args.max_grad_norm)

    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    trainer = _trainer(
        model, loss, Dataset.from_dict({"text": random_sentences(16)}), tmp_path, steps=2, callbacks=[Watch()],
        max_grad_norm=0.5,
    )
    trainer.train()
    assert trainer.args.max_grad_norm == 0.5
    assert len(seen) >= 6 and set(seen) == {0.5}
    assert model.model_card_data.all_hyperparameters["max_grad_norm"] == 0.5


def test_a_run_that_died_mid_step_keeps_its_max_grad_norm(make_model, tmp_path):
    class Die(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs) -> None:
            if state.global_step == 1:
                raise RuntimeError("out of memory")

    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    trainer = _trainer(
        model, loss, Dataset.from_dict({"text": random_sentences(16)}), tmp_path, steps=2, callbacks=[Die()],
        max_grad_norm=0.5,
    )
    with pytest.raises(RuntimeError, match="out of memory"):
        trainer.train()
    assert trainer.args.max_grad_norm == 0.5
    trainer.remove_callback(Die)
    trainer.train()
    assert trainer.args.max_grad_norm == 0.5
    assert model.model_card_data.all_hyperparameters["max_grad_norm"] == 0.5


def test_no_clipping_when_max_grad_norm_is_zero(make_model, tmp_path, monkeypatch):
    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    clipped = []  # the max_norm of every clipping call; the trainer's norm for its log passes inf (no clipping)
    real = torch.nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        if max_norm != float("inf"):
            clipped.append(max_norm)
        return real(parameters, max_norm, *args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    trainer = _trainer(model, loss, Dataset.from_dict({"text": random_sentences(8)}), tmp_path, steps=2, max_grad_norm=0)
    trainer.train()
    assert trainer.args.max_grad_norm == 0
    assert trainer.state.global_step == 2 and clipped == []  # two optimizer steps, no clipping anywhere
    # the same spy sees the joint clipping when it is on
    model = make_model()
    joint = _trainer(model, losses.SimCSELoss(model, projection="mlp"), Dataset.from_dict({"text": random_sentences(8)}),
                     tmp_path, max_grad_norm=1.0)
    joint.train()
    assert joint.clip_jointly and clipped and set(clipped) == {1.0}


@pytest.mark.parametrize("engine", ["is_fsdp_enabled", "is_deepspeed_enabled"])
def test_sharding_engines_keep_their_own_clipping(make_model, tmp_path, engine, caplog):
    model = make_model()
    trainer = _trainer(model, losses.SimCSELoss(model), Dataset.from_dict({"text": random_sentences(8)}), tmp_path,
                       max_grad_norm=1.0)
    setattr(trainer, engine, True)
    with caplog.at_level(logging.WARNING, logger="st_infocse"):
        assert trainer._joint_clipping_possible() is False
    assert trainer.args.max_grad_norm == 1.0
    assert "joint clipping" in caplog.text and "is off" in caplog.text


def test_clip_gradients_jointly_counts_a_tied_parameter_once():
    shared = torch.nn.Linear(2, 2, bias=False)
    loss = torch.nn.Module()
    loss.model = torch.nn.Sequential(shared)
    loss.head = torch.nn.Sequential(torch.nn.Linear(2, 1, bias=False))
    loss.tied = shared  # the same weight reachable twice
    for p, value in ((shared.weight, 3.0), (loss.head[0].weight, 4.0)):
        p.grad = torch.full_like(p, value)
    total = clip_gradients_jointly(loss, 1.0)
    expected = (4 * 3.0**2 + 2 * 4.0**2) ** 0.5
    assert total.item() == pytest.approx(expected)
    assert torch.allclose(shared.weight.grad, torch.full((2, 2), 3.0 / (expected + 1e-6)))


def test_gradients_are_unscaled_once_before_the_joint_clipping(make_model, tmp_path, monkeypatch):
    # Under fp16 the accelerator's unscale must come first, and once: a second unscale raises in the GradScaler.
    import st_infocse.training.trainer as trainer_module

    events: list[str] = []
    real_clip = trainer_module.clip_gradients_jointly
    monkeypatch.setattr(trainer_module, "clip_gradients_jointly",
                        lambda loss, max_norm: events.append("clip") or real_clip(loss, max_norm))
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5, aux_gradient="full")  # two norms: still one unscale
    trainer = _trainer(model, loss, Dataset.from_dict({"text": random_sentences(16)}), tmp_path, steps=2,
                       max_grad_norm=1.0)
    real_unscale = trainer.accelerator.unscale_gradients
    monkeypatch.setattr(trainer.accelerator, "unscale_gradients",
                        lambda *a, **k: events.append("unscale") or real_unscale(*a, **k))
    trainer.train()
    assert events == ["unscale", "clip"] * 2


def test_auxiliary_gradients_are_averaged_once_per_step_before_clipping(make_model, tmp_path, monkeypatch):
    import st_infocse.training.callbacks as callbacks

    events: list[str] = []
    monkeypatch.setattr(callbacks, "average_auxiliary_gradients", lambda loss: events.append("average"))
    import st_infocse.training.trainer as trainer_module

    real_clip = trainer_module.clip_gradients_jointly
    monkeypatch.setattr(trainer_module, "clip_gradients_jointly",
                        lambda loss, max_norm: events.append("clip") or real_clip(loss, max_norm))
    model = make_model()
    trainer = _trainer(model, losses.SimCSELoss(model), Dataset.from_dict({"text": random_sentences(16)}),
                       tmp_path, steps=2, max_grad_norm=1.0)
    trainer.train()
    assert events == ["average", "clip"] * 2  # not averaged again at on_pre_optimizer_step
    events.clear()
    model = make_model()
    trainer = _trainer(model, losses.SimCSELoss(model), Dataset.from_dict({"text": random_sentences(16)}),
                       tmp_path, steps=2, max_grad_norm=0)
    trainer.train()
    assert events == ["average"] * 2  # without clipping the callback still averages, once per step


def test_a_plain_trainer_with_the_callback_says_the_loss_is_not_clipped(make_model, run_trainer, caplog):
    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    with caplog.at_level(logging.WARNING, logger="st_infocse"):
        run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(8)}), steps=1,
                    callbacks=[AuxiliaryStateCallback(loss)], max_grad_norm=1.0)
    assert "clips the model's gradients alone" in caplog.text and "AuxiliaryLossTrainer" in caplog.text


def test_cli_training_clips_jointly_and_says_so(make_model, tmp_path, caplog):
    from sentence_transformers import SentenceTransformerTrainingArguments

    from st_infocse.cli.train import run_trainer

    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=8, report_to="none", use_cpu=True
    )
    with caplog.at_level(logging.INFO, logger="st_infocse"):
        trainer = run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(8)}), args, None)
    assert "over the model and the loss's own modules together" in caplog.text
    assert "clips the model's gradients alone" not in caplog.text
    assert isinstance(trainer, AuxiliaryLossTrainer) and trainer.clip_jointly and trainer.args.max_grad_norm == 1.0
    # First in line, so reporting integrations see the metrics it adds.
    assert isinstance(trainer.callback_handler.callbacks[0], AuxiliaryStateCallback)
