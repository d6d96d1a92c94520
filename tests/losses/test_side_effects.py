"""The losses leave the user's model as they found it: no forward hook or pre-hook of the package's stays on any
submodule after a training run, or after a forward pass that failed."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences

HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs")

BUILDS = {
    "simcse": losses.SimCSELoss,
    "infocse": lambda m: losses.InfoCSELoss(m, lambda_=0.1),
    "cmlm-cse": losses.CMLMCSELoss,
    "cmlm": losses.ConditionalMLMLoss,
    "informin-mlm": lambda m: losses.InforMinReconstructionLoss(m, mlm_weight=0.1),
    "stage1": losses.AuxiliaryPretrainingLoss,
    "stage1-token": lambda m: losses.AuxiliaryPretrainingLoss(m, masking="token"),
}


def _hooks(model: torch.nn.Module) -> dict[str, list[object]]:
    """Every forward hook and pre-hook on the model's submodules, by module name."""
    found: dict[str, list[object]] = {}
    for name, module in model.named_modules():
        hooks = [hook for attribute in HOOK_DICTS for hook in getattr(module, attribute, {}).values()]
        if hooks:
            found[name] = hooks
    return found


def _the_packages(hooks: dict[str, list[object]]) -> dict[str, list[object]]:
    packaged = {
        name: [hook for hook in found if getattr(hook, "__module__", "").startswith("st_infocse")]
        for name, found in hooks.items()
    }
    return {name: found for name, found in packaged.items() if found}


@pytest.mark.parametrize("with_callback", [False, True], ids=["trainer", "trainer+callback"])
@pytest.mark.parametrize("name", list(BUILDS))
def test_no_hook_of_the_package_after_training(make_model, run_trainer, name, with_callback):
    model = make_model()
    before = _hooks(model)
    loss = BUILDS[name](model)
    callbacks = [AuxiliaryStateCallback(loss)] if with_callback else None
    run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(16)}), steps=2, callbacks=callbacks)
    assert _the_packages(_hooks(model)) == {}
    assert _hooks(model) == before
    assert loss.model is model  # the hooks were looked for on the model the loss trained


def test_stage1_hook_is_there_only_during_the_models_forward(make_model):
    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model)
    layer = stage1._parts[0].layers[stage1.k - 1]
    seen: list[int] = []
    model[1].register_forward_pre_hook(lambda module, args: seen.append(len(layer._forward_hooks)))
    stage1([dict(model.preprocess(random_sentences(4)))])
    assert seen == [1] and len(layer._forward_hooks) == 0


def test_stage1_hook_is_removed_when_the_forward_fails(make_model):
    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model)

    def fail(module, args):
        raise RuntimeError("out of memory")

    handle = model[1].register_forward_pre_hook(fail)
    with pytest.raises(RuntimeError, match="out of memory"):
        stage1([dict(model.preprocess(random_sentences(4)))])
    handle.remove()
    assert _hooks(model) == {}
    assert set(stage1([dict(model.preprocess(random_sentences(4)))])) == {"mlm", "aux"}  # and it still works
