"""How far a change of score can be trusted: a paired bootstrap over the queries (or STS pairs) it was measured on.

A model scored before and after training on the same queries gives one difference per query. The mean of those
differences is the change a summary prints; whether it would hold on *other* queries of the same kind is what the
bootstrap estimates: resample the queries with replacement, recompute the change, and read the 95% interval off
the resampled changes (percentile method, ``scipy.stats.bootstrap``). The p-value is two-sided, from the same
resamples shifted to a change of zero (Efron and Tibshirani 1993, §16.4). The verdict follows the interval:
"a gain" when its lower end is above zero, "a loss" when its upper end is below zero, else "within noise".

For STS-B dev the unit is a pair and the statistic is Spearman's correlation: the pairs are resampled jointly, with
the gold score and both models' similarities of each pair kept together.

What it does not cover: the variance over training seeds (another run of the same recipe), and queries of another
kind than the ones measured. A change chosen because it was the best of several on these queries is also biased
upwards on them: choose on one set of queries and judge on another.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

GAIN, NOISE, LOSS = "a gain", "within noise", "a loss"
RESAMPLES = 10_000  # over queries
SPEARMAN_RESAMPLES = 2_000  # over pairs: each resample ranks every pair twice, so fewer
CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedChange:
    """A change of score between two models on the same queries (or pairs), with its bootstrap interval.

    Attributes:
        delta: ``after - before``, in the scores' own unit (x100 where the caller passed x100 scores).
        low, high: The 95% interval of ``delta`` over resamples of the units.
        p: Two-sided p-value of "no change".
        n: How many units (queries, pairs) were compared.
        unit: What was resampled (``"queries"``, ``"pairs"``).
    """

    delta: float
    low: float
    high: float
    p: float
    n: int
    unit: str = "queries"

    @property
    def verdict(self) -> str:
        """"a gain" (interval above zero), "a loss" (below zero) or "within noise"."""
        return GAIN if self.low > 0 else LOSS if self.high < 0 else NOISE

    @property
    def reliable_gain(self) -> bool:
        return self.verdict == GAIN

    def describe(self, digits: int = 2) -> str:
        """``+0.97 (95% CI -0.30 to +2.29, p = 0.14, 300 queries): within noise``."""
        p = "p < 0.001" if self.p < 0.001 else f"p = {self.p:.3f}"
        return (f"{self.delta:+.{digits}f} (95% CI {self.low:+.{digits}f} to {self.high:+.{digits}f}, {p}, "
                f"{self.n} {self.unit}): {self.verdict}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"verdict": self.verdict}


def _interval_and_p(samples: tuple[np.ndarray, ...], statistic: Callable[..., Any], observed: float, n: int,
                    unit: str, resamples: int, seed: int, vectorized: bool) -> PairedChange:
    from scipy.stats import bootstrap

    result = bootstrap(samples, statistic, paired=True, vectorized=vectorized, n_resamples=resamples,
                       confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(seed))
    spread = np.asarray(result.bootstrap_distribution, dtype=float) - observed  # the resamples, shifted to no change
    # no resample as far from zero as the change: p below one in ``resamples``, reported as that bound
    p = max(float(np.mean(np.abs(spread) >= abs(observed))), 1.0 / resamples) if observed != 0 else 1.0
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if not np.isfinite(low):  # every resample equal (no query changed): the interval is the point
        low = high = observed
    return PairedChange(observed, low, high, p, n, unit)


def paired_change(before: Mapping[str, float], after: Mapping[str, float], resamples: int = RESAMPLES,
                  seed: int = 0, unit: str = "queries") -> PairedChange:
    """The change in the mean score from ``before`` to ``after``, per-unit scores matched by id.

    Args:
        before, after: Unit id (a query id) -> score; both must hold the same ids.
        resamples: Bootstrap resamples.
        seed: The resampling seed (the result is the same at every call with it).
        unit: What the ids are, for :meth:`PairedChange.describe`.

    Returns:
        The change, its 95% interval, its p-value and its verdict.

    Example:
        >>> change = paired_change({"q1": 0.5, "q2": 0.7, "q3": 0.2}, {"q1": 0.6, "q2": 0.9, "q3": 0.3})
        >>> round(change.delta, 3), change.verdict
        (0.133, 'a gain')
    """
    if set(before) != set(after):
        missing = sorted(set(before) ^ set(after))[:3]
        raise ValueError(f"before and after were scored on different {unit} (e.g. {missing})")
    if not before:
        raise ValueError(f"no {unit} to compare")
    ids = sorted(before)
    differences = np.array([after[i] - before[i] for i in ids], dtype=float)
    observed = float(differences.mean())
    if len(ids) == 1 or np.all(differences == differences[0]):  # nothing to resample
        return PairedChange(observed, observed, observed, 1.0 if observed == 0 else 0.0, len(ids), unit)
    return _interval_and_p((differences,), np.mean, observed, len(ids), unit, resamples, seed, vectorized=True)


def paired_spearman_change(gold: Sequence[float], before: Sequence[float], after: Sequence[float],
                           resamples: int = SPEARMAN_RESAMPLES, seed: int = 0, scale: float = 100.0) -> PairedChange:
    """The change in Spearman's correlation with ``gold`` (x``scale``), the pairs resampled jointly.

    Example:
        >>> gold = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        >>> change = paired_spearman_change(gold, [0, 2, 1, 3, 5, 4], [0, 1, 2, 3, 4, 5], resamples=200)
        >>> round(change.delta, 2)
        11.43
    """
    from scipy.stats import spearmanr

    if not len(gold) == len(before) == len(after):
        raise ValueError("gold, before and after must score the same pairs")

    def spearman(g: np.ndarray, s: np.ndarray) -> float:
        with warnings.catch_warnings():  # constant scores: NaN, read as no correlation below
            warnings.simplefilter("ignore")
            value = spearmanr(g, s).statistic
        return 0.0 if np.isnan(value) else float(value)  # a collapsed model (constant scores) correlates with nothing

    def statistic(g: np.ndarray, b: np.ndarray, a: np.ndarray) -> float:
        return scale * (spearman(g, a) - spearman(g, b))

    arrays = tuple(np.asarray(x, dtype=float) for x in (gold, before, after))
    observed = statistic(*arrays)
    if np.array_equal(arrays[1], arrays[2]):
        return PairedChange(0.0, 0.0, 0.0, 1.0, len(gold), "pairs")
    return _interval_and_p(arrays, statistic, observed, len(gold), "pairs", resamples, seed, vectorized=False)


@dataclass(frozen=True)
class UnitScores:
    """What one evaluation's score is made of, for comparing two evaluations of the same set unit by unit.

    Attributes:
        kind: ``"queries"`` (the score is the mean of ``scores``) or ``"pairs"`` (Spearman of ``gold`` and
            ``similarities``).
        scores: Query id -> score in [0, 1] (``"queries"``).
        gold, similarities: The gold scores and the model's similarity of each pair, in order (``"pairs"``).
    """

    kind: Literal["queries", "pairs"]
    scores: Mapping[str, float] | None = None
    gold: tuple[float, ...] = ()
    similarities: tuple[float, ...] = ()


def unit_change(before: UnitScores, after: UnitScores, scale: float = 100.0, seed: int = 0) -> PairedChange | None:
    """The change from ``before`` to ``after`` (x``scale``, as scores are printed) with its bootstrap interval over
    the units; None when the two were not scored on the same units (other queries, other pairs, no unit scores).

    Example:
        >>> unit_change(UnitScores("queries", {"a": 0.5, "b": 0.7}), UnitScores("queries", {"a": 0.6, "b": 0.8})).delta
        10.0
    """
    if before.kind != after.kind:
        return None
    if before.kind == "queries":
        if not before.scores or after.scores is None or set(before.scores) != set(after.scores):
            return None
        return paired_change({q: scale * v for q, v in before.scores.items()},
                             {q: scale * v for q, v in after.scores.items()}, seed=seed)
    if not before.similarities or before.gold != after.gold or len(before.similarities) != len(after.similarities):
        return None
    return paired_spearman_change(before.gold, before.similarities, after.similarities, seed=seed, scale=scale)


def paired_changes(before: Mapping[str, UnitScores], after: Mapping[str, UnitScores], scale: float = 100.0,
                   seed: int = 0) -> dict[str, PairedChange]:
    """Each metric's :func:`unit_change` from ``before`` to ``after``, for the metrics both hold on the same units."""
    changes = {key: unit_change(first, after[key], scale, seed) for key, first in before.items() if key in after}
    return {key: change for key, change in changes.items() if change is not None}


def queries_needed(delta: float, spread: float, confidence: float = CONFIDENCE) -> int:
    """Roughly how many queries an interval needs to exclude zero for a true change ``delta`` half of the time,
    when each query's change has standard deviation ``spread`` (normal approximation: ``n = (z * spread / delta)^2``).

    Example:
        >>> queries_needed(1.0, 11.0)
        465
    """
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2))
    return int(np.ceil((z * spread / abs(delta)) ** 2))
