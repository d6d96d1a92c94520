"""One default per name: every public signature's default for a preset setting (weight, mask rate, decoder depth,
fusion layers, projection head, frozen copy) is the registry's (``st_infocse/losses/registry.py``), or None meaning
"the registry's" — and what None resolves to is the registry's too.
"""

from __future__ import annotations

import inspect

import pytest

from st_infocse import losses
from st_infocse.evaluation import ConditionalMLMEvaluator
from st_infocse.losses.registry import INFORMIN_LAMBDA, MLM_MASK_RATE, PRESETS
from st_infocse.modeling import AuxiliaryDecoder, AuxiliaryDecoderConfig
from st_infocse.training import train_probe_decoder

from ..conftest import random_sentences

INFOCSE, CMLM_CSE = PRESETS["infocse"], PRESETS["cmlm-cse"]
# None: the callable resolves it from the registry (checked below by building each one).
RESOLVED = None

# callable -> {argument: the registry's value, or RESOLVED}
EXPECTED = {
    losses.InfoCSELoss.__init__: {
        "lambda_": RESOLVED,
        "projection": INFOCSE.projection,
        "k": RESOLVED,
        "n": RESOLVED,
        "mask_rate": RESOLVED,
        "fusion_init": RESOLVED,
        "detach": RESOLVED,
    },
    losses.CMLMCSELoss.__init__: {"lambda_": RESOLVED, "projection": CMLM_CSE.projection},
    losses.ConditionalMLMLoss.__init__: {
        "preset": "infocse",
        "k": RESOLVED,
        "n": RESOLVED,
        "mask_rate": RESOLVED,
        "fusion_init": RESOLVED,
        "detach": RESOLVED,
    },
    losses.InforMinReconstructionLoss.__init__: {"lambda_": INFORMIN_LAMBDA, "mask_rate": RESOLVED},
    losses.AuxiliaryPretrainingLoss.__init__: {
        "k": RESOLVED,
        "n": INFOCSE.n,
        "mask_rate": MLM_MASK_RATE,
        "fusion_init": INFOCSE.fusion_init,
    },
    AuxiliaryDecoder.from_encoder.__func__: {"fusion_init": INFOCSE.fusion_init, "detach": INFOCSE.detach},
    train_probe_decoder: {"k": RESOLVED, "n": RESOLVED, "mask_rate": RESOLVED, "fusion_init": RESOLVED},
    ConditionalMLMEvaluator.__init__: {"mask_rate": RESOLVED},
}


def test_the_presets_agree_where_one_default_serves_both():
    # AuxiliaryDecoder and stage 1 have one default for both presets: the presets must not disagree there.
    assert INFOCSE.fusion_init == CMLM_CSE.fusion_init == "fresh"
    assert INFOCSE.detach is CMLM_CSE.detach is True


@pytest.mark.parametrize("function", list(EXPECTED), ids=lambda f: f.__qualname__)
def test_signature_defaults_are_the_registrys(function):
    parameters = inspect.signature(function).parameters
    for name, expected in EXPECTED[function].items():
        assert name in parameters, (function.__qualname__, name)
        assert parameters[name].default == expected, (function.__qualname__, name, parameters[name].default, expected)


def test_the_decoder_configs_default_is_the_released_start():
    fields = AuxiliaryDecoderConfig.__dataclass_fields__
    assert fields["fusion_init"].default == INFOCSE.fusion_init and fields["detach"].default is INFOCSE.detach


def test_none_resolves_to_the_registry(make_model):
    model = make_model()  # 4 layers
    for cls, preset in ((losses.InfoCSELoss, INFOCSE), (losses.CMLMCSELoss, CMLM_CSE)):
        loss = cls(model)
        config = loss.get_config_dict()
        assert loss.lambda_ == preset.lambda_
        assert (config["k"], config["n"], config["mask_rate"]) == (preset.k(4), preset.n, preset.mask_rate(4))
        assert (config["fusion_init"], config["detach"], config["projection"]) == (
            preset.fusion_init,
            preset.detach,
            preset.projection,
        )
    assert losses.InforMinReconstructionLoss(model).mask_rate == MLM_MASK_RATE
    assert losses.AuxiliaryPretrainingLoss(model).k == INFOCSE.k(4)
    decoder = AuxiliaryDecoder.from_encoder(model, k=2, n=1)
    assert (decoder.config.fusion_init, decoder.config.detach) == (INFOCSE.fusion_init, INFOCSE.detach)
    probe, _ = train_probe_decoder(model, random_sentences(8), steps=1, batch_size=4, show_progress_bar=False)
    assert (probe.config.k, probe.config.n, probe.config.fusion_init) == (INFOCSE.k(4), INFOCSE.n, INFOCSE.fusion_init)
    evaluator = ConditionalMLMEvaluator(random_sentences(4), probe)
    assert evaluator.mask_rate == INFOCSE.mask_rate(4)


def test_a_bare_decoders_mask_rate_follows_its_encoders_depth(make_model, tmp_path):
    decoder = AuxiliaryDecoder.from_encoder(make_model(), k=2, n=1)
    decoder.config.encoder_config["num_hidden_layers"] = 24  # as a BERT-large decoder records it
    assert ConditionalMLMEvaluator(["a b", "c d"], decoder).mask_rate == INFOCSE.mask_rate(24) == 0.30
