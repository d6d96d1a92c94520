"""The GPU paths, on a tiny random BERT: bf16 autocast, torch.compile with inductor, no host synchronisation in the
package's part of a training step. Opt-in (``python -m pytest -m gpu``; ``benchmarks/gpu_check.sh`` runs them with
``tests/training/test_distributed.py``'s NCCL case) and skipped without CUDA. ``GPU_CHECK_DRY_RUN=1`` runs those
that can run on a CPU there (bf16 autocast on the CPU, compile with the ``aot_eager`` backend), to try the tests
themselves on a machine without a GPU.
"""

from __future__ import annotations

import os

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences

CUDA = torch.cuda.is_available()
DRY_RUN = os.environ.get("GPU_CHECK_DRY_RUN") == "1"
DEVICE = "cuda" if CUDA else "cpu"
# inductor generates the GPU's kernels; the CPU dry run only traces (aot_eager), which is what it checks
BACKEND = "inductor" if CUDA else "aot_eager"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not (CUDA or DRY_RUN), reason="needs a CUDA GPU")]
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")

# lambda 1: the auxiliary terms weigh in the comparisons; stage 1 with both maskers (both draw on the device)
LOSSES = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=1.0),
    "cmlm-cse": lambda model: losses.CMLMCSELoss(model, lambda_=1.0),
    "informin-mlm": lambda model: losses.InforMinReconstructionLoss(model, mlm_weight=0.1),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model),
    "stage1-token": lambda model: losses.AuxiliaryPretrainingLoss(model, masking="token"),
}


def _on_device(make_model, name: str):
    model = make_model().to(DEVICE)
    loss = LOSSES[name](model).to(DEVICE)
    features = {
        key: value.to(DEVICE) if isinstance(value, torch.Tensor) else value
        for key, value in model.preprocess(random_sentences(16, seed=1)).items()
    }
    return model, loss, features


def _total(out) -> torch.Tensor:
    return sum(out.values())


@pytest.mark.parametrize("name", list(LOSSES))
def test_bf16_autocast_step_is_fp32_within_rounding(make_model, name, record_property):
    model, loss, features = _on_device(make_model, name)
    loss.eval()  # no dropout: the two runs differ only by precision (the masks come from the same seed)
    linear = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    seen = []
    linear.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    values = {}
    for precision in ("fp32", "bf16"):
        torch.manual_seed(0)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=precision == "bf16"):
            total = _total(loss([features]))
        assert seen[-1] == (torch.bfloat16 if precision == "bf16" else torch.float32)  # autocast reached the encoder
        total.backward()
        grads = [p.grad for p in loss.parameters() if p.requires_grad and p.grad is not None]
        assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)
        loss.zero_grad(set_to_none=True)
        values[precision] = total.item()
    record_property("loss fp32 / bf16", f"{values['fp32']:.5f} / {values['bf16']:.5f}")
    assert abs(values["bf16"] - values["fp32"]) <= 0.05 * max(1.0, abs(values["fp32"])), values


