"""Ctrl-C during training: the first one saves a resumable checkpoint at the step reached and ends the run, skipping
what follows training; a second one ends it at once, without saving. transformers' own trainer checkpoints on SIGTERM
only (``enable_jit_checkpoint``), and then returns as if the run had ended: that stop is raised here too."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint


class Interrupted(KeyboardInterrupt):
    """The run stopped on Ctrl-C at ``step`` of ``max_steps``; ``checkpoint`` is the folder saved (None when a second
    Ctrl-C skipped it). Printed, it says what was saved and how to resume."""

    def __init__(self, step: int, max_steps: int, checkpoint: Path | None, output_dir: str | Path) -> None:
        self.step, self.max_steps, self.checkpoint, self.output_dir = step, max_steps, checkpoint, output_dir

    def __str__(self) -> str:
        if self.checkpoint is None:
            return (f"interrupted at step {self.step} of {self.max_steps}; no checkpoint saved (second Ctrl-C); "
                    f"{self.output_dir} holds no finished model")
        return (f"interrupted at step {self.step} of {self.max_steps}; {self.checkpoint.name} saved; resume with "
                f"--resume_from_checkpoint {self.checkpoint}")


class InterruptCallback(TrainerCallback):
    """Turns a Ctrl-C (:attr:`requested`, set by :func:`interruptible`) into the trainer's own checkpoint save
    (optimizer, scheduler and RNG states, and a loss's own modules through its callbacks) at the end of the current
    step, then raises :class:`Interrupted`, so that nothing after training (the final save, the end evaluation, a
    start model put back) runs on a half-trained model."""

    requested = False

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any):
        if self.requested:
            control.should_save = control.should_training_stop = True

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any):
        if self.requested:
            raise Interrupted(state.global_step, state.max_steps,
                              Path(args.output_dir) / f"checkpoint-{state.global_step}", args.output_dir)


@contextmanager
def interruptible(trainer: Trainer) -> Iterator[None]:
    """Within the block, the first Ctrl-C saves a checkpoint at the end of the step ``trainer`` is in and raises
    :class:`Interrupted` (resume with ``trainer.train(resume_from_checkpoint=...)``); a second raises it at once,
    with no checkpoint. The previous SIGINT handler and the trainer's callbacks are put back afterwards. With
    ``enable_jit_checkpoint``, a run that transformers stopped on SIGTERM (its checkpoint saved) also raises
    :class:`Interrupted` when the block ends, so that a half-trained model is not taken for a finished one; it is
    told apart by the run ending before ``max_steps``, so a callback that ends a run early (``EarlyStoppingCallback``)
    is reported as that stop too when both are used.

    Args:
        trainer: A transformers (or sentence-transformers) trainer, e.g.
            :func:`~st_infocse.training.build_trainer`'s; an :class:`InterruptCallback` is added to it for the block.
    """
    callback = InterruptCallback()

    def handler(signum: int, frame: Any) -> None:
        step, max_steps = trainer.state.global_step, trainer.state.max_steps  # the run's, updated in place
        if callback.requested:
            raise Interrupted(step, max_steps, None, trainer.args.output_dir)
        callback.requested = True
        print(f"\ninterrupt: saving a checkpoint at the end of step {step + 1} (Ctrl-C again to stop at once, "
              "without it)", flush=True)

    trainer.add_callback(callback)
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        trainer.remove_callback(callback)
    state = trainer.state  # transformers' SIGTERM checkpoint returns from train() as if the run had ended
    if trainer.args.enable_jit_checkpoint and state.global_step < state.max_steps:
        saved = get_last_checkpoint(trainer.args.output_dir)  # saved before the step it stopped in, not after
        raise Interrupted(state.global_step, state.max_steps, saved and Path(saved), trainer.args.output_dir)
