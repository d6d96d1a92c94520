"""The h-shuffle diagnostic: auxiliary-MLM scores with each sentence's own embedding and with another's."""

from __future__ import annotations

import csv
import random

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.evaluation import ConditionalMLMEvaluator
from st_infocse.evaluation.h_shuffle import _batch_bounds
from st_infocse.modeling import AuxiliaryDecoder
from st_infocse.modeling.masking import TokenMasker
from st_infocse.training import train_probe_decoder
from tests.conftest import WORDS, random_sentences


def _expected(model, decoder, sentences, mask_rate, seed, batch_size):
    """The metrics computed by hand: one pass per batch with h, one with h rolled by one row."""
    masker = TokenMasker(model[0].tokenizer, mask_rate, seed=seed)
    sums = {"loss": 0.0, "loss_shuffled": 0.0, "correct": 0.0, "correct_shuffled": 0.0, "total": 0.0}
    model.eval()
    decoder.eval()
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            features = model.preprocess(sentences[start : start + batch_size])
            h = model(dict(features))["sentence_embedding"]
            ids, labels = masker(features["input_ids"], features["attention_mask"])
            for key, emb in (("", h), ("_shuffled", torch.cat([h[1:], h[:1]]))):
                out = decoder(emb, ids, features["attention_mask"], labels, features.get("token_type_ids"))
                sums["loss" + key] += float(out.loss) * float(out.total)
                sums["correct" + key] += float(out.correct)
            sums["total"] += float(out.total)
    total = sums["total"]
    return {
        "loss": sums["loss"] / total,
        "loss_shuffled": sums["loss_shuffled"] / total,
        "accuracy": sums["correct"] / total,
        "accuracy_shuffled": sums["correct_shuffled"] / total,
    }


def test_scores_match_a_hand_computation(make_model):
    model = make_model()
    decoder = AuxiliaryDecoder.from_encoder(model, k=2, n=1, fusion_init="fresh")
    sentences = random_sentences(20, seed=3)
    evaluator = ConditionalMLMEvaluator(sentences, decoder, mask_rate=0.5, batch_size=8, seed=7, name="aux")
    scores = evaluator(model)
    expected = _expected(model, decoder, sentences, 0.5, 7, 8)
    for key, value in expected.items():
        assert scores[f"aux_{key}"] == pytest.approx(value, rel=1e-6), key
    assert scores["aux_information_gain"] == pytest.approx(expected["loss_shuffled"] - expected["loss"], abs=1e-9)
    assert scores["aux_accuracy_gap"] == pytest.approx(expected["accuracy"] - expected["accuracy_shuffled"])
    assert evaluator.primary_metric == "aux_information_gain"
    # A random decoder still depends on h: the two scores differ.
    assert scores["aux_loss"] != scores["aux_loss_shuffled"]


def test_same_masks_each_call_and_modes_restored(make_model):
    model = make_model()
    loss = losses.InfoCSELoss(model, k=2, mask_rate=0.3)
    model.train()
    loss.decoder.train()
    evaluator = ConditionalMLMEvaluator(random_sentences(16), loss, batch_size=8)
    first, second = evaluator(model), evaluator(model)
    assert first == second
    assert model.training and loss.decoder.training
    assert evaluator.mask_rate == 0.3  # the loss's own rate by default


def test_a_bare_decoder_defaults_to_infocses_preset_for_its_encoders_depth(make_model):
    model = make_model()
    decoder = AuxiliaryDecoder.from_encoder(model, k=2, n=1, fusion_init="fresh")
    sentences = random_sentences(4)
    assert ConditionalMLMEvaluator(sentences, decoder).mask_rate == 0.40  # a 4-layer encoder
    decoder.config.encoder_config[decoder.family.depth_attribute] = 24  # as a large encoder's decoder records it
    assert ConditionalMLMEvaluator(sentences, decoder).mask_rate == 0.30


def test_a_decoder_that_ignores_h_shows_no_gain(make_model):
    class Blind(AuxiliaryDecoder):
        def forward(self, sentence_embedding, *args, **kwargs):
            return super().forward(torch.zeros_like(sentence_embedding), *args, **kwargs)

    model = make_model()
    built = AuxiliaryDecoder.from_encoder(model, k=2, n=1, fusion_init="fresh")
    blind = Blind(built.config)
    blind.load_state_dict(built.state_dict())
    scores = ConditionalMLMEvaluator(random_sentences(24), blind, batch_size=8)(model)
    assert scores["information_gain"] == 0.0
    assert scores["accuracy_gap"] == 0.0


