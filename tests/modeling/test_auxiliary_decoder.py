import pytest
import torch

from st_infocse.modeling import AuxiliaryDecoder


def test_save_and_load_round_trip(make_model, sentences, tmp_path):
    model = make_model()
    decoder = AuxiliaryDecoder.from_encoder(model, k=2, n=2)
    decoder.save_pretrained(tmp_path / "aux")
    assert sorted(p.name for p in (tmp_path / "aux").iterdir()) == [
        "auxiliary_decoder.safetensors",
        "auxiliary_decoder_config.json",
    ]
    loaded = AuxiliaryDecoder.from_pretrained(tmp_path / "aux")
    features = model.preprocess(sentences[:4])
    h = torch.randn(4, 32)
    labels = features["input_ids"].clone()
    labels[:, 0] = -100
    decoder.eval(), loaded.eval()
    a = decoder(h, features["input_ids"], features["attention_mask"], labels)
    b = loaded(h, features["input_ids"], features["attention_mask"], labels)
    assert torch.equal(a.loss, b.loss) and a.total == b.total > 0


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="No auxiliary decoder"):
        AuxiliaryDecoder.from_pretrained(tmp_path)


def test_incompatible_model_is_refused(make_model, tiny_bert_nomask_dir, tmp_path):
    decoder = AuxiliaryDecoder.from_encoder(make_model(), k=2, n=1)
    other = make_model(tiny_bert_nomask_dir)  # one fewer token in its vocabulary
    with pytest.raises(ValueError, match="vocab_size"):
        decoder.check_compatible(other)


def test_bad_fusion_init(make_model):
    with pytest.raises(ValueError, match="fusion_init"):
        AuxiliaryDecoder.from_encoder(make_model(), k=2, n=2, fusion_init="random")


def test_bounded_gather_gives_the_exact_loss():
    from st_infocse.modeling.auxiliary_decoder import mlm_loss, prediction_bound
    from st_infocse.modeling.heads import MLMHead

    torch.manual_seed(0)
    head = MLMHead(8, 11)
    hidden = torch.randn(4, 9, 8, requires_grad=True)
    labels = torch.randint(11, (4, 9)).masked_fill(torch.rand(4, 9) > 0.3, -100)
    exact = mlm_loss(head, hidden, labels)
    (grad_exact,) = torch.autograd.grad(exact.loss, hidden)
    room = prediction_bound(labels.numel(), 0.3)
    assert int(exact.total) < room < labels.numel() + 1
    bounded = mlm_loss(head, hidden, labels, max_predictions=room)
    (grad_bounded,) = torch.autograd.grad(bounded.loss, hidden)
    assert torch.allclose(bounded.loss, exact.loss) and torch.allclose(grad_bounded, grad_exact)
    assert (bounded.total, bounded.correct) == (exact.total, exact.correct) and not bounded.overflow
    assert mlm_loss(head, hidden, labels, max_predictions=int(exact.total) - 1).overflow
    nothing = mlm_loss(head, hidden, torch.full_like(labels, -100), max_predictions=room)
    assert nothing.loss.item() == 0.0 and nothing.total == 0


def _model_with_attention(tiny_bert_dir, implementation: str):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    torch.manual_seed(0)
    encoder = Transformer(str(tiny_bert_dir), max_seq_length=32, model_kwargs={"attn_implementation": implementation})
    return SentenceTransformer(modules=[encoder, Pooling(32, "cls")], device="cpu")


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_decoder_uses_the_encoders_attention_implementation(tiny_bert_dir, implementation):
    decoder = AuxiliaryDecoder.from_encoder(_model_with_attention(tiny_bert_dir, implementation), k=2, n=1)
    assert decoder.lower.config._attn_implementation == implementation
    assert all(layer.attention.self.config._attn_implementation == implementation for layer in decoder.fusion)


def test_a_given_decoder_follows_the_models_attention(tiny_bert_dir, sentences):
    from st_infocse import losses

    decoder = AuxiliaryDecoder.from_encoder(_model_with_attention(tiny_bert_dir, "sdpa"), k=2, n=1).eval()
    model = _model_with_attention(tiny_bert_dir, "eager")
    features = model.preprocess(sentences[:8])
    h = model(dict(features))["sentence_embedding"].detach()
    labels = features["input_ids"].masked_fill(features["attention_mask"] == 0, -100)
    before = decoder(h, features["input_ids"], features["attention_mask"], labels).loss
    loss = losses.InfoCSELoss(model, decoder=decoder)
    assert loss.decoder.lower.config._attn_implementation == "eager"
    assert loss.decoder.fusion[0].attention.self.config._attn_implementation == "eager"
    after = loss.decoder(h, features["input_ids"], features["attention_mask"], labels).loss
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-6)  # the same function, another kernel
