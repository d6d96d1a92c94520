import random

import numpy as np
import pytest
import torch

from st_infocse.modeling.random_state import global_random_state_kept


def _draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_streams_are_put_back_and_a_seed_makes_the_block_reproducible():
    torch.manual_seed(1), np.random.seed(1), random.seed(1)
    expected = _draws()
    torch.manual_seed(1), np.random.seed(1), random.seed(1)
    with global_random_state_kept(seed=7):
        first = float(torch.rand(1))
        random.seed(3), np.random.seed(3)  # reseeded inside, as mteb does
    assert _draws() == expected
    with global_random_state_kept(seed=7):
        assert float(torch.rand(1)) == first
    with global_random_state_kept():  # no seed: torch's stream inside continues the caller's
        inside = float(torch.rand(1))
    assert inside == float(torch.rand(1))


def test_streams_are_put_back_when_the_block_raises():
    torch.manual_seed(2), np.random.seed(2), random.seed(2)
    expected = _draws()
    torch.manual_seed(2), np.random.seed(2), random.seed(2)
    with pytest.raises(RuntimeError), global_random_state_kept(seed=0, device="cpu"):
        _draws()
        raise RuntimeError
    assert _draws() == expected
