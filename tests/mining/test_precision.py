"""Mining in bf16: ``mine_pairs(precision="bf16")`` encodes under ``torch.autocast``, where the device computes in
bf16 natively, and falls back to fp32 with one warning where it does not; the rounds pass it to every round's
mining, the annotator's included."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

import st_infocse.training.precision as training_precision
from st_infocse.mining import mine_pairs, train_idc_rounds
from tests.mining.conftest import LookupEncoder

TABLE = {"s0": [1.0, 0.0], "s1": [0.9, 0.1], "s2": [0.0, 1.0], "s3": [0.1, 0.9]}


class AutocastRecorder(LookupEncoder):
    """A lookup encoder that keeps, for each encode call, whether it ran under CPU autocast and in which dtype."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__(table)
        self.seen: list[tuple[bool, torch.dtype | None]] = []

    def encode(self, texts: list[str], **kwargs) -> np.ndarray:
        enabled = torch.is_autocast_enabled("cpu")
        self.seen.append((enabled, torch.get_autocast_dtype("cpu") if enabled else None))
        return super().encode(texts, **kwargs)


@pytest.fixture
def native_bf16(monkeypatch):
    """Whether this CPU has native bf16, as the package reads it: set by the test."""

    def set_to(value: bool | None) -> None:
        monkeypatch.setattr(training_precision, "cpu_has_native_bf16", lambda *a, **k: value)

    return set_to


def test_bf16_mining_encodes_under_autocast_and_says_so(native_bf16):
    native_bf16(True)
    encoder = AutocastRecorder(TABLE)
    pairs, report = mine_pairs([["s0", "s1", "s2", "s3"]], encoder, precision="bf16", show_progress_bar=False)
    assert encoder.seen == [(True, torch.bfloat16)]
    assert report.precision == "bf16" and report.to_dict()["precision"] == "bf16" and "bf16" in report.summary()
    assert set(zip(pairs["anchor"], pairs["positive"], strict=True)) == {("s0", "s1"), ("s2", "s3")}
    # the default stays fp32: no autocast around the model
    _, fp32 = mine_pairs([["s0", "s1", "s2", "s3"]], encoder, show_progress_bar=False)
    assert encoder.seen[1] == (False, None) and fp32.precision == "fp32" and "bf16" not in fp32.summary()


@pytest.mark.parametrize("native", [False, None])
def test_without_native_bf16_it_mines_in_fp32_with_one_warning(native_bf16, native, caplog):
    native_bf16(native)
    encoder = AutocastRecorder(TABLE)
    with caplog.at_level(logging.WARNING, logger="st_infocse.mining.idc"):
        _, report = mine_pairs([["s0", "s1", "s2", "s3"], ["s0", "s2"]], encoder, precision="bf16",
                               shard_sentences=2, show_progress_bar=False)
    assert report.shards == 2 and encoder.seen == [(False, None)] * 2 and report.precision == "fp32"
    warnings = [r.getMessage() for r in caplog.records if "mining precision bf16" in r.getMessage()]
    assert len(warnings) == 1 and "mining in fp32" in warnings[0]


def test_precision_values_and_the_pool_are_checked():
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, got 'fp16'"):
        mine_pairs([["s0", "s1"]], LookupEncoder(TABLE), precision="fp16")
    with pytest.raises(ValueError, match="precision='bf16' encodes in this process"):
        mine_pairs([["s0", "s1"]], LookupEncoder(TABLE), precision="bf16", pool=object())


def test_a_real_model_mines_under_bf16_with_nearly_the_fp32_embeddings(make_model, topic_docs, native_bf16):
    """A tiny BERT through sentence-transformers' encode: the bf16 activations come back as float32 NumPy rows, and
    every pair lies inside its document."""
    native_bf16(True)
    model = make_model(pooling="mean")
    rows: list[np.ndarray] = []
    real = model.encode

    def keep(texts, **kwargs):
        rows.append(real(texts, **kwargs))
        return rows[-1]

    model.encode = keep
    pairs, report = mine_pairs(topic_docs, model, precision="bf16", show_progress_bar=False)
    assert report.precision == "bf16" and report.pairs == len(pairs) > 0
    assert rows[0].dtype == np.float32 and np.isfinite(rows[0]).all()
    by_doc = {str(i): set(d) for i, d in enumerate(topic_docs)}
    assert all(a in by_doc[d] and b in by_doc[d] for d, a, b in zip(pairs["doc_id"], pairs["anchor"],
                                                                     pairs["positive"], strict=True))


def test_rounds_mine_every_round_in_the_precision_given(make_model, topic_docs, small_training_args, native_bf16):
    native_bf16(True)
    model, annotator = make_model(), make_model()
    result = train_idc_rounds(model, topic_docs[:8], MultipleNegativesRankingLoss, rounds=2, annotator=annotator,
                              mining_kwargs={"precision": "bf16"}, training_args=small_training_args)
    assert [(r.annotation, r.mining["precision"]) for r in result.rounds] == [("idc (annotator)", "bf16"),
                                                                              ("idc", "bf16")]
