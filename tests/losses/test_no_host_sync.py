"""No loss reads a tensor back to the host in its forward or backward once its step checks are deferred (as
AuxiliaryStateCallback does for a training run): on a GPU each such read would stall the step.

Only reads made by this package's code count (directly or through torch's Python wrappers): the encoder's own
(transformers' SDPA mask shortcut checks ``padding_mask.all()``) are outside it. On the CPU a read shows as a call:
a value turned into a Python one, a copy to the CPU (free here, a synchronising copy from a GPU), and the operations
whose output size depends on the data (``nonzero``, ``masked_select``, indexing with a boolean mask), which have to
count on the host before they can allocate.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from datasets import Dataset

import st_infocse
from st_infocse import losses
from st_infocse.losses._checks import check_finite
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences

HOST_READS = ("__bool__", "item", "__float__", "__int__", "__index__", "tolist", "cpu", "numpy", "nonzero",
              "masked_select")
# Indexing is a read only with a boolean mask (its result's size is the mask's count).
INDEXING = ("__getitem__", "__setitem__")

LOSSES: dict[str, Callable] = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1, mlm_gather="bounded"),
    "cmlm-cse": lambda model: losses.CMLMCSELoss(model, mlm_gather="bounded"),
    "conditional-mlm": lambda model: losses.ConditionalMLMLoss(model, mlm_gather="bounded"),
    "informin": lambda model: losses.InforMinReconstructionLoss(model),
    "informin-mlm": lambda model: losses.InforMinReconstructionLoss(model, mlm_weight=0.1, mlm_gather="bounded"),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model, mlm_gather="bounded"),  # whole words, Condenser
    "stage1-token": lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token", mlm_gather="bounded"),
}


PACKAGE = str(Path(st_infocse.__file__).parent)
TORCH = str(Path(torch.__file__).parent)


def _read_by_package() -> bool:
    frame = sys._getframe(2)  # the caller of the patched method
    while frame is not None and frame.f_code.co_filename.startswith(TORCH):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(PACKAGE)


def _boolean_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(part, torch.Tensor) and part.dtype == torch.bool for part in parts)


@contextmanager
def host_reads_forbidden() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in HOST_READS:
            original = getattr(torch.Tensor, name)

            def refuse(self, *args, _name=name, _original=original, **kwargs):
                if _read_by_package():
                    raise AssertionError(f"Tensor.{_name} read a value back to the host")
                return _original(self, *args, **kwargs)

            patch.setattr(torch.Tensor, name, refuse)
        for name in INDEXING:
            original = getattr(torch.Tensor, name)

            def refuse_mask(self, index, *args, _name=name, _original=original):
                if _boolean_index(index) and _read_by_package():
                    raise AssertionError(f"Tensor.{_name} with a boolean mask counted it on the host")
                return _original(self, index, *args)

            patch.setattr(torch.Tensor, name, refuse_mask)
        yield


def test_the_guard_catches_a_read():
    with host_reads_forbidden(), pytest.raises(AssertionError, match="__bool__"):
        losses._checks.check_finite(torch.nn.Module(), {"x": torch.tensor(1.0)})


@pytest.mark.parametrize("read", ["x.cpu()", "x.nonzero()", "x[x > 0]", "x.masked_select(x > 0)", "int(x.max())"])
def test_the_guard_catches_data_dependent_shapes_and_copies(read):
    """The read made from a module of the package (here one compiled under its folder's name) is refused."""
    namespace: dict = {}
    exec(compile(f"def call(x):\n    return {read}\n", str(Path(PACKAGE) / "probe.py"), "exec"), namespace)
    with host_reads_forbidden(), pytest.raises(AssertionError, match="host"):
        namespace["call"](torch.arange(4))
    namespace["call"](torch.arange(4))  # outside the guard the same call runs


@pytest.mark.parametrize("name", ["whole_word", "token"])
def test_maskers_read_nothing(make_model, name):
    from st_infocse.modeling.masking import TokenMasker, WholeWordMasker

    model = make_model()
    masker = WholeWordMasker(model.tokenizer) if name == "whole_word" else TokenMasker(model.tokenizer)
    features = model.preprocess(random_sentences(8, max_words=12))
    masker(features["input_ids"], features["attention_mask"])  # first-call setup (device copies of constants)
    with host_reads_forbidden():
        masked, labels = masker(features["input_ids"], features["attention_mask"])
    assert (labels != -100).any() and masked.shape == features["input_ids"].shape


def _total(output) -> torch.Tensor:
    return sum(output.values()) if isinstance(output, dict) else output


def _defer(loss: torch.nn.Module) -> None:
    for module in loss.modules():
        if hasattr(module, "training_step"):
            module.defer_checks = True


@pytest.mark.parametrize("columns", [1, 2])
@pytest.mark.parametrize("name", list(LOSSES))
def test_forward_and_backward_read_nothing(make_model, name, columns):
    if columns == 2 and name.startswith("stage1"):
        pytest.skip("stage 1 trains on one column")
    model = make_model()
    loss = LOSSES[name](model)
    _defer(loss)
    # Pairs of different widths are padded to one width for the conditional MLM.
    features = [dict(model.preprocess(random_sentences(8, seed=s, max_words=4 + 8 * s))) for s in range(columns)]
    torch.manual_seed(0)
    _total(loss(features))  # first-call setup (device caches) is not a per-step cost
    with host_reads_forbidden():
        _total(loss(features)).backward()
    loss.raise_step_checks()  # the flags were fine
    for module in loss.modules():
        metrics = getattr(module, "metrics", None)
        if metrics is not None:
            assert 0 < metrics.pop()["cmlm_loss"] < 100


def test_deferred_check_raises_when_read(make_model):
    loss = losses.SimCSELoss(make_model())
    loss.defer_checks = True
    loss.training_step = 4
    check_finite(loss, {"contrastive": torch.tensor(1.0)})
    check_finite(loss, {"contrastive": torch.tensor(float("nan"))})
    check_finite(loss, {"contrastive": torch.tensor(2.0)})  # a later fine pass does not hide the broken one
    with pytest.raises(losses.NonFiniteLossError, match=r"at training step 4 \(contrastive=nan\)"):
        loss.raise_step_checks()
    loss.raise_step_checks()  # read once, then forgotten
    check_finite(loss, {"contrastive": torch.tensor(1.0)}, empty=torch.tensor(True))
    with pytest.raises(losses.EmptyBatchError):
        loss.raise_step_checks()


def test_bounded_gather_overflow_is_an_error_not_a_cut(make_model):
    model = make_model()
    loss = losses.ConditionalMLMLoss(model, mlm_gather="bounded")
    features = model.preprocess(random_sentences(4, seed=1))
    # Every real token chosen: far more than the room for a 0.4 rate on a batch this small.
    specials = torch.tensor(model[0].tokenizer.all_special_ids)
    labels = features["input_ids"].masked_fill(torch.isin(features["input_ids"], specials), -100)
    loss.masker = lambda ids, mask: (ids.clone(), labels.clone())
    loss.mask_rate = 0.01
    with pytest.raises(losses.PredictionBoundError, match="bounded"):
        loss([dict(features)])


def test_callback_stops_at_the_broken_step_before_its_checkpoint(make_model, run_trainer, tmp_path):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    callback = AuxiliaryStateCallback(loss)
    norm = model[0].auto_model.embeddings.LayerNorm

    class BreakAtStepTwo(AuxiliaryStateCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 1:
                with torch.no_grad():
                    norm.weight.fill_(float("nan"))

    with pytest.raises(losses.NonFiniteLossError, match=r"at training step 2 \(contrastive=nan"):
        run_trainer(
            model,
            loss,
            Dataset.from_dict({"text": random_sentences(32)}),
            steps=4,
            callbacks=[callback, BreakAtStepTwo(loss)],
            save_strategy="steps",
            save_steps=1,
        )
    assert (tmp_path / "run" / "checkpoint-1").is_dir()
    assert not (tmp_path / "run" / "checkpoint-2").exists()
    # Outside the run the loss checks in its forward again.
    assert not loss.defer_checks
    with pytest.raises(losses.NonFiniteLossError):
        loss([dict(model.preprocess(random_sentences(4)))])


@pytest.mark.parametrize(
    "build",
    [
        lambda model: losses.ConditionalMLMLoss(model),
        lambda model: losses.InfoCSELoss(model).cmlm,
        lambda model: losses.CMLMCSELoss(model).cmlm,
        lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token"),
    ],
)
def test_default_gather_is_exact_on_cpu_and_bounded_on_accelerators(make_model, build):
    """``mlm_gather="auto"``: on the CPU the count costs nothing to read and the exact gather keeps results as they
    were; off the CPU (a meta tensor stands in for a GPU one) the bounded gather reads nothing."""
    loss = build(make_model())
    assert loss.mlm_gather == "auto"
    assert loss.max_predictions(torch.zeros(4, 8, dtype=torch.long)) is None
    room = loss.max_predictions(torch.zeros(4, 8, dtype=torch.long, device="meta"))
    assert isinstance(room, int) and 0 < room <= 32


def test_unknown_gather_is_refused(make_model):
    with pytest.raises(ValueError, match="mlm_gather must be one of auto, exact, bounded"):
        losses.ConditionalMLMLoss(make_model(), mlm_gather="fast")
