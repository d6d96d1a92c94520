"""The mutually reinforced loop (paper 002 Alg. 1); InfoCSE++ (section 3.3), which runs it between supervised
fine-tunings, is in :mod:`st_infocse.mining.plus_plus`.

Round ``t`` mines pairs with model ``t`` (or takes adjacent sentences in the first round),
trains model ``t + 1`` on them with a fresh loss from the caller's factory, and scores it on the
validation evaluator; the loop stops after ``patience`` rounds without improvement and puts the
best weights back.

Nothing here imports a loss from this package: callers pass a loss factory
(``Callable[[SentenceTransformer], nn.Module]``), e.g. ``lambda m: InfoCSELoss(m, lambda_=1e-5)``.
"""

from __future__ import annotations

import contextlib
import logging
import random
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
from torch import nn

from st_infocse.evaluation import PairedChange, paired_changes, primary_unit_key, unit_scores
from st_infocse.evaluation.paired import GAIN
from st_infocse.files import InputError, check_at_least, check_choice, check_range
from st_infocse.mining.graph import Similarity
from st_infocse.mining.idc import READING_ARGUMENTS, adjacent_pairs, mine_pairs
from st_infocse.mining.round_results import RoundsResult, RoundStats, holm_over_rounds
from st_infocse.mining.sampler import DocumentAwareBatchSampler
from st_infocse.training.anchor import toward_start
from st_infocse.training.builder import build_trainer, load_model
from st_infocse.training.snapshot import weights_snapshot
from st_infocse.training.start_end import check_keep_rule, is_better

logger = logging.getLogger(__name__)

LossFactory = Callable[[SentenceTransformer], nn.Module]
Evaluator = Callable[[SentenceTransformer], "float | dict[str, float]"]

# Paper 002 Table 5 (lr 2e-5) with one epoch per round; report_to/save off so a round writes nothing.
DEFAULT_TRAINING_ARGS: dict[str, Any] = {
    "num_train_epochs": 1,
    "per_device_train_batch_size": 64,
    "learning_rate": 2e-5,
    "warmup_steps": 0.1,
    "save_strategy": "no",
    "report_to": "none",
    "logging_strategy": "no",
}
#: Trainer arguments a round refuses: the rounds evaluate after each round and keep the best one themselves.
ROUNDS_OWN_TRAINER_ARGS = ("eval_strategy", "eval_steps", "eval_delay", "load_best_model_at_end",
                           "metric_for_best_model", "greater_is_better", "resume_from_checkpoint")


def round_training_args(training_args: SentenceTransformerTrainingArguments, given: Collection[str] = (),
                        learning_rate_mapping: dict[str, float] | None = None) -> dict[str, Any]:
    """The ``training_args`` of :func:`train_idc_rounds` from one run's arguments: :data:`DEFAULT_TRAINING_ARGS`, the
    seed, and every argument named in ``given`` but ``output_dir`` (each round has its own folder).

    Args:
        training_args: The run's trainer arguments.
        given: The names of those the user set (the flags given); the others are the rounds' defaults.
        learning_rate_mapping: The loss's own modules' learning rates, unless ``given`` names the mapping.
    """
    names = sorted(set(given) & set(training_args.to_dict()) - {"output_dir"})  # to_dict: its init arguments
    chosen = {**DEFAULT_TRAINING_ARGS, "seed": training_args.seed, **{n: getattr(training_args, n) for n in names}}
    if learning_rate_mapping and "learning_rate_mapping" not in chosen:
        chosen["learning_rate_mapping"] = learning_rate_mapping
    return chosen


def document_sample(documents: Any, size: int | None, seed: int) -> tuple[Any, str | None]:
    """A ``seed`` sample of ``size`` documents (a list or ``datasets.Dataset``), in their order, and how it was drawn
    for the summaries (None: all of them); the command line's ``--idc_max_docs``."""
    if size is None or len(documents) <= size:
        return documents, None
    kept = sorted(random.Random(seed).sample(range(len(documents)), size))
    chosen = documents.select(kept) if hasattr(documents, "select") else [documents[i] for i in kept]
    return chosen, f"{size:,} of {len(documents):,} (a --seed {seed} sample, --idc_max_docs)"


def reiterable(documents: Any, passes: int) -> Callable[[], Iterable[Any]]:
    """A function giving a fresh pass over the documents; refuses one-shot iterators."""
    if callable(documents) and not hasattr(documents, "__iter__"):
        return documents
    if isinstance(documents, Iterator) and passes > 1:
        raise ValueError(
            "documents is a one-shot iterator but several mining passes are needed: pass a list, a "
            "datasets.Dataset, or a zero-argument callable returning a fresh iterable"
        )
    return lambda: documents


