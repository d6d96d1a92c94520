"""The auxiliary decoder and the losses on tiny random encoders of each supported family."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.modeling import AuxiliaryDecoder, UnsupportedModelError, build_mlm_head, find_encoder_parts
from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoderConfig

from ..conftest import random_sentences
from .conftest import FAMILIES

K, N = 2, 2


def _features(model, n: int = 6, seed: int = 1) -> dict[str, torch.Tensor]:
    # Long enough for ModernBERT's local layers to see a window narrower than the sentence, with padding.
    features = model.preprocess(random_sentences(n, seed=seed, min_words=3, max_words=14))
    assert (features["attention_mask"] == 0).any()
    return features


def _layer_output(parts, index: int, model, features) -> tuple[torch.Tensor, dict]:
    """The output of encoder layer ``index`` and the model's own output, from one forward pass."""
    captured = []
    handle = parts.layers[index].register_forward_hook(
        lambda module, args, out: captured.append(out[0] if isinstance(out, tuple) else out)
    )
    try:
        out = model(dict(features))
    finally:
        handle.remove()
    return captured[0], out


@pytest.mark.parametrize("family", FAMILIES)
def test_family_layers_are_found_and_run_as_the_encoder_runs_them(make_family_model, family):
    model = make_family_model(family).eval()
    parts = find_encoder_parts(model)
    assert parts.family.name == family and parts.depth == 4
    features = _features(model)
    with torch.no_grad():
        kth, out = _layer_output(parts, K - 1, model, features)
        upper = parts.family.run(parts.hf_model, parts.layers[K:], kth, features["attention_mask"])
        if parts.output_norm is not None:
            upper = parts.output_norm(upper)
    real = features["attention_mask"].bool()
    assert torch.equal(upper[real], out["token_embeddings"][real])


@pytest.mark.parametrize("family", FAMILIES)
def test_lower_copy_and_fusion_layers_come_from_the_encoder(make_family_model, family):
    model = make_family_model(family).eval()
    parts = find_encoder_parts(model)
    decoder = AuxiliaryDecoder.from_encoder(model, k=K, n=N, fusion_init="copy").eval()
    encoder = parts.hf_model.state_dict()
    lower = decoder.lower.state_dict()
    assert lower and all(torch.equal(value, encoder[key]) for key, value in lower.items())
    # Embeddings plus exactly k layers, no pooler, no final norm.
    assert len(decoder.lower.get_submodule(parts.family.layers_path)) == K
    for i, layer in enumerate(decoder.fusion):
        source = parts.layers[K + i]
        assert all(torch.equal(v, source.state_dict()[key]) for key, v in layer.state_dict().items())
        assert getattr(layer, "attention_type", None) == getattr(source, "attention_type", None)

    features = _features(model)
    with torch.no_grad():
        kth, _ = _layer_output(parts, K - 1, model, features)
        copied = decoder.lower_hidden_states(features["input_ids"], features["attention_mask"])
    real = features["attention_mask"].bool()
    assert torch.equal(copied[real], kth[real])


@pytest.mark.parametrize("family", [*FAMILIES, "electra"])
def test_mlm_head_reproduces_the_checkpoint_head(make_family_model, family_dirs, family):
    from transformers import AutoModelForMaskedLM

    model = make_family_model(family)
    head = build_mlm_head(find_encoder_parts(model))
    reference = AutoModelForMaskedLM.from_pretrained(str(family_dirs(family))).eval()
    features = _features(model)
    inputs = {"input_ids": features["input_ids"], "attention_mask": features["attention_mask"]}
    with torch.no_grad():
        hidden = reference.base_model(**inputs).last_hidden_state
        expected = reference(**inputs).logits
        assert torch.equal(head(hidden), expected)
    # An untied copy: the head's projection is not the encoder's embedding matrix.
    assert head.decoder.weight.data_ptr() != model[0].auto_model.get_input_embeddings().weight.data_ptr()


@pytest.mark.parametrize("family", FAMILIES)
def test_losses_run_forward_and_backward(make_family_model, family):
    model = make_family_model(family)
    batch = [model.preprocess(random_sentences(4, seed=2))]
    for loss in (
        losses.InfoCSELoss(model, lambda_=0.1, k=K, n=N),
        losses.CMLMCSELoss(model),
        losses.AuxiliaryPretrainingLoss(model, k=K, n=N),
    ):
        model.zero_grad(set_to_none=True)
        out = loss([dict(f) for f in batch])
        total = sum(out.values()) if isinstance(out, dict) else out
        assert torch.isfinite(total)
        total.backward()
        decoder = loss.decoder
        assert any(p.grad is not None and torch.count_nonzero(p.grad) for p in model.parameters())
        assert all(p.grad is not None for p in decoder.head.parameters())
        assert any(p.grad is not None and torch.count_nonzero(p.grad) for p in decoder.fusion.parameters())


