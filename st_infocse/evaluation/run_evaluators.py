"""What a training run is measured with: STS-B dev, the user's own retrieval folder, or both, and which metric
chooses the checkpoint (:func:`run_evaluation`); and BM25's and the hybrid's reference lines beside the retrieval
scores, set against the model as given and the last evaluation (:class:`LexicalReferenceCallback`).

The evaluators are the library's own (:func:`~st_infocse.evaluation.stsb_dev_evaluator`,
:func:`~st_infocse.evaluation.retrieval_evaluator`), the references the retrieval evaluator's own
(:meth:`~st_infocse.evaluation.RetrievalEvaluator.lexical_references`) and each change the paired test's
(:func:`~st_infocse.evaluation.unit_change`), so a run scores what ``st-infocse evaluate`` scores.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainerCallback

from st_infocse.files import InputError

from ._format import x100
from .at_length import AtLengthEvaluator
from .bm25_language import BM25_NEEDS
from .lexical import LexicalSettings
from .paired import UnitScores, unit_change
from .retrieval_folder import retrieval_evaluator, retrieval_metric_keys
from .sts import STSB_DEV_METRIC, stsb_dev_evaluator


@dataclass
class RunEvaluation:
    """The evaluator a run trains with (None: nothing to measure).

    Attributes:
        labels: Trainer metric key -> the name printed.
        notes: Lines for the start-up summary.
        retrieval: The retrieval evaluator among them, if any.
        retrieval_chooses: Whether retrieval nDCG@10 chooses the checkpoint (:meth:`for_model`).
        references: BM25's and the hybrid's reference lines beside retrieval (:class:`LexicalReferenceCallback`).
    """

    evaluator: Any = None
    labels: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    retrieval: Any = None
    retrieval_chooses: bool = False
    references: LexicalReferenceCallback | None = None

    def for_model(self, model: Any, training_args: Any, own_length: int | None = None) -> None:
        """Name the retrieval metrics as the trainer will log them for ``model`` (its similarity function is in the
        key), with ``retrieval_chooses`` let retrieval nDCG@10 choose the checkpoint in ``training_args``, and score
        at the model's own length (:class:`~st_infocse.evaluation.AtLengthEvaluator`) when it trains at another.

        Args:
            model: The SentenceTransformer about to be trained, at its training length.
            training_args: Its training arguments: ``metric_for_best_model`` and ``greater_is_better`` are set.
            own_length: The length the model is saved with (``LoadedModel.own_length``); None: the training length.
        """
        if self.evaluator is not None and own_length is not None and own_length != model.max_seq_length:
            self.evaluator = AtLengthEvaluator(self.evaluator, own_length)
            self.notes["evaluated at"] = f"the model's own {own_length} tokens (training at {model.max_seq_length})"
        if self.retrieval is not None:
            keys = retrieval_metric_keys(self.retrieval, model.similarity_fn_name)
            self.labels.update({keys["ndcg@10"]: "retrieval nDCG@10", keys["recall@100"]: "retrieval Recall@100"})
            if self.retrieval_chooses:
                training_args.metric_for_best_model, training_args.greater_is_better = keys["ndcg@10"], True
        if self.evaluator is not None and training_args.metric_for_best_model:
            self.notes["checkpoint metric"] = training_args.metric_for_best_model


def run_evaluation(stsb_dev: Any = None, eval_retrieval: Any = None, *, split: str | None = None,
                   max_corpus: int | None = 10_000, seed: int = 0, retrieval_chooses: bool = True,
                   lexical: LexicalSettings | None = None) -> RunEvaluation:
    """A run's evaluators, built before the model loads: STS-B dev, the user's own retrieval folder, or both (then
    a ``SequentialEvaluator`` whose primary metric is retrieval's).

    Args:
        stsb_dev: STS-B dev as :func:`~st_infocse.evaluation.stsb_dev_evaluator` reads it (``"hub"``, a SentEval
            folder, a sentence1/sentence2/score file, loaded pairs), or None for none.
        eval_retrieval: Your own retrieval set, a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv;
            :func:`~st_infocse.evaluation.retrieval_evaluator`): nDCG@10 and Recall@100 before, during and after
            training; it chooses the checkpoint unless the trainer is given its own ``metric_for_best_model``.
        split: Its qrels split (default: dev, else test).
        max_corpus: Its corpus cap: every judged document plus a ``seed`` sample of the rest (None: no cap).
        seed: The corpus sample's seed.
        retrieval_chooses: Let retrieval nDCG@10 choose the checkpoint (:meth:`RunEvaluation.for_model`).
        lexical: BM25's settings for ``references`` beside ``eval_retrieval`` (without bm25s and PyStemmer: a note).

    Raises:
        InputError: Starting with the argument's name and a colon (``stsb_dev: ...``, ``eval_retrieval: ...``), so
            that a caller can put its own name for it first; the hub's STS-B dev unreachable names what needs no
            network.
    """
    run = RunEvaluation()
    evaluators = []
    if stsb_dev is not None:
        try:
            evaluators.append(stsb_dev_evaluator(stsb_dev))
        except (OSError, RuntimeError, InputError) as exc:  # RuntimeError: the hub copy could not be fetched
            raise InputError(f"stsb_dev: cannot load STS-B dev from {stsb_dev}: {exc}".splitlines()[0]) from exc
        run.labels[STSB_DEV_METRIC] = "STS-B dev"
    if eval_retrieval:
        try:
            run.retrieval, info = retrieval_evaluator(eval_retrieval, split, max_corpus=max_corpus, seed=seed)
        except InputError as exc:
            raise InputError(f"eval_retrieval: {exc}") from exc
        evaluators.append(run.retrieval)  # last: with STS-B dev beside it, it is the evaluator's primary metric
        run.notes["retrieval set"] = info.describe()
        run.retrieval_chooses = retrieval_chooses
        if lexical is not None:  # bm25s and PyStemmer are optional: missing, a note says what to install
            needed = ("bm25s", "Stemmer") if lexical.stem else ("bm25s",)  # the stemmer only where it stems
            installed = all(importlib.util.find_spec(module) for module in needed)
            run.notes["BM25 beside the scores"] = lexical.describe() if installed else f"not scored: needs {BM25_NEEDS}"
            run.references = LexicalReferenceCallback(run.retrieval, lexical) if installed else None
    if len(evaluators) > 1:
        from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

        run.evaluator = SequentialEvaluator(evaluators)
    elif evaluators:
        run.evaluator = evaluators[0]
    return run


class LexicalReferenceCallback(TrainerCallback):
    """Scores BM25 and the hybrid of BM25 with the model as given on a retrieval evaluator's queries once the start
    has been evaluated, and keeps the start's and the last evaluation's per-query scores to set beside them
    (:meth:`rows`). Add it after the :class:`~st_infocse.training.StartEndCallback`, whose start evaluation leaves
    the start's hits in the evaluator.

    Args:
        retrieval: The run's :class:`~st_infocse.evaluation.RetrievalEvaluator`.
        settings: BM25's tokenisation and the hybrid's fusion.
    """

    def __init__(self, retrieval: Any, settings: LexicalSettings) -> None:
        self.retrieval, self.settings = retrieval, settings
        self.references: dict[str, dict[str, float]] | None = None
        self.start: dict[str, float] | None = None
        self.end: dict[str, float] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.references = self.retrieval.lexical_references(self.settings)
        self.start = self.end = dict(self.retrieval.per_query)

    def on_evaluate(self, args, state, control, **kwargs):
        if self.retrieval.per_query is not None:
            self.end = dict(self.retrieval.per_query)

    def rows(self) -> tuple[dict[str, str], dict[str, Any]]:
        """Summary rows (BM25's and the hybrid's nDCG@10 on the run's queries, and the model as given's and the
        trained model's change against each, with its interval over the queries) and their record for
        ``run_summary.json``."""
        rows: dict[str, str] = {}
        record: dict[str, Any] = {"settings": self.settings.describe()}
        for name, scores in (self.references or {}).items():
            reference, mean = UnitScores("queries", scores), sum(scores.values()) / len(scores)
            start, end = (unit_change(reference, UnitScores("queries", own)) for own in (self.start, self.end))
            label = "BM25 on your queries" if name == "BM25" else "hybrid (BM25 + the model as given)"
            rows[label] = (f"{x100(mean)}; the model as given against it {start.describe()}; at the last step "
                           f"{end.describe()}")
            record[name] = {"ndcg@10": mean, "start_against_it": start.to_dict(), "end_against_it": end.to_dict()}
        return rows, record
