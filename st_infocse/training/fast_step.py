"""The fast training step (``fast_step`` of :class:`~st_infocse.training.PaperTrainingArguments`): fewer, larger
kernels at the papers' short sequences, where a GPU step is bound by kernel launches. The numbers stay as they are
(the tests compare the loss and its gradients with the eager step's). On CUDA:

1. static shapes: training batches padded to ``max_seq_length`` at collation (padding is masked out);
2. fused attention: an encoder on eager attention switches to SDPA where it can, the auxiliary decoders with it;
3. CUDA graphs: the model and each auxiliary decoder compiled for training (``mode="reduce-overhead"``).

Other accelerators get 1 and 2; on the CPU, bound by arithmetic, the switch changes nothing and says so.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import torch
from transformers import TrainerCallback

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import nn

logger = logging.getLogger("st_infocse")

#: The help of the ``fast_step`` training argument (and ``--fast_step`` on the command line).
FAST_STEP_HELP = (
    "Fewer, larger GPU kernels at the same numbers: batches padded to --max_seq_length, SDPA attention, and on CUDA "
    "the model and the auxiliary decoder compiled with torch.compile(mode='reduce-overhead') (CUDA graphs; the "
    "first steps compile). No effect on the CPU."
)
#: Attention implementations that already run fused kernels.
FUSED_ATTENTION = ("sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")
COMPILE_MODE = "reduce-overhead"


class StaticShapePreprocess:
    """The data collator's ``preprocess_fn`` padding every text batch to the model's ``max_seq_length`` (read at
    each call)."""

    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model

    def __call__(self, inputs: Any, **kwargs: Any) -> dict[str, Any]:
        padding = {"padding": "max_length", "max_length": self.model.max_seq_length}
        return self.model.preprocess(inputs, processing_kwargs={"text": padding}, **kwargs)


def use_fused_attention(model: SentenceTransformer, loss: nn.Module) -> str:
    """Run the encoder (and the loss's decoders) on SDPA unless it runs a fused kernel or has no SDPA path; returns
    the implementation in use."""
    from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder

    encoder = getattr(model[0], "auto_model", None)
    config = getattr(encoder, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if encoder is None or current in FUSED_ATTENTION:
        return str(current)
    try:
        encoder.set_attn_implementation("sdpa")
    except (ValueError, ImportError, AttributeError) as error:  # the class has no SDPA path
        logger.warning("fast_step: %s keeps %s attention (%s)", type(encoder).__name__, current, error)
        return str(current)
    for module in loss.modules():
        if isinstance(module, AuxiliaryDecoder):
            module.use_attention_of(config)
    return "sdpa"


class CompiledWhileTraining:
    """A module's compiled call (where ``nn.Module.compile`` puts it) used while it trains: evaluation runs eagerly
    rather than compiling per shape, and a deep copy gets the plain call, not one bound to the original."""

    def __init__(self, module: nn.Module, compiled: Any) -> None:
        self.module, self.compiled = module, compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.module.training:
            return self.compiled(*args, **kwargs)
        return self.module._call_impl(*args, **kwargs)

    def __deepcopy__(self, memo: dict) -> None:
        return None


def compile_for_graphs(model: nn.Module, loss: nn.Module, backend: str = "inductor", mode: str | None = COMPILE_MODE
                       ) -> list[str]:
    """Compile the model and each auxiliary decoder of ``loss`` in place for training (the state dicts keep their
    keys); returns the names compiled."""
    from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder

    compiled = [("model", model)]
    compiled += [(name, m) for name, m in loss.named_modules() if isinstance(m, AuxiliaryDecoder)]
    for _, module in compiled:
        call = torch.compile(module._call_impl, backend=backend, mode=mode, dynamic=False)
        module._compiled_call_impl = CompiledWhileTraining(module, call)
    return [name for name, _ in compiled]


class FastStepCallback(TrainerCallback):
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # A new CUDA-graph generation: the previous step's graph outputs may be overwritten from here on.
        torch.compiler.cudagraph_mark_step_begin()


def apply_fast_step(trainer: Any, model: SentenceTransformer, loss: nn.Module, device_type: str) -> list[str]:
    """Turn the fast step on for ``trainer`` on ``device_type``; returns what it did, one item each (also logged)."""
    if device_type == "cpu":
        done = ["nothing on the CPU (its step is bound by arithmetic: padding would add work, CUDA graphs need CUDA)"]
        logger.info("fast_step: %s", done[0])
        return done
    trainer.data_collator.preprocess_fn = StaticShapePreprocess(model)
    done = [f"batches padded to max_seq_length ({model.max_seq_length})",
            f"{use_fused_attention(model, loss)} attention"]
    if device_type == "cuda":
        names = compile_for_graphs(model, loss)
        trainer.add_callback(FastStepCallback())
        done.append(f"torch.compile(mode={COMPILE_MODE!r}) of {', '.join(names)}")
    else:
        done.append(f"no CUDA graphs on {device_type}")
    logger.info("fast_step: %s", "; ".join(done))
    return done
