"""Score a training run at its start and its end, and never hand back a model worse than the one given.

Where the evaluator keeps what its score is made of (the package's retrieval and STS-B dev evaluators do,
:func:`~st_infocse.evaluation.unit_scores`), each start -> end also gets a 95% interval from the paired test
(:mod:`~st_infocse.evaluation.paired`) over the queries (or STS pairs) and a verdict: "a gain", "within noise" or
"a loss", marked approximate below :data:`~st_infocse.evaluation.paired.RELIABLE_FROM` units; a change without unit
scores is printed as not judged. ``keep_trained_if="reliable"`` then keeps the trained model only when the deciding
metric's gain is reliable (the interval's lower end above zero). The gain that decided is biased upwards on the
queries it decided on (a run is kept when its luck on them was good); ``confirm_share`` holds a share of them out of
the decision, and the deciding metric's change printed is the one on those.
"""

from __future__ import annotations

import logging
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_infocse.evaluation import PairedChange, UnitScores, paired_changes, unit_scores, x100
from st_infocse.evaluation.paired import RELIABLE_FROM, split_units, unit_change
from st_infocse.files import check_choice, check_range
from st_infocse.training.snapshot import StartingWeights

logger = logging.getLogger(__name__)

#: The rules for handing back the trained model rather than the start: its deciding score is higher ("better"), or
#: its gain on the deciding metric's queries (pairs) is reliable, the 95% interval's lower end above zero ("reliable").
KEEP_TRAINED_IF: tuple[str, ...] = ("better", "reliable")


def check_keep_rule(keep_trained_if: str = "better", keep_start_if_better: bool = True,
                    confirm_share: float | None = None) -> None:
    """Refuse a rule for the model handed back that cannot apply, before any model is loaded or trained; the
    arguments are :class:`StartEndCallback`'s, which checks them with it.

    Args:
        keep_trained_if: One of :data:`KEEP_TRAINED_IF`.
        keep_start_if_better: Whether the start may be handed back; ``"reliable"`` hands it back when the gain is not
            reliable, so it needs True.
        confirm_share: The share of the queries held out of ``"reliable"``'s decision, in (0, 1); None: none.

    Raises:
        ValueError: Starting with the argument's name, so that a caller can put its own name for it first.
    """
    check_choice("keep_trained_if", keep_trained_if, KEEP_TRAINED_IF)
    if keep_trained_if == "reliable" and not keep_start_if_better:
        raise ValueError("keep_start_if_better=False turns off keep_trained_if='reliable', which hands back the start "
                         "when the gain is not reliable")
    check_range("confirm_share", confirm_share, (0, 1, False, False))
    if confirm_share is not None and keep_trained_if != "reliable":
        raise ValueError("confirm_share holds queries out of the decision of keep_trained_if='reliable', got "
                         f"keep_trained_if={keep_trained_if!r}")


# What the trainer adds to each evaluation (timings; the epoch, written in by Trainer.log): no score of the model.
_NOT_SCORES = re.compile(r"^epoch$|_(runtime|samples_per_second|steps_per_second|model_preparation_time)$")


def _eval_key(key: str) -> str:
    """A metric name as the trainer logs it (``eval_<name>``), the rule of ``metric_key_prefix="eval"``."""
    return key if key.startswith("eval_") else f"eval_{key}"


def _scores(metrics: Any) -> dict[str, float]:
    """An evaluator's or the trainer's metrics: scores only, under ``eval_`` names."""
    if not isinstance(metrics, dict):
        metrics = {"evaluator": metrics}  # what the trainer names a bare score
    return {
        _eval_key(key): float(value)
        for key, value in metrics.items()
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and not _NOT_SCORES.search(key)
    }


#: What a start -> end line says when the evaluator keeps no unit scores for its metric (any evaluator other than
#: the package's retrieval and STS-B dev ones, or a metric of theirs they do not keep query by query).
NOT_JUDGED = "no per-query scores: the change is not judged"


def describe_change(change: PairedChange) -> str:
    """``+0.97 (95% CI -0.30 to +2.29, p = 0.140, 300 queries): within noise``, with a note that the interval is
    approximate when fewer than :data:`~st_infocse.evaluation.paired.RELIABLE_FROM` units were compared."""
    text = change.describe()
    if change.n < RELIABLE_FROM:
        text += f" ({change.n} {change.unit}: intervals are approximate; docs: How far the verdict can be trusted)"
    return text


