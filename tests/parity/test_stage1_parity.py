"""Stage 1 against Condenser's pre-training forward pass.

The reference below re-expresses ``CondenserForPretraining.forward`` of luyug/Condenser (``modeling.py``, commit
74880ab8d230c5bb4a4b363d50856b9bd711d38d) with plain transformers modules. It gets the package's weights and the
package's masked batch, runs without dropout, and each loss term and every encoder gradient must agree. The package
loss is built with its defaults (tied head, whole-word masking), so reverting a default to something Condenser does
not do breaks this test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertForMaskedLM
from transformers.models.bert.modeling_bert import BertLayer

from st_infocse import losses
from st_infocse.modeling.masking import WholeWordMasker

from ..conftest import random_sentences
from .conftest import build_checkpoint

LAYERS = 4
TOLERANCE = 1e-4


def extended_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """What ``get_extended_attention_mask`` returned for an encoder in the transformers 4 releases Condenser ran
    on (modeling.py lines 56-60): ``(batch, 1, 1, seq)``, 0 where attended and the dtype's minimum on padding.
    transformers 5 no longer has the method."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


class CondenserReference(nn.Module):
    """``CondenserForPretraining`` (modeling.py lines 35-93) with ``late_mlm`` on."""

    def __init__(self, lm: BertForMaskedLM, n_head_layers: int, skip_from: int) -> None:
        super().__init__()
        self.lm = lm  # line 44: a BertForMaskedLM, whose output projection is tied to its word embeddings
        self.c_head = nn.ModuleList([BertLayer(lm.config) for _ in range(n_head_layers)])  # lines 45-47
        self.skip_from = skip_from

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(c_head MLM loss, the encoder's own MLM loss)``; Condenser returns their sum (lines 80-84)."""
        extended = extended_attention_mask(attention_mask, self.lm.dtype)  # lines 56-60
        lm_out = self.lm(  # lines 62-67
            input_ids=input_ids,
            attention_mask=attention_mask,
            labels=labels,
            output_hidden_states=True,
            return_dict=True,
        )
        cls_hiddens = lm_out.hidden_states[-1][:, :1]  # line 68
        skip_hiddens = lm_out.hidden_states[self.skip_from]  # line 69: hidden_states[0] is the embedding output
        hiddens = torch.cat([cls_hiddens, skip_hiddens[:, 1:]], dim=1)  # line 71
        for layer in self.c_head:  # lines 73-78
            out = layer(hiddens, extended)
            hiddens = out[0] if isinstance(out, tuple) else out
        # mlm_loss, lines 87-93: the same head (lm.cls) on every position, -100 ignored.
        scores = self.lm.cls(hiddens)
        c_head_loss = F.cross_entropy(scores.view(-1, self.lm.config.vocab_size), labels.view(-1))
        return c_head_loss, lm_out.loss  # line 82: --late_mlm adds lm_out.loss


@pytest.fixture(scope="module")
def stage1_checkpoint(tmp_path_factory) -> Path:
    # A head bias that matters, so copying it is checked.
    return build_checkpoint(tmp_path_factory.mktemp("stage1_parity"), LAYERS, head_bias_std=0.5)


def _package_model(path: Path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(path), max_seq_length=32)
    # CLS pooling: the sentence embedding is Condenser's final-layer [CLS] state.
    pooling = Pooling(transformer.get_embedding_dimension(), "cls")
    return SentenceTransformer(modules=[transformer, pooling], device="cpu")


def _reference_from(stage1: losses.AuxiliaryPretrainingLoss, encoder: nn.Module) -> CondenserReference:
    """A reference carrying the package's weights: encoder, head transform and bias, fusion layers."""
    config = BertConfig(**encoder.config.to_dict())
    config._attn_implementation = "eager"  # the additive mask path Condenser ran
    reference = CondenserReference(BertForMaskedLM(config), n_head_layers=stage1.decoder.config.n, skip_from=stage1.k)
    lm = reference.lm
    encoder_state = {key: value for key, value in encoder.state_dict().items() if not key.startswith("pooler.")}
    lm.bert.load_state_dict(encoder_state)
    head = stage1.decoder.head
    with torch.no_grad():
        lm.cls.predictions.transform.dense.load_state_dict(head.dense.state_dict())
        lm.cls.predictions.transform.LayerNorm.load_state_dict(head.layer_norm.state_dict())
        lm.cls.predictions.bias.copy_(head.decoder.bias)
    for ours, theirs in zip(stage1.decoder.fusion, reference.c_head, strict=True):
        theirs.load_state_dict(ours.state_dict())
    assert lm.cls.predictions.decoder.weight is lm.bert.embeddings.word_embeddings.weight
    return reference


def _relative(ours: torch.Tensor, theirs: torch.Tensor, floor: float = 0.0) -> float:
    ours, theirs = ours.detach().double(), theirs.detach().double()
    return ((ours - theirs).norm() / max(theirs.norm().item(), floor, 1e-30)).item()


def test_stage1_matches_condenser_pretraining(stage1_checkpoint):
    model = _package_model(stage1_checkpoint)
    stage1 = losses.AuxiliaryPretrainingLoss(model)  # defaults only
    encoder = model[0].auto_model
    assert stage1.k == LAYERS // 2 and stage1.decoder.config.n == 2
    assert isinstance(stage1.masker, WholeWordMasker)

    features = model.preprocess(random_sentences(16, seed=11, min_words=3, max_words=20))
    torch.manual_seed(0)
    masked_ids, labels = stage1.masker(features["input_ids"], features["attention_mask"])
    chosen = labels != -100
    assert chosen.sum() >= 16 and (masked_ids[chosen] == labels[chosen]).any()  # some tokens kept as they were
    # Both sides see exactly this masked batch.
    stage1.masker = lambda input_ids, attention_mask: (masked_ids.clone(), labels.clone())

    reference = _reference_from(stage1, encoder)
    model.train()
    reference.train()

    out = stage1([dict(features)])
    c_head_loss, lm_loss = reference(masked_ids, features["attention_mask"], labels)

    ours = dict(encoder.named_parameters())
    theirs = dict(reference.lm.bert.named_parameters())
    ours_head, theirs_head = stage1.decoder.head, reference.lm.cls.predictions
    head_pairs = [
        (ours_head.dense.weight, theirs_head.transform.dense.weight),
        (ours_head.layer_norm.weight, theirs_head.transform.LayerNorm.weight),
        (ours_head.decoder.bias, theirs_head.bias),
    ]
    assert set(theirs) <= set(ours)
    (out["mlm"] + out["aux"]).backward()
    (c_head_loss + lm_loss).backward()

    figures = {"mlm": _relative(out["mlm"], lm_loss), "aux": _relative(out["aux"], c_head_loss)}
    # Attention key biases have a zero gradient in exact arithmetic (softmax ignores a shift shared by a whole row):
    # theirs hold rounding noise near 1e-12 of the largest gradient, so no tensor is compared against a norm below
    # 1e-6 of the largest one.
    floor = 1e-6 * max(p.grad.norm().item() for p in theirs.values())
    encoder_diffs = {name: _relative(ours[name].grad, p.grad, floor) for name, p in theirs.items()}
    worst = max(encoder_diffs, key=encoder_diffs.__getitem__)
    figures["encoder gradients"] = encoder_diffs[worst]
    figures["tied word embeddings gradient"] = encoder_diffs["embeddings.word_embeddings.weight"]
    figures["head gradients"] = max(_relative(a.grad, b.grad, floor) for a, b in head_pairs)
    print("\nstage-1 parity, largest relative difference:", {k: f"{v:.2e}" for k, v in figures.items()}, worst)

    assert figures["mlm"] < TOLERANCE and figures["aux"] < TOLERANCE, figures
    assert figures["encoder gradients"] < TOLERANCE, (worst, figures)
    assert figures["head gradients"] < TOLERANCE, figures
    # The pooler takes no part in either loss.
    assert all(p.grad is None or not p.grad.any() for name, p in ours.items() if name.startswith("pooler."))
