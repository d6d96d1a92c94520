"""The calibration benchmark's STS-B dev block and its --confirm_share block, on a few draws."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import calibration
from st_infocse.evaluation import paired_spearman_change


def test_the_stsb_judges_give_the_packages_verdicts_and_the_bootstraps_from_its_interval():
    rng = np.random.default_rng(0)
    gold = rng.random(60)
    picked = [(gold, gold + rng.normal(0, 1, 60), gold + rng.normal(0, s, 60)) for s in (0.05, 1.0, 5.0)]
    ours = calibration.stsb_judge("randomization", picked, 300)
    expected = [paired_spearman_change(*draw, resamples=300) for draw in picked]
    assert list(ours["verdict"]) == [{"a gain": 1, "a loss": -1}.get(c.verdict, 0) for c in expected]
    assert list(ours["p"]) == [c.p for c in expected]
    before = calibration.stsb_judge("percentile", picked, 300)
    assert list(before["verdict"]) == [1 if lo > 0 else -1 if hi < 0 else 0
                                       for lo, hi in zip(before["low"], before["high"], strict=True)]
    assert before["delta"] == pytest.approx(ours["delta"])  # the same change, judged two ways


def test_the_share_block_splits_each_draw_into_the_part_that_decides_and_the_part_held_out():
    cases = calibration.run_shares(draws=8, sizes=(20,), resamples=200, seed=0)
    assert {(c["domain"], c["share"]) for c in cases} == {(d, s) for d in calibration.DOMAINS
                                                          for s in calibration.SHARES}
    for case in cases:
        assert case["held_out"] == round(case["share"] * 20) and case["decided_on"] + case["held_out"] == 20
        assert case["kept_and_confirmed"] <= min(case["kept"], case["confirmed"])
    markdown = "\n".join(calibration.shares_markdown({"draws": 8, "shares": cases, "cases": []}))
    assert "| reuters | nan | 20 | 0.3 |" in markdown.replace("+nan", "nan")
