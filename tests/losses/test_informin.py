import pytest
import torch
import torch.nn.functional as F
from datasets import Dataset

from st_infocse import losses

from ..conftest import random_sentences


def test_reconstruction_term_matches_hand_computation():
    z1 = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    z2 = torch.tensor([[4.0, 3.0], [0.0, 2.0]])
    # Normalised: (0.6, 0.8) vs (0.8, 0.6) -> squared distance 0.08; (1, 0) vs (0, 1) -> 2.
    eq8 = (0.08 + 2.0) / 2
    assert losses.reconstruction_term(z1, z2, "eq8").item() == pytest.approx(eq8)
    # Authors' code: mse(z1, z2) + mse(z2, z1) = 2 * mean over batch and dims = (2 / dim) * eq8.
    assert losses.reconstruction_term(z1, z2, "official").item() == pytest.approx(2 * eq8 / 2)
    with pytest.raises(ValueError, match="reduction"):
        losses.reconstruction_term(z1, z2, "sum")


def test_loss_is_contrastive_plus_lambda_reconstruction(make_model):
    model = make_model()
    loss = losses.InforMinReconstructionLoss(model, lambda_=0.4, projection=None, reduction="eq8")
    torch.manual_seed(0)
    e1, e2 = torch.randn(6, 32), torch.randn(6, 32)
    out = loss.compute_loss_from_embeddings([e1, e2])
    scores = F.normalize(e1, dim=-1) @ F.normalize(e2, dim=-1).T / 0.05
    assert out["contrastive"].item() == pytest.approx(F.cross_entropy(scores, torch.arange(6)).item(), rel=1e-5)
    distance = (F.normalize(e1, dim=-1) - F.normalize(e2, dim=-1)).pow(2).sum(-1).mean()
    assert out["reconstruction"].item() == pytest.approx(0.4 * distance.item(), rel=1e-5)


def test_paper_defaults_and_training(make_model, run_trainer):
    model = make_model()
    loss = losses.InforMinReconstructionLoss(model)
    config = loss.get_config_dict()
    assert (config["lambda_"], config["reduction"], config["mlm_weight"], config["projection"]) == (0.4, "official", 0.0, "mlp")
    assert not hasattr(loss, "mlm_head")
    trainer = run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(24)}), steps=2)
    assert "reconstruction" in trainer.state.log_history[0]
    assert "chen2022informin" in loss.citation


def test_optional_mlm_term_does_not_mask_the_contrastive_views(make_model, sentences):
    model = make_model()
    model.eval()
    loss = losses.InforMinReconstructionLoss(model, mlm_weight=0.1, projection=None)
    features = model.preprocess(sentences[:8])
    original = features["input_ids"].clone()
    out = loss([features])
    assert set(out) == {"contrastive", "reconstruction", "mlm"}
    assert torch.equal(features["input_ids"], original)
    # Views unmasked and dropout off: identical views, so the reconstruction term is zero.
    assert out["reconstruction"].item() == pytest.approx(0.0, abs=1e-6)
    assert out["mlm"].item() > 0