def score_model(evaluator: Any, model: SentenceTransformer) -> tuple[float, dict[str, float]]:
    """The evaluator's primary metric as a float, and every metric it returned."""
    out = evaluator(model)
    if not isinstance(out, dict):
        return float(out), {"score": float(out)}
    key = getattr(evaluator, "primary_metric", None)
    if key is None or key not in out:
        raise ValueError(f"the evaluator returned {sorted(out)} but its primary_metric is {key!r}")
    return float(out[key]), {name: float(value) for name, value in out.items()}


def train_round(model: SentenceTransformer, train_dataset: Dataset, loss: nn.Module, training_args: dict[str, Any] | None,
                output_dir: Path, seed: int, batch_sampler: Any = None) -> float | None:
    kwargs = {**DEFAULT_TRAINING_ARGS, "seed": seed, **(training_args or {})}
    if batch_sampler is not None:
        kwargs["batch_sampler"] = batch_sampler
    kwargs["output_dir"] = str(output_dir)  # one folder per round/cycle, whatever the caller passed
    args = SentenceTransformerTrainingArguments(**kwargs)
    # The package's trainer: the loss's own modules clipped with the model, as a run through the CLI does.
    trainer = build_trainer(model, loss, train_dataset, args)
    output = trainer.train()
    return float(output.training_loss) if output.training_loss is not None else None


