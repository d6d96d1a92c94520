"""A weight anchor to the model a run started from: keep a share of the trained change (WiSE-FT, Wortsman et al.
2022), so a trained model moved to a new domain keeps more of what it knew. The best share depends on the model and
the domain: measure it on your own queries."""

from __future__ import annotations

import math

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_infocse.files import check_range
from st_infocse.training.snapshot import StartingWeights


def _check_share(share: float) -> float:
    check_range("share of the trained change to keep", share, (0, 1, False, True))
    return float(share)


def toward_start(start: dict[str, torch.Tensor], trained: dict[str, torch.Tensor], share: float,
                 ) -> dict[str, torch.Tensor]:
    """``start + share * (trained - start)`` for every floating-point tensor of two state dicts with the same keys
    (integer buffers are kept as trained); ``share`` 1 is the trained model, 0.5 halfway back to the start.

    Example:
        >>> import torch
        >>> toward_start({"w": torch.zeros(2)}, {"w": torch.tensor([2.0, -4.0])}, 0.5)["w"]
        tensor([ 1., -2.])
    """
    share = _check_share(share)
    if set(start) != set(trained):
        raise ValueError(f"the two models differ in their weights: {sorted(set(start) ^ set(trained))[:5]}")
    # A LoRA adapter's change is B @ A with B starting at zero: moving B alone scales the change by exactly ``share``.
    return {k: start[k].to(v.device, v.dtype) + share * (v - start[k].to(v.device, v.dtype))
            if v.is_floating_point() and ".lora_A." not in k else v for k, v in trained.items()}


def evaluates_before_last_step(args: TrainingArguments, max_steps: int) -> bool:
    """Whether the trainer would evaluate (and so could keep a best checkpoint) before step ``max_steps``:
    ``eval_steps`` as the trainer reads it (a fraction of the run, or ``logging_steps`` when unset), or epoch-wise
    evaluation over more than one epoch."""
    if args.eval_strategy == "epoch":
        return args.num_train_epochs > 1
    if args.eval_strategy != "steps":
        return False
    every = args.eval_steps or args.logging_steps
    return (math.ceil(max_steps * every) if every < 1 else int(every)) < max_steps


def fit_to_anchor(args: TrainingArguments, share: float, steps: int, load_best_asked: bool = False) -> str | None:
    """Fit ``args`` to a weight anchor that keeps ``share`` of the trained change over a run of ``steps`` optimizer
    steps, before training, and describe the anchor in words (None when ``share`` is 1: no anchor). The anchor moves
    only the last step's model, so a best checkpoint from an earlier evaluation would hand back a model not anchored
    (:class:`WeightAnchorCallback` refuses that when training starts): ``load_best_model_at_end`` is turned off, or
    refused when the caller asked for it.

    Args:
        args: The run's training arguments; their ``load_best_model_at_end`` may be set to False.
        share: The share of the trained change kept, in (0, 1].
        steps: The run's optimizer steps (:meth:`~st_infocse.training.PaperTrainingArguments.planned_steps`).
        load_best_asked: ``load_best_model_at_end`` was asked for: refused rather than turned off.

    Raises:
        ValueError: With ``load_best_asked``, when the trainer would evaluate before the last step.
    """
    if _check_share(share) == 1:
        return None
    if args.load_best_model_at_end and evaluates_before_last_step(args, steps):
        if load_best_asked:
            raise ValueError("--weight_anchor moves the last step's model only, and --load_best_model_at_end could hand "
                             f"back an earlier checkpoint, not anchored: evaluate only at the end (--eval_steps {steps}) "
                             "or drop one of them")
        args.load_best_model_at_end = False
    return f"{share:g} of the trained change kept after step {steps} (start + {share:g} x (trained - start))"


class WeightAnchorCallback(TrainerCallback):
    """Move the model's weights to ``start + share * (trained - start)`` after the last optimizer step, before the
    trainer's last evaluation and save, so what is scored, compared with the start and saved is the anchored model.

    The starting weights (only those that train) are a CPU copy taken when training begins, shared through
    ``start_weights`` with a :class:`StartEndCallback` given the same one and dropped once applied; a loss's own
    modules do not move. ``load_best_model_at_end`` with an evaluation before the last step could load a checkpoint
    that is not anchored, so that combination is refused when training starts.

    Args:
        share: Keep this share of the trained change: after the last step the model becomes ``start + share x
            (trained - start)`` (WiSE-FT), and that is what is scored against the start and saved. 1: the trained
            model; 0.5: halfway back (docs/adapting-your-model.md). Below 1 the last step is the model kept, so the
            command line turns ``load_best_model_at_end`` off unless it is given.
        start_weights: The copy of the starting weights, shared with a :class:`StartEndCallback` (default: its own).

    Example:
        >>> trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=ds, loss=loss,
        ...                                      callbacks=[WeightAnchorCallback(0.5)])  # doctest: +SKIP
    """

    def __init__(self, share: float = 0.5, start_weights: StartingWeights | None = None) -> None:
        self.share = _check_share(share)
        self.start_weights = start_weights if start_weights is not None else StartingWeights()
        self.applied_at: int | None = None

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        if args.load_best_model_at_end and self.share < 1 and evaluates_before_last_step(args, state.max_steps):
            raise ValueError("the weight anchor moves the last step's model only; load_best_model_at_end could "
                             "load an earlier checkpoint, not anchored: evaluate only at the end (eval_steps = "
                             "max_steps) or set load_best_model_at_end=False")
        self.applied_at = None
        self.start_weights.release(self)  # a copy this callback still holds from an earlier run is not this run's
        self.start_weights.acquire(kwargs["model"], self)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        # Called before the trainer evaluates and saves this step (Trainer._maybe_log_save_evaluate).
        ending = state.global_step >= state.max_steps or control.should_training_stop
        if not (ending and self.start_weights.held_by(self)):
            return
        if self.share < 1:
            model = kwargs["model"]
            start = self.start_weights.weights  # the weights that train (an adapter's alone when only it trains)
            current = model.state_dict()
            model.load_state_dict(toward_start(start, {k: current[k] for k in start}, self.share), strict=False)
        self.applied_at = state.global_step
        self.start_weights.release(self)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        self.start_weights.release(self)