def test_compiled_encoder_gives_the_eager_loss_and_gradients(make_model):
    """InfoCSE (contrastive + conditional MLM) with its encoder compiled, as the trainer's ``torch_compile`` compiles
    it: the same loss and encoder gradients as eager. The loss's masks are drawn outside the compiled graph, so both
    runs see the same masks (a compiled loss draws inductor's own random numbers, which differ from eager's)."""
    model, loss, features = _on_device(make_model, "infocse")
    loss.eval()
    results = []
    torch._dynamo.reset()
    eager_encoder = loss.model
    for encoder in (eager_encoder, torch.compile(eager_encoder, backend=BACKEND)):
        loss.model = encoder
        torch.manual_seed(0)
        total = _total(loss([features]))
        total.backward()
        results.append((total.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
        loss.zero_grad(set_to_none=True)
    loss.model = eager_encoder
    (eager, eager_grads), (traced, traced_grads) = results
    assert torch.allclose(traced, eager, rtol=1e-4, atol=1e-5), (traced, eager)
    assert eager_grads.keys() == traced_grads.keys() and eager_grads
    for name, grad in eager_grads.items():
        assert torch.allclose(traced_grads[name], grad, rtol=1e-3, atol=1e-5), name
    torch._dynamo.reset()


@pytest.mark.parametrize("objective", ["infocse", "stage1"])
def test_fast_step_gives_the_eager_loss_and_gradients(make_model, objective):
    """The fast step as the training switch applies it on CUDA (padded to max length, SDPA, model and decoder
    compiled with mode="reduce-overhead", CUDA graphs replayed from the third step) against the eager step, with the
    tolerances of the compiled-encoder test above; masks at fixed positions, no dropout (see test_fast_step.py)."""
    from st_infocse.training.fast_step import COMPILE_MODE, compile_for_graphs, use_fused_attention

    from .test_fast_step import _build, _features, _step

    def on_device(model, loss, static):
        model.to(DEVICE), loss.to(DEVICE)
        return [{k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in f.items()}
                for f in _features(model, static)]

    model, loss = _build(make_model, objective)
    eager_terms, eager_grads = _step(model, loss, on_device(model, loss, static=False))
    fast_model, fast_loss = _build(make_model, objective)
    use_fused_attention(fast_model, fast_loss)
    features = on_device(fast_model, fast_loss, static=True)
    torch._dynamo.reset()
    compile_for_graphs(fast_model, fast_loss, backend=BACKEND, mode=COMPILE_MODE if CUDA else None)
    for _ in range(3):  # compile, warm up, record and replay the graphs
        torch.compiler.cudagraph_mark_step_begin()
        terms, grads = _step(fast_model, fast_loss, features)
    torch._dynamo.reset()
    for name, value in eager_terms.items():
        assert torch.allclose(terms[name], value, rtol=1e-4, atol=1e-5), (name, terms[name], value)
    assert grads.keys() == eager_grads.keys()
    for name, grad in eager_grads.items():
        assert torch.allclose(grads[name], grad, rtol=1e-3, atol=1e-5), name


def test_trainer_trains_compiled_in_bf16(make_model, run_trainer):
    """The trainer's ``torch_compile=True`` and ``bf16=True`` together on the device, with the callback."""
    model = make_model().to(DEVICE)
    loss = LOSSES["infocse"](model).to(DEVICE)
    dataset = Dataset.from_dict({"text": random_sentences(48)})
    torch._dynamo.reset()
    trainer = run_trainer(
        model, loss, dataset, steps=3, batch_size=16, callbacks=[AuxiliaryStateCallback(loss)], torch_compile=True,
        torch_compile_backend=BACKEND, bf16=True, use_cpu=not CUDA,
    )
    torch._dynamo.reset()
    assert type(loss.model).__name__ == "OptimizedModule"  # the trainer put its compiled wrapper into the loss
    assert next(loss.parameters()).device.type == DEVICE
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 3 and all(torch.isfinite(torch.tensor(value)) for value in logged), logged


@needs_cuda
@pytest.mark.parametrize("name", list(LOSSES))
def test_no_host_synchronisation_in_the_package(make_model, name, record_property):
    """A training step (forward, backward, fused AdamW) with the step checks deferred, as under
    AuxiliaryStateCallback: no host synchronisation is called from the package's code. Those of the libraries
    (sentence-transformers, transformers) are recorded, not judged."""
    from benchmarks.gpu_check import host_syncs, in_package  # the step-time table counts them the same way

    model, loss, features = _on_device(make_model, name)
    checks = list(losses.training_losses(loss))
    for module in checks:
        module.defer_step_checks()
    optimizer = torch.optim.AdamW([p for p in loss.parameters() if p.requires_grad], lr=1e-4, fused=True)

    def step() -> None:
        _total(loss([features])).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()  # the first step creates the optimizer's state and the libraries' handles: not counted
    for module in checks:
        module.raise_step_checks()
    origins = host_syncs(step)
    for module in checks:
        module.raise_step_checks()  # the deferred checks still read and pass
    record_property("host syncs", "; ".join(origins) or "none")
    assert [origin for origin in origins if in_package(origin)] == []
