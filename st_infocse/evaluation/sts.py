"""The papers' STS table: Spearman x100 of cosine similarity on STS12-16, STS-B test and SICK-R test.

STS12-16 use SentEval's "all" setting: one Spearman over all subsets concatenated. mteb's STS12-16 test sets
are those same concatenations (3,108 / 1,500 / 3,750 / 3,000 / 1,186 pairs), so mteb's published per-task
``cosine_spearman`` is the "all" number. The metric is computed the way sentence-transformers'
``EmbeddingSimilarityEvaluator`` and mteb compute it (``pairwise_cos_sim`` then ``scipy.stats.spearmanr``);
only the encoding is shared: every unique sentence of the suite goes through one length-sorted
``model.encode`` call.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy.stats import ConstantInputWarning, spearmanr

from .encoding import model_name
from .loaders import STS_TASKS, PathLike, STSPairs, canonical_sts_name, load_sts
from .results import TaskTableResult
from .scored_units import PairScoredSimilarityEvaluator

logger = logging.getLogger(__name__)

#: Key under which ``SentenceTransformerTrainer`` logs :func:`stsb_dev_evaluator`'s score (default name).
STSB_DEV_METRIC = "eval_sts-dev_spearman_cosine"


@dataclass
class STSTaskResult:
    """One STS task's scores.

    Attributes:
        name: Task name.
        spearman: Spearman x100 of cosine similarity against the gold scores (the papers' number).
        pearson: Pearson x100, for reference.
        n_pairs: Number of scored pairs.
        source: Where the data came from.
        split: The split.
        note: E.g. which SICK-R split, or "all subsets concatenated".
        subset_spearman: Spearman x100 per SentEval subset (their plain mean is SentEval's "mean" setting).
        gold, similarities: Each pair's gold score and cosine similarity, in order (not written to JSON): what a
            paired comparison of two models resamples (:func:`~st_infocse.evaluation.compare_results`).
    """

    name: str
    spearman: float
    pearson: float
    n_pairs: int
    source: str
    split: str
    note: str = ""
    subset_spearman: dict[str, float] = field(default_factory=dict)
    gold: tuple[float, ...] = field(default=(), repr=False)
    similarities: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spearman": self.spearman,
            "pearson": self.pearson,
            "n_pairs": self.n_pairs,
            "source": self.source,
            "split": self.split,
            "note": self.note,
            "subset_spearman": self.subset_spearman,
        }


@dataclass
class STSResult(TaskTableResult):
    """Scores of one model on several STS tasks; ``print()`` shows the papers' table row (``to_markdown()`` the same
    as markdown; :func:`~st_infocse.evaluation.sts_markdown` for several models).

    Attributes:
        model: Model name for the row.
        tasks: Task name -> :class:`STSTaskResult`, in column order.
        seconds: Wall time of the evaluation (encoding included).
        n_sentences: Unique sentences encoded.
    """

    n_sentences: int = 0
    score_field: ClassVar[str] = "spearman"

    def notes(self) -> list[str]:
        """Where the numbers come from: tasks sharing a note on one line, then the data source(s)."""
        groups: dict[str, list[str]] = {}
        for name, task in self.tasks.items():
            if task.note:
                groups.setdefault(task.note, []).append(name)
        lines = [f"{', '.join(names)}: {note}" for note, names in groups.items()]
        kinds = {t.source.split(":", 1)[0] for t in self.tasks.values()}
        paths = [t.source.split(":", 1)[1] for t in self.tasks.values() if ":" in t.source]
        if kinds == {"senteval"} and len(paths) == len(self.tasks):
            lines.append(f"data: SentEval folder {_common_folder(paths)}")
        elif kinds == {"mteb"}:
            lines.append("data: mteb tasks (Hugging Face hub)")
        else:
            lines += [f"{name} data: {t.source}" for name, t in self.tasks.items()]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"n_sentences": self.n_sentences}

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(f"  {note}" for note in self.notes())])


def _common_folder(paths: Sequence[str]) -> str:
    common = Path(os.path.commonpath(paths))
    # a single task's source is a file or a task folder; show the SentEval root rather than STS/
    return str(common.parent if common.name in ("STS", "SICK") or common.suffix else common)


def _spearman_x100(gold: Sequence[float], predicted: Sequence[float]) -> float:
    """Spearman x100 as sentence-transformers' ``EmbeddingSimilarityEvaluator`` computes it (NaN when a side is
    constant: a collapsed model), for a SentEval subset."""
    if len(set(gold)) < 2 or len(set(np.asarray(predicted).tolist())) < 2:
        return float("nan")  # what scipy returns, without its warning
    return float(spearmanr(gold, predicted).statistic) * 100


def _score(pairs: STSPairs, model: Any, batch_size: int, show_progress_bar: bool | None) -> STSTaskResult:
    """One task scored by sentence-transformers' ``EmbeddingSimilarityEvaluator`` (cosine), through the subclass that
    keeps each pair's similarity (:class:`~st_infocse.evaluation.PairScoredSimilarityEvaluator`): its Spearman and
    Pearson, and the subsets' Spearman from the same similarities."""
    evaluator = PairScoredSimilarityEvaluator(
        list(pairs.sentences1), list(pairs.sentences2), [float(x) for x in pairs.scores], batch_size=batch_size,
        main_similarity="cosine", similarity_fn_names=["cosine"], name=pairs.name,
        show_progress_bar=bool(show_progress_bar),
    )
    with warnings.catch_warnings():  # a collapsed model's constant similarities: NaN, said by the report
        warnings.simplefilter("ignore", category=ConstantInputWarning)
        metrics = evaluator(model)
    cosine = np.asarray(evaluator.similarities, dtype=np.float64)
    gold = np.asarray(pairs.scores, dtype=np.float64)
    subsets: dict[str, float] = {}
    if len(pairs.subsets) > 1:
        start = 0
        for subset, size in pairs.subsets.items():
            subsets[subset] = _spearman_x100(gold[start : start + size], cosine[start : start + size])
            start += size
    return STSTaskResult(
        name=pairs.name,
        spearman=100 * float(metrics[f"{pairs.name}_spearman_cosine"]),
        pearson=100 * float(metrics[f"{pairs.name}_pearson_cosine"]),
        n_pairs=len(pairs),
        source=pairs.source,
        split=pairs.split,
        note=pairs.note,
        subset_spearman=subsets,
        gold=tuple(gold.tolist()),
        similarities=tuple(cosine.tolist()),
    )


