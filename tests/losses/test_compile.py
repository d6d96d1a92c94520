"""torch.compile: no loss breaks a dynamo graph anywhere but inside sentence-transformers' own code (its
``embed_columns`` reads a ContextVar), and the trainer's ``torch_compile=True`` trains with the losses.
"""

from pathlib import Path

import pytest
import sentence_transformers
import torch
from datasets import Dataset

import st_infocse
from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences

PACKAGE = str(Path(st_infocse.__file__).parent)
SENTENCE_TRANSFORMERS = str(Path(sentence_transformers.__file__).parent)

LOSSES = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1),
    "informin-mlm": lambda model: losses.InforMinReconstructionLoss(model, mlm_weight=0.1),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model),
    "stage1-token": lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token"),
}


def _breaks_not_in_sentence_transformers(explained) -> list[str]:
    """Every graph break except those raised inside sentence-transformers' own code (its ContextVar read)."""
    found = []
    for reason in explained.break_reasons:
        innermost = reason.user_stack[-1] if reason.user_stack else None
        if innermost is None or not innermost.filename.startswith(SENTENCE_TRANSFORMERS):
            ours = [frame for frame in reason.user_stack if frame.filename.startswith(PACKAGE)]
            where = f" (from {ours[-1].filename}:{ours[-1].lineno})" if ours else ""
            found.append(reason.reason.splitlines()[0] + where)
    return found


@pytest.mark.parametrize("name", list(LOSSES))
def test_no_graph_break_outside_sentence_transformers(make_model, name):
    model = make_model()
    loss = LOSSES[name](model)
    for module in loss.modules():
        if hasattr(module, "training_step"):
            module.defer_checks = True  # as AuxiliaryStateCallback sets them for a training run
    features = [dict(model.preprocess(random_sentences(8, seed=s))) for s in range(1 if "stage1" in name else 2)]
    torch._dynamo.reset()
    explained = torch._dynamo.explain(loss)(features)
    assert explained.graph_count >= 1
    assert _breaks_not_in_sentence_transformers(explained) == []


def test_the_break_check_sees_a_break_in_the_package():
    """The same check on the exact gather, whose data-dependent size does break the graph; the bounded one does not."""
    from st_infocse.modeling.auxiliary_decoder import mlm_loss
    from st_infocse.modeling.heads import MLMHead

    head = MLMHead(8, 11)
    hidden = torch.randn(4, 9, 8)
    labels = torch.randint(11, (4, 9)).masked_fill(torch.rand(4, 9) > 0.3, -100)
    torch._dynamo.reset()
    exact = torch._dynamo.explain(lambda h, y: mlm_loss(head, h, y).loss)(hidden, labels)
    assert any("auxiliary_decoder.py" in found for found in _breaks_not_in_sentence_transformers(exact))
    torch._dynamo.reset()
    bounded = torch._dynamo.explain(lambda h, y: mlm_loss(head, h, y, max_predictions=36).loss)(hidden, labels)
    assert bounded.graph_break_count == 0


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
