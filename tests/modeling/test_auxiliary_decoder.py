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

    torch.manual_seed(0)
    head = torch.nn.Linear(8, 11)
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