def _start_to_end(before: float | None, after: float | None, change: PairedChange | None = None,
                  judged: bool = True) -> str:
    """``<start> -> <end>``, times 100 with 2 decimals when both lie in [-1, 1] (else as they are), then with
    ``judged`` the change with its interval and verdict, or the change and why it is not judged (nothing when either
    end is missing or not a number)."""
    scaled = all(value is None or not abs(value) > 1 for value in (before, after))  # NaN (a collapsed model) too
    text = "{} -> {}".format(*("n/a" if v is None else x100(v) if scaled else f"{v:.4g}" for v in (before, after)))
    if change is not None and judged:
        return f"{text}, {describe_change(change)}"
    if not judged or before is None or after is None or math.isnan(before) or math.isnan(after):
        return text
    delta = after - before
    return f"{text}, {100 * delta:+.2f} ({NOT_JUDGED})" if scaled else f"{text}, {delta:+.4g} ({NOT_JUDGED})"


def start_end_rows(labels: dict[str, str], start: dict[str, float], end: dict[str, float],
                   changes: dict[str, PairedChange] | None = None, decides: str | None = None) -> dict[str, str]:
    """``{"STS-B dev": "86.72 -> 87.10, +0.38 (95% CI -0.12 to +0.90, p = 0.140, 1500 pairs): within noise"}``
    for every metric in ``labels`` (metric key -> the name printed): its interval and verdict where ``changes`` has
    one, else the change and why it is not judged (:data:`NOT_JUDGED`). When several rows are printed, the one of
    ``decides`` (the checkpoint metric, which chooses the model kept) says so."""
    rows = {}
    for key, label in labels.items():
        before, after = start.get(key), end.get(key)
        if before is None and after is None:
            continue
        rows[label] = _start_to_end(before, after, (changes or {}).get(key))
    if decides in labels and labels[decides] in rows and len(rows) > 1:
        rows[labels[decides]] += "; decides: the checkpoint metric"
    return rows


def is_better(a: float | None, b: float | None, greater: bool = True, min_delta: float = 0.0) -> bool:
    """``a`` better than ``b`` by more than ``min_delta`` (higher when ``greater``, else lower). A missing score is
    never better, nor beaten; a NaN score (a collapsed model makes a correlation undefined) is worse than any number."""
    if a is None or b is None or math.isnan(a):
        return False
    if math.isnan(b):
        return True
    return a > b + min_delta if greater else a < b - min_delta


def ended_below_start(labels: dict[str, str], start: dict[str, float], end: dict[str, float],
                      start_saved: bool = False, greater: Callable[[str], bool] = lambda key: True) -> list[str]:
    """One warning line per metric in ``labels`` that ended worse than its start (below it; above it where lower is
    better), a NaN end (a collapsed model) included; when the starting model is what was saved (``start_saved``), a
    note that the trained model ended there instead.

    Args:
        labels: Metric key -> the name printed, as for :func:`start_end_rows`.
        start: Every metric of the model before training.
        end: Every metric of the trained model.
        start_saved: The starting model was handed back.
        greater: Metric key -> whether higher is better (default: for every metric).
    """
    lines = []
    for key, label in labels.items():
        before, after = start.get(key), end.get(key)
        if is_better(before, after, greater(key)):
            change = f"{'below' if greater(key) else 'above'} its start ({_start_to_end(before, after, judged=False)})"
            lines.append(f"note: the trained model's {label} ended {change}; the starting model was saved"
                         if start_saved else f"warning: {label} ended {change}")
    return lines