def test_follows_the_losses_live_decoder(make_model):
    model = make_model()
    loss = losses.InfoCSELoss(model, k=2)
    evaluator = ConditionalMLMEvaluator(random_sentences(16), loss, batch_size=8)
    before = evaluator(model)
    with torch.no_grad():
        loss.decoder.head.decoder.bias.add_(torch.randn_like(loss.decoder.head.decoder.bias))
    assert evaluator(model)["loss"] != before["loss"]


def test_stage1_loss_is_scored_with_its_current_lower_layers(make_model):
    model = make_model()
    loss = losses.AuxiliaryPretrainingLoss(model, k=2)
    with torch.no_grad():
        for p in model[0].auto_model.encoder.layer[0].parameters():
            p.add_(0.1)
    evaluator = ConditionalMLMEvaluator(random_sentences(16), loss, mask_rate=0.3, batch_size=8)
    expected = _expected(model, loss.untied_decoder(), random_sentences(16), 0.3, 0, 8)
    assert evaluator(model)["loss"] == pytest.approx(expected["loss"], rel=1e-6)


def _one_word_sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join([rng.choice(WORDS[:40])] * 6) for _ in range(n)]


def test_a_probe_trained_to_read_h_gains_information(make_model):
    """Sentences of one repeated word, 90% masked: h (mean pooling of the unmasked sentence) names the word."""
    model = make_model(pooling="mean")
    decoder, curve = train_probe_decoder(
        model, _one_word_sentences(2000, 1), k=1, n=1, mask_rate=0.9, steps=80, batch_size=32, learning_rate=1e-2,
        show_progress_bar=False,
    )
    assert len(curve) == 80 and curve[-1]["loss"] < curve[0]["loss"]
    assert all(p.requires_grad for p in model.parameters())  # the model is left as it was
    scores = ConditionalMLMEvaluator(_one_word_sentences(64, 9), decoder, mask_rate=0.9, batch_size=16)(model)
    assert scores["information_gain"] > 1.0
    assert scores["accuracy_gap"] > 0.2


def test_runs_as_the_trainers_evaluator(make_model, tmp_path):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    model = make_model()
    loss = losses.InfoCSELoss(model, k=2)
    evaluator = ConditionalMLMEvaluator(random_sentences(16), loss, batch_size=8, name="aux")
    dataset = Dataset.from_dict({"text": random_sentences(32)})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8, eval_strategy="steps", eval_steps=1,
        report_to="none", save_strategy="no", disable_tqdm=True, use_cpu=True,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss, evaluator=evaluator)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "eval_aux_information_gain" in entry]
    assert len(logged) == 2
    assert all(0 <= entry["eval_aux_accuracy"] <= 1 for entry in logged)


def test_writes_a_csv_row_per_call(make_model, tmp_path):
    model = make_model()
    decoder = AuxiliaryDecoder.from_encoder(model, k=2, n=1)
    evaluator = ConditionalMLMEvaluator(random_sentences(10), decoder, batch_size=4, name="probe")
    evaluator(model, output_path=str(tmp_path), epoch=1, steps=5)
    evaluator(model, output_path=str(tmp_path), epoch=1, steps=10)
    with (tmp_path / "conditional_mlm_evaluation_probe_results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["steps"] for r in rows] == ["5", "10"]
    assert float(rows[0]["information_gain"]) == pytest.approx(float(rows[1]["information_gain"]))


def test_a_lone_last_sentence_joins_the_previous_batch():
    assert _batch_bounds(9, 4) == [(0, 4), (4, 9)]
    assert _batch_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert _batch_bounds(3, 8) == [(0, 3)]


@pytest.mark.parametrize(
    ("sentences", "kwargs", "error", "match"),
    [
        (["only one"], {}, ValueError, "at least 2"),
        (["fine", "  "], {}, ValueError, "non-empty"),
        (["a b", "c d"], {"batch_size": 1}, ValueError, "batch_size"),
    ],
)
def test_bad_arguments_are_clear_errors(make_model, sentences, kwargs, error, match):
    decoder = AuxiliaryDecoder.from_encoder(make_model(), k=2, n=1)
    with pytest.raises(error, match=match):
        ConditionalMLMEvaluator(sentences, decoder, **kwargs)


def test_a_decoder_of_the_wrong_kind_is_a_type_error():
    with pytest.raises(TypeError, match="AuxiliaryDecoder"):
        ConditionalMLMEvaluator(["a b", "c d"], object())
