"""The fast step (``fast_step``): static shapes, SDPA attention and the compiled model give the eager step's loss and
gradients, for every objective.

Tolerance: fp32 on the CPU, ``rtol=1e-4, atol=1e-6`` for the loss terms and every gradient. The fast step computes the
same function; what changes is the order of floating-point sums (a padded row adds exact zeros to the attention's
sums, SDPA fuses the softmax and its products), which moves fp32 results by a few units of 1e-7 relative per layer.
The bound is far below the bf16 rounding (8e-3 relative) the GPU tests allow, and far above fp32 reordering noise.
Dropout is off and the maskers are replaced by one that picks positions, not random draws, so that both steps see the
same masks whatever the padded width (the random draws depend on the batch's shape).
"""

import copy
import logging

import pytest
import torch
from datasets import Dataset
from transformers import HfArgumentParser

from st_infocse import losses
from st_infocse.training import PaperTrainingArguments, build_trainer
from st_infocse.training.fast_step import (
    FAST_STEP_HELP,
    StaticShapePreprocess,
    apply_fast_step,
    compile_for_graphs,
    use_fused_attention,
)

from ..conftest import random_sentences

RTOL, ATOL = 1e-4, 1e-6

OBJECTIVES = {
    "simcse": lambda model: losses.SimCSELoss(model),
    "infocse": lambda model: losses.InfoCSELoss(model, lambda_=0.1, mlm_gather="bounded"),
    "cmlm-cse": lambda model: losses.CMLMCSELoss(model, mlm_gather="bounded"),
    "informin": lambda model: losses.InforMinReconstructionLoss(model),
    "cmlm": lambda model: losses.ConditionalMLMLoss(model, mlm_gather="bounded"),
    "stage1": lambda model: losses.AuxiliaryPretrainingLoss(model, mlm_gather="bounded"),
}


def _fixed_positions(tokenizer, every: int):
    """A masker that picks the same (row, position) pairs at any padded width: every ``every``-th real token."""
    specials = torch.tensor(tokenizer.all_special_ids)
    mask_id = tokenizer.mask_token_id

    def mask(input_ids, attention_mask):
        # on the inputs' device: the GPU test runs this masker on CUDA batches
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        chosen = ((positions % every == 1) & (attention_mask != 0)
                  & ~torch.isin(input_ids, specials.to(input_ids.device)))
        return torch.where(chosen, mask_id, input_ids), input_ids.masked_fill(~chosen, -100)

    return mask


def _build(make_model, objective: str):
    model = make_model(seed=0)
    model[0].auto_model.set_attn_implementation("eager")  # the eager reference; the fast step switches it
    torch.manual_seed(1)
    loss = OBJECTIVES[objective](model)
    for module in loss.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "masker"):
            # stage 1's bounded gather has room for its whole-word budget (15% of a row): one token a row
            module.masker = _fixed_positions(model.tokenizer, every=64 if objective == "stage1" else 3)
    return model, loss


def _step(model, loss, features) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    loss.zero_grad(set_to_none=True)
    model.zero_grad(set_to_none=True)
    out = loss([dict(f) for f in features])
    sum(out.values()).backward()
    named = dict(model.named_parameters()) | dict(loss.named_parameters())
    grads = {name: p.grad.clone() for name, p in named.items() if p.grad is not None}
    return {k: v.detach().clone() for k, v in out.items()}, grads


def _features(model, static: bool):
    """One column, the unsupervised papers' data (both views of a row in one forward either way)."""
    preprocess = StaticShapePreprocess(model) if static else model.preprocess
    return [preprocess(random_sentences(8, seed=0, max_words=10))]


