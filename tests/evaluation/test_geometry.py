"""Alignment and uniformity: hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from st_infocse.evaluation import alignment_loss, evaluate_alignment_uniformity, uniformity_loss


def test_losses_by_hand(ev):
    x = torch.tensor([ev.unit(0), ev.unit(90)])
    y = torch.tensor([ev.unit(90), ev.unit(90)])
    # squared distances 2 and 0
    assert alignment_loss(x, y) == pytest.approx(1.0)
    points = torch.tensor([ev.unit(0), ev.unit(90), ev.unit(180)])
    # pair distances^2: 2, 4, 2
    expected = math.log((2 * math.exp(-4) + math.exp(-8)) / 3)
    assert uniformity_loss(points) == pytest.approx(expected)
    assert uniformity_loss(points, chunk_size=1) == pytest.approx(expected)  # blocks do not change the result
    with pytest.raises(ValueError, match="at least two"):
        uniformity_loss(points[:1])


def test_alignment_uniformity_on_sts_pairs(ev, tmp_path):
    ev.write_stsb(tmp_path, "test", [("a", "b", 4.5), ("c", "d", 4.0), ("a", "d", 5.0)])
    stub = ev.StubEncoder({"a": [2.0, 0.0], "b": [0.0, 3.0], "c": [-1.0, 0.0], "d": [0.0, -1.0]})
    result = evaluate_alignment_uniformity(stub, tmp_path)
    # positives (score > 4): (a, b) at 90 degrees -> 2, (a, d) at 90 degrees -> 2; (c, d) has 4.0 exactly: excluded
    assert result.alignment == pytest.approx(2.0)
    assert result.n_positive_pairs == 2 and result.n_sentences == 4
    # four unit vectors at 0, 90, 180, 270 degrees: four pairs at distance^2 2, two at 4
    assert result.uniformity == pytest.approx(math.log((4 * math.exp(-4) + 2 * math.exp(-8)) / 6))
    assert "alignment 2.0000" in str(result)
    with pytest.raises(ValueError, match="no pair scores above 5.0"):
        evaluate_alignment_uniformity(stub, tmp_path, positive_above=5.0)
