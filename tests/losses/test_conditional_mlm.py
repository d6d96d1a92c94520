import logging

import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, StaticEmbedding

from st_infocse import losses
from st_infocse.modeling import UnsupportedModelError

from ..conftest import random_sentences


def test_infocse_preset_shapes(make_model):
    loss = losses.ConditionalMLMLoss(make_model())  # 4-layer encoder: k = half the depth
    assert (loss.k, loss.n, loss.mask_rate) == (2, 2, 0.4)
    assert len(loss.decoder.lower.encoder.layer) == 2 and len(loss.decoder.fusion) == 2


def test_cmlm_cse_preset_copies_top_layer_when_short(make_model, caplog):
    model = make_model()
    with caplog.at_level(logging.INFO):
        loss = losses.ConditionalMLMLoss(model, preset="cmlm-cse", fusion_init="copy")
    assert (loss.k, loss.n, loss.mask_rate) == (3, 3, 0.15)  # two thirds of 4 layers, three fusion layers
    top = model[0].auto_model.encoder.layer[3].state_dict()
    for layer in loss.decoder.fusion:  # only one layer above k exists: all three start from the top layer
        for key, value in layer.state_dict().items():
            assert torch.equal(value, top[key])
    assert "copies of the top encoder layer" in caplog.text


def test_fresh_fusion_layers_differ_from_encoder(make_model):
    model = make_model()
    loss = losses.ConditionalMLMLoss(model)  # fresh by default, as the released script builds its c_head
    encoder_layer = model[0].auto_model.encoder.layer[2].state_dict()
    fused = loss.decoder.fusion[0].state_dict()
    key = "attention.self.query.weight"
    assert not torch.equal(fused[key], encoder_layer[key])


def test_lower_copy_equals_encoder_and_head_comes_from_checkpoint(make_model, tiny_bert_dir):
    from transformers import AutoModelForMaskedLM

    model = make_model()
    decoder = losses.ConditionalMLMLoss(model).decoder
    encoder = model[0].auto_model.state_dict()
    for key, value in decoder.lower.state_dict().items():
        assert torch.equal(value, encoder[key]), key
    reference = AutoModelForMaskedLM.from_pretrained(str(tiny_bert_dir)).cls.predictions
    assert torch.equal(decoder.head.dense.weight, reference.transform.dense.weight)
    assert torch.equal(decoder.head.decoder.bias, reference.bias)
    # Untied: its own storage, not the encoder's embedding matrix.
    word_embeddings = model[0].auto_model.get_input_embeddings().weight
    assert decoder.head.decoder.weight.data_ptr() != word_embeddings.data_ptr()


def test_headless_checkpoint_gets_a_new_head_with_a_warning(make_model, tiny_bert_headless_dir, caplog):
    model = make_model(tiny_bert_headless_dir)
    with caplog.at_level(logging.WARNING):
        decoder = losses.ConditionalMLMLoss(model).decoder
    assert "has no MLM head" in caplog.text
    assert torch.equal(decoder.head.decoder.weight, model[0].auto_model.get_input_embeddings().weight)


def test_mlm_gradient_reaches_encoder_only_through_sentence_embedding(make_model, sentences):
    model = make_model()
    loss = losses.ConditionalMLMLoss(model)
    features = model.preprocess(sentences[:8])

    def encoder_grads(cut: bool) -> list[torch.Tensor]:
        model.zero_grad(set_to_none=True)
        loss.decoder.zero_grad(set_to_none=True)
        embedding = model(dict(features))["sentence_embedding"]
        if cut:
            embedding = embedding.detach()
        torch.manual_seed(0)
        loss.compute_loss_from_embeddings([embedding], [features]).loss.backward()
        return [p.grad for p in model.parameters()]

    cut = encoder_grads(cut=True)
    assert all(g is None or torch.count_nonzero(g) == 0 for g in cut)
    connected = encoder_grads(cut=False)
    assert any(g is not None and torch.count_nonzero(g) > 0 for g in connected)
    # The frozen lower copy never receives gradients; fusion layers and head do.
    assert all(p.grad is None for p in loss.decoder.lower.parameters())
    assert all(p.grad is not None for p in loss.decoder.head.parameters())


