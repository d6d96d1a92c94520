"""Cross-entropy over a vocabulary projection, with the softmax work done a cache-sized block of rows at a time.

Computed as ``F.cross_entropy(F.linear(x, W, b), t)``, the logits, their log-softmax and the gradient each fill a
``positions x vocabulary`` buffer written to and read back from memory (139 MB for 1,136 positions of BERT's
vocabulary). Here one matrix product makes the logits, each block of rows becomes its gradient in place while in
cache, and backward is the two matrix products autograd would run: one buffer, less of the memory traffic that
bounds an MLM step on a CPU. ``F.linear_cross_entropy`` also chunks the products, which costs more on these shapes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from st_infocse.modeling.heads import at_least_fp32

IGNORE_INDEX = -100
BLOCK_BYTES = 8 << 20  # one block of fp32 logits rows fits well inside the last-level cache


class _VocabCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, bias: Tensor | None, targets: Tensor) -> tuple[Tensor, Tensor]:
        # The bias is added block by block in cache: addmm would first copy it into every row of the whole buffer.
        logits = hidden.mm(weight.t())
        valid = targets != IGNORE_INDEX
        safe = torch.where(valid, targets, 0)
        loss = logits.new_zeros(())
        correct = torch.zeros((), dtype=torch.long, device=logits.device)
        rows = max(1, BLOCK_BYTES // (4 * logits.shape[1]))  # about BLOCK_BYTES of fp32 logits
        for start in range(0, logits.shape[0], rows):
            block, block_targets, block_valid = logits[start : start + rows], safe[start : start + rows], valid[start : start + rows]
            if bias is not None:
                block.add_(bias)
            top, predicted = block.max(dim=-1)
            correct += ((predicted == block_targets) & block_valid).sum()
            target_logit = block.gather(1, block_targets[:, None]).squeeze(1)
            block.sub_(top[:, None]).exp_()
            normaliser = block.sum(dim=-1)
            loss += torch.where(block_valid, top + normaliser.log() - target_logit, 0.0).sum()
            # d(sum of losses)/d(logits) = softmax - one-hot, zero on ignored rows.
            block.mul_((block_valid / normaliser)[:, None])
            block.scatter_add_(1, block_targets[:, None], -block_valid.to(block.dtype)[:, None])
        ctx.save_for_backward(logits, hidden, weight)
        ctx.has_bias = bias is not None
        ctx.mark_non_differentiable(correct)
        return loss, correct

    @staticmethod
    def backward(ctx, grad_loss: Tensor, grad_correct: Tensor | None) -> tuple[Tensor | None, ...]:
        gradient, hidden, weight = ctx.saved_tensors
        grad_hidden = gradient.mm(weight).mul_(grad_loss) if ctx.needs_input_grad[0] else None
        grad_weight = gradient.t().mm(hidden).mul_(grad_loss) if ctx.needs_input_grad[1] else None
        grad_bias = gradient.sum(dim=0).mul_(grad_loss) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_hidden, grad_weight, grad_bias, None


def vocab_cross_entropy(hidden: Tensor, weight: Tensor, bias: Tensor | None, targets: Tensor,
                        blockwise: bool | None = None) -> tuple[Tensor, Tensor]:
    """Summed cross-entropy of ``F.linear(hidden, weight, bias)`` against ``targets`` and the number of rows whose
    argmax is the target; rows with target -100 count for neither.

    Equal to ``F.cross_entropy(logits, targets, ignore_index=-100, reduction="sum")`` and
    ``((logits.argmax(-1) == targets) & (targets != -100)).sum()`` up to float rounding (about 1e-7 relative), and
    so are its gradients. By default (``blockwise=None``) fp32 without autocast takes the blockwise path; anything
    else (bf16 weights, autocast, torch.compile, fp64) computes the logits as usual and the cross-entropy in at
    least fp32, which ``blockwise=False`` asks for everywhere. ``blockwise=True`` asks for the blockwise path and is
    refused with a ``ValueError`` where it cannot run.

    Example:
        ::

            import torch
            from st_infocse.modeling.vocab_cross_entropy import vocab_cross_entropy

            hidden = torch.randn(6, 8, requires_grad=True)
            weight, bias = torch.randn(50, 8, requires_grad=True), torch.zeros(50, requires_grad=True)
            targets = torch.tensor([3, 7, -100, 1, 49, 0])
            loss, correct = vocab_cross_entropy(hidden, weight, bias, targets)
            (loss / 5).backward()
    """
    possible = (
        hidden.dtype == torch.float32
        and weight.dtype == torch.float32
        and (bias is None or bias.dtype == torch.float32)
        and not torch.is_autocast_enabled(hidden.device.type)
        # Compiled, the in-place work on slices of one buffer is functionalised into copies of the whole buffer,
        # undoing the saving; the plain form is what inductor fuses well.
        and not torch.compiler.is_compiling()
    )
    if blockwise and not possible:
        raise ValueError(
            "blockwise=True needs float32 hidden states, weight and bias outside autocast and torch.compile; "
            "leave blockwise=None to choose the path by itself."
        )
    if blockwise is not False and possible:
        return _VocabCrossEntropy.apply(hidden, weight, bias, targets)
    logits = F.linear(hidden, weight, bias)
    loss = F.cross_entropy(at_least_fp32(logits), targets, ignore_index=IGNORE_INDEX, reduction="sum")
    correct = ((logits.detach().argmax(-1) == targets) & (targets != IGNORE_INDEX)).sum()
    return loss, correct
