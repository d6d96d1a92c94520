"""No argument of a loss is accepted and then left unapplied: it applies, or it is refused in one line naming it.

A given decoder brings its own shape, fusion layers, frozen copy and head; a term switched off (``lambda_=0``,
``informin_weight=0``, ``mlm_weight=0``) reads none of its settings; stage 1 reads one text column and no loss reads
labels. Before these checks, each of these arguments was dropped in silence.
"""

from __future__ import annotations

import pytest
import torch

from st_infocse import losses
from st_infocse.modeling import AuxiliaryDecoder

from ..conftest import random_sentences


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.fixture
def decoder(make_model):
    return AuxiliaryDecoder.from_encoder(make_model(), k=2, n=1)  # detach=True, fusion_init="fresh"


# ------------------------------------------------------------------------------------ settings beside a given decoder


@pytest.mark.parametrize("loss_class", [losses.ConditionalMLMLoss, losses.InfoCSELoss, losses.CMLMCSELoss])
@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"detach": False}, "detach=False differs from the given decoder's detach=True"),
        ({"fusion_init": "copy"}, "fusion_init='copy' differs from the given decoder's fusion_init='fresh'"),
        ({"k": 1}, "k=1 differs from the given decoder's k=2"),
        ({"n": 2}, "n=2 differs from the given decoder's n=1"),
        ({"mlm_head_source": "some/model"}, "mlm_head_source='some/model' does not apply beside a given decoder"),
    ],
)
def test_a_decoder_setting_beside_a_given_decoder_is_refused(make_model, decoder, loss_class, setting, named):
    with pytest.raises(ValueError) as error:
        loss_class(make_model(), decoder=decoder, **setting)
    assert named in _one_line(error)


def test_a_decoder_folder_is_checked_as_an_object_is(make_model, decoder, tmp_path):
    decoder.save_pretrained(tmp_path / "decoder")
    with pytest.raises(ValueError, match="detach=False differs"):
        losses.InfoCSELoss(make_model(), decoder=tmp_path / "decoder", detach=False)
    with pytest.raises(ValueError, match="mlm_head_source"):
        losses.InfoCSELoss(make_model(), decoder=tmp_path / "decoder", mlm_head_source="x")


def test_the_given_decoders_own_values_are_accepted_and_recorded(make_model, decoder, tmp_path):
    # What the command line passes beside a decoder: its --detach default (True) and flags equal to the decoder's.
    loss = losses.InfoCSELoss(make_model(), decoder=decoder, detach=True, fusion_init="fresh", k=2, n=1)
    assert loss.decoder is decoder
    config = loss.get_config_dict()
    assert (config["k"], config["n"], config["detach"], config["fusion_init"]) == (2, 1, True, "fresh")
    assert config["decoder"] == "AuxiliaryDecoder"
    decoder.save_pretrained(tmp_path / "decoder")
    assert losses.ConditionalMLMLoss(make_model(), decoder=tmp_path / "decoder").get_config_dict()["decoder"] == str(
        tmp_path / "decoder"
    )


def test_detach_and_fusion_init_apply_without_a_decoder(make_model):
    loss = losses.InfoCSELoss(make_model(), detach=False, fusion_init="copy")
    assert loss.decoder.config.detach is False and loss.decoder.config.fusion_init == "copy"
    assert all(p.requires_grad for p in loss.decoder.lower.parameters())
    model = make_model()
    copied = losses.ConditionalMLMLoss(model, fusion_init="copy", k=2, n=1).decoder
    torch.testing.assert_close(
        copied.fusion[0].state_dict(), model[0].auto_model.encoder.layer[2].state_dict(), rtol=0, atol=0
    )
    # None takes the preset's: the papers' frozen copy and fresh layers.
    default = losses.InfoCSELoss(make_model()).decoder.config
    assert (default.detach, default.fusion_init) == (True, "fresh")


# ------------------------------------------------------------------------------------ terms switched off


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"k": 1}, "k"),
        ({"n": 1}, "n"),
        ({"mask_rate": 0.2}, "mask_rate"),
        ({"fusion_init": "copy"}, "fusion_init"),
        ({"detach": False}, "detach"),
        ({"mlm_head_source": "x"}, "mlm_head_source"),
        ({"mlm_gather": "bounded"}, "mlm_gather"),
        ({"aux_gradient": "full"}, "aux_gradient"),
    ],
)
def test_mlm_settings_with_lambda_zero_are_refused(make_model, setting, named):
    with pytest.raises(ValueError) as error:
        losses.InfoCSELoss(make_model(), lambda_=0.0, **setting)
    message = _one_line(error)
    assert message.startswith("lambda_=0 turns the conditional MLM off, so ") and f"so {named} would not" in message


