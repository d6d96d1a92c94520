import copy

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from torch.utils.data import DataLoader

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> list[str]:
    return [k for k, v in module.state_dict().items() if not torch.equal(v, before[k])]


def test_headline_call_trains_with_the_trainer(make_model, run_trainer, tmp_path):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5)
    lower, fusion, head = (_snapshot(m) for m in (loss.decoder.lower, loss.decoder.fusion, loss.decoder.head))
    encoder = _snapshot(model)
    dataset = Dataset.from_dict({"text": random_sentences(48)})
    # lambda_=1e-5 is tiny; a higher learning rate for the auxiliary modules makes their change visible in 3 steps.
    trainer = run_trainer(
        model, loss, dataset, callbacks=[AuxiliaryStateCallback(loss)], learning_rate_mapping={r"cmlm\.decoder\.": 0.5}
    )

    assert _changed(fusion, loss.decoder.fusion) and _changed(head, loss.decoder.head)
    assert not _changed(lower, loss.decoder.lower), "the frozen copy moved"
    assert _changed(encoder, model)
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert {"contrastive", "cmlm", "cmlm_loss", "cmlm_accuracy"} <= set(logged[0])

    model.save(str(tmp_path / "saved"))
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert set(reloaded.state_dict()) == set(model.state_dict())
    assert not [p for p in (tmp_path / "saved").rglob("*") if "auxiliary" in p.name]
    embeddings = reloaded.encode(["a cat sat on the mat", "the dog ran"])
    assert embeddings.shape == (2, 32)
    assert torch.allclose(torch.tensor(embeddings), torch.tensor(model.encode(["a cat sat on the mat", "the dog ran"])), atol=1e-5)


def test_headline_call_trains_with_fit(make_model, tmp_path):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5)
    fusion = _snapshot(loss.decoder.fusion)
    lower = _snapshot(loss.decoder.lower)
    from sentence_transformers.sentence_transformer.readers import InputExample

    examples = [InputExample(texts=[s]) for s in random_sentences(24)]
    # checkpoint_path: fit's trainer otherwise writes into ./checkpoints/model
    model.fit(train_objectives=[(DataLoader(examples, batch_size=8, shuffle=True), loss)], epochs=1,
              show_progress_bar=False, checkpoint_path=str(tmp_path / "fit"))
    assert _changed(fusion, loss.decoder.fusion)
    assert not _changed(lower, loss.decoder.lower)


def test_pairs_are_accepted(make_model, run_trainer):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    dataset = Dataset.from_dict({"anchor": random_sentences(24, seed=1), "positive": random_sentences(24, seed=2)})
    trainer = run_trainer(model, loss, dataset, steps=2)
    assert trainer.state.global_step == 2


def test_lambda_zero_is_exactly_simcse(make_model, sentences):
    model = make_model()
    features = model.preprocess(sentences[:8])
    torch.manual_seed(3)
    infocse = losses.InfoCSELoss(model, lambda_=0)
    simcse = losses.SimCSELoss(model, projection="bn-mlp")
    simcse.projection.load_state_dict(infocse.contrastive.projection.state_dict())
    expected = simcse([dict(features)])["contrastive"]
    torch.manual_seed(3)
    out = infocse([dict(features)])
    assert set(out) == {"contrastive"}
    assert torch.equal(out["contrastive"], expected)


def test_components_are_weighted(make_model, sentences):
    model = make_model()
    model.eval()
    loss = losses.InfoCSELoss(model, lambda_=0.5, informin_weight=2.0)
    out = loss([model.preprocess(sentences[:8])])
    assert set(out) == {"contrastive", "cmlm", "reconstruction"}
    assert out["reconstruction"].item() == pytest.approx(0.0, abs=1e-6)  # eval mode: identical views
    # The cmlm component is lambda times the decoder's MLM loss recorded for this step.
    assert out["cmlm"].item() == pytest.approx(0.5 * loss.cmlm.metrics.pop()["cmlm_loss"], rel=1e-5)


def test_the_reconstruction_term_is_scaled_by_informin_weight_in_training(make_model, sentences):
    # In training the two dropout views differ, so the term is non-zero and its weight shows.
    model = make_model()
    model.train()
    terms = {}
    for weight in (1.0, 3.0):
        torch.manual_seed(1)  # the same fresh modules for both weights
        loss = losses.InfoCSELoss(model, informin_weight=weight)
        loss.train()
        torch.manual_seed(0)
        terms[weight] = loss([model.preprocess(sentences[:8])])["reconstruction"].item()
    assert terms[1.0] > 1e-6
    assert terms[3.0] == pytest.approx(3.0 * terms[1.0], rel=1e-4)


def test_stage_one_decoder_is_loaded(make_model, tmp_path):
    model = make_model()
    source = losses.InfoCSELoss(model)
    with torch.no_grad():
        source.decoder.fusion[0].output.dense.weight.add_(1.0)
    source.decoder.save_pretrained(tmp_path / "decoder")
    loaded = losses.InfoCSELoss(copy.deepcopy(model), decoder=tmp_path / "decoder")
    for key, value in source.decoder.state_dict().items():
        assert torch.equal(value, loaded.decoder.state_dict()[key])
    with pytest.raises(ValueError, match="differs from the given decoder"):
        losses.InfoCSELoss(model, decoder=tmp_path / "decoder", k=1)


def test_cmlm_cse_defaults(make_model):
    loss = losses.CMLMCSELoss(make_model())
    assert (loss.lambda_, loss.cmlm.k, loss.cmlm.n, loss.cmlm.mask_rate) == (0.005, 3, 3, 0.15)
    assert loss.contrastive.projection_kind == "mlp"
    assert "zhang2023cmlmcse" in loss.citation


def test_model_card_names_objective_and_citation(make_model, run_trainer, tmp_path):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=1e-5)
    run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(16)}), steps=1)
    model.save(str(tmp_path / "card"))
    card = (tmp_path / "card" / "README.md").read_text()
    assert "InfoCSELoss" in card
    assert "wu2022infocse" in card
    assert '"lambda_": 1e-05' in card
