"""InfoCSE's defaults compute what caskcsg/sentemb's released ``Infocse-bert-base.sh`` run computes.

Reference: ``authors.infocse_forward`` (``InfoCSE/infocse/models_cls_mlm.py`` ``cl_forward``). Same weights (the
package's randomly initialised projection, fusion layers and head are copied into the reference; encoder, frozen
copy and head come from one checkpoint), the same masked inputs (drawn once by the authors' ``mask_tokens`` and
handed to both), no dropout. Loss terms and encoder gradients must agree to 1e-4 relative. Both sides run in
float64: in float32 the BatchNorm head's backward alone moves some gradients by ~1e-3 relative between two
correct orders of summation, which would hide a real difference of that size.
"""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import BertLayer, BertModel

from st_infocse import losses

from . import authors
from .conftest import (
    FixedMasker,
    columns_and_views,
    draw_masks,
    gradients,
    head_tensors,
    largest_gradient_difference,
    relative_difference,
)

TOLERANCE = 1e-4


def _reference_modules(loss, encoder_copy):
    """The authors' auxiliary modules holding the package's weights: a k-layer frozen BERT read from the
    checkpoint's weights (train_cls_mlm.py:414-417, ``load_state_dict(strict=False)`` keeps layers below k), the
    c_head BertLayers (models_cls_mlm.py:343-346), the LM head and the projection."""
    k, config = loss.cmlm.k, copy.deepcopy(encoder_copy.config)
    config.num_hidden_layers = k
    config._attn_implementation = "eager"  # the additive mask of the authors' transformers
    dtype = encoder_copy.dtype
    frozen = BertModel(config, add_pooling_layer=False).to(dtype)
    frozen.load_state_dict(encoder_copy.state_dict(), strict=False)
    c_head = torch.nn.ModuleList([BertLayer(config) for _ in loss.decoder.fusion]).to(dtype)
    for ours, theirs in zip(loss.decoder.fusion, c_head, strict=True):
        theirs.load_state_dict(ours.state_dict())
    lm_head = head_tensors(loss.decoder.head)
    projection = authors.projection_mlp(encoder_copy.config.hidden_size).to(dtype)
    projection.load_state_dict(loss.contrastive.projection.net.state_dict())
    return frozen, c_head, lm_head, projection


def _run(cls_model, kind: str, loss_class=losses.InfoCSELoss):
    torch.manual_seed(0)
    model = cls_model().double()
    loss = loss_class(model).double()  # the defaults under test
    encoder = model[0].auto_model
    encoder_copy = copy.deepcopy(encoder)
    frozen, c_head, lm_head, projection = _reference_modules(loss, encoder_copy)

    tokenizer = model[0].tokenizer
    columns, views = columns_and_views(model, kind)
    draws = draw_masks(views, tokenizer, loss.cmlm.mask_rate)
    loss.cmlm.masker = FixedMasker(draws)

    ours = loss(columns)
    their_contrastive, their_mlm = authors.infocse_forward(
        encoder_copy,
        frozen,
        c_head,
        lm_head,
        projection,
        views,
        [d[0] for d in draws],
        [d[1] for d in draws],
        tokenizer.pad_token_id,
        temperature=0.05,
        layer_norm_eps=encoder_copy.config.layer_norm_eps,
    )
    return loss, model, encoder, encoder_copy, c_head, lm_head, ours, their_contrastive, their_mlm


@pytest.mark.parametrize("kind", ["single", "pairs", "triplets"])
def test_infocse_defaults_match_the_released_objective(cls_model, kind):
    loss, model, encoder, encoder_copy, c_head, lm_head, ours, their_cl, their_mlm = _run(cls_model, kind)
    lam = loss.lambda_
    assert lam == 1e-5
    assert set(ours) == {"contrastive", "cmlm"}

    assert relative_difference(ours["contrastive"], their_cl) < TOLERANCE
    assert relative_difference(ours["cmlm"] / lam, their_mlm) < TOLERANCE

    our_params = dict(encoder.named_parameters())
    their_params = dict(encoder_copy.named_parameters())
    # Each term's encoder gradient on its own (the MLM term is 1e-5 of the total), then the total.
    for our_term, their_term, scale in (
        (ours["contrastive"], their_cl, 1.0),
        (ours["cmlm"], their_mlm, 1.0 / lam),
        (ours["contrastive"] + ours["cmlm"], their_cl + lam * their_mlm, 1.0),
    ):
        worst, where = largest_gradient_difference(
            gradients(our_term, our_params), gradients(their_term, their_params), scale
        )
        assert worst < TOLERANCE, f"encoder gradient differs at {where}: {worst:.2e}"

    # The auxiliary modules learn the same thing too.
    fusion = {f"{i}.{n}": p for i, layer in enumerate(loss.decoder.fusion) for n, p in layer.named_parameters()}
    c_head_params = {f"{i}.{n}": p for i, layer in enumerate(c_head) for n, p in layer.named_parameters()}
    worst, where = largest_gradient_difference(
        gradients(ours["cmlm"], fusion), gradients(their_mlm, c_head_params), 1.0 / lam
    )
    assert worst < TOLERANCE, f"fusion-layer gradient differs at {where}: {worst:.2e}"
    head = loss.decoder.head
    ours_head = gradients(ours["cmlm"], {"decoder.weight": head.decoder.weight, "dense.weight": head.dense.weight})
    theirs_head = gradients(their_mlm, {"decoder.weight": lm_head["decoder.weight"], "dense.weight": lm_head["dense.weight"]})
    assert largest_gradient_difference(ours_head, theirs_head, 1.0 / lam)[0] < TOLERANCE
