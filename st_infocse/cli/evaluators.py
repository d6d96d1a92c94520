"""What a training run is measured with: STS-B dev, the user's own retrieval set, or both; which metric chooses the
checkpoint; and BM25's reference lines beside the user's retrieval set."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import BUNDLED, RunEvaluationArguments
from st_infocse.cli.errors import CLIError
from st_infocse.files import InputError


@dataclass
class RunEvaluation:
    """The evaluator a run trains with (None: nothing to measure); ``labels``: trainer metric key -> the name
    printed; ``notes``: lines for the start-up summary."""

    evaluator: Any = None
    labels: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    retrieval: Any = None
    retrieval_chooses: bool = False

    def for_model(self, model: Any, training_args: Any, own_length: int | None) -> None:
        """Name the retrieval metrics as the trainer will log them for ``model`` (its similarity function is in
        the key), unless ``--metric_for_best_model`` was given let retrieval nDCG@10 choose the checkpoint, and score
        at the model's own length (the one it is saved with), not the training length."""
        if self.evaluator is not None and own_length is not None and own_length != model.max_seq_length:
            from st_infocse.training.at_length import AtLengthEvaluator

            self.evaluator = AtLengthEvaluator(self.evaluator, own_length)
            self.notes["evaluated at"] = f"the model's own {own_length} tokens (training at {model.max_seq_length})"
        if self.retrieval is not None:
            from st_infocse.evaluation import retrieval_metric_keys

            keys = retrieval_metric_keys(self.retrieval, model.similarity_fn_name)
            self.labels.update({keys["ndcg@10"]: "retrieval nDCG@10", keys["recall@100"]: "retrieval Recall@100"})
            if self.retrieval_chooses:
                training_args.metric_for_best_model, training_args.greater_is_better = keys["ndcg@10"], True
        if self.evaluator is not None and training_args.metric_for_best_model:
            self.notes["checkpoint metric"] = training_args.metric_for_best_model


def dev_evaluator(source: str):
    """The STS-B dev evaluator of ``--stsb_dev``, or None for ``none``."""
    from st_infocse.evaluation import stsb_dev_evaluator

    if source.lower() in ("none", BUNDLED):
        from st_infocse.data import demo_stsb_dev_evaluator

        return None if source.lower() == "none" else demo_stsb_dev_evaluator()
    try:
        return stsb_dev_evaluator(source if source == "hub" else Path(source).expanduser())
    except (OSError, RuntimeError) as exc:  # RuntimeError: the hub copy could not be fetched (offline)
        if source == "hub":
            raise CLIError("cannot load STS-B dev from the Hugging Face hub (sentence-transformers/stsb); offline, use "
                           f"--stsb_dev {BUNDLED} (the 1,500 STS-B dev pairs shipped with the package), a SentEval "
                           "data/downstream folder or a sentence1/sentence2/score file, or --stsb_dev none") from exc
        raise CLIError(f"cannot load STS-B dev from {source!r}: {exc}".splitlines()[0]) from exc


def run_evaluation(run_args: RunEvaluationArguments | None, training_args: Any, given: Collection[str]) -> RunEvaluation:
    """The run's evaluators, built before the model loads. With ``--eval_retrieval`` the user's own retrieval
    nDCG@10 chooses the checkpoint (and decides whether the starting model is handed back), unless
    ``--metric_for_best_model`` is given (``given``: the flags set)."""
    from st_infocse.evaluation import STSB_DEV_METRIC

    run = RunEvaluation()
    if run_args is None:  # stage 1: nothing to measure
        return run
    evaluators = [dev] if (dev := dev_evaluator(run_args.stsb_dev)) is not None else []
    if dev is not None:
        run.labels[STSB_DEV_METRIC] = "STS-B dev"
    if run_args.eval_retrieval:
        from st_infocse.evaluation import retrieval_evaluator

        try:
            run.retrieval, info = retrieval_evaluator(run_args.eval_retrieval, run_args.eval_retrieval_split,
                                                      max_corpus=run_args.eval_retrieval_max_corpus or None,
                                                      seed=training_args.seed)
        except InputError as exc:
            raise CLIError(f"--eval_retrieval: {exc}") from exc
        evaluators.append(run.retrieval)  # last: with STS-B dev beside it, it is the evaluator's primary metric
        run.notes["retrieval set"] = info.describe()
        run.retrieval_chooses = "metric_for_best_model" not in given
    if len(evaluators) > 1:
        from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

        run.evaluator = SequentialEvaluator(evaluators)
    elif evaluators:
        run.evaluator = evaluators[0]
    return run


def lexical_reference_callback(retrieval: Any, settings: Any):
    """A trainer callback that scores BM25 and the hybrid of BM25 with the model as given on the run's retrieval
    queries once the start has been evaluated (so add it after the :class:`~st_infocse.training.StartEndCallback`,
    whose start evaluation leaves the start's hits in ``retrieval``), and keeps the start's and the last
    evaluation's per-query scores to set beside them (:func:`lexical_reference_rows`)."""
    from transformers import TrainerCallback

    class LexicalReferenceCallback(TrainerCallback):
        references: dict[str, dict[str, float]] | None = None
        start: dict[str, float] | None = None
        end: dict[str, float] | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.references = retrieval.lexical_references(settings)
            self.start = self.end = dict(retrieval.per_query)

        def on_evaluate(self, args, state, control, **kwargs):
            if retrieval.per_query is not None:
                self.end = dict(retrieval.per_query)

    callback = LexicalReferenceCallback()
    callback.settings = settings
    return callback


def lexical_reference_rows(callback: Any, description: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Summary rows (BM25's and the hybrid's nDCG@10 on the run's queries, and the model as given's and the trained
    model's change against each, with its interval over the queries) and their record for ``run_summary.json``."""
    from st_infocse.evaluation import UnitScores, unit_change, x100

    rows: dict[str, str] = {}
    record: dict[str, Any] = {"settings": description}
    for name, scores in (callback.references or {}).items():
        reference, mean = UnitScores("queries", scores), sum(scores.values()) / len(scores)
        start, end = (unit_change(reference, UnitScores("queries", own)) for own in (callback.start, callback.end))
        label = "BM25 on your queries" if name == "BM25" else "hybrid (BM25 + the model as given)"
        rows[label] = f"{x100(mean)}; the model as given against it {start.describe()}; at the last step {end.describe()}"
        record[name] = {"ndcg@10": mean, "start_against_it": start.to_dict(), "end_against_it": end.to_dict()}
    return rows, record
