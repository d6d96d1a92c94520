"""How far a change of score can be trusted: one paired test over the queries (or STS pairs) it was measured on.

A model scored before and after training on the same queries gives one difference per query. The mean of those
differences is the change a summary prints; whether it would hold on *other* queries of the same kind is what the
test judges. For a mean over queries it is Fisher's paired randomization test, the test Smucker, Allan and Carterette
(CIKM 2007) found the most trustworthy for IR metrics: if training changed nothing, each query's difference was as
likely to have the other sign, so the change is compared with the changes of ``RESAMPLES`` random sign flips of the
differences (``scipy.stats.permutation_test``, every flip when there are fewer). The p-value is two-sided. The 95%
interval is the same test inverted: every shift ``d`` for which the differences minus ``d`` would not be rejected at
5%, all shifts judged on the same flips. Because the interval and the p come from one set of flips, the interval
excludes zero exactly when p is below 0.05, and the verdict follows both: "a gain" or "a loss" when p < 0.05, by the
sign of the change, else "within noise". With five queries or fewer no flip can reach 5%: the interval is unbounded.

For STS-B dev the unit is a pair and the statistic is Spearman's correlation, which is not a mean of per-pair
differences. The test is the same randomization, over which model each pair's similarity came from: if training
changed nothing, the two models' similarities of a pair were as likely to be swapped, so the change is compared with
the changes of ``SPEARMAN_RESAMPLES`` random swaps (``scipy.stats.permutation_test``, ``permutation_type="samples"``;
every swap when there are fewer). What is swapped is each model's rank of the pair among the pairs, which its
Spearman correlation is made of, so that two models whose similarities lie on different scales can be swapped. The
interval is that test inverted under a shift: every ``d`` for which the change minus ``d`` would not be rejected
against the swapped changes. Interval, p and verdict agree as they do over queries.

What it does not cover: the variance over training seeds (another run of the same recipe), and queries of another
kind than the ones measured. A change chosen because it was the best of several on these queries is also biased
upwards on them: choose on one set of queries and judge on another.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from st_infocse.files import check_range

GAIN, NOISE, LOSS = "a gain", "within noise", "a loss"
RESAMPLES = 10_000  # over queries
SPEARMAN_RESAMPLES = 2_000  # over pairs: each resample ranks every pair twice, so fewer
CONFIDENCE = 0.95
#: The number of units (queries, pairs) from which a verdict is read as measured rather than approximate: resampling
#: real per-query nDCG@10 changes of a trained model at n queries, the interval kept its 95% coverage and each false
#: verdict rate its 2.5% from about this many on; below, the interval is too narrow for skewed changes (most queries
#: unchanged, a few moving by tens of points), which can then be called a gain or a loss when they net to zero.
RELIABLE_FROM = 100
_ALPHA = 1 - CONFIDENCE
_BATCH_VALUES = 4_000_000  # values per batch of sign flips handed to scipy: bounds memory on long query lists


@dataclass(frozen=True)
class PairedChange:
    """A change of score between two models on the same queries (or pairs), with its interval and p-value.

    Attributes:
        delta: ``after - before``, in the scores' own unit (x100 where the caller passed x100 scores).
        low, high: The 95% interval of ``delta`` (infinite where the units are too few to bound it).
        p: Two-sided p-value of "no change".
        n: How many units (queries, pairs) were compared.
        unit: What was compared (``"queries"``, ``"pairs"``).
    """

    delta: float
    low: float
    high: float
    p: float
    n: int
    unit: str = "queries"

    @property
    def verdict(self) -> str:
        """"a gain" or "a loss" (p below 0.05, by the sign of the change), else "within noise"."""
        if self.p >= _ALPHA or self.delta == 0:
            return NOISE
        return GAIN if self.delta > 0 else LOSS

    @property
    def p_text(self) -> str:
        """``p = 0.140``, or ``p < 0.001``."""
        return "p < 0.001" if self.p < 0.001 else f"p = {self.p:.3f}"

    def describe(self, digits: int = 2, verdict: bool = True) -> str:
        """``+0.97 (95% CI -0.30 to +2.29, p = 0.14, 300 queries): within noise`` (without ``verdict``, up to the
        closing parenthesis: where the verdict is read off another p, one adjusted for many rows)."""
        text = (f"{self.delta:+.{digits}f} (95% CI {self.low:+.{digits}f} to {self.high:+.{digits}f}, {self.p_text}, "
                f"{self.n} {self.unit})")
        return f"{text}: {self.verdict}" if verdict else text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"verdict": self.verdict}


def _sign_flip_p(mean: float, flipped: np.ndarray, signs: np.ndarray, exact: bool) -> Callable[[float], float]:
    """The two-sided p-value of "the mean difference is ``shift``", as a function of ``shift``.

    ``flipped`` holds the mean of each sign-flipped set of differences and ``signs`` the mean of its signs, so the
    flipped mean of the differences minus ``shift`` is ``flipped - shift * signs``; the p-value compares it with the
    observed ``mean - shift`` the way ``scipy.stats.permutation_test`` does (its tolerance for ties, its +1 for a
    random rather than complete set of flips), so at ``shift = 0`` it is scipy's p-value.
    """
    adjustment = 0 if exact else 1
    total = len(flipped) + adjustment
    tolerance = np.finfo(float).eps * 100

    def p_at(shift: float) -> float:
        observed = mean - shift
        null = flipped - shift * signs
        gamma = abs(tolerance * observed)
        less = (np.count_nonzero(null <= observed + gamma) + adjustment) / total
        greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / total
        return float(min(1.0, 2 * min(less, greater)))

    return p_at


_TINY = float(np.finfo(float).tiny)


def _inverted_bound(p_at: Callable[[float], float], mean: float, p_zero: float, scale: float, side: int) -> float:
    """The end of the interval on ``side`` (+1 upper, -1 lower): where ``p_at`` falls below 5% going out from
    ``mean``. The p-value only falls going out (a flip's mean moves by ``|mean of signs| <= 1`` per unit of shift,
    the observed one by 1), so the shifts it does not reject form one interval; zero is placed on its side of the
    end from ``p_zero`` itself, so the interval excludes zero exactly when ``p_zero`` < 0.05.
    """
    from scipy.optimize import brentq

    step = scale
    for _ in range(64):  # out far enough for the test to reject, doubling
        out = mean + side * step
        if p_at(out) < _ALPHA:
            break
        step *= 2
    else:  # no shift is rejected: too few units for any flip to reach 5%
        return side * math.inf
    inside = mean
    if side * (0 - mean) > 0 and side * (out - 0) > 0:  # zero between the change and the far point
        if p_zero >= _ALPHA:
            inside = 0.0
        else:
            out = 0.0
    # xtol stays positive for subnormal changes (1e-9 x 5e-324 rounds to 0, which brentq refuses)
    bound = brentq(lambda shift: p_at(shift) - _ALPHA + 1e-12, inside, out, xtol=max(1e-9 * scale, _TINY), rtol=4e-15)
    if out == 0.0 and bound == 0.0:  # rejected at zero: the end lies strictly on the change's side of it
        bound = math.copysign(math.ulp(0.0), mean)
    return float(bound)


def paired_mean_changes(differences: np.ndarray, resamples: int = RESAMPLES, seed: int = 0,
                        unit: str = "queries") -> list[PairedChange]:
    """The change in the mean for each row of per-unit differences (``after - before``, one column per unit).

    Every row is judged as :func:`paired_change` judges its differences (the same sign flips for the same seed and
    number of units); judging many rows in one call shares one pass of scipy over the flips.

    Example:
        >>> [c.verdict for c in paired_mean_changes(np.array([[0.1, 0.2, 0.1, 0.3, 0.2, 0.1], [0, 0, 0, 0, 0, 0]]))]
        ['a gain', 'within noise']
    """
    from scipy.stats import permutation_test

    rows = np.atleast_2d(np.asarray(differences, dtype=float))
    n = rows.shape[1]
    means = rows.mean(axis=1)
    if n < 2:  # one unit: no flip can tell a change from noise
        return [PairedChange(float(m), -math.inf, math.inf, 1.0, n, unit) for m in means]
    data = np.vstack([rows, np.ones(n)])  # the last row's flipped mean is the mean of the signs
    batch = max(1, min(resamples, _BATCH_VALUES // data.size))
    result = permutation_test((data,), np.mean, permutation_type="samples", vectorized=True, n_resamples=resamples,
                              batch=batch, alternative="two-sided", axis=-1, rng=np.random.default_rng(seed))
    null = np.asarray(result.null_distribution, dtype=float)
    exact = len(null) == 2 ** n  # scipy flips every sign pattern when they are no more than ``resamples``
    signs = null[:, -1]
    changes = []
    for row, mean, flipped in zip(rows, means, null[:, :-1].T, strict=True):
        mean = float(mean)
        if not np.any(row):  # nothing changed on any unit
            changes.append(PairedChange(0.0, 0.0, 0.0, 1.0, n, unit))
            continue
        p_at = _sign_flip_p(mean, flipped, signs, exact)
        p = p_at(0.0)
        scale = float(np.max(np.abs(row - mean))) or abs(mean)
        low, high = (_inverted_bound(p_at, mean, p, scale, side) for side in (-1, 1))
        changes.append(PairedChange(mean, low, high, p, n, unit))
    return changes


def paired_change(before: Mapping[str, float], after: Mapping[str, float], resamples: int = RESAMPLES,
                  seed: int = 0, unit: str = "queries") -> PairedChange:
    """The change in the mean score from ``before`` to ``after``, per-unit scores matched by id.

    Args:
        before, after: Unit id (a query id) -> score; both must hold the same ids.
        resamples: Random sign flips of the differences (all of them when there are fewer).
        seed: The flips' seed (the result is the same at every call with it).
        unit: What the ids are, for :meth:`PairedChange.describe`.

    Returns:
        The change, its 95% interval, its p-value and its verdict.

    Example:
        >>> before = {f"q{i}": 0.5 for i in range(8)}
        >>> change = paired_change(before, {q: v + 0.1 + 0.01 * int(q[1]) for q, v in before.items()})
        >>> round(change.delta, 3), change.verdict
        (0.135, 'a gain')
    """
    if set(before) != set(after):
        missing = sorted(set(before) ^ set(after))[:3]
        raise ValueError(f"before and after were scored on different {unit} (e.g. {missing})")
    if not before:
        raise ValueError(f"no {unit} to compare")
    ids = sorted(before)
    differences = np.array([after[i] - before[i] for i in ids], dtype=float)
    return paired_mean_changes(differences[None, :], resamples, seed, unit)[0]


def _spearman_rows(gold_ranks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Spearman's correlation of each row of ``values`` with the gold scores (``gold_ranks``: their ranks), scipy's
    Pearson correlation of the ranks row by row; 0 for a row of constant scores (a collapsed model correlates with
    nothing), where scipy gives NaN."""
    import warnings

    from scipy.stats import ConstantInputWarning, pearsonr, rankdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        return np.nan_to_num(pearsonr(rankdata(values, axis=-1), gold_ranks, axis=-1).statistic, nan=0.0)


