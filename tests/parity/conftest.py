"""Dropout-free tiny BERT checkpoints for the parity tests, built in the test session (never downloaded)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from ..conftest import SPECIAL, WORDS, random_sentences
from . import authors


def build_checkpoint(path: Path, layers: int, head_bias_std: float = 0.0) -> Path:
    """A dropout-free tiny BERT with its MLM head; ``head_bias_std`` > 0 gives the head a bias that matters."""
    path.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate(SPECIAL + WORDS)}
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,  # both views identical, so the package and the reference see the same numbers
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    model = BertForMaskedLM(config)
    if head_bias_std:
        with torch.no_grad():
            model.cls.predictions.bias.normal_(std=head_bias_std)
    model.save_pretrained(path)
    BertTokenizerFast(vocab=vocab).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def parity_bert_dir(tmp_path_factory) -> Path:
    """A 4-layer BERT saved with its MLM head, dropout 0."""
    return build_checkpoint(tmp_path_factory.mktemp("parity_bert"), layers=4)


@pytest.fixture
def cls_model(parity_bert_dir) -> Callable[..., object]:
    """A CLS-pooled SentenceTransformer (SimCSE's ``cls_before_pooler``) on the parity checkpoint."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    def factory(path: Path | None = None, pooling: str = "cls"):
        torch.manual_seed(0)
        transformer = Transformer(str(path or parity_bert_dir), max_seq_length=32)
        model = SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling)], device="cpu"
        )
        model.train()
        return model

    return factory


def column_texts(kind: str, batch: int = 16) -> list[list[str]]:
    """Texts per column: one column (unsupervised, two dropout views), (anchor, positive) pairs, or triplets with a
    hard negative."""
    columns = {"single": 1, "pairs": 2, "triplets": 3}[kind]
    texts = random_sentences(columns * batch, seed=3)
    return [texts[i * batch : (i + 1) * batch] for i in range(columns)]


def columns_and_views(model, kind: str) -> tuple[list[dict], list[dict[str, torch.Tensor]]]:
    """The package's input (one features dict per column) and the authors' views of it: the token tensors of
    every sentence of an instance, one column giving the same text twice (two dropout views)."""
    columns = [dict(model.preprocess(texts)) for texts in column_texts(kind)]
    keys = ("input_ids", "attention_mask", "token_type_ids")
    tensors = [{key: value for key, value in column.items() if key in keys} for column in columns]
    return columns, tensors * 2 if len(tensors) == 1 else tensors


def relative_difference(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """||ours - theirs|| / ||theirs||, the largest acceptable value being 1e-4."""
    ours, theirs = ours.detach().double(), theirs.detach().double()
    scale = theirs.norm().item()
    return (ours - theirs).norm().item() / scale if scale > 0 else (ours - theirs).norm().item()


def gradients(value: torch.Tensor, params: dict[str, torch.nn.Parameter]) -> dict[str, torch.Tensor]:
    grads = torch.autograd.grad(value, list(params.values()), retain_graph=True, allow_unused=True)
    return {
        name: torch.zeros_like(p) if g is None else g for (name, p), g in zip(params.items(), grads, strict=True)
    }


def largest_gradient_difference(
    ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor], scale: float = 1.0
) -> tuple[float, str]:
    """The worst relative difference over the tensors (ours multiplied by ``scale``), and its name.

    Each tensor is compared relative to its own reference norm, floored at 1e-3 of the norm of all reference
    gradients together: some gradients are zero in exact arithmetic (a key bias shifts every attention score of
    a query equally, so softmax ignores it) and hold only rounding noise, which no relative bound can fit.
    """
    total = torch.sqrt(sum(g.detach().double().pow(2).sum() for g in theirs.values())).item()
    worst, where = 0.0, ""
    for name, theirs_grad in theirs.items():
        ours_grad, theirs_grad = (ours[name] * scale).detach().double(), theirs_grad.detach().double()
        diff = (ours_grad - theirs_grad).norm().item() / max(theirs_grad.norm().item(), 1e-3 * total, 1e-30)
        if diff > worst:
            worst, where = diff, name
    return worst, where


class FixedMasker:
    """Hands out pre-drawn (masked ids, labels) per view, in the order the loss asks for them."""

    def __init__(self, draws: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.draws = list(draws)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        masked, labels = self.draws.pop(0)
        assert masked.shape == input_ids.shape
        return masked.clone(), labels.clone()


def draw_masks(views: list[dict[str, torch.Tensor]], tokenizer, rate: float, seed: int = 0):
    """One (masked ids, labels) draw per view with the authors' ``mask_tokens``, from a seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    return [
        authors.mask_tokens(
            view["input_ids"], tokenizer.all_special_ids, tokenizer.mask_token_id, len(tokenizer), rate, generator
        )
        for view in views
    ]


def head_tensors(head: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Independent copies of an ``MLMHead``'s weights, named as ``authors.lm_head_forward`` reads them."""
    tensors = {
        "dense.weight": head.dense.weight,
        "dense.bias": head.dense.bias,
        "norm.weight": head.layer_norm.weight,
        "norm.bias": head.layer_norm.bias,
        "decoder.weight": head.decoder.weight,
        "decoder.bias": head.decoder.bias,
    }
    return {name: value.detach().clone().requires_grad_(True) for name, value in tensors.items()}
