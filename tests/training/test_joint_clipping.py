import logging
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset
from transformers import TrainerCallback, TrainerState

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback, clip_gradients_jointly
from st_infocse.training.callbacks import _unscale_once

from ..conftest import random_sentences

LR = 0.5
BLOW_UP = 1e4  # the head's gradient, multiplied by this, dominates the joint norm


class GradientSnapshot(TrainerCallback):
    """Copies every trainable gradient at ``on_pre_optimizer_step``; where it sits in the list decides what it sees."""

    def __init__(self, loss: torch.nn.Module) -> None:
        self.loss = loss
        self.grads: dict[str, torch.Tensor] = {}

    def on_pre_optimizer_step(self, args, state, control, **kwargs) -> None:
        if state.global_step == 0:
            self.grads = {n: p.grad.clone() for n, p in self.loss.named_parameters() if p.grad is not None}


def _one_step(make_model, run_trainer, clip_jointly: bool = True, **kwargs):
    model = make_model(seed=0)
    torch.manual_seed(0)
    loss = losses.SimCSELoss(model, projection="mlp")
    head = [p for n, p in loss.named_parameters() if n.startswith("projection.")]
    assert head
    for p in head:
        p.register_hook(lambda g: g * BLOW_UP)
    before = {n: p.detach().clone() for n, p in loss.named_parameters()}
    raw, clipped = GradientSnapshot(loss), GradientSnapshot(loss)
    callback = AuxiliaryStateCallback(loss, clip_jointly=clip_jointly)
    trainer = run_trainer(
        model,
        loss,
        Dataset.from_dict({"text": random_sentences(8)}),
        steps=1,
        callbacks=[raw, callback, clipped],
        max_grad_norm=1.0,
        optim="sgd",
        learning_rate=LR,
        lr_scheduler_type="constant",
        **kwargs,
    )
    # Plain SGD without momentum or decay: the gradient it applied is the parameter change over -lr.
    applied = {n: (before[n] - p.detach()) / LR for n, p in loss.named_parameters() if n in raw.grads}
    return trainer, loss, raw.grads, clipped.grads, applied


def _norm(grads: dict[str, torch.Tensor], prefix: str = "") -> float:
    return torch.linalg.vector_norm(torch.stack([g.norm() for n, g in grads.items() if n.startswith(prefix)])).item()


def test_model_and_loss_owned_gradients_are_clipped_under_one_norm(make_model, run_trainer):
    trainer, _, raw, clipped, applied = _one_step(make_model, run_trainer)
    total = _norm(raw)
    assert _norm(raw, "projection.") > 100
    assert _norm(raw, "model.") > 1.0  # above the bound: the trainer did not clip the model on its own first
    # What clip_grad_norm_ over everything at once would do.
    factor = 1.0 / (total + 1e-6)
    assert _norm(clipped) == pytest.approx(1.0, abs=1e-5)
    for name, grad in raw.items():
        torch.testing.assert_close(clipped[name], grad * factor, rtol=1e-5, atol=1e-9)
        torch.testing.assert_close(applied[name], grad * factor, rtol=1e-3, atol=2e-7)

    # The logged grad_norm is the joint norm before clipping, not the model's alone.
    logged = [e["grad_norm"] for e in trainer.state.log_history if "loss" in e]
    assert logged == [pytest.approx(total, rel=1e-5)]


def test_without_joint_clipping_the_trainer_clips_the_model_alone(make_model, run_trainer):
    trainer, _, raw, clipped, applied = _one_step(make_model, run_trainer, clip_jointly=False)
    # The trainer clipped before any callback ran: the model's part is within the bound, the head's is untouched.
    assert _norm(raw, "model.") <= 1.0 + 1e-5
    assert _norm(raw, "projection.") > 100
    for name, grad in raw.items():
        torch.testing.assert_close(clipped[name], grad)
        torch.testing.assert_close(applied[name], grad, rtol=1e-3, atol=2e-7)
    logged = [e["grad_norm"] for e in trainer.state.log_history if "loss" in e]
    assert logged[0] < 100  # the trainer's norm covers the model alone


