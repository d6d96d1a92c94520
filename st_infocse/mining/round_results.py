"""What the mutually reinforced rounds and InfoCSE++ report: per-round and per-cycle statistics and their results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from sentence_transformers import SentenceTransformer

from st_infocse.evaluation.paired import PairedChange, holm
from st_infocse.training.start_end import ended_below_start, start_end_rows


def _fields(result: Any, *left_out: str) -> dict[str, Any]:
    """A result's fields by name but ``left_out`` (``asdict`` would deep-copy the model a result holds)."""
    return {f.name: getattr(result, f.name) for f in fields(result) if f.name not in left_out}


@dataclass
class RoundStats:
    """One mine -> train round.

    Attributes:
        round: 1-based round number.
        annotation: ``"adjacent"`` (adjacent sentences) or ``"idc"`` (mined with the model
            trained in the previous round, or the model as given in round 1).
        pairs: Pairs trained on.
        pairs_per_document: ``pairs / documents used``.
        documents_used: Documents that gave sentences to the graph.
        skipped: Skipped documents by reason.
        train_loss: Mean training loss reported by the trainer.
        score: Validation score after training (``None`` without an evaluator).
        improved: Whether ``score`` beat the best so far by more than ``min_delta``.
        mining_seconds: Time spent mining.
        training_seconds: Time spent training.
        mining: The full :class:`MiningReport` as a dict.
        change: The round's change from the model as given on the evaluator's primary metric, with its own 95%
            interval and p over the queries (pairs); None without per-unit scores.
        p_holm: That p adjusted by Holm's step-down rule for every round judged against the model as given: the
            round's verdict (:attr:`verdict`) is read off it, so that judging several rounds on the same queries keeps
            the chance of any false verdict among them at 5%.
    """

    round: int
    annotation: str
    pairs: int
    pairs_per_document: float
    documents_used: int
    skipped: dict[str, int]
    train_loss: float | None
    score: float | None
    improved: bool | None
    mining_seconds: float
    training_seconds: float
    mining: dict[str, Any] = field(repr=False)
    change: PairedChange | None = None
    p_holm: float | None = None

    @property
    def verdict(self) -> str | None:
        """"a gain", "within noise" or "a loss" from the start, read off :attr:`p_holm`; None when not judged."""
        return None if self.change is None or self.p_holm is None else replace(self.change, p=self.p_holm).verdict


def holm_over_rounds(per_round: list[dict[str, PairedChange]]) -> list[dict[str, PairedChange]]:
    """Each round's changes from the model as given (metric -> change), each metric's p adjusted by Holm's step-down
    rule (:func:`~st_infocse.evaluation.paired.holm`) over the rounds that judged it; the intervals stay each
    round's own, so one that excludes zero can be within noise once adjusted."""
    adjusted = [dict(changes) for changes in per_round]
    for key in {key for changes in per_round for key in changes}:
        judged = [i for i, changes in enumerate(per_round) if key in changes]
        for i, p in zip(judged, holm([per_round[i][key].p for i in judged]), strict=True):
            adjusted[i][key] = replace(per_round[i][key], p=p)
    return adjusted


