"""The papers' STS table: Spearman x100 of cosine similarity on STS12-16, STS-B test and SICK-R test.

STS12-16 use SentEval's "all" setting: one Spearman over all subsets concatenated, which is what mteb's STS12-16 test
sets hold, so mteb's per-task ``cosine_spearman`` is the "all" number. Each task is scored by sentence-transformers'
``EmbeddingSimilarityEvaluator`` (``pairwise_cos_sim`` then ``scipy.stats.spearmanr``, as mteb computes it).
"""

from __future__ import annotations

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
from .paired import UnitScores
from .results import TaskTableResult
from .scored_units import PairScoredSimilarityEvaluator

_STSB_DEV_NAME = "sts-dev"
#: Key under which ``SentenceTransformerTrainer`` logs :func:`stsb_dev_evaluator`'s score (default name).
STSB_DEV_METRIC = f"eval_{_STSB_DEV_NAME}_spearman_cosine"


@dataclass
class STSTaskResult:
    """One STS task's scores.

    Attributes:
        spearman: Spearman x100 of cosine similarity against the gold scores (the papers' number); ``pearson`` too.
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
        return {key: value for key, value in self.__dict__.items() if key not in ("name", "gold", "similarities")}

    def units(self) -> UnitScores:
        """Each pair's gold score and similarity, for a paired comparison."""
        return UnitScores("pairs", gold=self.gold, similarities=self.similarities)


@dataclass
class STSResult(TaskTableResult):
    """One model's :class:`STSTaskResult` by task name, in column order; ``print()`` shows the papers' table row
    and where each number comes from (:func:`~st_infocse.evaluation.sts_markdown` for several models).

    Example:
        >>> task = STSTaskResult("STS-B", 80.0, 79.5, 1379, "mteb:STSBenchmark", "test")
        >>> print(STSResult("my-model", {"STS-B": task}))
        Model     STS-B   Avg.
        my-model  80.00  80.00
          data: mteb tasks (Hugging Face hub)
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


def _score(pairs: STSPairs, model: Any, batch_size: int, show_progress_bar: bool | None) -> STSTaskResult:
    """One task scored by :class:`~st_infocse.evaluation.PairScoredSimilarityEvaluator` (cosine), the subsets'
    Spearman from the same similarities."""
    evaluator = PairScoredSimilarityEvaluator(  # main_similarity alone: the evaluator computes that similarity only
        list(pairs.sentences1), list(pairs.sentences2), [float(x) for x in pairs.scores], batch_size=batch_size,
        main_similarity="cosine", name=pairs.name, show_progress_bar=bool(show_progress_bar),
    )
    # a collapsed model's constant similarities give NaN ("collapsed" in the table), not scipy's warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=ConstantInputWarning)
        metrics = evaluator(model)
        cosine = np.asarray(evaluator.similarities, dtype=np.float64)
        gold = np.asarray(pairs.scores, dtype=np.float64)
        ends = np.cumsum(list(pairs.subsets.values()))
        subsets = {subset: 100 * float(spearmanr(gold[end - size : end], cosine[end - size : end]).statistic)
                   for (subset, size), end in zip(pairs.subsets.items(), ends, strict=True)} if len(ends) > 1 else {}
    return STSTaskResult(pairs.name, 100 * float(metrics[f"{pairs.name}_spearman_cosine"]),
                         100 * float(metrics[f"{pairs.name}_pearson_cosine"]), len(pairs), pairs.source, pairs.split,
                         pairs.note, subsets, tuple(gold.tolist()), tuple(cosine.tolist()))


def evaluate_sts(model: Any, datasets: STSPairs | Sequence[STSPairs], batch_size: int = 64,
                 show_progress_bar: bool | None = None, model_label: str | None = None) -> STSResult:
    """Spearman x100 of cosine similarity on loaded STS pairs, one entry per dataset (NaN, printed "collapsed",
    when the model's similarities are constant); ``model_label`` defaults to the model's name."""
    if isinstance(datasets, STSPairs):
        datasets = [datasets]
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate task names: {names}")
    start = time.perf_counter()
    texts = [s for d in datasets for s in (*d.sentences1, *d.sentences2)]
    results = {pairs.name: _score(pairs, model, batch_size, show_progress_bar) for pairs in datasets}
    return STSResult(model_label or model_name(model), results, time.perf_counter() - start, len(set(texts)))


def evaluate_sts_suite(model: Any, source: PathLike | Mapping[str, PathLike | STSPairs] = "mteb",
                       tasks: Sequence[str] = STS_TASKS, batch_size: int = 64, show_progress_bar: bool | None = None,
                       model_label: str | None = None) -> STSResult:
    """The papers' STS table row (STS12-16 "all", STS-B test, SICK-R test) in one call.

    ``source`` is ``"mteb"`` (online; mteb's SICK-R is all 9,927 SICK pairs), a SentEval ``data/downstream`` folder
    (SICK-R is the 4,927-pair test split), or a mapping task -> file, folder or :class:`STSPairs`.
    """
    loaded = []
    for task in tasks:
        name, item = canonical_sts_name(task), source
        if isinstance(source, Mapping):
            if name not in source and task not in source:
                raise KeyError(f"no source given for task {task!r} (have: {', '.join(source)})")
            item = source[name] if name in source else source[task]
        loaded.append(replace(load_sts(item, task=name), name=name))  # named as the table names it, whatever the file
    return evaluate_sts(model, loaded, batch_size, show_progress_bar, model_label)


def stsb_dev_evaluator(source: PathLike | STSPairs = "hub", name: str = _STSB_DEV_NAME, split: str = "dev",
                       batch_size: int = 64, show_progress_bar: bool = False) -> Any:
    """STS-B dev Spearman for ``SentenceTransformerTrainer`` (checkpoint selection as in all four papers).

    An ``EmbeddingSimilarityEvaluator`` keeping each pair's similarity
    (:class:`~st_infocse.evaluation.PairScoredSimilarityEvaluator`), cosine first, so the trainer logs
    ``eval_{name}_spearman_cosine`` (:data:`STSB_DEV_METRIC` for the default name): pass it as
    ``metric_for_best_model`` with ``load_best_model_at_end=True``. ``source`` is ``"hub"``
    (``sentence-transformers/stsb``'s validation split), a SentEval folder, a sentence1/sentence2/score file or
    Hugging Face folder (read at ``split``), or loaded :class:`STSPairs`.
    """
    if isinstance(source, str) and source == "hub":
        import datasets

        try:
            ds = datasets.load_dataset("sentence-transformers/stsb", split="validation")
        except Exception as exc:  # hub errors come in many types
            raise RuntimeError(
                f"could not load sentence-transformers/stsb from the Hugging Face hub ({type(exc).__name__}); offline, "
                "pass the 1,500 pairs shipped with the package (st_infocse.data.demo_stsb_dev()), a SentEval folder or "
                "a sentence1/sentence2/score file as the source"
            ) from exc
        pairs = STSPairs("STS-B", list(ds["sentence1"]), list(ds["sentence2"]), list(ds["score"]), "hub", "dev")
    else:
        pairs = load_sts(source, task="STS-B", split=split)
    evaluator = PairScoredSimilarityEvaluator(pairs.sentences1, pairs.sentences2, pairs.scores, batch_size=batch_size,
                                              main_similarity="cosine", name=name, show_progress_bar=show_progress_bar)
    # known before the first evaluation, so callers can read it when building TrainingArguments
    evaluator.primary_metric = f"{name}_spearman_cosine"
    return evaluator
