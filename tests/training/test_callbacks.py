import shutil

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.training import AUXILIARY_STATE_NAME, AuxiliaryStateCallback, auxiliary_state_dict, load_auxiliary_state

from ..conftest import random_sentences


def _train(make_model, run_trainer, output_dir, steps, resume=None, **kwargs):
    model = make_model(seed=0)
    loss = losses.InfoCSELoss(model, lambda_=0.1, projection="bn-mlp")
    trainer = run_trainer(
        model,
        loss,
        Dataset.from_dict({"text": random_sentences(64)}),
        steps=steps,
        callbacks=[AuxiliaryStateCallback(loss)],
        resume=resume,
        output_dir=str(output_dir),
        save_strategy="steps",
        save_steps=2,
        **kwargs,
    )
    return model, loss, trainer


def test_checkpoint_carries_the_auxiliary_state(make_model, run_trainer, tmp_path):
    _, loss, _ = _train(make_model, run_trainer, tmp_path / "out", steps=2)
    assert (tmp_path / "out" / "checkpoint-2" / AUXILIARY_STATE_NAME).is_file()
    state = auxiliary_state_dict(loss)
    assert any(k.startswith("cmlm.decoder.fusion") for k in state)
    assert any("running_mean" in k for k in state)  # BatchNorm statistics of the projection head
    assert not any(k.startswith("model.") or ".model." in k for k in state)


def test_resume_restores_auxiliary_state_and_matches_an_uninterrupted_run(make_model, run_trainer, tmp_path):
    _, full_loss, _ = _train(make_model, run_trainer, tmp_path / "full", steps=4)
    saved_at_2 = tmp_path / "full" / "checkpoint-2"

    # A run killed after its step-2 checkpoint left exactly that folder behind; a fresh process (new model, new
    # loss with a freshly initialised decoder) resumes from it.
    shutil.copytree(saved_at_2, tmp_path / "killed" / "checkpoint-2")
    model, loss, trainer = _train(make_model, run_trainer, tmp_path / "killed", steps=4, resume=True)
    assert trainer.state.global_step == 4
    full_state, resumed_state = auxiliary_state_dict(full_loss), auxiliary_state_dict(loss)
    for key, value in full_state.items():
        assert torch.allclose(value.float(), resumed_state[key].float(), atol=1e-6), key
    for (key, a), b in zip(full_loss.model.state_dict().items(), model.state_dict().values(), strict=True):
        assert torch.allclose(a.float(), b.float(), atol=1e-6), key

    # Loading restores the saved tensors exactly.
    load_auxiliary_state(loss, saved_at_2)
    from safetensors.torch import load_file

    on_disk = load_file(str(saved_at_2 / AUXILIARY_STATE_NAME))
    for key, value in auxiliary_state_dict(loss).items():
        assert torch.equal(value, on_disk[key])


def test_resume_without_auxiliary_state_is_a_clear_error(make_model, run_trainer, tmp_path):
    _train(make_model, run_trainer, tmp_path / "out", steps=2)
    (tmp_path / "out" / "checkpoint-2" / AUXILIARY_STATE_NAME).unlink()
    with pytest.raises(FileNotFoundError, match="No auxiliary state"):
        _train(make_model, run_trainer, tmp_path / "out", steps=3, resume=True)


def test_state_from_other_settings_is_refused(make_model, tmp_path):
    from st_infocse.training import save_auxiliary_state

    model = make_model()
    save_auxiliary_state(losses.InfoCSELoss(model, n=1), tmp_path)
    with pytest.raises(ValueError, match="does not fit this loss"):
        load_auxiliary_state(losses.InfoCSELoss(model, n=2), tmp_path)
