"""InfoCSE++ (paper 002 section 3.3): IDC rounds on unlabelled documents alternated with supervised fine-tuning on a
small labelled pair set, keeping the model that scores best on the labelled validation set."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from st_infocse.files import check_at_least
from st_infocse.mining.round_results import CycleStats, PlusPlusResult
from st_infocse.mining.rounds import (
    Evaluator,
    LossFactory,
    reiterable,
    score_model,
    train_idc_rounds,
    train_round,
)
from st_infocse.training.snapshot import weights_snapshot
from st_infocse.training.start_end import is_better

logger = logging.getLogger(__name__)


def train_infocse_plus_plus(
    model: SentenceTransformer,
    documents: Iterable[Any] | Callable[[], Iterable[Any]],
    labelled_pairs: Dataset,
    evaluator: Evaluator,
    idc_loss_factory: LossFactory,
    supervised_loss_factory: LossFactory = MultipleNegativesRankingLoss,
    *,
    cycles: int = 3,
    idc_rounds: int = 2,
    initial_annotation: Literal["model", "adjacent"] = "model",
    patience: int = 1,
    min_delta: float = 0.0,
    idc_training_args: dict[str, Any] | None = None,
    supervised_training_args: dict[str, Any] | None = None,
    mining_kwargs: dict[str, Any] | None = None,
    idc_evaluator: Evaluator | None | Literal["same"] = "same",
    output_dir: str | Path | None = None,
    seed: int = 0,
) -> PlusPlusResult:
    """InfoCSE++: alternate IDC rounds on unlabelled documents with supervised fine-tuning.

    Each cycle runs :func:`train_idc_rounds` from the current model, then fine-tunes on
    ``labelled_pairs`` and scores the result on the labelled validation ``evaluator``. The loop
    stops when that score has not improved for ``patience`` cycles; the best-scoring weights
    (the model as given included) are loaded back into ``model``.

    Args:
        model: The model, trained in place.
        documents: Unlabelled documents, as for :func:`train_idc_rounds`.
        labelled_pairs: The few-shot training pairs; columns in the order the supervised loss
            expects (``anchor``, ``positive`` for ``MultipleNegativesRankingLoss``).
        evaluator: Validation on labelled data (sentence-transformers evaluator or ``model -> float``).
        idc_loss_factory: Loss for the IDC rounds.
        supervised_loss_factory: Loss for fine-tuning (default ``MultipleNegativesRankingLoss``).
        cycles: Maximum number of IDC + fine-tuning cycles.
        idc_rounds: Maximum IDC rounds per cycle.
        initial_annotation: First annotation of the first cycle (later cycles mine with the
            fine-tuned model, as the paper's Figure 3).
        patience: Cycles without improvement before stopping.
        min_delta: Improvement smaller than this does not count.
        idc_training_args: Trainer arguments for IDC rounds (see :func:`train_idc_rounds`).
        supervised_training_args: Trainer arguments for fine-tuning.
        mining_kwargs: Arguments for :func:`mine_pairs` (``similarity`` included).
        idc_evaluator: Early stopping inside the IDC rounds: ``"same"`` uses ``evaluator``,
            ``None`` runs all ``idc_rounds``.
        output_dir: Where each cycle's artefacts go; a temporary folder when omitted.
        seed: Seed for training and mining.

    Returns:
        :class:`PlusPlusResult` with per-cycle IDC statistics and validation scores.

    Example:
        >>> result = train_infocse_plus_plus(  # doctest: +SKIP
        ...     model, docs, few_labelled_pairs, dev_evaluator, MultipleNegativesRankingLoss, cycles=3
        ... )
        >>> result.best_cycle, result.best_score  # doctest: +SKIP
    """
    check_at_least("cycles", cycles)  # the rest is checked by the first cycle's rounds, before anything trains
    if len(labelled_pairs) == 0:
        raise ValueError("labelled_pairs is empty")
    fresh_documents = reiterable(documents, cycles * idc_rounds)
    inner_evaluator = evaluator if idc_evaluator == "same" else idc_evaluator
    greater = bool(getattr(evaluator, "greater_is_better", True))
    folder = tempfile.TemporaryDirectory(prefix="infocse-pp-") if output_dir is None else contextlib.nullcontext(output_dir)
    with folder as path:  # the caller's folder, or a temporary one removed at the end
        root = Path(path)
        initial_score, _ = score_model(evaluator, model)
        best_score, best_cycle, best_state = initial_score, 0, weights_snapshot(model)
        stats: list[CycleStats] = []
        stale, stopped_early = 0, False
        for number in range(1, cycles + 1):
            cycle_dir = root / f"cycle-{number}"
            idc = train_idc_rounds(
                model,
                fresh_documents,
                idc_loss_factory,
                rounds=idc_rounds,
                initial_annotation=initial_annotation if number == 1 else "model",
                evaluator=inner_evaluator,
                patience=patience,
                min_delta=min_delta,
                training_args=idc_training_args,
                mining_kwargs=mining_kwargs,
                output_dir=cycle_dir / "idc",
                seed=seed + number,
            )
            loss = train_round(
                model,
                labelled_pairs,
                supervised_loss_factory(model),
                supervised_training_args,
                cycle_dir / "finetune",
                seed + number,
            )
            score, _ = score_model(evaluator, model)
            improved = is_better(score, best_score, greater, min_delta)
            if improved:
                best_score, best_cycle, best_state, stale = score, number, weights_snapshot(model), 0
            else:
                stale += 1
            stats.append(CycleStats(number, idc, loss, score, improved))
            logger.info(
                "InfoCSE++ cycle %d: IDC rounds %d (best %d), fine-tuned score %.4f%s",
                number,
                len(idc.rounds),
                idc.best_round,
                score,
                " (best)" if improved else " (no improvement)",
            )
            if stale >= patience and number < cycles:
                stopped_early = True
                break
        if best_cycle != len(stats):
            model.load_state_dict(best_state, strict=False)
            logger.info("InfoCSE++: restored the weights of cycle %d (score %.4f)", best_cycle, best_score)
        return PlusPlusResult(model, stats, initial_score, best_cycle, best_score, stopped_early)
