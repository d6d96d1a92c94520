"""The defaults that make the losses compute the released objectives; each assertion names its source.

The parity tests copy the package's random modules into the references, so they cannot see how those modules
start, nor settings that depend on the encoder's depth: these tests pin them.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from st_infocse import losses

from .conftest import build_checkpoint, column_texts


@pytest.fixture(scope="module")
def deep_checkpoints(tmp_path_factory):
    return {layers: build_checkpoint(tmp_path_factory.mktemp(f"bert{layers}"), layers) for layers in (12, 24)}


def _linear_init_ok(linear: torch.nn.Linear, std: float) -> None:
    assert linear.weight.std().item() == pytest.approx(std, rel=0.15)
    assert abs(linear.weight.mean().item()) < std / 5
    if linear.bias is not None:
        assert torch.count_nonzero(linear.bias) == 0


def test_simcse_default_head_is_the_unsupervised_mlp(cls_model):
    # run_unsup_example.sh --pooler_type cls --mlp_only_train; simcse/models.py MLPLayer + init_weights
    loss = losses.SimCSELoss(cls_model())
    net = loss.projection.net
    assert isinstance(net[0], torch.nn.Linear) and isinstance(net[1], torch.nn.Tanh) and len(net) == 2
    assert net[0].in_features == net[0].out_features == 32
    _linear_init_ok(net[0], 0.02)


def test_infocse_default_head_is_the_batchnorm_projection(cls_model):
    # Infocse-bert-base.sh --batchnorm; models_cls_mlm.py ProjectionMLP
    loss = losses.InfoCSELoss(cls_model())
    net = loss.contrastive.projection.net
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["Linear", "BatchNorm1d", "ReLU", "Linear", "BatchNorm1d"]
    assert (net[0].in_features, net[0].out_features, net[3].in_features, net[3].out_features) == (32, 64, 64, 32)
    assert net[0].bias is None and net[3].bias is None
    assert net[1].affine and not net[4].affine
    _linear_init_ok(net[0], 0.02)
    _linear_init_ok(net[3], 0.02)


def test_batchnorm_sees_both_views_as_one_batch(cls_model):
    model = cls_model()
    loss = losses.InfoCSELoss(model)
    seen = []
    loss.contrastive.projection.net[1].register_forward_hook(lambda m, args, out: seen.append(args[0].shape[0]))
    texts = column_texts("pairs", batch=8)
    loss([dict(model.preprocess(t)) for t in texts])
    assert seen == [16]
    seen.clear()
    loss([dict(model.preprocess(texts[0]))])
    assert seen == [16]


def test_infocse_preset_by_depth(cls_model, deep_checkpoints):
    small = losses.InfoCSELoss(cls_model())
    assert (small.cmlm.k, small.cmlm.n, small.cmlm.mask_rate, small.lambda_) == (2, 2, 0.40, 1e-5)
    # --skip_from 6 on BERT-base and on BERT-large; mlm_rate 0.4 base, 0.3 large
    base = losses.InfoCSELoss(cls_model(deep_checkpoints[12]))
    assert (base.cmlm.k, base.cmlm.n, base.cmlm.mask_rate) == (6, 2, 0.40)
    large = losses.InfoCSELoss(cls_model(deep_checkpoints[24]))
    assert (large.cmlm.k, large.cmlm.n, large.cmlm.mask_rate) == (6, 2, 0.30)


def test_cmlm_cse_preset_is_the_headline_configuration(cls_model, deep_checkpoints):
    # Paper 003: 8-3 layers (Table 6), lambda 0.005 (Table 5), 15% masking (Table 3), SimCSE's head (section 4.1)
    loss = losses.CMLMCSELoss(cls_model(deep_checkpoints[12]))
    assert (loss.cmlm.k, loss.cmlm.n, loss.cmlm.mask_rate, loss.lambda_) == (8, 3, 0.15, 0.005)
    assert loss.contrastive.projection_kind == "mlp"
    assert loss.decoder.config.fusion_init == "fresh"


def test_fusion_layers_start_fresh_with_the_encoders_initializer_range(cls_model):
    # models_cls_mlm.py BertForCL.__init__: c_head = BertLayer(...) x n, then c_head.apply(bert._init_weights)
    model = cls_model()
    model[0].auto_model.config.initializer_range = 0.05
    loss = losses.InfoCSELoss(model)
    assert loss.decoder.config.fusion_init == "fresh"
    encoder_layers = model[0].auto_model.encoder.layer
    for layer in loss.decoder.fusion:
        for module in layer.modules():
            if isinstance(module, torch.nn.Linear):
                _linear_init_ok(module, 0.05)
            elif isinstance(module, torch.nn.LayerNorm):
                assert torch.all(module.weight == 1) and torch.all(module.bias == 0)
        for ours, theirs in zip(layer.parameters(), encoder_layers[loss.cmlm.k].parameters(), strict=True):
            assert not torch.equal(ours, theirs) or torch.all(ours == 0) or torch.all(ours == 1)


def test_mlm_losses_warn_once_about_non_cls_pooling(cls_model):
    with pytest.warns(UserWarning, match="cls"):
        losses.InfoCSELoss(cls_model(pooling="mean"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses.InfoCSELoss(cls_model())


@pytest.mark.parametrize(
    "loss_class",
    [
        losses.SimCSELoss,
        losses.InfoCSELoss,
        losses.CMLMCSELoss,
        losses.ConditionalMLMLoss,
        losses.InforMinReconstructionLoss,
        losses.AuxiliaryPretrainingLoss,
    ],
)
def test_docstring_examples_build_cls_pooled_models(loss_class):
    doc = (loss_class.__init__.__doc__ or "") + (loss_class.__doc__ or "")
    assert "Example:" in doc
    assert 'Pooling(encoder.get_embedding_dimension(), "cls")' in doc
    assert 'SentenceTransformer("bert-base-uncased")' not in doc