def _assert_same(eager, fast) -> None:
    (eager_terms, eager_grads), (fast_terms, fast_grads) = eager, fast
    assert eager_terms.keys() == fast_terms.keys()
    for name in eager_terms:
        torch.testing.assert_close(fast_terms[name], eager_terms[name], rtol=RTOL, atol=ATOL, msg=lambda m, n=name: f"{n}: {m}")
    assert eager_grads.keys() == fast_grads.keys() and len(eager_grads) > 10
    for name in eager_grads:
        torch.testing.assert_close(fast_grads[name], eager_grads[name], rtol=RTOL, atol=ATOL, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_static_shapes_and_sdpa_give_the_eager_numbers(make_model, objective):
    model, loss = _build(make_model, objective)
    eager = _step(model, loss, _features(model, static=False))

    fast_model, fast_loss = _build(make_model, objective)
    assert use_fused_attention(fast_model, fast_loss) == "sdpa"
    assert fast_model[0].auto_model.config._attn_implementation == "sdpa"
    features = _features(fast_model, static=True)
    assert all(f["input_ids"].shape[1] == fast_model.max_seq_length for f in features)
    assert features[0]["attention_mask"].sum() < features[0]["attention_mask"].numel()  # padding is present
    _assert_same(eager, _step(fast_model, fast_loss, features))


def test_compiled_fast_step_gives_the_eager_numbers(make_model):
    """The compiled model and decoder (dynamo's graphs run by the eager backend: inductor's code generation on the CPU
    would take minutes; the CUDA-graph replay itself is checked by the GPU tests) give InfoCSE's eager numbers."""
    model, loss = _build(make_model, "infocse")
    eager = _step(model, loss, _features(model, static=False))
    fast_model, fast_loss = _build(make_model, "infocse")
    use_fused_attention(fast_model, fast_loss)
    torch._dynamo.reset()
    assert compile_for_graphs(fast_model, fast_loss, backend="eager", mode=None) == ["model", "cmlm.decoder"]
    features = _features(fast_model, static=True)
    _assert_same(eager, _step(fast_model, fast_loss, features))
    _assert_same(eager, _step(fast_model, fast_loss, features))  # the second step replays the compiled graphs
    assert not any("_orig_mod" in key for key in fast_model.state_dict())  # compiled in place: keys unchanged
    # evaluation runs eagerly (no graph per evaluation shape), and a copy of a compiled module gets the plain call
    frames = torch._dynamo.utils.counters["frames"]["total"]
    fast_model.eval()
    with torch.no_grad():
        fast_model(dict(fast_model.preprocess(random_sentences(3, seed=5))))
    assert torch._dynamo.utils.counters["frames"]["total"] == frames
    assert copy.deepcopy(fast_loss.cmlm.decoder)._compiled_call_impl is None
    assert fast_loss.cmlm.decoder._compiled_call_impl is not None


def _trainer(make_model, fast_step: bool, tmp_path):
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    args = PaperTrainingArguments(output_dir=str(tmp_path), fast_step=fast_step, use_cpu=True, max_steps=1,
                                  eval_strategy="no", save_strategy="no", load_best_model_at_end=False)
    return model, loss, build_trainer(model, loss, Dataset.from_dict({"text": random_sentences(8)}), args)


def test_the_switch_is_a_training_argument():
    assert PaperTrainingArguments().fast_step is False
    (args,) = HfArgumentParser(PaperTrainingArguments).parse_args_into_dataclasses(["--fast_step", "true"])
    assert args.fast_step is True
    assert "reduce-overhead" in FAST_STEP_HELP and "CPU" in FAST_STEP_HELP


def test_on_the_cpu_the_switch_changes_nothing_and_says_so(make_model, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="st_infocse"):
        model, _, trainer = _trainer(make_model, True, tmp_path)
    assert trainer.data_collator.preprocess_fn == model.preprocess
    assert "fast_step: nothing on the CPU" in caplog.text


def test_on_an_accelerator_batches_are_padded_and_attention_fused(make_model, tmp_path):
    """What the switch does off the CPU, short of CUDA graphs (an accelerator other than CUDA)."""
    model, loss, trainer = _trainer(make_model, False, tmp_path)
    model[0].auto_model.set_attn_implementation("eager")
    done = apply_fast_step(trainer, model, loss, "mps")
    assert done[1:] == ["sdpa attention", "no CUDA graphs on mps"]
    batch = trainer.data_collator([{"text": t} for t in random_sentences(4, max_words=5)])
    assert batch["text_input_ids"].shape[1] == model.max_seq_length == 32
    assert loss.cmlm.decoder.lower.config._attn_implementation == "sdpa"  # the decoder follows the encoder
