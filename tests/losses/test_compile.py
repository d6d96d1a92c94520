"""torch.compile: no loss breaks a dynamo graph except inside sentence-transformers' own code (its ``embed_columns``
reads a ContextVar) and around stage 1's registering and removing its layer hook for the model's forward pass
(declared eager: a hook handle cannot be traced, and the hook is not left on the model between steps); both maskers
are traced with the step. The trainer's ``torch_compile=True`` trains with the losses.
"""

from pathlib import Path

import pytest
import sentence_transformers
import torch
from datasets import Dataset

from benchmarks.graph_breaks import graph_breaks  # benchmark tooling, not part of the package
from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences

SENTENCE_TRANSFORMERS = str(Path(sentence_transformers.__file__).parent)

LOSSES = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1),
    "informin-mlm": lambda model: losses.InforMinReconstructionLoss(model, mlm_weight=0.1),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model),
    "stage1-token": lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token"),
}


DECLARED_EAGER = ("_hook_lower_layer", "_unhook_lower_layer")


def _unexpected(breaks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """All but sentence-transformers' own breaks and the declared ones: stage 1's adding and removing its forward
    hook, which run eagerly by design."""
    return [
        (where, reason)
        for where, reason in breaks
        if not where.startswith(SENTENCE_TRANSFORMERS)
        and not (any(name in reason for name in DECLARED_EAGER) and "torch.compiler.disable" in reason)
    ]


@pytest.mark.parametrize("name", list(LOSSES))
def test_no_unexpected_graph_break(make_model, name):
    model = make_model()
    loss = LOSSES[name](model)
    for module in loss.modules():
        if hasattr(module, "training_step"):
            module.defer_checks = True  # as AuxiliaryStateCallback sets them for a training run
    features = [dict(model.preprocess(random_sentences(8, seed=s))) for s in range(1 if "stage1" in name else 2)]
    assert _unexpected(graph_breaks(loss, features)) == []


def test_the_break_check_sees_a_break_in_the_package():
    """The same check on the exact gather, whose data-dependent size does break the graph; the bounded one does not."""
    from st_infocse.modeling.auxiliary_decoder import mlm_loss
    from st_infocse.modeling.heads import MLMHead

    head = MLMHead(8, 11)
    hidden = torch.randn(4, 9, 8)
    labels = torch.randint(11, (4, 9)).masked_fill(torch.rand(4, 9) > 0.3, -100)
    exact = _unexpected(graph_breaks(lambda h, y: mlm_loss(head, h, y).loss, hidden, labels))
    assert any("auxiliary_decoder.py" in where for where, _ in exact)
    assert graph_breaks(lambda h, y: mlm_loss(head, h, y, max_predictions=36).loss, hidden, labels) == []


@pytest.mark.parametrize("name", ["infocse", "stage1"])
def test_trainer_torch_compile_trains(make_model, run_trainer, name):
    model = make_model()
    loss = LOSSES[name](model)
    dataset = Dataset.from_dict({"text": random_sentences(16)})
    torch._dynamo.reset()
    trainer = run_trainer(
        model,
        loss,
        dataset,
        steps=2,
        callbacks=[AuxiliaryStateCallback(loss)],
        torch_compile=True,
        torch_compile_backend="eager",  # dynamo's tracing without inductor's code generation, to stay fast
    )
    assert loss.model is not model  # the trainer put its compiled wrapper into the loss
    assert type(loss.model).__name__ == "OptimizedModule"
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2 and all(torch.isfinite(torch.tensor(entry["loss"])) for entry in logged)
