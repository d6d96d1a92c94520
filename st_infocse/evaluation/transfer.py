"""SentEval transfer tasks (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC): logistic regression on frozen embeddings.

The protocol follows SentEval: MR, CR, SUBJ and MPQA by stratified k-fold cross-validation (k=10, seed 1111)
with the regularisation chosen by an inner cross-validation on each training fold; SST2 with the
regularisation chosen on its dev split; TREC and MRPC with an inner cross-validation on the training split,
then one fit on it and one score on the test split. MRPC features are ``[|u - v|, u * v]`` as in SentEval.

Like SentEval's scikit-learn path, ``LogisticRegression`` is fitted on the raw features, but over a wider C
grid (2^-8 ... 2^6 instead of 2^-2 ... 2^3): scaling the features by s acts like multiplying C by s^2, so the
best C depends on the embeddings' norm (unit-norm embeddings choose C near 2^-2 to 2^0), and a narrow
grid often picks its own edge. ``standardize=True`` adds a ``StandardScaler`` fitted on the training part. The
papers used SentEval's PyTorch classifier (Adam, early stopping), so expect numbers close to, not equal to, theirs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ._deps import require
from .encoding import encode_unique, model_name
from .loaders import TRANSFER_TASKS, PathLike, TransferData, load_senteval_transfer
from .results import TaskTableResult

#: The C values searched: 2^-8, 2^-6, ..., 2^6 (SentEval's scikit-learn grid, 2^-2 ... 2^3, widened).
C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-8, 7, 2))


@dataclass
class TransferTaskResult:
    """One transfer task's test accuracy x100 (the outer folds' mean for cross-validated tasks, where ``n_test`` is
    the total over the folds and ``chosen_c`` has one C per fold); ``f1`` is MRPC's F1 x100 of the positive class."""

    name: str
    accuracy: float
    protocol: str
    n_train: int
    n_test: int
    chosen_c: list[float]
    source: str
    f1: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class TransferResult(TaskTableResult):
    """Accuracy x100 of one model on the transfer tasks (:class:`TransferTaskResult` by name); ``print()`` shows the
    papers' table row."""

    score_field: ClassVar[str] = "accuracy"


def _features(model: Any, examples: list[Any], batch_size: int, progress: bool | None) -> np.ndarray:
    if examples and isinstance(examples[0], tuple):
        a = encode_unique(model, [x[0] for x in examples], batch_size, progress)
        b = encode_unique(model, [x[1] for x in examples], batch_size, progress)
        return np.concatenate([np.abs(a - b), a * b], axis=1)
    return encode_unique(model, examples, batch_size, progress)


def _classifier(c: float, seed: int, max_iter: int, standardize: bool) -> Any:
    linear = require("sklearn.linear_model", "Transfer tasks")
    pipeline = require("sklearn.pipeline", "Transfer tasks")
    preprocessing = require("sklearn.preprocessing", "Transfer tasks")
    scale = preprocessing.StandardScaler() if standardize else "passthrough"
    classifier = linear.LogisticRegression(C=c, max_iter=max_iter, random_state=seed)
    return pipeline.Pipeline([("scale", scale), ("logisticregression", classifier)])