def evaluate_sts(
    model: Any,
    datasets: STSPairs | Sequence[STSPairs],
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    model_label: str | None = None,
) -> STSResult:
    """Spearman x100 of cosine similarity on already loaded STS datasets.

    Args:
        model: A ``SentenceTransformer``.
        datasets: One or more :class:`STSPairs`, each scored by sentence-transformers'
            ``EmbeddingSimilarityEvaluator`` (cosine Spearman; NaN, printed "collapsed", when the model's similarities
            are constant).
        batch_size: Encoding batch size.
        show_progress_bar: ``None``: shown for 1,000+ unique sentences.
        model_label: Row label (default: inferred from the model).

    Returns:
        The scores, one entry per dataset.

    Example:
        >>> from st_infocse.evaluation import STSPairs, evaluate_sts
        >>> pairs = STSPairs("toy", ["a cat", "a dog", "a car"], ["a cat sat", "a dog ran", "the sea"],
        ...                  [5.0, 4.0, 0.0], source="hand-made")
        >>> print(evaluate_sts(model, pairs))  # doctest: +SKIP
    """
    if isinstance(datasets, STSPairs):
        datasets = [datasets]
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate task names: {names}")
    start = time.perf_counter()
    texts = [s for d in datasets for s in (*d.sentences1, *d.sentences2)]
    results = {pairs.name: _score(pairs, model, batch_size, show_progress_bar) for pairs in datasets}
    return STSResult(
        model=model_label or model_name(model),
        tasks=results,
        seconds=time.perf_counter() - start,
        n_sentences=len(set(texts)),
    )


