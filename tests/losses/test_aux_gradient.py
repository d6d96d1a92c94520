"""InfoCSELoss(aux_gradient="full"): the decoder learns from the whole MLM gradient, the encoder still gets lambda."""

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.modeling import scale_gradient
from st_infocse.training import AuxiliaryStateCallback, clip_gradients_jointly

from ..conftest import random_sentences


def _features(model, texts):
    return [model.preprocess(texts)]


def _grads(make_model, aux_gradient, lambda_, texts):
    model = make_model(seed=0)
    torch.manual_seed(1)  # the same fresh fusion layers and projection head for every call
    loss = losses.InfoCSELoss(model, lambda_=lambda_, aux_gradient=aux_gradient)
    torch.manual_seed(2)  # the same dropout and masks
    terms = loss(_features(model, texts))
    sum(terms.values()).backward()
    encoder = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    decoder = {name: p.grad.clone() for name, p in loss.decoder.named_parameters() if p.grad is not None}
    return loss, terms, encoder, decoder


def test_scale_gradient_is_the_identity_forward_and_scales_backward():
    x = torch.randn(3, 4, requires_grad=True)
    y = scale_gradient(x, 0.25)
    assert torch.equal(y, x)
    (y * torch.arange(4.0)).sum().backward()
    assert torch.allclose(x.grad, 0.25 * torch.arange(4.0).expand(3, 4))


@pytest.mark.parametrize("lambda_", [1e-5, 0.5])
def test_encoder_gradient_unchanged_and_decoder_gets_the_unweighted_one(make_model, lambda_):
    texts = random_sentences(8, seed=3)
    _, weighted_terms, enc_w, dec_w = _grads(make_model, "weighted", lambda_, texts)
    _, full_terms, enc_f, dec_f = _grads(make_model, "full", lambda_, texts)

    # Same loss values: the option changes gradients, not what is logged.
    for key in weighted_terms:
        torch.testing.assert_close(full_terms[key], weighted_terms[key], rtol=1e-6, atol=0)
    # The encoder's gradient is the same (rounding aside) ...
    assert enc_w.keys() == enc_f.keys() and enc_w
    for name in enc_w:
        torch.testing.assert_close(enc_f[name], enc_w[name], rtol=1e-4, atol=1e-10)
    # ... and the decoder's is 1 / lambda times larger: the MLM gradient itself.
    assert dec_w.keys() == dec_f.keys() and dec_w
    for name in dec_w:
        torch.testing.assert_close(dec_f[name] * lambda_, dec_w[name], rtol=1e-4, atol=1e-12)


def test_the_mlm_term_reaches_the_encoder_so_the_comparison_can_fail(make_model):
    # Without this, an encoder gradient that ignored the MLM term would pass the test above.
    texts = random_sentences(8, seed=3)
    *_, with_mlm, _ = _grads(make_model, "full", 0.5, texts)
    model = make_model(seed=0)
    torch.manual_seed(1)
    loss = losses.InfoCSELoss(model, lambda_=0.0)
    torch.manual_seed(2)
    loss(_features(model, texts))["contrastive"].backward()
    differences = [(with_mlm[n] - p.grad).abs().max().item() for n, p in model.named_parameters() if p.grad is not None]
    assert max(differences) > 1e-6


def test_full_gradient_decoder_is_clipped_under_its_own_norm(make_model):
    texts = random_sentences(8, seed=3)
    loss, _, _, _ = _grads(make_model, "full", 1e-5, texts)
    decoder_ids = {id(p) for p in loss.separately_clipped_parameters()}
    assert decoder_ids == {id(p) for p in loss.decoder.parameters() if p.requires_grad}
    rest = [p for p in list(loss.parameters()) + list(loss.model.parameters())
            if p.requires_grad and p.grad is not None and id(p) not in decoder_ids]
    expected = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in {id(p): p for p in rest}.values()]))
    decoder_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in loss.separately_clipped_parameters()]))
    assert decoder_norm > 1e-2

    returned = clip_gradients_jointly(loss, max_norm=1e-3)
    torch.testing.assert_close(returned, expected)
    after = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in loss.separately_clipped_parameters()]))
    assert after == pytest.approx(1e-3, rel=1e-3)


def test_weighted_default_clips_everything_together(make_model):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5)
    assert loss.separately_clipped_parameters() == []
    assert loss.get_config_dict()["aux_gradient"] == "weighted"  # listed at its default too, as every argument


def test_full_gradient_trains_and_is_recorded(make_model, run_trainer):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5, aux_gradient="full")
    head = {k: v.clone() for k, v in loss.decoder.head.state_dict().items()}
    dataset = Dataset.from_dict({"text": random_sentences(32)})
    trainer = run_trainer(model, loss, dataset, callbacks=[AuxiliaryStateCallback(loss)])
    assert any(not torch.equal(v, head[k]) for k, v in loss.decoder.head.state_dict().items())
    assert loss.get_config_dict()["aux_gradient"] == "full"
    logged = [entry for entry in trainer.state.log_history if "cmlm" in entry]
    assert logged and all(entry["cmlm"] < 1e-3 for entry in logged)  # the weighted value, lambda * L_aux


def test_cmlm_cse_accepts_the_option(make_model):
    loss = losses.CMLMCSELoss(make_model(), aux_gradient="full")
    assert loss.aux_gradient == "full"


def test_unknown_aux_gradient_is_refused(make_model):
    with pytest.raises(ValueError, match="aux_gradient must be one of"):
        losses.InfoCSELoss(make_model(), aux_gradient="unweighted")