def classify(data: TransferData, train_x: np.ndarray, test_x: np.ndarray | None = None,
             dev_x: np.ndarray | None = None, kfold: int = 10, inner_kfold: int = 5, c_grid: Sequence[float] = C_GRID,
             seed: int = 1111, max_iter: int = 1000, standardize: bool = False) -> TransferTaskResult:
    """SentEval's protocol for ``data`` on precomputed features of ``data.train``, ``data.test`` and ``data.dev``:
    ``kfold`` outer folds for a task without a test split, C picked by an ``inner_kfold`` cross-validation (or on dev
    where there is one) over ``c_grid``; ``seed`` seeds the folds and the solver.

    Example:
        >>> import numpy as np
        >>> data = TransferData("toy", ["a"] * 8, [0, 1] * 4, ("no", "yes"), "hand-made")
        >>> x = np.array([[float(y)] for y in data.train_labels])
        >>> classify(data, x, kfold=2, inner_kfold=2).accuracy
        100.0
    """
    model_selection = require("sklearn.model_selection", "Transfer tasks")
    metrics = require("sklearn.metrics", "Transfer tasks")
    threadpoolctl = require("threadpoolctl", "Transfer tasks")

    def grid_search() -> Any:
        inner = model_selection.StratifiedKFold(n_splits=inner_kfold, shuffle=True, random_state=seed)
        estimator = _classifier(c_grid[0], seed, max_iter, standardize)
        return model_selection.GridSearchCV(estimator, {"logisticregression__C": list(c_grid)}, cv=inner, n_jobs=1)

    y = np.asarray(data.train_labels)
    if data.test is not None and test_x is None:
        raise ValueError(f"{data.name}: test features missing")
    if data.test is not None and data.dev is not None and dev_x is None:
        raise ValueError(f"{data.name}: dev features missing")
    # these fits are small: a multi-threaded BLAS only adds contention
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        if data.test is None:
            outer = model_selection.StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed)
            folds = model_selection.cross_validate(grid_search(), train_x, y, cv=outer, return_estimator=True)
            chosen = [float(search.best_params_["logisticregression__C"]) for search in folds["estimator"]]
            return TransferTaskResult(data.name, 100 * float(np.mean(folds["test_score"])), f"{kfold}-fold CV",
                                      len(y), len(y), chosen, data.source)
        y_test = np.asarray(data.test_labels)
        if data.dev is not None:
            y_dev = np.asarray(data.dev_labels)
            fits = [_classifier(c, seed, max_iter, standardize).fit(train_x, y) for c in c_grid]
            best = int(np.argmax([fit.score(dev_x, y_dev) for fit in fits]))  # ties: the smallest C
            best_c, fitted = float(c_grid[best]), fits[best]
            protocol = "C chosen on dev"
        else:
            search = grid_search().fit(train_x, y)
            best_c, fitted = float(search.best_params_["logisticregression__C"]), search.best_estimator_
            protocol = f"C chosen by {inner_kfold}-fold CV on train"
        predicted = fitted.predict(test_x)
    f1 = 100 * float(metrics.f1_score(y_test, predicted)) if data.name == "MRPC" else None
    return TransferTaskResult(data.name, 100 * float(metrics.accuracy_score(y_test, predicted)), protocol, len(y),
                              len(y_test), [best_c], data.source, f1)


def evaluate_transfer(model: Any, source: PathLike | Sequence[TransferData] | Mapping[str, TransferData],
                      tasks: Sequence[str] = TRANSFER_TASKS, kfold: int = 10, inner_kfold: int = 5,
                      c_grid: Sequence[float] = C_GRID, seed: int = 1111, batch_size: int = 64,
                      show_progress_bar: bool | None = None, model_label: str | None = None,
                      standardize: bool = False) -> TransferResult:
    """Transfer-task accuracy x100 (the papers' transfer table) by logistic regression on frozen embeddings, on a
    SentEval ``data/downstream`` folder's ``tasks`` or on loaded :class:`TransferData` (a list or name mapping);
    the protocol's arguments are :func:`classify`'s."""
    require("sklearn", "Transfer tasks")
    if isinstance(source, Mapping):
        loaded = list(source.values())
    elif isinstance(source, (str, Path)):
        loaded = [load_senteval_transfer(source, task) for task in tasks]  # it maps aliases ("sst-2")
    else:
        loaded = list(source)
    start = time.perf_counter()
    results = {}
    for data in loaded:
        train_x, test_x, dev_x = (None if x is None else _features(model, x, batch_size, show_progress_bar)
                                  for x in (data.train, data.test, data.dev))
        results[data.name] = classify(data, train_x, test_x, dev_x, kfold, inner_kfold, c_grid, seed,
                                      standardize=standardize)
    return TransferResult(model_label or model_name(model), results, time.perf_counter() - start)
