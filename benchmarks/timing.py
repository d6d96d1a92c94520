"""The step timer of ``step_time``, ``profile_step``, ``compile_step`` and the GPU check: one training step of a loss
(tokenisation, the loss's forward under an optional bf16 autocast, backward, the optimizer's update) as the trainer
takes it, without data loading, and its time.

A step's features are either tokenised in the step (``texts`` given to the call: the CPU benchmarks count
tokenisation as part of a step) or once, ahead of the timed steps (``texts`` given when built: the GPU check times the
device's work alone). With ``deferred_checks`` the losses keep their step checks on the device until
:meth:`TrainingStep.read_checks`, as ``AuxiliaryStateCallback`` does in a training run, so a timed step holds no host
synchronisation of theirs.

With ``fast_step`` a step is the training switch's (``st_infocse.training.fast_step``): features padded to the model's
``max_seq_length``, SDPA attention, and with ``compile_backend`` the model and the auxiliary decoders compiled in
place (``mode="reduce-overhead"``, CUDA graphs, on CUDA), each step starting a new graph generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from st_infocse.losses import training_losses
from st_infocse.training.fast_step import (
    COMPILE_MODE,
    StaticShapePreprocess,
    compile_for_graphs,
    use_fused_attention,
)


def _no_scope(name: str) -> AbstractContextManager[Any]:
    return nullcontext()


class TrainingStep:
    """One training step of ``loss`` (which trains ``model``) with ``optimizer``.

    Args:
        model: the Sentence Transformer the loss trains.
        loss: the loss; a dict of terms is summed, as the trainer does.
        optimizer: the optimizer over the trainable parameters.
        device: where the features go and, for ``"cuda"``, how :meth:`timed` times (CUDA events).
        bf16: the loss's forward under ``torch.autocast(device, dtype=torch.bfloat16)`` (backward and the update
            outside it, on the fp32 weights); a call may override it.
        texts: tokenised once here, and the features every call without texts of its own uses.
        deferred_checks: the losses' step checks stay on the device until :meth:`read_checks`.
        scope: a context manager factory opened around ``"tokenisation"``, ``"loss"`` and ``"optimizer"`` (the
            profiler's labels); by default none.
        fast_step: static shapes and SDPA attention, as the training switch applies them off the CPU.
        compile_backend: with ``fast_step``, compile the model and decoders with this backend (after a
            ``torch._dynamo.reset()``, so that each step timer compiles afresh): ``mode="reduce-overhead"`` on CUDA,
            the backend's default elsewhere.
    """

    def __init__(self, model: Any, loss: torch.nn.Module, optimizer: torch.optim.Optimizer, *, device: str = "cpu",
                 bf16: bool = False, texts: list[str] | None = None, deferred_checks: bool = False,
                 scope: Callable[[str], AbstractContextManager[Any]] = _no_scope, fast_step: bool = False,
                 compile_backend: str | None = None) -> None:
        self.model, self.loss, self.optimizer = model, loss, optimizer
        self.device, self.bf16, self.scope = device, bf16, scope
        self.checks = list(training_losses(loss)) if deferred_checks else []
        for module in self.checks:
            module.defer_step_checks()
        self.fast_step, self.graphs, self.attention = fast_step, False, None
        if fast_step:
            self.attention = use_fused_attention(model, loss)
            if compile_backend is not None:
                torch._dynamo.reset()
                compile_for_graphs(model, loss, backend=compile_backend,
                                   mode=COMPILE_MODE if device == "cuda" else None)
                self.graphs = device == "cuda"
        self.features = self.tokenise(texts) if texts is not None else None

    def tokenise(self, texts: list[str]) -> dict[str, Any]:
        features = (StaticShapePreprocess(self.model) if self.fast_step else self.model.preprocess)(texts)
        return {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}

    def __call__(self, texts: list[str] | None = None, bf16: bool | None = None) -> None:
        """One step: on ``texts`` (tokenised in the step, the model put in training mode first) or on the features
        tokenised when built."""
        if texts is not None:
            self.model.train()
            with self.scope("tokenisation"):
                features = self.tokenise(texts)
        else:
            features = self.features
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        autocast = torch.autocast(self.device, dtype=torch.bfloat16) if (self.bf16 if bf16 is None else bf16) \
            else nullcontext()
        with self.scope("loss"):
            with autocast:
                out = self.loss([features])
            total = sum(out.values()) if isinstance(out, dict) else out
        total.backward()
        with self.scope("optimizer"):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)

    def seconds(self, texts: list[str] | None = None, bf16: bool | None = None) -> float:
        """Wall seconds of one step (its deferred checks read after the clock stops)."""
        start = time.perf_counter()
        self(texts, bf16)
        elapsed = time.perf_counter() - start
        self.read_checks()
        return elapsed

    def timed(self, steps: int) -> float:
        """Milliseconds per step over ``steps`` steps on the built features (between CUDA events on a GPU)."""
        if self.device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(steps):
                self()
            end.record()
            end.synchronize()
            milliseconds = begin.elapsed_time(end)
        else:
            start = time.perf_counter()
            for _ in range(steps):
                self()
            milliseconds = (time.perf_counter() - start) * 1e3
        self.read_checks()
        return milliseconds / steps

    def read_checks(self) -> None:
        for module in self.checks:  # one host synchronisation, outside the timed steps
            module.raise_step_checks()

    def counted_flops(self) -> int:
        """FLOPs of one step on the built features, counted by ``torch.utils.flop_counter.FlopCounterMode``."""
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        # compiled kernels are invisible to the counter: the same step runs eagerly for the count
        stance = torch.compiler.set_stance("force_eager") if self.fast_step else nullcontext()
        with stance, counter:
            self()
        self.read_checks()
        return int(counter.get_total_flops())
