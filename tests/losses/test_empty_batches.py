"""A batch of nothing but empty texts stops the step with one clear error; a few empty rows still train."""

from collections.abc import Callable

import pytest
import torch

from st_infocse import losses
from st_infocse.losses._checks import EmptyTextDetector, check_finite

LOSSES: dict[str, Callable] = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1),
    "cmlm-cse": lambda model: losses.CMLMCSELoss(model),
    "conditional-mlm": lambda model: losses.ConditionalMLMLoss(model),
    "informin": lambda model: losses.InforMinReconstructionLoss(model, mlm_weight=0.1),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model),
    "stage1-token": lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token"),
}


def _total(output) -> torch.Tensor:
    return sum(output.values()) if isinstance(output, dict) else output


@pytest.mark.parametrize("name", list(LOSSES))
def test_all_empty_batch_raises_naming_clean_texts(make_model, name):
    model = make_model()
    loss = LOSSES[name](model)
    loss.training_step = 7
    with pytest.raises(losses.EmptyBatchError, match=r"every text in the batch at training step 7 is empty") as error:
        loss([model.preprocess(["", "  ", "\n"])])
    assert "st_infocse.training.clean_texts" in str(error.value)
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize("name", ["simcse", "infocse", "informin"])
def test_all_empty_pairs_raise(make_model, name):
    model = make_model()
    with pytest.raises(losses.EmptyBatchError):
        LOSSES[name](model)([model.preprocess(["", ""]), model.preprocess(["", " "])])


@pytest.mark.parametrize("name", list(LOSSES))
def test_batch_with_some_empty_rows_trains(make_model, sentences, name):
    model = make_model()
    loss = LOSSES[name](model)
    total = _total(loss([model.preprocess(["", *sentences[:5], " "])]))
    assert torch.isfinite(total)
    total.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_one_column_with_text_is_enough(make_model, sentences):
    # A batch is refused as empty only when every column is: a column of blanks beside a column of text trains.
    model = make_model()
    value = losses.SimCSELoss(model)([model.preprocess(["", ""]), model.preprocess(sentences[:2])])["contrastive"]
    assert torch.isfinite(value) and value.item() > 0
    value.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_unknown_characters_are_text(make_model):
    # Only [UNK] tokens: not a blank text, so not an empty batch.
    model = make_model()
    detector = EmptyTextDetector.for_model(model)
    assert not detector([model.preprocess(["\u2603", "\u2603 \u2604"])])
    assert detector([model.preprocess(["", " "])])


def test_emptiness_is_reported_before_a_non_finite_term(make_model):
    loss = losses.SimCSELoss(make_model())
    # An all-empty batch gives MLM terms of zero or NaN; the cause to name is the emptiness.
    with pytest.raises(losses.EmptyBatchError):
        check_finite(loss, {"cmlm": torch.tensor(float("nan"))}, empty=torch.tensor(True))
    with pytest.raises(losses.NonFiniteLossError):
        check_finite(loss, {"cmlm": torch.tensor(float("nan"))}, empty=torch.tensor(False))
    check_finite(loss, {"cmlm": torch.tensor(0.0)}, empty=torch.tensor(False))


HOST_READS = ("__bool__", "item", "__float__", "__int__", "tolist")


def _count_host_reads(run: Callable[[], object]) -> int:
    """Calls of the Tensor methods that read a value back to the host, i.e. synchronise with a GPU."""
    calls = [0]
    with pytest.MonkeyPatch.context() as patch:
        for name in HOST_READS:
            original = getattr(torch.Tensor, name)

            def counting(self, *args, _original=original, **kwargs):
                calls[0] += 1
                return _original(self, *args, **kwargs)

            patch.setattr(torch.Tensor, name, counting)
        run()
    return calls[0]


@pytest.mark.parametrize("name", list(LOSSES))
def test_emptiness_check_adds_no_host_synchronisation(make_model, sentences, name):
    model = make_model()
    model.eval()
    loss = LOSSES[name](model)
    features = model.preprocess(sentences[:8])

    def forward() -> None:
        torch.manual_seed(0)
        loss([dict(features)])

    forward()  # first-call setup (device caches) is not a per-step cost
    with_check = _count_host_reads(forward)
    detectors = [module for module in loss.modules() if getattr(module, "empty_texts", None) is not None]
    assert detectors, "the loss has no emptiness check"
    for module in detectors:
        module.empty_texts = lambda features: None
    without_check = _count_host_reads(forward)
    assert with_check == without_check >= 1  # the one in check_finite, at least