def test_lambda_zero_with_a_decoder_is_refused_and_defaults_pass(make_model, decoder):
    with pytest.raises(ValueError, match="so decoder would not apply"):
        losses.InfoCSELoss(make_model(), lambda_=0.0, decoder=decoder)
    # The command line's values for flags it always passes are the defaults, and pass.
    loss = losses.InfoCSELoss(make_model(), lambda_=0.0, detach=True, aux_gradient="weighted", mlm_gather="auto")
    assert loss.lambda_ == 0.0


def test_reconstruction_settings_need_their_term(make_model):
    with pytest.raises(ValueError, match="informin_weight=0 turns the reconstruction term off, so informin_reduction"):
        losses.InfoCSELoss(make_model(), informin_reduction="eq8")
    with pytest.raises(ValueError, match="informin_reduction must be one of"):
        losses.InfoCSELoss(make_model(), informin_weight=1.0, informin_reduction="sum")
    loss = losses.InfoCSELoss(make_model(), informin_weight=1.0, informin_reduction="eq8")
    assert loss.get_config_dict()["informin_reduction"] == "eq8"


def test_informin_mlm_settings_need_the_mlm_term(make_model):
    with pytest.raises(ValueError) as error:
        losses.InforMinReconstructionLoss(make_model(), mask_rate=0.3)
    assert _one_line(error).startswith("mlm_weight=0 turns the MLM term off, so mask_rate would not apply")
    with pytest.raises(ValueError, match="so mlm_gather would not apply"):
        losses.InforMinReconstructionLoss(make_model(), mlm_gather="exact")
    applied = losses.InforMinReconstructionLoss(make_model(), mlm_weight=0.1, mask_rate=0.3)
    assert applied.masker.mask_rate == 0.3 and applied.get_config_dict()["mask_rate"] == 0.3


# ------------------------------------------------------------------------------------ columns and labels


def test_stage1_refuses_a_second_column(make_model):
    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model)
    features = [dict(model.preprocess(random_sentences(4, seed=s))) for s in range(2)]
    with pytest.raises(ValueError) as error:
        stage1(features)
    assert _one_line(error).startswith("AuxiliaryPretrainingLoss reads 1 text column, but the batch has 2")
    assert set(stage1(features[:1])) == {"mlm", "aux"}


def test_stage1_refuses_a_second_column_through_the_trainer(make_model, run_trainer):
    from datasets import Dataset

    model = make_model()
    dataset = Dataset.from_dict({"text": random_sentences(8), "other": random_sentences(8, seed=1)})
    with pytest.raises(ValueError, match="reads 1 text column, but the batch has 2"):
        run_trainer(model, losses.AuxiliaryPretrainingLoss(model), dataset, steps=1)


@pytest.mark.parametrize(
    "build",
    [
        losses.SimCSELoss,
        lambda m: losses.InfoCSELoss(m, lambda_=0.1),
        losses.CMLMCSELoss,
        losses.ConditionalMLMLoss,
        losses.InforMinReconstructionLoss,
        losses.AuxiliaryPretrainingLoss,
    ],
)
def test_labels_are_refused_by_every_loss(make_model, build):
    model = make_model()
    loss = build(model)
    features = [dict(model.preprocess(random_sentences(4)))]
    with pytest.raises(ValueError) as error:
        loss(features, torch.ones(4))
    assert f"{type(loss).__name__} reads no labels" in _one_line(error)


def test_an_embedding_without_a_view_is_refused_not_cut(make_model):
    model = make_model()
    loss = losses.ConditionalMLMLoss(model)
    features = dict(model.preprocess(random_sentences(4)))
    embedding = model(dict(features))["sentence_embedding"]
    with pytest.raises(ValueError, match="2 embeddings for 1 views"):
        loss.compute_loss_from_embeddings([embedding, embedding], [features])


def test_segment_ids_beside_precomputed_lower_states_are_refused(make_model, decoder):
    model = make_model()
    features = model.preprocess(random_sentences(4))
    h = torch.randn(4, 32)
    labels = features["input_ids"].masked_fill(features["attention_mask"] == 0, -100)
    lower = decoder.lower_hidden_states(features["input_ids"], features["attention_mask"])
    with pytest.raises(ValueError, match="token_type_ids feed the lower stack"):
        decoder(h, features["input_ids"], features["attention_mask"], labels, features["token_type_ids"], lower_hidden=lower)
    assert decoder(h, features["input_ids"], features["attention_mask"], labels, lower_hidden=lower).total > 0
