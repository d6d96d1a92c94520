"""The trainer builder's learning-rate mapping: the loss's own modules at their own rate, the encoder at the
trainer's."""

from __future__ import annotations

import re

import pytest

from st_infocse import losses
from st_infocse.training import learning_rate_mapping


def test_the_mapping_names_the_losss_own_modules_and_not_the_encoder(make_model):
    model = make_model()
    loss = losses.InfoCSELoss(model)
    mapping = learning_rate_mapping(loss, 1e-3)
    assert list(mapping.values()) == [1e-3]
    pattern = next(iter(mapping))
    own = {name for name, _ in loss.named_parameters() if re.match(pattern, name)}
    assert own and own == {name for name, _ in loss.named_parameters() if not name.startswith("model.")}
    assert learning_rate_mapping(loss, None) == {}


def test_a_rate_for_a_loss_without_modules_of_its_own_is_refused_by_name(make_model):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    loss = MultipleNegativesRankingLoss(make_model())
    assert learning_rate_mapping(loss, None) == {}
    with pytest.raises(ValueError, match="^aux_learning_rate given, but this objective has no auxiliary modules$"):
        learning_rate_mapping(loss, 1e-3)


def test_a_loaded_model_names_its_training_length_and_the_length_it_is_saved_with():
    from types import SimpleNamespace

    from st_infocse.training.builder import LoadedModel

    at_32 = SimpleNamespace(max_seq_length=32)
    assert LoadedModel(at_32, 64, "kept").lengths() == "training max length 32, saved model max length 64"
    assert LoadedModel(at_32, None, "kept").lengths() == ("training max length 32, saved model max length 32 (the "
                                                          "model states no length of its own)")


def test_a_seeded_load_leaves_every_run_the_same_random_state_for_what_is_built_next(tiny_bert_dir):
    import torch

    from st_infocse.training.builder import load_model

    def head_after_load(seed):  # a loss's module built right after the model, as the command line builds it
        load_model(str(tiny_bert_dir), seed=seed)
        return torch.nn.Linear(4, 4).weight

    assert torch.equal(head_after_load(3), head_after_load(3))
    assert not torch.equal(head_after_load(3), head_after_load(4))
