"""SimCSE's and InforMin-CL's defaults compute what the authors' released training code computes.

References: ``authors.simcse_forward`` (princeton-nlp/SimCSE ``simcse/models.py``, run with ``run_unsup_example.sh``:
``--pooler_type cls --mlp_only_train``) and ``authors.informin_forward`` (ShaobinChen-AH/InforMin-CL
``informin-cl/models.py`` with the paper's MLP on [CLS] and lambda 0.4 for BERT-base, Table 3). Same weights (the
package's randomly initialised head is copied into the reference), no dropout, float64 on both sides.
"""

from __future__ import annotations

import copy

import pytest

from st_infocse import losses

from . import authors
from .conftest import (
    FixedMasker,
    column_texts,
    columns_and_views,
    draw_masks,
    gradients,
    head_tensors,
    largest_gradient_difference,
    relative_difference,
)

TOLERANCE = 1e-4


def _setup(cls_model, kind: str, make_loss):
    model = cls_model().double()
    loss = make_loss(model).double()
    encoder = model[0].auto_model
    encoder_copy = copy.deepcopy(encoder)
    columns, views = columns_and_views(model, kind)
    mlp = authors.mlp_layer(encoder.config.hidden_size).double()
    if loss_projection(loss) is not None:
        mlp.load_state_dict(loss_projection(loss).net.state_dict())
    return model, loss, encoder, encoder_copy, columns, views, mlp, model[0].tokenizer.pad_token_id


def loss_projection(loss):
    return loss.projection if isinstance(loss, losses.SimCSELoss) else loss.contrastive.projection


def _assert_encoder_gradients_match(ours, theirs, encoder, encoder_copy) -> None:
    worst, where = largest_gradient_difference(
        gradients(ours, dict(encoder.named_parameters())), gradients(theirs, dict(encoder_copy.named_parameters()))
    )
    assert worst < TOLERANCE, f"encoder gradient differs at {where}: {worst:.2e}"


@pytest.mark.parametrize("kind", ["single", "pairs", "triplets"])
def test_simcse_defaults_match_the_released_objective(cls_model, kind):
    model, loss, encoder, encoder_copy, columns, views, mlp, pad_id = _setup(cls_model, kind, losses.SimCSELoss)
    assert loss.projection_kind == "mlp" and loss.temperature == 0.05

    ours = loss(columns)["contrastive"]
    theirs = authors.simcse_forward(encoder_copy, mlp, views, pad_id, temperature=0.05)
    assert relative_difference(ours, theirs) < TOLERANCE
    _assert_encoder_gradients_match(ours, theirs, encoder, encoder_copy)
    head = gradients(ours, dict(loss.projection.net.named_parameters()))
    assert largest_gradient_difference(head, gradients(theirs, dict(mlp.named_parameters())))[0] < TOLERANCE


def test_simcse_without_head_is_multiple_negatives_ranking(cls_model):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model, loss, *_ = _setup(cls_model, "pairs", lambda m: losses.SimCSELoss(m, projection=None))
    columns = [dict(model.preprocess(texts)) for texts in column_texts("pairs")]
    ours = loss(columns)["contrastive"]
    theirs = MultipleNegativesRankingLoss(model, scale=20.0)(columns, None)
    assert relative_difference(ours, theirs) < 1e-10


@pytest.mark.parametrize("kind", ["single", "pairs"])
def test_informin_defaults_match_the_released_objective(cls_model, kind):
    model, loss, encoder, encoder_copy, columns, views, mlp, pad_id = _setup(
        cls_model, kind, losses.InforMinReconstructionLoss
    )
    assert (loss.lambda_, loss.reduction, loss.mlm_weight) == (0.4, "official", 0.0)

    ours = loss(columns)
    their_cl, their_rec = authors.informin_forward(
        encoder_copy, mlp, views, pad_id, temperature=0.05, reconstruction_weight=0.4
    )
    assert set(ours) == {"contrastive", "reconstruction"}
    assert relative_difference(ours["contrastive"], their_cl) < TOLERANCE
    if kind == "pairs":  # with identical views (no dropout) the reconstruction term is exactly zero on both sides
        assert relative_difference(ours["reconstruction"], their_rec) < TOLERANCE
    else:
        assert ours["reconstruction"].item() == pytest.approx(0.0, abs=1e-20) and their_rec.item() == 0.0
    _assert_encoder_gradients_match(ours["contrastive"], their_cl, encoder, encoder_copy)
    if kind == "pairs":
        _assert_encoder_gradients_match(ours["reconstruction"], their_rec, encoder, encoder_copy)
    _assert_encoder_gradients_match(sum(ours.values()), their_cl + their_rec, encoder, encoder_copy)


@pytest.mark.parametrize("kind", ["single", "pairs"])
def test_informin_mlm_option_matches_the_released_objective(cls_model, kind):
    """``mlm_weight=0.1`` is the paper's "w/ MLM" variant (Table 6) and train.py's default ``--do_mlm``."""
    model, loss, encoder, encoder_copy, columns, views, mlp, pad_id = _setup(
        cls_model, kind, lambda m: losses.InforMinReconstructionLoss(m, mlm_weight=0.1)
    )
    tokenizer = model[0].tokenizer
    draws = draw_masks(views, tokenizer, loss.mask_rate)
    loss.masker = FixedMasker(draws)
    lm_head = head_tensors(loss.mlm_head)

    ours = loss(columns)
    their_mlm = authors.informin_mlm_forward(
        encoder_copy,
        lm_head,
        views,
        [d[0] for d in draws],
        [d[1] for d in draws],
        pad_id,
        encoder_copy.config.layer_norm_eps,
    )
    assert loss.mask_rate == 0.15
    assert relative_difference(ours["mlm"] / 0.1, their_mlm) < TOLERANCE
    _assert_encoder_gradients_match(ours["mlm"] / 0.1, their_mlm, encoder, encoder_copy)
