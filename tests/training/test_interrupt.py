"""Ctrl-C while a trainer built by :func:`st_infocse.training.build_trainer` trains under
:func:`st_infocse.training.interruptible`."""

import os
import signal

import pytest
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from transformers import TrainerCallback

from st_infocse.training import InterruptCallback, Interrupted, build_trainer, interruptible

from ..conftest import random_sentences


class _Press(TrainerCallback):
    """Sends ``times`` SIGINT at the end of step ``at``."""

    def __init__(self, at: int, times: int) -> None:
        self.at, self.times = at, times

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            for _ in range(self.times):
                os.kill(os.getpid(), signal.SIGINT)


def _trainer(make_model, tmp_path, press, **settings):
    model = make_model()
    texts = random_sentences(16)
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path / "run"), max_steps=4, save_strategy="no",
                                                per_device_train_batch_size=4, report_to="none", use_cpu=True,
                                                disable_tqdm=True, **settings)
    dataset = Dataset.from_dict({"anchor": texts, "positive": texts[::-1]})
    return build_trainer(model, MultipleNegativesRankingLoss(model), dataset, args, callbacks=[press])


@pytest.mark.parametrize("times", [1, 2])
def test_ctrl_c_saves_a_checkpoint_once_and_none_when_pressed_twice(make_model, tmp_path, times):
    trainer = _trainer(make_model, tmp_path, _Press(at=2, times=times))
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted) as stopped, interruptible(trainer):
        trainer.train()
    out = tmp_path / "run"
    assert (stopped.value.step, stopped.value.max_steps) == (2, 4)
    if times == 1:
        assert stopped.value.checkpoint == out / "checkpoint-2" and (out / "checkpoint-2" / "optimizer.pt").is_file()
        assert str(stopped.value).endswith(f"resume with --resume_from_checkpoint {out / 'checkpoint-2'}")
    else:
        assert stopped.value.checkpoint is None and not list(out.glob("checkpoint-*"))
        assert "no checkpoint saved (second Ctrl-C)" in str(stopped.value)
    assert signal.getsignal(signal.SIGINT) is before  # the handler and the trainer's callbacks are put back
    assert not any(isinstance(c, InterruptCallback) for c in trainer.callback_handler.callbacks)


class _Terminate(TrainerCallback):
    """What transformers' SIGTERM handler does once its grace period has passed: asks its JIT callback to save."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 2:
            from transformers.trainer_jit_checkpoint import JITCheckpointCallback

            jit = next(c for c in self.trainer.callback_handler.callbacks if isinstance(c, JITCheckpointCallback))
            jit.jit_manager.is_checkpoint_requested = True


def test_a_sigterm_checkpoint_of_transformers_is_not_taken_for_a_finished_run(make_model, tmp_path):
    terminate = _Terminate()
    trainer = terminate.trainer = _trainer(make_model, tmp_path, terminate, enable_jit_checkpoint=True)
    with pytest.raises(Interrupted) as stopped, interruptible(trainer):
        trainer.train()  # returns normally: transformers saved its checkpoint and stopped
    assert stopped.value.step < 4 and stopped.value.checkpoint == tmp_path / "run" / "checkpoint-2"
    assert (stopped.value.checkpoint / "optimizer.pt").is_file() and "resume with" in str(stopped.value)
