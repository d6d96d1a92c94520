"""Ctrl-C during training: the first one saves a resumable checkpoint at the step reached and ends the run; a second
one ends it at once, without saving."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class Interrupted(KeyboardInterrupt):
    """The run stopped on Ctrl-C; ``checkpoint`` is the folder saved (None when a second Ctrl-C skipped it)."""

    def __init__(self, step: int, max_steps: int, checkpoint: Path | None) -> None:
        super().__init__(step, max_steps, checkpoint)
        self.step, self.max_steps, self.checkpoint = step, max_steps, checkpoint

    def line(self, output_dir: str | Path) -> str:
        if self.checkpoint is None:
            return (f"interrupted at step {self.step} of {self.max_steps}; no checkpoint saved (second Ctrl-C); "
                    f"{output_dir} holds no finished model")
        return (f"interrupted at step {self.step} of {self.max_steps}; {self.checkpoint.name} saved; resume with "
                f"--resume_from_checkpoint {self.checkpoint}")


def interrupt_callback() -> Any:
    """A trainer callback that turns a Ctrl-C (its ``requested``) into the trainer's own checkpoint save (optimizer,
    scheduler and RNG states) at the end of the current step, then raises :class:`Interrupted` so that nothing after
    training (the final save, the end evaluation) runs. Built here so that this module imports no trainer."""
    from transformers import TrainerCallback

    class InterruptCallback(TrainerCallback):
        requested = False
        state: Any = None  # the trainer's own TrainerState, updated in place as training goes

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.state = state

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.requested:
                control.should_save = control.should_training_stop = True

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.requested:
                raise Interrupted(state.global_step, state.max_steps,
                                  Path(args.output_dir) / f"checkpoint-{state.global_step}")

    return InterruptCallback()


@contextmanager
def interruptible(callback: Any) -> Iterator[None]:
    """While training: the first Ctrl-C asks ``callback`` for a checkpoint; the second raises :class:`Interrupted`
    at once (no checkpoint). The previous SIGINT handler is put back afterwards."""

    def handler(signum: int, frame: Any) -> None:
        step, max_steps = (callback.state.global_step, callback.state.max_steps) if callback.state else (0, 0)
        if callback.requested:
            raise Interrupted(step, max_steps, None)
        callback.requested = True
        print(f"\ninterrupt: saving a checkpoint at the end of step {step + 1} (Ctrl-C again to stop at once, "
              "without it)", flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