@dataclass
class StartEndResult:
    """A run's scores before its first step and after its last, and which model the caller now holds.

    Attributes:
        metric: the deciding metric, as the trainer logs it (``eval_<name>``).
        greater_is_better: its direction.
        start: every metric of the model before the first optimizer step.
        end: every metric of the model after the last optimizer step (empty if it could not be scored).
        start_step: the step training started at (above 0 on a resume).
        end_step: the last step.
        start_score: ``start[metric]`` (None when the evaluator does not give it).
        end_score: ``end[metric]``.
        best_step: the step of the best score among the run's evaluations (None without any).
        best_score: that score.
        kept: the model in memory after training: ``"start"`` (restored), ``"best checkpoint"`` (loaded by the
            trainer, ``load_best_model_at_end``) or ``"end"`` (the last step).
        worse_at_end: metrics whose end is worse than their start, the deciding one first (greater is better,
            except ``metric``'s own direction and names containing "loss"); derived from ``start`` and ``end``, not
            passed.
        changes: metric -> the change from the start to the model the trainer left (x100), with its 95% interval
            over the queries or pairs and its verdict, for the metrics whose evaluator keeps unit scores. With
            ``confirm_share``, the deciding metric's is the change on the held-out units (unit "held-out queries").
        decided_on: with ``confirm_share``, the deciding metric's change on the units the rule read (None without).
        confirm_share: the share of the deciding metric's units held out of the rule (None: all of them decided).
        keep_trained_if: the rule that chose between the start and the trained model (``KEEP_TRAINED_IF``; None
            when nothing was restored by rule, ``keep_start_if_better=False``).
        reason: why ``kept`` was chosen, in words.
    """

    metric: str
    greater_is_better: bool
    start: dict[str, float]
    end: dict[str, float]
    start_step: int
    end_step: int
    start_score: float | None
    end_score: float | None
    best_step: int | None
    best_score: float | None
    kept: Literal["start", "best checkpoint", "end"]
    worse_at_end: list[str] = field(init=False)
    changes: dict[str, PairedChange] = field(default_factory=dict)
    keep_trained_if: str | None = "better"
    reason: str = ""
    decided_on: PairedChange | None = None
    confirm_share: float | None = None

    def __post_init__(self) -> None:
        worse = (key for key in self.start if key in self.end and is_better(self.start[key], self.end[key],
                                                                             self._greater(key)))
        self.worse_at_end = sorted(worse, key=lambda key: key != self.metric)  # the deciding metric first

    def to_dict(self) -> dict[str, Any]:
        """Everything above as plain JSON-ready values (each change with its verdict)."""
        out = asdict(self)
        out["changes"] = {key: change.to_dict() for key, change in self.changes.items()}
        out["decided_on"] = self.decided_on.to_dict() if self.decided_on is not None else None
        return out

    def _greater(self, key: str) -> bool:
        return self.greater_is_better if key == self.metric else "loss" not in key

    def lines(self) -> list[str]:
        """Printable lines: ``<metric> <start> -> <end>`` for each metric (the deciding one first; scores in
        [-1, 1] times 100), then, when it was the start, what was kept and why (:meth:`saved_line`), then a warning per
        metric that got worse (:func:`ended_below_start`)."""
        keys = [self.metric] * (self.metric in self.start) + [k for k in self.start if k != self.metric]
        out = [f"{key} {_start_to_end(self.start.get(key), self.end.get(key), self.changes.get(key))}" for key in keys]
        if self.decided_on is not None:
            out.append(f"{self.metric} on the units the keep rule read: {describe_change(self.decided_on)}")
        if self.kept == "start":
            out.append(f"saved: {self.saved_line()}")
        return out + ended_below_start({key: key for key in keys}, self.start, self.end, greater=self._greater)

    def summary(self, labels: dict[str, str]) -> tuple[dict[str, str], list[str], bool]:
        """A summary's rows for the metrics of ``labels``, each start -> end (:func:`start_end_rows`, the deciding
        metric marked) then ``"saved"`` (:meth:`saved_line`); a warning per metric that ended worse than its start
        (:func:`ended_below_start`); and whether the start is what was handed back.

        Args:
            labels: Metric key as the trainer logs it (``eval_<name>``) -> the name printed.
        """
        rows = {**start_end_rows(labels, self.start, self.end, self.changes, decides=self.metric),
                "saved": self.saved_line()}
        start_kept = self.kept == "start"  # a metric's direction as the run read it (a loss: lower is better)
        return rows, ended_below_start(labels, self.start, self.end, start_kept, self._greater), start_kept

    def saved_line(self) -> str:
        """Which model was handed back and why, in one line: under ``keep_trained_if="reliable"`` the rule's reason,
        named as the command line's flags; else the checkpoint and its score, or that none beat the start."""
        if self.keep_trained_if == "reliable":
            which = {"start": "the starting model", "end": f"the model at the last step, {self.end_step}",
                     "best checkpoint": f"the best checkpoint, step {self.best_step}"}[self.kept]
            share = f", --confirm_share {self.confirm_share:g}" if self.confirm_share else ""
            return (f"{which}: {self.reason} (--keep_trained_if reliable{share}: the trained model only when the "
                    "interval lies above zero)")
        if self.kept == "start" and is_better(self.best_score, self.start_score, self.greater_is_better):
            # Without load_best_model_at_end the trainer leaves the last step, whatever an earlier one scored.
            return (f"the starting model: the last step did not beat it ({self.metric} {x100(self.start_score)} vs "
                    f"{x100(self.end_score)}; step {self.best_step} scored {x100(self.best_score)}: "
                    "load_best_model_at_end keeps such a checkpoint)")
        if self.kept == "start":
            return (f"the starting model: no checkpoint beat the model you started with ({self.metric} "
                    f"{x100(self.start_score)} vs best {x100(self.best_score)} at step {self.best_step})")
        if self.kept == "best checkpoint":
            return f"the best checkpoint, step {self.best_step} ({self.metric} {x100(self.best_score)})"
        return f"the model at the last step, {self.end_step}"

    def __str__(self) -> str:
        return "\n".join(self.lines())