def test_without_detach_the_lower_copy_trains(make_model, sentences):
    model = make_model()
    loss = losses.ConditionalMLMLoss(model, detach=False)
    loss([model.preprocess(sentences[:8])])["cmlm"].backward()
    assert any(p.grad is not None and torch.count_nonzero(p.grad) for p in loss.decoder.lower.parameters())


def test_k_out_of_range_is_refused(make_model):
    model = make_model()
    for k in (0, 4, 7):
        with pytest.raises(ValueError, match="k \\(frozen lower layers\\) must be between 1 and 3"):
            losses.ConditionalMLMLoss(model, k=k)
    with pytest.raises(ValueError, match="n \\(fusion layers\\)"):
        losses.ConditionalMLMLoss(model, n=0)


def test_tokenizer_without_mask_token_is_refused(make_model, tiny_bert_nomask_dir):
    with pytest.raises(ValueError, match="no mask token"):
        losses.ConditionalMLMLoss(make_model(tiny_bert_nomask_dir))


def test_first_module_must_be_a_transformer(tiny_bert_dir):
    from transformers import AutoTokenizer

    static = StaticEmbedding(AutoTokenizer.from_pretrained(str(tiny_bert_dir)), embedding_dim=16)
    model = SentenceTransformer(modules=[static], device="cpu")
    with pytest.raises(UnsupportedModelError, match="must be a Hugging Face transformer"):
        losses.InfoCSELoss(model)


def test_dense_layer_changing_size_is_projected_back(make_model, sentences):
    base = make_model()
    model = SentenceTransformer(modules=[base[0], base[1], Dense(32, 16)], device="cpu")
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    assert loss.decoder.h_proj is not None and loss.decoder.h_proj.in_features == 16
    out = loss([model.preprocess(sentences[:8])])
    assert torch.isfinite(sum(out.values()))


def test_nothing_masked_gives_a_zero_term(make_model):
    # The forward stops on an all-empty batch (tests/losses/test_empty_batches.py); the term itself stays finite.
    model = make_model()
    loss = losses.ConditionalMLMLoss(model)
    features = model.preprocess(["", "", ""])  # nothing to mask
    output = loss.compute_loss_from_embeddings([model(dict(features))["sentence_embedding"]], [features])
    assert output.loss.item() == 0.0 and output.total == 0
    output.loss.backward()


def test_unknown_preset(make_model):
    with pytest.raises(ValueError, match="preset must be one of infocse, cmlm-cse"):
        losses.ConditionalMLMLoss(make_model(), preset="diffcse")


def test_views_of_different_widths_give_the_per_position_mean_of_each_view_alone(make_model):
    """Views padded to one width for the shared decoder pass: each masked position's loss is what the view alone
    gives it, and the loss is the mean over all masked positions of both views."""
    model = make_model()
    loss = losses.ConditionalMLMLoss(model, mlm_gather="exact")
    model.eval(), loss.eval()
    views = [dict(model.preprocess(random_sentences(4, seed=s, max_words=4 + 8 * s))) for s in range(2)]
    assert views[0]["input_ids"].shape[1] != views[1]["input_ids"].shape[1]
    embeddings = [model(dict(view))["sentence_embedding"].detach() for view in views]
    draws = [loss.masker(view["input_ids"], view["attention_mask"]) for view in views]
    alone = [loss.decoder(emb, ids, view["attention_mask"], labels, token_type_ids=view.get("token_type_ids"))
             for emb, view, (ids, labels) in zip(embeddings, views, draws, strict=True)]
    loss.masker = lambda *_: draws.pop(0)  # the same masks again
    output = loss.compute_loss_from_embeddings(embeddings, views)
    total = sum(int(o.total) for o in alone)
    expected = sum(float(o.loss.detach()) * int(o.total) for o in alone) / total
    assert int(output.total) == total and int(output.correct) == sum(int(o.correct) for o in alone)
    assert float(output.loss.detach()) == pytest.approx(expected, rel=1e-5)