def test_max_grad_norm_keeps_its_value_outside_the_step(make_model, run_trainer):
    seen: list[float] = []

    class Watch(TrainerCallback):
        def on_log(self, args, state, control, **kwargs) -> None:
            seen.append(args.max_grad_norm)

    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    trainer = run_trainer(
        model,
        loss,
        Dataset.from_dict({"text": random_sentences(16)}),
        steps=2,
        callbacks=[AuxiliaryStateCallback(loss), Watch()],
        max_grad_norm=0.5,
    )
    assert trainer.args.max_grad_norm == 0.5
    assert seen and set(seen) == {0.5}
    assert model.model_card_data.all_hyperparameters["max_grad_norm"] == 0.5


def test_a_run_that_died_mid_step_gets_its_max_grad_norm_back(make_model, tmp_path):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    class Die(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs) -> None:
            if state.global_step == 1:
                raise RuntimeError("out of memory")

    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=8,
        max_grad_norm=0.5,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"text": random_sentences(16)}),
        loss=loss,
        callbacks=[AuxiliaryStateCallback(loss), Die()],
    )
    with pytest.raises(RuntimeError, match="out of memory"):
        trainer.train()
    assert args.max_grad_norm == 0.0  # no callback hook runs when a step raises
    # The exception left the trainer's clipping switched off; the next train() with the same callback repairs it.
    trainer.remove_callback(Die)
    trainer.train()
    assert args.max_grad_norm == 0.5
    assert model.model_card_data.all_hyperparameters["max_grad_norm"] == 0.5


def test_no_clipping_when_max_grad_norm_is_zero(make_model, run_trainer, monkeypatch):
    model = make_model()
    loss = losses.SimCSELoss(model, projection="mlp")
    callback = AuxiliaryStateCallback(loss)
    clipped = []  # the max_norm of every clipping call; the trainer's norm for its log passes inf (no clipping)
    real = torch.nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        if max_norm != float("inf"):
            clipped.append(max_norm)
        return real(parameters, max_norm, *args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    trainer = run_trainer(
        model, loss, Dataset.from_dict({"text": random_sentences(8)}), steps=2, callbacks=[callback], max_grad_norm=0
    )
    assert callback.max_grad_norm is None and trainer.args.max_grad_norm == 0
    assert trainer.state.global_step == 2 and clipped == []  # two optimizer steps, no clipping anywhere
    # the same spy sees the joint clipping when it is on
    run_trainer(make_model(), losses.SimCSELoss(make_model(), projection="mlp"),
                Dataset.from_dict({"text": random_sentences(8)}), steps=1, max_grad_norm=1.0)
    assert clipped and set(clipped) == {1.0}


@pytest.mark.parametrize("setting", [{"fsdp": "full_shard"}, {"deepspeed": {"zero_optimization": {}}}])
def test_sharding_engines_keep_their_own_clipping(make_model, setting, caplog):
    callback = AuxiliaryStateCallback(losses.SimCSELoss(make_model()))
    args = SimpleNamespace(**{"max_grad_norm": 1.0, "deepspeed": None, "fsdp": None, **setting})
    with caplog.at_level(logging.WARNING, logger="st_infocse"):
        callback.on_train_begin(args, TrainerState(), None)
    assert callback.max_grad_norm is None and args.max_grad_norm == 1.0
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


def test_fp16_gradients_are_unscaled_once_before_clipping():
    from accelerate.optimizer import AcceleratedOptimizer

    param = torch.nn.Parameter(torch.zeros(3))
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    optimizer = AcceleratedOptimizer(torch.optim.SGD([param], lr=1.0), device_placement=False, scaler=scaler)
    scaler.scale((param * torch.tensor([1.0, 2.0, 2.0])).sum()).backward()
    assert param.grad[0].item() == 1024.0
    _unscale_once(optimizer)
    _unscale_once(optimizer)  # the trainer's norm computation may have unscaled already: no second division
    torch.testing.assert_close(param.grad, torch.tensor([1.0, 2.0, 2.0]))
    torch.nn.utils.clip_grad_norm_([param], 1.5)
    optimizer.step()  # the scaler must not unscale again
    torch.testing.assert_close(param.detach(), -torch.tensor([1.0, 2.0, 2.0]) * 1.5 / (3.0 + 1e-6))


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
    # First in line, so reporting integrations see the joint grad_norm.
    first = trainer.callback_handler.callbacks[0]
    assert isinstance(first, AuxiliaryStateCallback) and first.max_grad_norm == 1.0
