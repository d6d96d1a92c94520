"""Training arguments with the papers' defaults, for the command line and for scripts."""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations at runtime.
from dataclasses import dataclass, field

from sentence_transformers import SentenceTransformerTrainingArguments
from transformers.trainer_utils import IntervalStrategy, SaveStrategy

# Named where the evaluator that logs it is defined, so that the two cannot disagree.
from st_infocse.evaluation.sts import STSB_DEV_METRIC
from st_infocse.training.fast_step import FAST_STEP_HELP
from st_infocse.training.precision import unpin_memory_without_accelerator


@dataclass
class PaperTrainingArguments(SentenceTransformerTrainingArguments):
    """``SentenceTransformerTrainingArguments`` with the unsupervised papers' setting (batch 64, lr 3e-5, one epoch,
    STS-B dev every 125 steps, the best checkpoint kept) and ``fast_step`` (:mod:`st_infocse.training.fast_step`)."""

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
        """Refuses, naming the flag, step counts and learning rates that would train nothing or backwards without a
        word: transformers trains ``max_steps`` when it is 0 or more (so 0 trains nothing) and epochs only when it is
        negative, so ``-5`` would silently mean "epochs"."""
        super().__post_init__()
        unpin_memory_without_accelerator(self)
        max_steps, epochs = self.max_steps, self.num_train_epochs
        if not self.learning_rate > 0:
            raise ValueError(f"--learning_rate must be positive, got {self.learning_rate:g}")
        if max_steps < 0 and max_steps != -1:
            raise ValueError(f"--max_steps must be a positive number of steps, or -1 to train --num_train_epochs; "
                             f"got {max_steps:g}")
        if max_steps == 0 or (max_steps < 0 and epochs <= 0):
            raise ValueError(f"--max_steps {max_steps:g} with --num_train_epochs {epochs:g} makes no optimizer step: "
                             "give --max_steps N > 0, or --max_steps -1 (the default) with --num_train_epochs > 0")