class StartEndCallback(TrainerCallback):
    """Evaluate the model before training and after its last step, and restore the start if training made it worse.

    ``on_train_begin`` scores the model with ``evaluator`` (the start; on a resume, the resumed model) and, with
    ``keep_start_if_better``, keeps a CPU copy of its weights. With a step-wise ``eval_strategy`` the callback makes
    the trainer evaluate after the last optimizer step, so that evaluation is logged and counts for the best
    checkpoint (``load_best_model_at_end``); an epoch-wise strategy evaluates there anyway. With
    ``eval_strategy="no"``, or when the trainer's evaluations lack the deciding metric (an ``eval_dataset`` without
    this evaluator), the callback scores the last step itself in ``on_train_end``.

    ``on_train_end`` compares the model the trainer leaves (the best checkpoint it loaded, else the last step) with
    the start on the deciding metric: ``args.metric_for_best_model`` with ``args.greater_is_better``, else the
    evaluator's ``primary_metric`` and ``greater_is_better``. When the start scores strictly better, its weights
    are loaded back, so what the caller saves next is the model it started with. The weights copy is dropped at the
    end of training. Only the model's weights are restored, not a loss's own modules; under DeepSpeed or FSDP,
    whose state dicts are sharded, use ``keep_start_if_better=False``. Every process scores the start on its own
    and restores by the same rule; logs come from the main process.

    Give the trainer the same ``evaluator`` (``evaluator=``), so its evaluations carry the same metrics.

    Where the evaluator keeps unit scores (:func:`~st_infocse.evaluation.retrieval_evaluator`,
    :func:`~st_infocse.evaluation.stsb_dev_evaluator`, or any evaluator with a ``units()`` method), each metric's
    change gets a 95% interval from the paired test (:mod:`~st_infocse.evaluation.paired`) over its queries (STS pairs), in ``result.changes``. With
    ``keep_trained_if="reliable"`` the trained model is kept only when the deciding metric's interval lies above
    zero: a small real gain measured on few queries is then often refused, and handed back as the start; more
    queries narrow the interval (docs/your-own-model.md, "How many queries").

    Args:
        evaluator: any sentence-transformers evaluator, ``SequentialEvaluator`` included.
        keep_start_if_better: Hand back the model as given (its weights restored) when the rule ``keep_trained_if``
            does not keep the trained model; with False the run only measures it (not with ``"reliable"``).
        start_weights: the copy of the starting weights to restore from, shared with a
            :class:`WeightAnchorCallback` given the same one, so that a run keeps one copy (default: its own).
        keep_trained_if: ``"better"``: keep the trained model when its deciding score is not below the start's;
            ``"reliable"``: only when its gain is reliable over the deciding metric's queries (STS pairs), the 95%
            interval of the paired test over them above zero; the gain that decided reads high on those queries
            (``confirm_share``). It needs an evaluator that keeps unit scores for that metric (refused otherwise).
        log: log each metric's start -> end, what was kept and what got worse once training ends (the command
            line prints its own summary instead).
        confirm_share: With ``keep_trained_if="reliable"``, hold this share of the deciding metric's queries (STS
            pairs), drawn with the run's seed, out of the rule: it decides on the rest, and the change reported is
            the one on the held-out part, which the decision did not pick. Costs power: both parts are smaller
            (docs/your-own-model.md).

    Example:
        >>> from st_infocse.training import StartEndCallback
        >>> callback = StartEndCallback(evaluator, keep_start_if_better=True)  # doctest: +SKIP
        >>> trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=ds, loss=loss,
        ...                                      evaluator=evaluator, callbacks=[callback])  # doctest: +SKIP
        >>> trainer.train()  # doctest: +SKIP
        >>> print(callback.result)  # doctest: +SKIP
        eval_sts-dev_spearman_cosine 86.72 -> 87.10
    """

    def __init__(self, evaluator: Any, keep_start_if_better: bool = True, log: bool = True,
                 keep_trained_if: Literal["better", "reliable"] = "better",
                 start_weights: StartingWeights | None = None, confirm_share: float | None = None) -> None:
        check_keep_rule(keep_trained_if, keep_start_if_better, confirm_share)
        self.confirm_share = confirm_share
        self.evaluator = evaluator
        self.keep_start_if_better = keep_start_if_better
        self.keep_trained_if = keep_trained_if
        self.log = log
        self.result: StartEndResult | None = None
        self.start_weights = start_weights if start_weights is not None else StartingWeights()
        self._training = False  # the run's scores and units are set when training begins

    def _evaluate(self, model: Any, state: TrainerState) -> dict[str, float]:
        # The evaluator may leave the model in eval mode: the trainer's training_step sets train mode at every step.
        return _scores(self.evaluator(model, epoch=state.epoch or 0, steps=state.global_step))

    def _last_units(self) -> dict[str, UnitScores]:
        return {_eval_key(key): units for key, units in unit_scores(self.evaluator).items()}

    def _decider(self, args: TrainingArguments) -> tuple[str, bool]:
        if args.metric_for_best_model:  # its direction as the trainer reads it (set from the name when not given)
            return _eval_key(args.metric_for_best_model), bool(args.greater_is_better)
        primary = getattr(self.evaluator, "primary_metric", None) or next(iter(self._start), "evaluator")
        return _eval_key(primary), bool(getattr(self.evaluator, "greater_is_better", True))

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        model = kwargs["model"]
        self.result, self._evaluations, self._training = None, {}, True
        self._start_step = state.global_step
        self._start = self._evaluate(model, state)
        self._start_units, self._units = self._last_units(), {}
        metric = self._decider(args)[0]
        if self.keep_trained_if == "reliable" and metric not in self._start_units:
            raise ValueError(
                f"keep_trained_if='reliable' needs per-query (per-pair) scores for {metric}, which this evaluator "
                "does not keep; use retrieval_evaluator or stsb_dev_evaluator, or keep_trained_if='better'"
            )
        if self.confirm_share:
            parts = split_units(self._start_units[metric], self.confirm_share, args.seed)
            sizes = [len(part.scores or ()) if part.kind == "queries" else len(part.gold) for part in parts]
            if min(sizes) < 1:
                raise ValueError(f"confirm_share={self.confirm_share} of {sum(sizes)} units of {metric} leaves none "
                                 "on one side; give a share nearer 0.5 or more queries")
        self.start_weights.release(self)
        if self.keep_start_if_better:
            self.start_weights.acquire(model, self)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        # The trainer evaluates where control says so, right after this event: the last step then enters its logs
        # and its best-checkpoint bookkeeping. Epoch-wise strategies evaluate at the last step already.
        ending = state.global_step >= state.max_steps or control.should_training_stop
        if ending and args.eval_strategy == "steps":
            control.should_evaluate = True

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        if self._training:  # not trainer.evaluate() calls outside training
            self._evaluations.setdefault(state.global_step, {}).update(_scores(kwargs.get("metrics") or {}))
            self._units[state.global_step] = self._last_units()

    @property
    def snapshot(self) -> dict[str, torch.Tensor] | None:
        """The starting weights while this callback holds them (during training), else None."""
        return self.start_weights.weights if self.start_weights.held_by(self) else None

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        model, snapshot = kwargs["model"], self.snapshot
        self._training = False
        self.start_weights.release(self)  # dropped (by its last user) whatever happens below; this function holds it until it returns
        metric, greater = self._decider(args)
        step = state.global_step
        # The trainer loads the best checkpoint before this event whenever it has one (Trainer._finalize_training).
        best_loaded = bool(args.load_best_model_at_end and state.best_model_checkpoint)
        if metric not in self._evaluations.get(step, {}) and not best_loaded:
            self._evaluations.setdefault(step, {}).update(self._evaluate(model, state))
            self._units[step] = self._last_units()
        end = self._evaluations.get(step, {})
        scored = [(s, m[metric]) for s, m in sorted(self._evaluations.items()) if metric in m]
        best_step, best_score = None, None
        for s, score in scored:
            if best_step is None or is_better(score, best_score, greater):
                best_step, best_score = s, score
        held_step = step
        if best_loaded:
            match = re.search(r"checkpoint-(\d+)$", str(state.best_model_checkpoint).rstrip("/\\"))
            held_step = int(match[1]) if match else None
            loaded = self._evaluations.get(held_step, {}) if held_step is not None else {}
            held, kept = loaded.get(metric, state.best_metric), "best checkpoint"
        else:
            held, kept = end.get(metric), "end"
        start_score = self._start.get(metric)
        if start_score is None and state.is_world_process_zero:
            logger.warning("The evaluator gives no %s for the starting model; the start is not compared.", metric)
        held_units = self._units.get(held_step, {})
        changes = paired_changes(self._start_units, held_units, seed=args.seed)
        decided, decided_on = changes.get(metric), None
        if self.confirm_share and metric in self._start_units and metric in held_units:
            (rest, out), (rest_end, out_end) = (split_units(units[metric], self.confirm_share, args.seed)
                                                for units in (self._start_units, held_units))
            decided = decided_on = unit_change(rest, rest_end, seed=args.seed)
            confirmation = unit_change(out, out_end, seed=args.seed)
            if confirmation is not None:
                changes[metric] = replace(confirmation, unit=f"held-out {confirmation.unit}")
        rule = self.keep_trained_if if snapshot is not None else None
        restore, reason = self._verdict(rule, metric, start_score, held, greater, decided,
                                        held_out=self.confirm_share is not None)
        if restore:
            model.load_state_dict(snapshot, strict=False)  # the weights that train; the frozen ones never moved
            kept = "start"
        del snapshot
        self.result = StartEndResult(
            metric=metric, greater_is_better=greater, start=dict(self._start), end=dict(end),
            start_step=self._start_step, end_step=step, start_score=start_score, end_score=end.get(metric),
            best_step=best_step, best_score=best_score, kept=kept, changes=changes,
            keep_trained_if=rule, reason=reason, decided_on=decided_on, confirm_share=self.confirm_share,
        )  # fmt: skip
        self._units, self._start_units = {}, {}
        if self.log and state.is_world_process_zero:
            lines = self.result.lines()  # one per start metric, then what was kept and what got worse
            for index, line in enumerate(lines):
                (logger.info if index < len(self._start) else logger.warning)(line)

    @staticmethod
    def _verdict(rule: str | None, metric: str, start: float | None, held: float | None, greater: bool,
                 change: PairedChange | None, held_out: bool = False) -> tuple[bool, str]:
        """Whether to restore the start under ``rule``, and why, in words (``held_out``: ``change`` is on the part
        of the units not held out by ``confirm_share``)."""
        if rule is None:
            return False, "measured only (keep_start_if_better=False)"
        if rule == "reliable":
            if change is None:  # no unit scores at the end (an evaluation that failed): the start is the safe choice
                return True, f"{metric} has no per-query scores at the end to judge the gain by"
            gain = change.delta if greater else -change.delta
            reliable = (change.low > 0) if greater else (change.high < 0)
            if held_out:
                where = (f"on the {change.n} {change.unit} the rule read; the change printed for it is on the others, "
                         "held out of the rule")
            else:  # a run is kept when its luck on these units was good, so its gain on them reads high
                where = (f"on the {change.unit} it is printed for: the printed gain is the one that decided, so it "
                         f"reads high there (confirm_share judges it on {change.unit} held out)")
            if reliable:
                return False, f"{metric} gained {gain:+.2f} reliably (the 95% interval excludes zero) {where}"
            return True, f"{metric} changed {change.describe()}, not a reliable gain"
        if is_better(start, held, greater):
            return True, f"the start scored better on {metric}"
        return False, f"the trained model scored at least as well as the start on {metric}"