def train_idc_rounds(
    model: SentenceTransformer,
    documents: Iterable[Any] | Callable[[], Iterable[Any]],
    loss_factory: LossFactory,
    *,
    rounds: int = 3,
    initial_annotation: Literal["model", "adjacent"] = "model",
    evaluator: Evaluator | None = None,
    patience: int = 1,
    min_delta: float = 0.0,
    training_args: dict[str, Any] | None = None,
    mining_kwargs: dict[str, Any] | None = None,
    document_aware_batches: bool = True,
    output_dir: str | Path | None = None,
    seed: int = 0,
    annotator: SentenceTransformer | str | None = None,
    keep_trained_if: Literal["better", "reliable"] = "better",
    keep_start_if_better: bool = True,
    weight_anchor: float = 1.0,
    trust_remote_code: bool = False,
) -> RoundsResult:
    """Mine -> train -> re-mine for ``rounds`` rounds (paper 002 Alg. 1), stopping at a plateau.

    Args:
        model: The model to train in place; it also does the mining. A model carrying a LoRA adapter
            (:func:`~st_infocse.training.lora.add_lora`) trains and mines as it is: the adapter alone trains, each
            round mines with the adapted model, and the best round is kept by the adapter's weights.
        documents: Re-iterable documents (list, ``datasets.Dataset``) or a zero-argument callable
            returning a fresh iterable each round; any form :func:`mine_pairs` reads.
        loss_factory: Builds the loss for a round from the model, e.g.
            ``MultipleNegativesRankingLoss`` or ``lambda m: InfoCSELoss(m, lambda_=1e-5)``.
            Called once per round (a loss that owns trainable modules should be built so that it
            reuses them across rounds if that is wanted).
        rounds: Maximum number of rounds.
        initial_annotation: ``"model"``: round 1 mines with the model as given (SBERT/SimCSE
            initialisation); ``"adjacent"``: round 1 trains on adjacent sentences (CONPONO-like).
        evaluator: A sentence-transformers evaluator (its ``primary_metric`` and
            ``greater_is_better`` are honoured) or a callable ``model -> float``. Without one,
            all ``rounds`` run and the last weights are kept.
        patience: Stop after this many rounds in a row without improvement.
        min_delta: Improvement smaller than this does not count.
        training_args: Keyword arguments for ``SentenceTransformerTrainingArguments`` overriding
            :data:`DEFAULT_TRAINING_ARGS` (``output_dir`` is set per round).
        mining_kwargs: Keyword arguments for :func:`mine_pairs` (``k``, ``threshold``,
            ``similarity`` (``"cosine"`` or ``"dot"``), ``max_pairs_per_cluster``, ``precision``, ``pool``, ...)
            for every round's mining, the annotator's included; ``output_dir`` is set per round. Each round's settings
            are in its ``mining`` report.
        document_aware_batches: Use :class:`DocumentAwareBatchSampler` so pairs of one document are
            never in-batch negatives of each other.
        output_dir: Where each round's pairs and trainer output go (``round-N/``); a temporary
            folder when omitted. A Ctrl-C raises ``KeyboardInterrupt`` naming the round it stopped in, and this
            folder, which keeps the rounds finished (a temporary one is removed).
        seed: Training seed (and mining seed unless ``mining_kwargs`` sets one).
        annotator: Another model whose mining gives round 1's pairs (paper 002 Table 3 (5): all-mpnet-base-v2's
            annotations; any backend :func:`mine_pairs` takes, or a folder or hub id that
            :func:`~st_infocse.training.builder.load_model` loads); later rounds mine with the model being trained.
            Only with ``initial_annotation="model"``.
        keep_trained_if: ``"better"``: the best round's weights are kept when they beat the model as given;
            ``"reliable"``: only when their gain on the evaluator's primary metric is reliable over its queries
            (STS pairs), the paired test's 95% interval above zero, else the model as given is restored. Needs
            an evaluator that keeps unit scores (:func:`~st_infocse.evaluation.retrieval_evaluator`,
            :func:`~st_infocse.evaluation.stsb_dev_evaluator`). The change is in ``RoundsResult.changes``; when
            several rounds were judged against the model as given, its p is Holm-adjusted for them
            (:func:`~st_infocse.mining.round_results.holm_over_rounds`) and the rule reads that.
        keep_start_if_better: False: the trained candidate is kept even when no round beat the model as given (the
            best round, else the last); not with ``keep_trained_if="reliable"``, which chooses the start.
        weight_anchor: The share of the change kept after each round's training: the weights that train become
            ``start + share x (trained - start)`` (:func:`~st_infocse.training.toward_start`, the start being the
            model as given), and that is what the round scores and the next round mines with. 1: no anchor.
        trust_remote_code: Allow custom model code for an ``annotator`` given by folder or hub id.

    Returns:
        :class:`RoundsResult` with per-round pair counts, scores and timings.

    Example:
        >>> result = train_idc_rounds(  # doctest: +SKIP
        ...     model, docs, MultipleNegativesRankingLoss, rounds=3, evaluator=sts_dev_evaluator
        ... )
        >>> [(r.round, r.pairs, r.score) for r in result.rounds]  # doctest: +SKIP
    """
    check_at_least("rounds", rounds)
    check_at_least("patience", patience)
    check_choice("initial_annotation", initial_annotation, ("model", "adjacent"))
    check_keep_rule(keep_trained_if, keep_start_if_better)
    check_range("weight_anchor", weight_anchor, (0, 1, False, True))
    if own := sorted(set(training_args or {}) & set(ROUNDS_OWN_TRAINER_ARGS)):
        raise ValueError(f"training_args {', '.join(own)}: the rounds evaluate and keep the best round themselves")
    if annotator is not None and initial_annotation != "model":
        raise ValueError(f"annotator mines round 1, which initial_annotation={initial_annotation!r} does not mine")
    if keep_trained_if == "reliable" and evaluator is None:
        raise ValueError("keep_trained_if='reliable' needs an evaluator that keeps per-query (per-pair) scores")
    fresh_documents = reiterable(documents, rounds)
    mining_kwargs = {"seed": seed, **(mining_kwargs or {})}
    # Checked before any round: when the first round pairs adjacent sentences, a bad value would surface only after
    # it has trained.
    check_choice("similarity", mining_kwargs.get("similarity", "cosine"), Similarity)
    if isinstance(annotator, str):  # mines at its own length, with its own modules
        try:
            annotator = load_model(annotator, trust_remote_code=trust_remote_code).model
        except (OSError, ValueError) as exc:  # named by the argument, for a caller that maps it to its own name
            raise InputError(f"annotator: {exc}".splitlines()[0]) from exc
    greater = bool(getattr(evaluator, "greater_is_better", True))
    folder = tempfile.TemporaryDirectory(prefix="idc-rounds-") if output_dir is None else contextlib.nullcontext(output_dir)
    with folder as path:  # the caller's folder, or a temporary one removed at the end
        root = Path(path)
        initial_score, initial_metrics = score_model(evaluator, model) if evaluator is not None else (None, None)
        initial_units, round_units = unit_scores(evaluator), []
        trained_metrics = initial_metrics
        primary = primary_unit_key(evaluator)
        if keep_trained_if == "reliable" and primary is None:
            raise ValueError(f"keep_trained_if='reliable' needs per-query (per-pair) scores for the evaluator's primary "
                             f"metric {getattr(evaluator, 'primary_metric', None)!r}, which it does not keep")
        best_metrics = initial_metrics
        if initial_score is not None:
            logger.info("IDC rounds: initial score %.4f", initial_score)
        best_score, best_round = initial_score, 0
        initial_state = weights_snapshot(model) if evaluator is not None or weight_anchor < 1 else None
        best_state = initial_state if evaluator is not None else None  # a later best round replaces it, not its contents
        stats: list[RoundStats] = []
        stale, stopped_early = 0, False
        try:
            for number in range(1, rounds + 1):
                round_dir = root / f"round-{number}"
                t0 = time.perf_counter()
                # Pairs go to disk (memory-mapped) so a large corpus's pairs need not fit in memory.
                pairs_dir = round_dir / "pairs"
                if number == 1 and initial_annotation == "adjacent":
                    # the reading arguments apply to adjacent-sentence pairs too; the output folder is this round's
                    prepare = {key: mining_kwargs[key] for key in READING_ARGUMENTS if key in mining_kwargs}
                    prepare.pop("output_dir", None)
                    pairs, report = adjacent_pairs(fresh_documents(), output_dir=pairs_dir, **prepare)
                    annotation = "adjacent"
                else:
                    miner = annotator if number == 1 and annotator is not None else model
                    pairs, report = mine_pairs(fresh_documents(), miner, **{**mining_kwargs, "output_dir": pairs_dir})
                    annotation = "idc (annotator)" if miner is not model else "idc"
                mining_seconds = time.perf_counter() - t0
                if report.pairs == 0:
                    raise ValueError(f"round {number}: no pairs to train on ({report.summary()})")
                sampler = DocumentAwareBatchSampler.for_pairs(pairs) if document_aware_batches else None
                t1 = time.perf_counter()
                loss = train_round(model, pairs.select_columns(["anchor", "positive"]), loss_factory(model),
                                   training_args, round_dir / "trainer", seed, sampler)
                if weight_anchor < 1:  # back toward the model as given, before the round is scored or mines
                    current = model.state_dict()
                    model.load_state_dict(toward_start(initial_state, {k: current[k] for k in initial_state},
                                                       weight_anchor), strict=False)
                training_seconds = time.perf_counter() - t1
                score, metrics = score_model(evaluator, model) if evaluator is not None else (None, None)
                improved = None
                if score is not None:
                    round_units.append(unit_scores(evaluator))
                    improved = is_better(score, best_score, greater, min_delta)
                    if improved or best_round == 0:  # the trained candidate: the best round, else the latest
                        trained_metrics, candidate = metrics, number
                    if improved:
                        best_state, stale = weights_snapshot(model), 0
                        best_score, best_round, best_metrics = score, number, metrics
                    else:
                        stale += 1
                stats.append(RoundStats(
                    round=number, annotation=annotation, pairs=report.pairs, train_loss=loss, score=score,
                    pairs_per_document=report.pairs_per_document, documents_used=report.documents_used,
                    skipped={k: v for k, v in report.skipped.items() if v}, improved=improved,
                    mining_seconds=mining_seconds, training_seconds=training_seconds, mining=report.to_dict()))
                logger.info("IDC round %d (%s): %d pairs (%.2f/document), loss %s, score %s%s", number, annotation,
                            report.pairs, report.pairs_per_document, "n/a" if loss is None else f"{loss:.4f}",
                            "n/a" if score is None else f"{score:.4f}",
                            "" if improved is None else (" (best)" if improved else " (no improvement)"))
                if stale >= patience and number < rounds:
                    stopped_early = True
                    logger.info("IDC rounds: no improvement for %d round(s), stopping after round %d", stale, number)
                    break
        except KeyboardInterrupt:  # in a round, mining or training: the rounds finished keep their pairs and reports
            kept = f", their pairs and reports in {root}" if output_dir is not None else ""  # a temporary one goes
            raise KeyboardInterrupt(f"interrupted in IDC's round {len(stats) + 1} of {rounds} ({len(stats)} finished"
                                    f"{kept}); no round kept or saved") from None
        if best_state is not None and best_round == 0 and not keep_start_if_better:  # the latest round, kept
            best_round, best_score, best_metrics = len(stats), stats[-1].score, trained_metrics
        if best_state is not None and best_round != len(stats):
            model.load_state_dict(best_state, strict=False)
            logger.info("IDC rounds: restored the weights of round %d (score %.4f)", best_round, best_score)
        if best_state is None:
            best_round = len(stats)
        # every round judged against the start on the same units: each p Holm-adjusted for the rounds judged
        raw = [paired_changes(initial_units, units, seed=seed) for units in round_units]
        judged = holm_over_rounds(raw)
        for stat, own, adjusted in zip(stats if judged else [], raw, judged, strict=True):
            stat.change = own.get(primary) if primary else None
            stat.p_holm = adjusted[primary].p if primary in adjusted else None
        changes = judged[candidate - 1] if judged else {}
        change: PairedChange | None = changes.get(primary) if primary else None
        if keep_trained_if == "reliable" and best_round and not (change is not None and change.verdict == GAIN):
            model.load_state_dict(initial_state, strict=False)
            logger.info("IDC rounds: round %d's gain is not reliable (%s); restored the model as given", best_round,
                        change.describe() if change else "no per-query scores")
            best_round, best_score, best_metrics = 0, initial_score, initial_metrics
        return RoundsResult(model, stats, initial_score, best_round, best_score, stopped_early, initial_metrics,
                            best_metrics, trained_metrics, changes, keep_trained_if, len(round_units))