@dataclass
class RoundsResult:
    """Outcome of :func:`train_idc_rounds`.

    Attributes:
        model: The trained model (the same object that was passed in), holding the best weights
            when an evaluator was given.
        rounds: Per-round statistics.
        initial_score: Validation score of the model as given.
        best_round: Round whose weights were kept (0 = the model as given).
        best_score: Its validation score.
        stopped_early: True when the loop ended because the score stopped improving.
        initial_metrics: Every metric the evaluator returned for the model as given (a float evaluator: its score
            as ``{"score": ...}``).
        final_metrics: The same for the weights kept.
        trained_metrics: Every metric of the trained candidate: the best round when one beat the model as given,
            else the last round (what ``changes`` compares with the model as given, whichever was kept).
        changes: The trained candidate's change from the model as given (x100), metric -> change with its 95%
            interval over the evaluator's queries (pairs), for the metrics whose evaluator keeps unit scores; its p
            (and verdict) Holm-adjusted for the :attr:`rounds_judged` rounds (:func:`holm_over_rounds`), which is
            what ``keep_trained_if="reliable"`` reads.
        keep_trained_if: The rule that chose between the best round and the model as given.
        rounds_judged: How many rounds were judged against the model as given on the evaluator's units.
    """

    model: SentenceTransformer = field(repr=False)
    rounds: list[RoundStats]
    initial_score: float | None
    best_round: int
    best_score: float | None
    stopped_early: bool
    initial_metrics: dict[str, float] | None = None
    final_metrics: dict[str, float] | None = None
    trained_metrics: dict[str, float] | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    keep_trained_if: str = "better"
    rounds_judged: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (without the model); the changes' p Holm-adjusted for ``rounds_judged`` rounds."""
        return {**_fields(self, "model", "rounds", "changes", "rounds_judged"),
                "changes": {key: change.to_dict() for key, change in self.changes.items()},
                "multiple_rounds": {"rule": "holm", "family": self.rounds_judged},
                "rounds": [asdict(r) | {"verdict": r.verdict} for r in self.rounds]}

    def round_rows(self) -> dict[str, str]:
        """One line per round (``"round N"`` -> line): its pairs, where its time went and, where judged, its change
        from the start on the primary metric, its verdict read off the Holm-adjusted p; the round kept is marked.
        When several rounds were judged, a last line (``"rounds judged"``) says that their p-values were adjusted."""
        rows = {}
        for stat in self.rounds:
            line = (f"{stat.annotation}: {stat.pairs:,} pairs ({stat.pairs_per_document:.2f}/document); mining "
                    f"{stat.mining_seconds:.0f} s, training {stat.training_seconds:.0f} s")
            change = stat.change
            if change is not None and stat.p_holm is not None:
                units = f", {change.n} {change.unit})"
                holm = f", Holm p = {stat.p_holm:.3f} over {self.rounds_judged} rounds" if self.rounds_judged > 1 else ""
                line += f"; from the start {change.describe(verdict=False).replace(units, holm + units)}: {stat.verdict}"
            elif stat.score is not None:
                line += f"; score {100 * stat.score:.2f}"
            rows[f"round {stat.round}"] = line + (" (kept)" if stat.round == self.best_round else "")
        if self.rounds_judged > 1:
            rows["rounds judged"] = (f"{self.rounds_judged} against the start on the same units: each round's p is "
                                     f"Holm-adjusted for the {self.rounds_judged} (its interval its own), and the "
                                     "verdicts and the keep rule read the adjusted p")
        return rows

    def summary(self, labels: dict[str, str]) -> tuple[dict[str, str], list[str], bool]:
        """As :meth:`~st_infocse.training.StartEndResult.summary`: the trained candidate (the best round, else the
        last) against the start and which weights were kept (:meth:`saved_line`); no rows without an evaluator.

        Args:
            labels: Metric key (``eval_<name>`` or the evaluator's own) -> the name printed.
        """
        if self.initial_metrics is None:
            return {}, [], False
        labels = {key.removeprefix("eval_"): label for key, label in labels.items()}
        start, end, kept_start = self.initial_metrics, self.trained_metrics or {}, self.best_round == 0
        rows = {**start_end_rows(labels, start, end, self.changes), "saved": self.saved_line()}
        return rows, ended_below_start(labels, start, end, kept_start), kept_start

    def saved_line(self) -> str:
        """Which weights were kept, in words; under ``keep_trained_if="reliable"`` it says that the gain printed is
        the one that decided (a round is kept when its luck on these queries was good too), so it reads high there."""
        if self.best_round == 0:
            return ("the starting model: no round's gain was reliable over your queries (--keep_trained_if reliable)"
                    if self.keep_trained_if == "reliable" else "the starting model: no round beat it")
        if self.keep_trained_if == "reliable":
            return (f"the weights of round {self.best_round} (--keep_trained_if reliable: its gain was reliable on "
                    "the queries it is printed for; that gain decided, so it reads high there: judge it on queries "
                    "held out of the run)")
        return f"the weights of round {self.best_round}"


@dataclass
class CycleStats:
    """One InfoCSE++ cycle: IDC rounds, then supervised fine-tuning.

    Attributes:
        cycle: 1-based cycle number.
        idc: The IDC rounds of this cycle.
        finetune_loss: Mean training loss of the fine-tuning.
        score: Labelled-validation score after fine-tuning.
        improved: Whether it beat the best so far by more than ``min_delta``.
    """

    cycle: int
    idc: RoundsResult
    finetune_loss: float | None
    score: float
    improved: bool


@dataclass
class PlusPlusResult:
    """Outcome of :func:`train_infocse_plus_plus`.

    Attributes:
        model: The model passed in, holding the weights that scored best on the labelled
            validation set (the initial weights if no fine-tuned model beat them).
        cycles: Per-cycle statistics.
        initial_score: Validation score of the model as given.
        best_cycle: Cycle whose fine-tuned weights were kept (0 = the model as given).
        best_score: Its validation score.
        stopped_early: True when the loop ended because the score stopped improving.
    """

    model: SentenceTransformer = field(repr=False)
    cycles: list[CycleStats]
    initial_score: float
    best_cycle: int
    best_score: float
    stopped_early: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (without the model)."""
        return {"cycles": [_fields(c, "idc") | {"idc": c.idc.to_dict()} for c in self.cycles],
                **_fields(self, "model", "cycles")}
