"""Every loss inside sentence-transformers' loss wrappers (MatryoshkaLoss, Matryoshka2dLoss, AdaptiveLayerLoss):
trained two steps with the named terms logged, the meaning checked, and what cannot run refused in one line."""

from __future__ import annotations

import inspect

import pytest
import torch
from datasets import Dataset
from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss, Matryoshka2dLoss, MatryoshkaLoss

from st_infocse import losses
from st_infocse.losses.terms import WRAPPER_TERM, LossTerms
from st_infocse.modeling.heads import ProjectionHead, to_width
from st_infocse.training import AuxiliaryStateCallback

LOSSES = {
    "simcse": (lambda model: losses.SimCSELoss(model), ("loss",)),
    "infocse": (lambda model: losses.InfoCSELoss(model, lambda_=0.1), ("contrastive", "cmlm")),
    "cmlm-cse": (lambda model: losses.CMLMCSELoss(model), ("contrastive", "cmlm")),
    "informin": (lambda model: losses.InforMinReconstructionLoss(model), ("contrastive", "reconstruction")),
}
WRAPPERS = {
    "matryoshka": lambda model, loss: MatryoshkaLoss(model, loss, [32, 16, 8]),
    "matryoshka-2d": lambda model, loss: Matryoshka2dLoss(model, loss, [32, 16]),
    "adaptive-layer": lambda model, loss: AdaptiveLayerLoss(model, loss),
}


def _features(model, texts):
    return [dict(model.preprocess(texts))]


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
@pytest.mark.parametrize("name", list(LOSSES))
def test_every_loss_trains_inside_every_wrapper_and_logs_its_terms(make_model, sentences, run_trainer, name,
                                                                  wrapper):
    model = make_model()
    build, terms = LOSSES[name]
    inner = build(model)
    own = {n: p.detach().clone() for n, p in inner.named_parameters() if not n.startswith("model.")
           and p.requires_grad}
    encoder = {n: p.detach().clone() for n, p in model.named_parameters()}
    wrapped = WRAPPERS[wrapper](model, inner)
    trainer = run_trainer(model, wrapped, Dataset.from_dict({"text": sentences[:16]}),
                          steps=2, callbacks=[AuxiliaryStateCallback(wrapped)])
    logged = {key for entry in trainer.state.log_history for key in entry}
    if terms != ("loss",):  # named terms keep their names through the wrapper's weighting and sums
        assert set(terms) <= logged, logged
    assert any(not torch.equal(encoder[n], p) for n, p in model.named_parameters())
    changed = [n for n, p in inner.named_parameters() if n in own and not torch.equal(own[n], p)]
    assert bool(changed) == bool(own)  # the loss's own heads and decoder train too


@pytest.mark.parametrize("name", ["simcse", "infocse", "informin"])
def test_matryoshka_at_a_smaller_width_is_the_inner_loss_on_the_truncated_embedding(make_model, sentences, name):
    """With all the weight on width 16, MatryoshkaLoss equals the inner loss on a model whose embedding is cut to
    its first 16 dimensions and L2-normalised (the wrapper's own truncation)."""
    model = make_model()
    model.eval()  # no dropout: the two runs see the same network
    inner = LOSSES[name][0](model)
    inner.eval()
    features = _features(model, sentences[:8])
    torch.manual_seed(0)
    wrapped = MatryoshkaLoss(model, inner, [32, 16], matryoshka_weights=[0, 1])(features, None)
    forward = model.forward

    def truncated(batch, *args, **kwargs):
        out = forward(batch, *args, **kwargs)
        out["sentence_embedding"] = torch.nn.functional.normalize(out["sentence_embedding"][..., :16], dim=-1)
        return out

    model.forward = truncated
    torch.manual_seed(0)
    try:
        direct = inner(features)
    finally:
        del model.forward
    total = sum(wrapped.values()) if isinstance(wrapped, dict) else wrapped
    expected = sum(direct.values()) if isinstance(direct, dict) else direct
    if name == "infocse":  # its MLM masks at random: compare the contrastive term, which is deterministic
        total, expected = wrapped["contrastive"], direct["contrastive"]
    torch.testing.assert_close(total, expected)


def test_the_projection_head_and_the_decoder_read_a_truncated_embedding_through_its_first_dimensions():
    head = ProjectionHead(8, "mlp")
    short = torch.randn(3, 5)
    torch.testing.assert_close(head(short), head(torch.cat([short, torch.zeros(3, 3)], dim=1)))
    assert to_width(short, 5) is short and to_width(short, 4) is short


def test_loss_terms_take_the_wrappers_arithmetic():
    terms = LossTerms(contrastive=torch.tensor(2.0), cmlm=torch.tensor(1.0))
    total = 0.0
    total += 1.0 * terms
    total = total + terms * 0.5 / 2 + torch.tensor(4.0) * 0.25
    assert isinstance(total, LossTerms)
    assert {k: float(v) for k, v in total.items()} == {"contrastive": 2.5, "cmlm": 1.25, WRAPPER_TERM: 1.0}
    with pytest.raises(TypeError):
        terms + "x"  # noqa: B018


def test_what_replays_cached_outputs_is_refused_in_one_line(make_model, sentences):
    model = make_model()
    features = _features(model, sentences[:8])
    informin = losses.InforMinReconstructionLoss(model, mlm_weight=0.1)
    with pytest.raises(ValueError, match=r"mlm_weight=0\.1\) cannot run inside MatryoshkaLoss.*use mlm_weight=0"):
        MatryoshkaLoss(model, informin, [32, 16])(features, None)
    stage1 = losses.AuxiliaryPretrainingLoss(model)
    with pytest.raises(ValueError, match=r"AuxiliaryPretrainingLoss: stage 1 .* cannot run inside AdaptiveLayerLoss"):
        AdaptiveLayerLoss(model, stage1)(features, None)
    # the wrappers put the model's own forward back: unwrapped, the same losses run
    assert inspect.ismethod(model.forward)
    assert "mlm" in informin(features)


class _Adapted(torch.nn.Module):
    """A linear layer wrapped as PEFT's LoRA wraps one: the original under ``base_layer``, a low-rank change beside."""

    def __init__(self, base: torch.nn.Linear) -> None:
        super().__init__()
        self.base_layer = base
        self.lora_A = torch.nn.Linear(base.in_features, 2, bias=False)
        self.lora_B = torch.nn.Linear(2, base.out_features, bias=False)
        torch.nn.init.normal_(self.lora_B.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base_layer(x) + self.lora_B(self.lora_A(x))


def test_the_frozen_copy_of_an_adapted_encoder_holds_its_base_weights(make_model):
    model = make_model()
    attention = model[0].auto_model.encoder.layer[0].attention.self
    base = attention.query.weight.detach().clone()
    attention.query = _Adapted(attention.query)
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    copied = loss.decoder.lower.encoder.layer[0].attention.self.query.weight
    torch.testing.assert_close(copied, base)