def paired_spearman_change(gold: Sequence[float], before: Sequence[float], after: Sequence[float],
                           resamples: int = SPEARMAN_RESAMPLES, seed: int = 0, scale: float = 100.0) -> PairedChange:
    """The change in Spearman's correlation with ``gold`` (x``scale``), judged by swapping the two models'
    similarities pair by pair (the randomization test of the module's docstring), its interval that test inverted.

    Example:
        >>> gold = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        >>> change = paired_spearman_change(gold, [0, 2, 1, 3, 5, 4], [0, 1, 2, 3, 4, 5], resamples=200)
        >>> round(change.delta, 2), change.verdict
        (11.43, 'within noise')
    """
    from scipy.stats import permutation_test, rankdata

    if not len(gold) == len(before) == len(after):
        raise ValueError("gold, before and after must score the same pairs")
    gold_ranks = rankdata(np.asarray(gold, dtype=float))
    # Each model's similarities by their ranks, which leave its Spearman as it is: the two models' scales differ
    # (one's cosines may all lie near 1), and a swap between scales would scramble both orders, whatever the change.
    first, second = (rankdata(np.asarray(x, dtype=float)) for x in (before, after))
    n = len(gold_ranks)
    if np.array_equal(first, second):  # the same order (always so for fewer than two pairs): no change
        return PairedChange(0.0, 0.0, 0.0, 1.0, n, "pairs")

    def statistic(b: np.ndarray, a: np.ndarray, axis: int = -1) -> np.ndarray:
        return scale * (_spearman_rows(gold_ranks, a) - _spearman_rows(gold_ranks, b))

    observed = float(statistic(first, second))
    result = permutation_test((first, second), statistic, permutation_type="samples", vectorized=True,
                              n_resamples=resamples, batch=max(1, min(resamples, _BATCH_VALUES // (2 * n))),
                              alternative="two-sided", axis=-1, rng=np.random.default_rng(seed))
    swapped = np.asarray(result.null_distribution, dtype=float)
    # A shift moves the change, not the swapped ones: the location-shift form of the test, inverted as over queries.
    p_at = _sign_flip_p(observed, swapped, np.zeros_like(swapped), exact=len(swapped) == 2 ** n)
    p = p_at(0.0)
    spread = float(np.max(np.abs(swapped))) or abs(observed) or scale
    low, high = (_inverted_bound(p_at, observed, p, spread, side) for side in (-1, 1))
    return PairedChange(observed, low, high, p, n, "pairs")


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
    """The change from ``before`` to ``after`` (x``scale``, as scores are printed) with its interval over
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


def split_units(units: UnitScores, share: float, seed: int = 0) -> tuple[UnitScores, UnitScores]:
    """``units`` in two parts drawn at random (``seed``): the rest, and ``share`` of the units (rounded) held out.

    The draw depends only on the units' ids (queries, by sorted id) or count (pairs, by position), the share and the
    seed, so the scores of two models on the same units split the same way: a change judged on the held-out part is
    judged on units that whatever was decided on the rest never saw.

    Example:
        >>> rest, held = split_units(UnitScores("queries", {f"q{i}": 0.5 for i in range(10)}), 0.3)
        >>> len(rest.scores), len(held.scores)
        (7, 3)
    """
    check_range("share", share, (0, 1, False, False))
    ids = sorted(units.scores or ()) if units.kind == "queries" else list(range(len(units.similarities)))
    held = set(np.random.default_rng(seed).permutation(len(ids))[:round(share * len(ids))].tolist())
    parts = [[i for k, i in enumerate(ids) if (k in held) == side] for side in (False, True)]
    if units.kind == "queries":
        scores = units.scores or {}
        return tuple(UnitScores("queries", {i: scores[i] for i in part}) for part in parts)  # type: ignore[return-value]
    return tuple(UnitScores("pairs", gold=tuple(units.gold[i] for i in part),  # type: ignore[return-value]
                            similarities=tuple(units.similarities[i] for i in part)) for part in parts)


def paired_changes(before: Mapping[str, UnitScores], after: Mapping[str, UnitScores], scale: float = 100.0,
                   seed: int = 0) -> dict[str, PairedChange]:
    """Each metric's :func:`unit_change` from ``before`` to ``after``, for the metrics both hold on the same units."""
    changes = {key: unit_change(first, after[key], scale, seed) for key, first in before.items() if key in after}
    return {key: change for key, change in changes.items() if change is not None}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values judged together, in their order: a verdict read off an adjusted p
    at 5% holds for the whole set at 5% (the chance of any false gain or loss among them), where reading each raw p
    at 5% expects one false verdict in twenty rows.

    The k-th smallest of m p-values is multiplied by ``m - k + 1``, each adjusted value is at least the one before
    it in that order, and none exceeds 1 (Holm 1979; scipy has Benjamini-Hochberg's ``false_discovery_control``,
    which bounds the share of false discoveries rather than the chance of any, and no Holm).

    Example:
        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    values = np.asarray(p_values, dtype=float)
    if values.ndim != 1 or np.any(np.isnan(values)) or np.any((values < 0) | (values > 1)):
        raise ValueError("p-values must be one list of numbers in [0, 1]")
    order = np.argsort(values, kind="stable")
    scaled = values[order] * np.arange(len(values), 0, -1)
    adjusted = np.empty_like(values)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return [float(v) for v in adjusted]


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
