import pytest
import torch
import torch.nn.functional as F

import st_infocse.modeling.vocab_cross_entropy as module
from st_infocse.modeling.vocab_cross_entropy import vocab_cross_entropy


def _inputs(bias: bool = True, rows: int = 13, vocab: int = 37, width: int = 8):
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(rows, width, generator=generator, requires_grad=True)
    weight = torch.randn(vocab, width, generator=generator).requires_grad_()
    bias_ = torch.randn(vocab, generator=generator).requires_grad_() if bias else None
    targets = torch.randint(vocab, (rows,), generator=generator)
    targets[::4] = -100
    return hidden, weight, bias_, targets


def _reference(hidden, weight, bias, targets):
    logits = F.linear(hidden, weight, bias)
    loss = F.cross_entropy(logits, targets, ignore_index=-100, reduction="sum")
    correct = ((logits.argmax(-1) == targets) & (targets != -100)).sum()
    return loss, correct


def _grads(loss, tensors):
    return torch.autograd.grad(loss, [t for t in tensors if t is not None])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("block_bytes", [4 * 37 * 3, 1 << 20])  # blocks of 3 rows (5 blocks), or one block
def test_matches_linear_then_cross_entropy(monkeypatch, bias, block_bytes):
    monkeypatch.setattr(module, "BLOCK_BYTES", block_bytes)
    hidden, weight, bias_, targets = _inputs(bias)
    # Make some argmaxes hit the target so that the count is not trivially 0.
    with torch.no_grad():
        weight[targets[1]] += 5 * hidden[1]
    loss, correct = vocab_cross_entropy(hidden, weight, bias_, targets)
    expected_loss, expected_correct = _reference(hidden, weight, bias_, targets)
    assert correct.dtype == torch.long and int(correct) == int(expected_correct) >= 1
    torch.testing.assert_close(loss, expected_loss, rtol=1e-6, atol=1e-6)
    tensors = (hidden, weight, bias_)
    for ours, theirs in zip(_grads(2.5 * loss, tensors), _grads(2.5 * expected_loss, tensors), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_every_row_ignored_gives_zero_loss_and_gradient():
    hidden, weight, bias, targets = _inputs()
    loss, correct = vocab_cross_entropy(hidden, weight, bias, torch.full_like(targets, -100))
    assert loss.item() == 0.0 and correct.item() == 0
    assert all(not g.any() for g in _grads(loss, (hidden, weight, bias)))


def test_a_retained_graph_gives_the_same_gradient_twice():
    hidden, weight, bias, targets = _inputs()
    loss, _ = vocab_cross_entropy(hidden, weight, bias, targets)
    (first,) = torch.autograd.grad(loss, hidden, retain_graph=True)
    (second,) = torch.autograd.grad(loss, hidden)
    assert torch.equal(first, second)


def test_without_grad_it_only_scores():
    hidden, weight, bias, targets = _inputs()
    with torch.no_grad():
        loss, correct = vocab_cross_entropy(hidden, weight, bias, targets)
    expected_loss, expected_correct = _reference(hidden.detach(), weight.detach(), bias.detach(), targets)
    assert not loss.requires_grad and correct == expected_correct
    torch.testing.assert_close(loss, expected_loss)


def test_autocast_and_bf16_take_the_reference_path_in_fp32():
    hidden, weight, bias, targets = _inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, correct = vocab_cross_entropy(hidden, weight, bias, targets)
        logits = F.linear(hidden, weight, bias)
    assert loss.dtype == torch.float32
    expected = F.cross_entropy(logits.float(), targets, ignore_index=-100, reduction="sum")
    torch.testing.assert_close(loss, expected)
    assert correct == ((logits.argmax(-1) == targets) & (targets != -100)).sum()
    loss16, _ = vocab_cross_entropy(hidden.bfloat16(), weight.bfloat16(), bias.bfloat16(), targets)
    assert loss16.dtype == torch.float32 and torch.isfinite(loss16)


def test_compiled_it_takes_the_plain_form():
    """In-place work on slices of one buffer compiles into copies of the whole buffer: traced, the plain form runs."""
    hidden, weight, bias, targets = _inputs()
    graphs = []

    def record(graph_module, example_inputs):
        graphs.append(graph_module.code)
        return graph_module.forward

    torch._dynamo.reset()
    compiled = torch.compile(lambda *args: vocab_cross_entropy(*args)[0], backend=record, fullgraph=True)
    loss = compiled(hidden, weight, bias, targets)
    torch._dynamo.reset()
    assert len(graphs) == 1 and "cross_entropy" in graphs[0] and "VocabCrossEntropy" not in graphs[0]
    torch.testing.assert_close(loss, _reference(hidden, weight, bias, targets)[0])


def test_float64_stays_float64():
    hidden, weight, bias, targets = (t.double() if t.is_floating_point() else t for t in _inputs())
    loss, correct = vocab_cross_entropy(hidden, weight, bias, targets)
    expected_loss, expected_correct = _reference(hidden, weight, bias, targets)
    assert loss.dtype == torch.float64 and correct == expected_correct
    torch.testing.assert_close(loss, expected_loss)


def test_asking_for_the_blockwise_path_where_it_cannot_run_is_refused():
    # Before, blockwise=True fell back to the plain path without a word.
    hidden, weight, bias, targets = (t.double() if t.is_floating_point() else t for t in _inputs())
    with pytest.raises(ValueError, match="blockwise=True needs float32"):
        vocab_cross_entropy(hidden, weight, bias, targets, blockwise=True)
    loss, _ = vocab_cross_entropy(*_inputs(), blockwise=True)  # float32 outside autocast: it runs
    torch.testing.assert_close(loss, _reference(*_inputs())[0])