@pytest.mark.parametrize("family", FAMILIES)
def test_mlm_gradient_reaches_the_encoder_only_through_the_sentence_embedding(make_family_model, family):
    model = make_family_model(family)
    loss = losses.ConditionalMLMLoss(model, k=K, n=N)
    features = _features(model, n=8)

    def encoder_grads(cut: bool) -> list[torch.Tensor | None]:
        model.zero_grad(set_to_none=True)
        loss.decoder.zero_grad(set_to_none=True)
        embedding = model(dict(features))["sentence_embedding"]
        if cut:
            embedding = embedding.detach()
        torch.manual_seed(0)
        loss.compute_loss_from_embeddings([embedding], [features]).loss.backward()
        return [p.grad for p in model.parameters()]

    assert all(g is None or torch.count_nonzero(g) == 0 for g in encoder_grads(cut=True))
    assert any(g is not None and torch.count_nonzero(g) > 0 for g in encoder_grads(cut=False))
    assert all(p.grad is None for p in loss.decoder.lower.parameters())


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_save_load_round_trip(make_family_model, family, tmp_path):
    model = make_family_model(family)
    decoder = AuxiliaryDecoder.from_encoder(model, k=K, n=N).eval()
    decoder.save_pretrained(tmp_path / "aux")
    loaded = AuxiliaryDecoder.from_pretrained(tmp_path / "aux").eval()
    assert set(loaded.state_dict()) == set(decoder.state_dict())
    features = _features(model)
    h = torch.randn(features["input_ids"].shape[0], 32)
    labels = torch.where(features["attention_mask"].bool(), features["input_ids"], -100)
    labels[:, 0] = -100
    a = decoder(h, features["input_ids"], features["attention_mask"], labels)
    b = loaded(h, features["input_ids"], features["attention_mask"], labels)
    assert a.total == b.total > 0 and torch.equal(a.loss, b.loss)
    # The reloaded decoder serves the model it was built for.
    losses.InfoCSELoss(model, decoder=loaded)


@pytest.mark.parametrize("family", FAMILIES)
def test_trainer_runs_infocse_for_each_family(make_family_model, run_trainer, family):
    model = make_family_model(family)
    loss = losses.InfoCSELoss(model, lambda_=0.1, k=K, n=N)
    fusion = {k: v.clone() for k, v in loss.decoder.fusion.state_dict().items()}
    trainer = run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(8, seed=3)}), steps=2, batch_size=4)
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2 and {"contrastive", "cmlm"} <= set(logged[0])
    assert any(not torch.equal(v, loss.decoder.fusion.state_dict()[k]) for k, v in fusion.items())


def _tiny_unsupported_model(path, model_type: str):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import AlbertConfig, AutoModel, BertTokenizerFast, XLNetConfig

    from .conftest import family_vocab

    vocab = family_vocab("bert")
    shape = {"vocab_size": len(vocab), "num_attention_heads": 2, "num_hidden_layers": 2}
    configs = {
        "albert": lambda: AlbertConfig(**shape, embedding_size=16, hidden_size=32, intermediate_size=64),
        "xlnet": lambda: XLNetConfig(vocab_size=len(vocab), d_model=32, n_layer=2, n_head=2, d_inner=64),
    }
    AutoModel.from_config(configs[model_type]()).save_pretrained(path)
    BertTokenizerFast(vocab=vocab).save_pretrained(path)
    transformer = Transformer(str(path), max_seq_length=16)
    return SentenceTransformer(modules=[transformer, Pooling(32, "cls")], device="cpu")


@pytest.mark.parametrize(
    ("model_type", "missing"), [("albert", "shares one set of layer weights"), ("xlnet", "two-stream")]
)
def test_unsupported_encoders_are_refused_by_name(tmp_path, model_type, missing):
    model = _tiny_unsupported_model(tmp_path, model_type)
    with pytest.raises(UnsupportedModelError, match=f"Model type '{model_type}' is not supported.*{missing}"):
        losses.InfoCSELoss(model)


def test_a_saved_decoder_of_an_unknown_family_is_refused():
    from transformers import T5Config

    config = AuxiliaryDecoderConfig(
        k=1, n=1, embedding_dim=32, encoder_config=T5Config(d_model=32).to_dict(), layers_path="encoder.block"
    )
    with pytest.raises(UnsupportedModelError, match="Model type 't5' is not supported.*no mask token"):
        AuxiliaryDecoder(config)
