"""The public contract between the losses and the training loop (st_infocse.losses.contract)."""

import pytest
import torch

from st_infocse import losses
from st_infocse.losses import TrainingLoss, training_losses

from ..conftest import random_sentences


@pytest.mark.parametrize(
    "cls",
    [losses.SimCSELoss, losses.InfoCSELoss, losses.CMLMCSELoss, losses.ConditionalMLMLoss,
     losses.InforMinReconstructionLoss, losses.AuxiliaryPretrainingLoss],
)
def test_every_loss_follows_the_contract(make_model, cls):
    loss = cls(make_model())
    assert isinstance(loss, TrainingLoss)
    assert loss.training_step is None and not loss.defer_checks
    assert loss.separately_clipped_parameters() == []


@pytest.mark.parametrize(
    ("cls", "terms"),
    [
        (losses.SimCSELoss, {"contrastive"}),
        (losses.InfoCSELoss, {"contrastive", "cmlm"}),
        (losses.CMLMCSELoss, {"contrastive", "cmlm"}),
        (losses.ConditionalMLMLoss, {"cmlm"}),
        (losses.InforMinReconstructionLoss, {"contrastive", "reconstruction"}),
        (losses.AuxiliaryPretrainingLoss, {"mlm", "aux"}),
    ],
)
def test_every_loss_returns_named_scalar_terms(make_model, cls, terms):
    # One return shape for every loss: the trainer sums the terms into the loss and logs each under its name.
    model = make_model()
    out = cls(model)([model.preprocess(random_sentences(8))])
    assert isinstance(out, losses.LossTerms) and set(out) == terms
    assert all(value.dim() == 0 and value.requires_grad for value in out.values())


def test_infocse_exposes_its_parts_and_their_metrics(make_model):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.5)
    parts = list(training_losses(loss))
    assert parts[0] is loss and loss.contrastive in parts and loss.cmlm in parts
    loss([model.preprocess(random_sentences(8))])
    metrics = loss.cmlm.pop_metrics()
    assert set(metrics) == {"cmlm_loss", "cmlm_accuracy"} and metrics["cmlm_loss"] > 0
    assert loss.cmlm.pop_metrics() == {}  # read once, then reset
    assert loss.pop_metrics() == {}  # the combined loss keeps no metrics of its own


def test_deferred_checks_raise_once_the_step_ends(make_model):
    model = make_model()
    loss = losses.SimCSELoss(model)
    loss.defer_step_checks()
    loss.training_step = 7
    with torch.no_grad():
        for param in model.parameters():
            param.fill_(float("nan"))
    loss([model.preprocess(random_sentences(4))])  # no error yet: the flags stay on the device
    with pytest.raises(losses.NonFiniteLossError, match="step 7"):
        loss.raise_step_checks()
    loss.raise_step_checks()  # forgotten once read
    loss.defer_step_checks(False)
    with pytest.raises(losses.NonFiniteLossError):
        loss([model.preprocess(random_sentences(4))])


def _callback_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "AuxiliaryStateCallback" in str(w.message)]


def test_training_without_the_callback_warns_once_naming_it(make_model, run_trainer, monkeypatch):
    """A plain SentenceTransformerTrainer trains InfoCSE's own modules unclipped and leaves them out of checkpoints:
    the loss says so once, with the callback's name; with the callback it says nothing."""
    import warnings

    from datasets import Dataset

    from st_infocse.losses import contract
    from st_infocse.training import AuxiliaryStateCallback

    dataset = Dataset.from_dict({"text": random_sentences(32)})
    monkeypatch.setattr(contract, "warned_without_callback", False)
    model = make_model()
    loss = losses.InfoCSELoss(model)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        run_trainer(model, loss, dataset, steps=2)
    said = _callback_warnings(record)
    own = [n for n, p in loss.named_parameters() if p.requires_grad and not n.startswith("model.")]
    assert said == [f"InfoCSELoss is training {len(own)} tensors of its own (projection head, decoder) without "
                    "st_infocse.training.AuxiliaryStateCallback: they are not clipped with the model's gradients and "
                    "not saved in checkpoints, so a resumed run restarts them. Train with "
                    "st_infocse.training.AuxiliaryLossTrainer (or pass callbacks=[AuxiliaryStateCallback(loss)] to "
                    "SentenceTransformerTrainer to keep them in checkpoints)."]
    monkeypatch.setattr(contract, "warned_without_callback", False)
    model = make_model()
    loss = losses.InfoCSELoss(model)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        run_trainer(model, loss, dataset, steps=2, callbacks=[AuxiliaryStateCallback(loss)])
        loss.eval()
        loss([model.tokenize(["a cat sat"])])  # evaluation: not training, nothing to say
    assert _callback_warnings(record) == []
