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


def test_the_warm_up_takes_the_objectives_preset_saves_the_decoder_and_prints_its_accuracy(make_model, tmp_path,
                                                                                          capsys):
    from st_infocse.modeling import AuxiliaryDecoder
    from st_infocse.training import warm_up_decoder

    model = make_model()  # 4 layers: InfoCSE's preset k=2, n=2; CMLM-CSE's k=3 (two thirds), n=3
    folder = warm_up_decoder(model, random_sentences(40), tmp_path, objective="cmlm-cse", steps=3, batch_size=4,
                             show_progress_bar=False)
    printed = capsys.readouterr().out
    assert folder == tmp_path / "decoder_warmup"
    config = AuxiliaryDecoder.from_pretrained(folder).config
    assert (config.k, config.n) == (3, 3)
    assert printed.startswith("Decoder warm-up: 3 steps, MLM accuracy ") and f"over the last 3; saved to {folder}" in printed
    given = warm_up_decoder(model, random_sentences(40), tmp_path / "given", objective="cmlm-cse", steps=1,
                            batch_size=4, k=1, n=1, show_progress_bar=False)
    config = AuxiliaryDecoder.from_pretrained(given).config
    assert (config.k, config.n) == (1, 1)
    default = warm_up_decoder(model, random_sentences(40), tmp_path / "infocse", steps=1, batch_size=4,
                              show_progress_bar=False)
    assert (AuxiliaryDecoder.from_pretrained(default).config.k, AuxiliaryDecoder.from_pretrained(default).config.n) == (2, 2)
