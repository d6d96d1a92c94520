"""Training arguments with the papers' defaults, for the command line and for scripts."""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations at runtime.
import math
from dataclasses import dataclass, field
from pathlib import Path

from sentence_transformers import SentenceTransformerTrainingArguments
from transformers.trainer_utils import IntervalStrategy, SaveStrategy

# Named where the evaluator that logs it is defined, so that the two cannot disagree.
from st_infocse.evaluation.sts import STSB_DEV_METRIC
from st_infocse.training.fast_step import FAST_STEP_HELP
from st_infocse.training.precision import unpin_memory_without_accelerator


@dataclass
class PaperTrainingArguments(SentenceTransformerTrainingArguments):
    """``SentenceTransformerTrainingArguments`` with the unsupervised papers' setting (batch 64, lr 3e-5, one epoch,
    STS-B dev every 125 steps, the best checkpoint kept) and ``fast_step`` (:mod:`st_infocse.training.fast_step`).
    ``resume_from_checkpoint`` also takes the command line's strings: "true" or "last" (the newest ``checkpoint-N``
    in ``output_dir``), "false", "none" or "" (start afresh), else a checkpoint folder, which must exist."""

    # A titled --help section of its own, so that the command line's model, data and loss sections come first.
    _argument_group_name = "training (every SentenceTransformerTrainingArguments flag)"

    output_dir: str | None = field(
        default="output/st-infocse", metadata={"help": "Where checkpoints and the final model go."}
    )
    per_device_train_batch_size: int = field(default=64, metadata={"help": "Batch size per device."})
    num_train_epochs: float = field(default=1.0, metadata={"help": "Training epochs."})
    learning_rate: float = field(default=3e-5, metadata={"help": "Learning rate of the model."})
    logging_steps: float = field(default=25, metadata={"help": "Log every N steps."})
    eval_strategy: IntervalStrategy | str = field(default="steps", metadata={"help": "When to evaluate on STS-B dev."})
    eval_steps: float | None = field(default=125, metadata={"help": "Evaluate every N steps."})
    save_strategy: SaveStrategy | str = field(default="steps", metadata={"help": "When to checkpoint."})
    save_steps: float = field(default=125, metadata={"help": "Checkpoint every N steps."})
    save_total_limit: int | None = field(default=2, metadata={"help": "Checkpoints kept."})
    load_best_model_at_end: bool = field(default=True, metadata={"help": "Keep the best STS-B dev checkpoint."})
    metric_for_best_model: str | None = field(
        default=STSB_DEV_METRIC, metadata={"help": "Metric for the best checkpoint."}
    )
    report_to: None | str | list[str] = field(default="none", metadata={"help": "Logging integrations."})
    fast_step: bool = field(default=False, metadata={"help": FAST_STEP_HELP})

    def __post_init__(self) -> None:
        """Refuses, naming the flag, step counts, batch sizes and learning rates that would train nothing or backwards
        without a word: transformers trains ``max_steps`` when it is 0 or more (so 0 trains nothing) and epochs only
        when it is negative, so ``-5`` would silently mean "epochs"; a batch of 0 has no step to count."""
        super().__post_init__()
        unpin_memory_without_accelerator(self)
        resume = self.resume_from_checkpoint  # what Trainer.train(resume_from_checkpoint=...) takes: True, None, a path
        if isinstance(resume, str) and resume.lower() in ("true", "last", "false", "none", ""):
            self.resume_from_checkpoint = True if resume.lower() in ("true", "last") else None
        elif isinstance(resume, str) and not Path(resume).is_dir():
            raise ValueError(f"--resume_from_checkpoint: no checkpoint folder at {resume}")
        max_steps, epochs = self.max_steps, self.num_train_epochs
        if not self.learning_rate > 0:
            raise ValueError(f"--learning_rate must be positive, got {self.learning_rate:g}")
        if self.per_device_train_batch_size < 1:
            raise ValueError(f"--per_device_train_batch_size must be at least 1, got {self.per_device_train_batch_size}")
        if max_steps < 0 and max_steps != -1:
            raise ValueError(f"--max_steps must be a positive number of steps, or -1 to train --num_train_epochs; "
                             f"got {max_steps:g}")
        if max_steps == 0 or (max_steps < 0 and epochs <= 0):
            raise ValueError(f"--max_steps {max_steps:g} with --num_train_epochs {epochs:g} makes no optimizer step: "
                             "give --max_steps N > 0, or --max_steps -1 (the default) with --num_train_epochs > 0")

    def planned_steps(self, n_examples: int) -> int:
        """The optimizer steps a run on ``n_examples`` examples takes, counted as transformers' ``Trainer`` counts
        them (``max_steps`` when set, else the epochs times the batches over all processes, grouped by
        ``gradient_accumulation_steps``), known before a model or a dataloader exists.

        Args:
            n_examples: The training examples (texts, pairs).

        Raises:
            ValueError: When the run would make no optimizer step (fewer examples than one batch, with
                ``dataloader_drop_last``).

        Example:
            >>> PaperTrainingArguments(use_cpu=True, per_device_train_batch_size=4, num_train_epochs=2).planned_steps(10)
            6
        """
        per_batch, drop_last = self.per_device_train_batch_size * max(1, self.world_size), self.dataloader_drop_last
        batches = n_examples // per_batch if drop_last else math.ceil(n_examples / per_batch)
        steps = int(self.max_steps) if self.max_steps >= 0 else 0 if batches == 0 else math.ceil(
            self.num_train_epochs * max(1, math.ceil(batches / self.gradient_accumulation_steps)))
        if steps <= 0:
            raise ValueError(f"this run makes no optimizer step: {n_examples} texts, batch size {per_batch}"
                             + (" with --dataloader_drop_last" if drop_last else ""))
        return steps

    def checkpoint_plan(self, steps: int) -> str:
        """Where and when a run of ``steps`` optimizer steps writes its checkpoints, in words: the trainer also saves
        at the last step, whatever the interval, so a run shorter than ``save_steps`` writes that one checkpoint.

        Args:
            steps: The run's optimizer steps (:meth:`planned_steps`).
        """
        strategy = getattr(self.save_strategy, "value", self.save_strategy)
        if strategy == "no":
            return "none (final model only)"
        folder = Path(self.output_dir)
        if strategy == "steps" and steps <= self.save_steps:
            return (f"{folder / f'checkpoint-{steps}'} at the last step only (the run is {steps} steps, shorter than "
                    f"--save_steps {self.save_steps:g}; --save_strategy no writes none)")
        every = f"every {self.save_steps:g} steps" if strategy == "steps" else f"every {strategy}"
        kept = f", last {self.save_total_limit} kept" if self.save_total_limit else ""
        return f"{folder / 'checkpoint-N'} {every} and at the last step{kept}"
