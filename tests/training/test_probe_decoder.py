"""The probe decoder's training loop: the model untouched, the caller's random streams left as found."""

from __future__ import annotations

import pytest
import torch

from st_infocse.training import train_probe_decoder
from tests.conftest import random_sentences


def test_probe_training_leaves_the_model_unchanged(make_model):
    model = make_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train_probe_decoder(model, random_sentences(40), k=2, steps=2, batch_size=8, show_progress_bar=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_probe_training_leaves_torchs_global_generator_as_found(make_model):
    model = make_model()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first, curve = train_probe_decoder(model, random_sentences(40), k=2, steps=2, batch_size=8, seed=5,
                                       show_progress_bar=False)
    assert torch.equal(torch.get_rng_state(), before)
    # Still reproducible from its own seed (initialisation, dropout, masks, order), whatever the caller's state.
    torch.manual_seed(999)
    second, again = train_probe_decoder(model, random_sentences(40), k=2, steps=2, batch_size=8, seed=5,
                                        show_progress_bar=False)
    assert curve == again
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True))


def test_probe_training_restores_the_generator_when_it_fails(make_model):
    model = make_model()
    before = torch.get_rng_state()
    with pytest.raises(ValueError, match="mask_rate"):
        train_probe_decoder(model, random_sentences(8), k=2, steps=1, batch_size=4, mask_rate=1.5,
                            show_progress_bar=False)
    assert torch.equal(torch.get_rng_state(), before)
