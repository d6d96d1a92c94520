import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from st_infocse import losses


def _features(model, texts):
    return model.preprocess(texts)


def test_single_column_matches_hand_computed_info_nce(make_model, sentences):
    model = make_model()
    model.eval()  # no dropout: both views are identical, so the loss is computable by hand
    loss = losses.SimCSELoss(model, temperature=0.05, projection=None)
    value = loss([_features(model, sentences[:8])])["contrastive"]
    with torch.no_grad():
        emb = model.encode(sentences[:8], convert_to_tensor=True)
        scores = F.normalize(emb, dim=-1) @ F.normalize(emb, dim=-1).T / 0.05
        expected = F.cross_entropy(scores, torch.arange(8))
    assert value.item() == pytest.approx(expected.item(), rel=1e-5)


def test_two_dropout_views_differ_in_training(make_model, sentences):
    model = make_model()
    model.train()
    loss = losses.SimCSELoss(model)
    embeddings, views = loss.embed([_features(model, sentences[:8])])
    assert len(embeddings) == 2 and views[0]["input_ids"] is views[1]["input_ids"]
    assert not torch.allclose(embeddings[0], embeddings[1])


def test_matches_multiple_negatives_ranking_loss_on_pairs(make_model, sentences):
    model = make_model()
    model.eval()
    anchor, positive, negative = (_features(model, sentences[i : i + 8]) for i in (0, 8, 16))
    ours = losses.SimCSELoss(model, temperature=0.05, projection=None)([anchor, positive, negative])["contrastive"]
    anchor, positive, negative = (_features(model, sentences[i : i + 8]) for i in (0, 8, 16))
    theirs = MultipleNegativesRankingLoss(model, scale=20.0)([anchor, positive, negative], None)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-5)


@pytest.mark.parametrize("kind", ["mlp", "bn-mlp"])
def test_projection_head_is_owned_by_the_loss(make_model, sentences, kind, tmp_path):
    model = make_model()
    loss = losses.SimCSELoss(model, projection=kind)
    value = loss([_features(model, sentences[:8])])["contrastive"]
    value.backward()
    assert any(p.grad is not None for p in loss.projection.parameters())
    model.save(str(tmp_path / "saved"))
    saved = {p.name for p in (tmp_path / "saved").rglob("*")}
    assert not any("projection" in name for name in saved)
    assert loss.get_config_dict()["projection"] == kind


def test_bn_projection_normalises_a_batch_of_one_over_its_two_views(make_model):
    model = make_model()
    loss = losses.SimCSELoss(model, projection="bn-mlp")
    last_norm = [m for m in loss.projection.modules() if isinstance(m, torch.nn.BatchNorm1d)][-1]
    seen = []
    last_norm.register_forward_hook(lambda module, inputs, output: seen.append((inputs[0].shape, output)))
    # One sentence still gives BatchNorm two rows (its two views), as in the authors' stacked batch.
    assert torch.isfinite(loss([_features(model, ["only one sentence"])])["contrastive"])
    (shape, output), = seen
    assert shape[0] == 2  # both views, stacked
    torch.testing.assert_close(output.mean(0), torch.zeros(output.shape[1]), atol=1e-5, rtol=0)  # normalised over them


def test_empty_string_in_batch_is_handled(make_model, sentences):
    # An empty text is a sentence like any other (its [CLS] [SEP] embedding): one more row, a finite loss, a gradient.
    model = make_model()
    model.eval()  # identical views, so the two losses below differ only by the empty row
    loss = losses.SimCSELoss(model)
    with_empty = loss([_features(model, ["", *sentences[:7]])])["contrastive"]
    without = loss([_features(model, sentences[:7])])["contrastive"]
    assert torch.isfinite(with_empty) and with_empty.item() != pytest.approx(without.item())
    with_empty.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads) and any(g.abs().sum() > 0 for g in grads)


def test_bad_arguments(make_model):
    model = make_model()
    with pytest.raises(ValueError, match="temperature"):
        losses.SimCSELoss(model, temperature=0)
    with pytest.raises(ValueError, match="projection"):
        losses.SimCSELoss(model, projection="transformer")


def test_config_and_citation(make_model):
    loss = losses.SimCSELoss(make_model())
    assert loss.get_config_dict() == {"temperature": 0.05, "projection": "mlp", "gather_across_devices": False}
    assert "gao2021simcse" in loss.citation