def evaluate_sts_suite(
    model: Any,
    source: PathLike | Mapping[str, PathLike | STSPairs] = "mteb",
    tasks: Sequence[str] = STS_TASKS,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    model_label: str | None = None,
) -> STSResult:
    """The papers' STS table row (STS12-16 "all", STS-B test, SICK-R test) in one call.

    Args:
        model: A ``SentenceTransformer``.
        source: ``"mteb"`` (online; note mteb's SICK-R is all 9,927 SICK pairs), a SentEval ``data/downstream``
            folder (offline; SICK-R is the 4,927-pair test split), or a mapping task -> file/folder/STSPairs
            for local jsonl/csv/Hugging Face data.
        tasks: Which tasks, in column order.
        batch_size: Encoding batch size.
        show_progress_bar: ``None``: shown for 1,000+ unique sentences.
        model_label: Row label.

    Returns:
        The scores; ``print(result)`` shows the table row and where each number comes from.

    Example:
        >>> from sentence_transformers import SentenceTransformer
        >>> model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> print(evaluate_sts_suite(model, "../shared/data/senteval"))  # doctest: +SKIP
        Model             STS12  STS13  STS14  STS15  STS16  STS-B  SICK-R   Avg.
        all-MiniLM-L6-v2  72.36  80.60  75.60  85.39  78.99  82.03   77.15  78.87
    """
    loaded = []
    for task in tasks:
        name = canonical_sts_name(task)
        if isinstance(source, Mapping):
            if name not in source and task not in source:
                raise KeyError(f"no source given for task {task!r} (have: {', '.join(source)})")
            item = source[name] if name in source else source[task]
            pairs = replace(load_sts(item, task=name), name=name)
        else:
            pairs = load_sts(source if source == "mteb" else Path(source), task=name)
        loaded.append(pairs)
    return evaluate_sts(model, loaded, batch_size, show_progress_bar, model_label)


def stsb_dev_evaluator(
    source: PathLike | STSPairs = "hub",
    name: str = "sts-dev",
    split: str = "dev",
    batch_size: int = 64,
    show_progress_bar: bool = False,
) -> Any:
    """STS-B dev Spearman for ``SentenceTransformerTrainer`` (checkpoint selection as in all four papers).

    Returns sentence-transformers' own ``EmbeddingSimilarityEvaluator`` (keeping each pair's similarity,
    :class:`~st_infocse.evaluation.PairScoredSimilarityEvaluator`) with cosine as the main similarity, so
    the trainer logs ``eval_{name}_spearman_cosine`` (:data:`STSB_DEV_METRIC` for the default name); pass that
    as ``metric_for_best_model`` with ``load_best_model_at_end=True`` and ``eval_strategy="steps"``.

    Args:
        source: ``"hub"`` (``sentence-transformers/stsb`` validation split from the Hugging Face hub), a SentEval
            folder, a jsonl/csv file or Hugging Face folder with sentence1/sentence2/score, or loaded STSPairs.
        name: Evaluator name (prefix of the logged metric).
        split: Split to read from a SentEval or Hugging Face folder.
        batch_size: Encoding batch size.
        show_progress_bar: Progress bar while evaluating.

    Returns:
        An ``EmbeddingSimilarityEvaluator``.

    Example:
        >>> from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        >>> evaluator = stsb_dev_evaluator("../shared/data/senteval")  # doctest: +SKIP
        >>> args = SentenceTransformerTrainingArguments(  # doctest: +SKIP
        ...     "out", eval_strategy="steps", eval_steps=125, save_steps=125,
        ...     load_best_model_at_end=True, metric_for_best_model=STSB_DEV_METRIC)
        >>> trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train,  # doctest: +SKIP
        ...                                      loss=loss, evaluator=evaluator)
    """
    from .scored_units import PairScoredSimilarityEvaluator

    if isinstance(source, str) and source == "hub":
        import datasets

        try:
            ds = datasets.load_dataset("sentence-transformers/stsb", split="validation")
        except Exception as exc:  # hub errors come in many types
            raise RuntimeError(
                f"could not load sentence-transformers/stsb from the Hugging Face hub ({type(exc).__name__}); "
                "offline? pass a SentEval folder or a local sentence1/sentence2/score file as the source"
            ) from exc
        pairs = STSPairs("STS-B", list(ds["sentence1"]), list(ds["sentence2"]), list(ds["score"]), "hub", "dev")
    else:
        pairs = load_sts(source, task="STS-B", split=split)
    evaluator = PairScoredSimilarityEvaluator(
        pairs.sentences1,
        pairs.sentences2,
        pairs.scores,
        batch_size=batch_size,
        main_similarity="cosine",
        name=name,
        show_progress_bar=show_progress_bar,
    )
    # known before the first evaluation, so callers can read it when building TrainingArguments
    evaluator.primary_metric = f"{name}_spearman_cosine"
    return evaluator
