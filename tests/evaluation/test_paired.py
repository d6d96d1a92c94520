"""The paired test over queries (pairs): intervals, p-values and verdicts on changes whose answer is known, and
Holm's adjustment of many p-values judged together."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from st_infocse.evaluation import PairedChange, paired_change, paired_spearman_change, queries_needed
from st_infocse.evaluation.paired import holm, paired_mean_changes


def _scores(n: int, seed: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"q{i}": rng.random() for i in range(n)}


def test_a_change_on_every_query_is_a_gain_and_its_mirror_a_loss():
    before = _scores(300)
    rng = random.Random(1)
    after = {q: v + 0.05 + rng.gauss(0, 0.02) for q, v in before.items()}
    gain = paired_change(before, after)
    assert gain.verdict == "a gain" and 0 < gain.low < gain.delta < gain.high
    assert gain.delta == pytest.approx(np.mean([after[q] - before[q] for q in before]))
    assert gain.p < 0.001 and gain.n == 300
    loss = paired_change(after, before)
    assert loss.verdict == "a loss" and loss.delta == pytest.approx(-gain.delta) and loss.high < 0


def test_one_query_moving_is_within_noise_however_large_the_mean_change():
    before = {f"q{i}": 0.5 for i in range(200)}
    after = before | {"q3": 1.0}  # +0.25 x100 on average, all of it from one query
    change = paired_change({q: 100 * v for q, v in before.items()}, {q: 100 * v for q, v in after.items()})
    assert change.delta == pytest.approx(0.25) and change.verdict == "within noise"
    assert change.low == pytest.approx(0, abs=1e-6) and change.high > 0 and change.p > 0.05


def test_no_change_and_refusals():
    same = _scores(50)
    nothing = paired_change(same, dict(same))
    assert (nothing.delta, nothing.low, nothing.high, nothing.p, nothing.verdict) == (0, 0, 0, 1.0, "within noise")
    with pytest.raises(ValueError, match="different queries"):
        paired_change(same, {"other": 1.0})
    with pytest.raises(ValueError, match="no queries"):
        paired_change({}, {})


def test_the_bootstrap_is_repeatable_and_its_interval_narrows_with_more_queries():
    rng = random.Random(2)
    before = {f"q{i}": rng.random() for i in range(1600)}
    after = {q: v + rng.gauss(0.01, 0.1) for q, v in before.items()}
    first, second = paired_change(before, after), paired_change(before, after)
    assert first == second  # seeded
    few = paired_change({q: before[q] for q in list(before)[:100]}, {q: after[q] for q in list(before)[:100]})
    assert (few.high - few.low) > 3 * (first.high - first.low)  # 16 times the queries: about a quarter as wide


def test_spearman_change_over_pairs_matches_scipy_and_flags_a_collapse():
    rng = np.random.default_rng(0)
    gold = rng.random(400)
    worse, better = gold + rng.normal(0, 0.5, 400), gold + rng.normal(0, 0.1, 400)
    change = paired_spearman_change(gold, worse, better, resamples=500)
    expected = 100 * (spearmanr(gold, better).statistic - spearmanr(gold, worse).statistic)
    assert change.delta == pytest.approx(expected) and change.verdict == "a gain" and change.unit == "pairs"
    collapsed = paired_spearman_change(gold, better, np.zeros(400), resamples=200)  # constant: no correlation
    assert collapsed.delta == pytest.approx(-100 * spearmanr(gold, better).statistic)
    assert collapsed.verdict == "a loss"


def test_describe_and_to_dict():
    change = PairedChange(0.97, -0.30, 2.29, 0.14, 300)
    assert change.describe() == "+0.97 (95% CI -0.30 to +2.29, p = 0.140, 300 queries): within noise"
    assert change.to_dict()["verdict"] == "within noise"
    assert PairedChange(1.0, 0.2, 1.8, 0.0001, 40).describe().endswith("p < 0.001, 40 queries): a gain")


def test_queries_needed_follows_the_normal_approximation():
    assert queries_needed(1.0, 11.0) == 465  # (1.96 * 11 / 1)^2
    assert queries_needed(2.0, 11.0) == 117  # a gain twice as large needs a quarter of the queries


def test_the_declared_resample_counts_reach_scipy(monkeypatch):
    import scipy.stats

    from st_infocse.evaluation import paired

    seen = []

    def spy(name):
        real = getattr(scipy.stats, name)

        def spied(*args, **kwargs):
            seen.append((name, kwargs["n_resamples"]))
            return real(*args, **kwargs)
        return spied

    monkeypatch.setattr(scipy.stats, "permutation_test", spy("permutation_test"))
    paired_change(_scores(30), _scores(30, seed=1))
    gold = np.arange(20.0)
    paired_spearman_change(gold, gold[::-1], gold)
    assert seen == [("permutation_test", paired.RESAMPLES), ("permutation_test", paired.SPEARMAN_RESAMPLES)]
    paired_change(_scores(30), _scores(30, seed=1), resamples=123)
    assert seen[-1] == ("permutation_test", 123)


def test_unit_changes_pair_only_the_same_units():
    from st_infocse.evaluation import UnitScores, paired_changes, unit_change

    before, after = UnitScores("queries", {"a": 0.5, "b": 0.7}), UnitScores("queries", {"a": 0.6, "b": 0.9})
    assert unit_change(before, after).delta == pytest.approx(15.0)  # x100
    assert unit_change(before, UnitScores("queries", {"a": 0.6})) is None  # other queries
    assert unit_change(UnitScores("queries"), after) is None  # no per-query scores kept
    gold = (0.0, 1.0, 2.0, 3.0)
    pairs = UnitScores("pairs", gold=gold, similarities=(0.0, 2.0, 1.0, 3.0))
    assert unit_change(pairs, UnitScores("pairs", gold=gold, similarities=gold)).unit == "pairs"
    assert unit_change(pairs, before) is None  # other kinds
    assert set(paired_changes({"m": before, "s": pairs}, {"m": after})) == {"m"}


def _agrees(change: PairedChange) -> None:
    """Interval, p and verdict tell one story: p < 0.05 exactly when the interval excludes zero, exactly when the
    verdict is a gain or a loss, and then in the direction of the interval."""
    significant = change.p < 0.05
    assert significant == (change.verdict != "within noise")
    assert significant == (change.low > 0 or change.high < 0)
    if significant:
        assert change.verdict == ("a gain" if change.low > 0 else "a loss")


_moves = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@st.composite
def _differences(draw) -> list[float]:
    """Per-query changes as retrieval gives them: random, or mostly zero with a few large moves, or all equal."""
    n = draw(st.integers(2, 300))
    kind = draw(st.sampled_from(["random", "skewed", "equal"]))
    if kind == "equal":
        return [draw(st.sampled_from([0.0, 0.5, -3.0, draw(_moves)]))] * n
    if kind == "random":
        seed, spread, shift = draw(st.integers(0, 2**32 - 1)), draw(st.floats(0.01, 30)), draw(st.floats(-10, 10))
        return list(np.random.default_rng(seed).normal(shift, spread, n))
    moved = draw(st.lists(st.tuples(st.integers(0, n - 1), _moves), min_size=1, max_size=max(1, n // 4)))
    differences = [0.0] * n
    for i, value in moved:
        differences[i] = value
    return differences


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_differences())
@example([5e-324] * 6)  # subnormal changes: the root finder's tolerance must stay above zero
def test_verdict_p_and_interval_agree_on_every_input(differences):
    change = paired_mean_changes(np.array([differences]), resamples=1_000)[0]
    _agrees(change)
    assert change.low <= change.delta <= change.high
    assert change.delta == pytest.approx(np.mean(differences))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 120), st.integers(0, 2**32 - 1), st.floats(0, 3), st.sampled_from(["noisy", "tied", "few"]))
def test_spearman_verdict_p_and_interval_agree(n, seed, noise, kind):
    """Over pairs as over queries: random similarities, similarities in few distinct values (ties), and an after
    that differs from the before on a few pairs only."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 6, n).astype(float) if kind == "tied" else rng.random(n)
    before = gold + rng.normal(0, 1, n)
    if kind == "few":
        after = before.copy()
        after[rng.integers(0, n, max(1, n // 10))] += rng.normal(0, 3)
    else:
        after = gold + noise * rng.normal(0, 1, n)
    if kind == "tied":
        before, after = np.round(before), np.round(after)
    change = paired_spearman_change(gold, before, after, resamples=300)
    _agrees(change)
    assert change.low <= change.delta <= change.high


def test_swapping_ranks_finds_a_gain_between_models_on_different_scales():
    """A model whose cosines all lie near 1 against one spread over [-1, 1]: swapping raw similarities would mix the
    scales and scramble both orders; swapping ranks judges the change in order alone, which Spearman measures."""
    rng = np.random.default_rng(1)
    gold = rng.random(200)
    before = 0.99 + 0.01 * np.tanh(gold + rng.normal(0, 0.25, 200))  # compressed near 1, noisier
    after = np.tanh(2 * (gold + rng.normal(0, 0.15, 200) - 0.5))
    change = paired_spearman_change(gold, before, after)
    assert change.verdict == "a gain" and change.high - change.low < 20  # raw swaps: about 48 wide, within noise


def test_the_spearman_p_is_scipys_swap_test_and_the_interval_its_inversion():
    """p is scipy's randomization test over which model each pair's rank came from (each model's similarities
    ranked among the pairs); each end of the interval is where the shifted change turns from not rejected to
    rejected against the same swaps."""
    from scipy.stats import permutation_test, rankdata

    rng = np.random.default_rng(5)
    gold = rng.random(80)
    before, after = gold + rng.normal(0, 0.6, 80), gold + rng.normal(0, 0.3, 80)
    change = paired_spearman_change(gold, before, after, resamples=2_000, seed=3)

    def statistic(b, a):  # scipy's own correlation, one swap at a time
        return 100 * (spearmanr(gold, a).statistic - spearmanr(gold, b).statistic)

    result = permutation_test((rankdata(before), rankdata(after)), statistic, permutation_type="samples", vectorized=False, n_resamples=2_000,
                              rng=np.random.default_rng(3))
    assert change.delta == pytest.approx(result.statistic)
    assert change.p == pytest.approx(result.pvalue)
    swapped = result.null_distribution

    def p_at(shift: float) -> float:
        observed = change.delta - shift
        return min(1.0, 2 * min((np.sum(swapped <= observed) + 1) / 2_001, (np.sum(swapped >= observed) + 1) / 2_001))

    for bound, outward in ((change.low, -1), (change.high, 1)):
        assert p_at(bound - outward * 1e-6) >= 0.05 > p_at(bound + outward * 1e-6)


def test_the_p_value_is_scipys_and_the_interval_its_inversion():
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    differences = np.where(rng.random(120) < 0.7, 0.0, rng.normal(2, 15, 120))  # most queries unchanged
    change = paired_mean_changes(differences[None, :])[0]

    def scipy_p(shift: float) -> float:
        return permutation_test((differences - shift,), np.mean, permutation_type="samples", vectorized=True,
                                n_resamples=10_000, rng=np.random.default_rng(0), axis=-1).pvalue

    assert change.p == pytest.approx(scipy_p(0.0))
    for bound, outward in ((change.low, -1), (change.high, 1)):
        assert scipy_p(bound - outward * 1e-6) >= 0.05 > scipy_p(bound + outward * 1e-6)


def test_rows_are_judged_as_each_alone_and_few_queries_cannot_be_judged():
    rng = np.random.default_rng(4)
    rows = rng.normal(1, 5, (3, 40))
    together = paired_mean_changes(rows)
    alone = [paired_change({f"q{i:02d}": 0.0 for i in range(40)}, {f"q{i:02d}": v for i, v in enumerate(row)})
             for row in rows]
    assert together == alone
    five = paired_change({f"q{i}": 0.0 for i in range(5)}, {f"q{i}": 1.0 for i in range(5)})
    assert (five.low, five.high, five.verdict) == (-np.inf, np.inf, "within noise")  # 2 of 32 flips: p = 1/16
    six = paired_change({f"q{i}": 0.0 for i in range(6)}, {f"q{i}": 1.0 for i in range(6)})
    assert six.verdict == "a gain" and six.p == pytest.approx(2 / 64) and six.low > 0
    one = paired_change({"q": 0.0}, {"q": 1.0})
    assert (one.delta, one.p, one.verdict) == (1.0, 1.0, "within noise")


def test_holm_on_a_worked_example_and_its_refusals():
    # m = 4: sorted 0.005, 0.01, 0.03, 0.04 scaled by 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04 -> running max
    assert holm([0.03, 0.005, 0.04, 0.01]) == pytest.approx([0.06, 0.02, 0.06, 0.03])
    assert holm([]) == [] and holm([0.2]) == [0.2] and holm([0.6, 0.7]) == [1.0, 1.0]
    for bad in ([1.2], [-0.1], [float("nan")], [[0.1, 0.2]]):
        with pytest.raises(ValueError):
            holm(bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=30), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_rejects_what_the_step_down_procedure_rejects(p_values, alpha):
    """Holm's procedure as he stated it: walk the p-values from the smallest, reject the k-th (of m) while it is
    below alpha / (m - k + 1), stop at the first that is not; an adjusted p below alpha rejects the same ones."""
    m = len(p_values)
    rejected = set()
    for k, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        if p_values[i] * (m - k) >= alpha:
            break
        rejected.add(i)
    adjusted = holm(p_values)
    assert {i for i, p in enumerate(adjusted) if p < alpha} == rejected
    assert all(p <= a <= 1 for p, a in zip(p_values, adjusted, strict=True))
    assert holm(p_values[::-1]) == adjusted[::-1]  # the order they come in does not matter


def test_split_units_draws_the_same_parts_for_two_models_scored_on_the_same_units():
    from st_infocse.evaluation import UnitScores
    from st_infocse.evaluation.paired import split_units

    first = UnitScores("queries", {f"q{i}": i / 10 for i in range(10)})
    second = UnitScores("queries", {f"q{i}": 1 - i / 10 for i in reversed(range(10))})  # other order, other scores
    (rest_a, held_a), (_, held_b) = split_units(first, 0.3, seed=4), split_units(second, 0.3, seed=4)
    assert set(held_a.scores) == set(held_b.scores) and len(held_a.scores) == 3
    assert set(rest_a.scores) | set(held_a.scores) == set(first.scores) and not set(rest_a.scores) & set(held_a.scores)
    assert set(split_units(first, 0.3, seed=5)[1].scores) != set(held_a.scores)  # the seed draws the part
    gold = tuple(float(i) for i in range(8))
    pairs = [split_units(UnitScores("pairs", gold=gold, similarities=tuple(s * g for g in gold)), 0.5, seed=1)
             for s in (1.0, -1.0)]
    assert pairs[0][1].gold == pairs[1][1].gold and len(pairs[0][1].gold) == 4
    assert pairs[1][1].similarities == tuple(-g for g in pairs[0][1].gold)  # each pair keeps its own scores
    with pytest.raises(ValueError, match="share must lie in"):
        split_units(first, 1.0)
