"""Document-aware batches: on their own and inside SentenceTransformerTrainer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from st_infocse.mining import DocumentAwareBatchSampler


def _dataset(sizes: list[int]) -> Dataset:
    ids = [f"doc{d}" for d, n in enumerate(sizes) for _ in range(n)]
    return Dataset.from_dict({"anchor": [f"a{i}" for i in range(len(ids))], "doc_id": ids})


@pytest.mark.parametrize("drop_last", [False, True])
def test_no_document_twice_in_a_batch(drop_last):
    rng = np.random.default_rng(0)
    for trial in range(60):
        sizes = rng.integers(1, 12, size=int(rng.integers(1, 25))).tolist()
        batch_size = int(rng.integers(1, 10))
        ds = _dataset(sizes)
        doc_ids = ds["doc_id"][:]
        sampler = DocumentAwareBatchSampler(ds, batch_size, drop_last, seed=trial)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        flat = [i for b in batches for i in b]
        assert len(flat) == len(set(flat))
        for batch in batches:
            docs = [doc_ids[i] for i in batch]
            assert len(docs) == len(set(docs))
            assert len(batch) == batch_size if drop_last else 1 <= len(batch) <= batch_size
        if not drop_last:
            # Every row once, in as few batches as the constraint allows.
            assert sorted(flat) == list(range(len(ds)))
            assert len(batches) == max(math.ceil(len(ds) / batch_size), max(sizes))


def test_drop_last_uses_all_rows_that_fit():
    # 3 documents x 4 rows, batch 3: 4 full batches, one row of each document per batch.
    sampler = DocumentAwareBatchSampler(_dataset([4, 4, 4]), batch_size=3, drop_last=True)
    assert len(sampler) == 4 and sum(len(b) for b in sampler) == 12
    # One document dominates: it can give at most one row per batch, so only 2 full batches of 2.
    sampler = DocumentAwareBatchSampler(_dataset([10, 1, 1]), batch_size=2, drop_last=True)
    assert len(sampler) == 2 and all(len(b) == 2 for b in sampler)


def test_seeded_and_reshuffled_per_epoch():
    ds = _dataset([3, 5, 2, 4, 6, 1, 3])
    a, b = DocumentAwareBatchSampler(ds, 4, False, seed=3), DocumentAwareBatchSampler(ds, 4, False, seed=3)
    assert list(a) == list(b)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first


def test_needs_document_ids():
    ds = Dataset.from_dict({"anchor": ["a", "b"]})
    with pytest.raises(ValueError, match="no 'doc_id' column"):
        DocumentAwareBatchSampler(ds, 2, False)
    factory = DocumentAwareBatchSampler.for_pairs(["x", "y", "x"])
    assert repr(factory) == "DocumentAwareBatchSampler.for_pairs(<3 rows, 2 documents>)"  # short in printed arguments
    with pytest.raises(ValueError, match="3 document ids for a dataset of 2 rows"):
        factory(ds, batch_size=2, drop_last=False)


def test_trainer_batches_never_mix_a_document(make_model, tmp_path):
    model = make_model()
    words = "cat dog bird fish horse cow sheep mouse city house tree river road car".split()
    # 6 documents with 4 pairs each; every anchor is a distinct pair of words, so it can be decoded back.
    anchors, positives, doc_ids = [], [], []
    for d in range(6):
        for p in range(4):
            anchors.append(f"{words[d]} {words[6 + p]}")
            positives.append(f"the {words[d]} {words[6 + p]}")
            doc_ids.append(str(d))
    pairs = Dataset.from_dict({"anchor": anchors, "positive": positives, "doc_id": doc_ids})
    doc_of = dict(zip(anchors, doc_ids, strict=True))
    seen: list[list[str]] = []

    class RecordingLoss(MultipleNegativesRankingLoss):
        def forward(self, sentence_features, labels):
            texts = self.model.tokenizer.batch_decode(sentence_features[0]["input_ids"], skip_special_tokens=True)
            seen.append([doc_of[t] for t in texts])
            return super().forward(sentence_features, labels)

    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=6,
        num_train_epochs=1,
        batch_sampler=DocumentAwareBatchSampler.for_pairs(pairs),
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        dataloader_pin_memory=False,  # CPU only: pinned memory would warn at every dataloader
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=pairs.select_columns(["anchor", "positive"]),
        loss=RecordingLoss(model),
    )
    trainer.train()
    assert len(seen) == 4  # 24 pairs / batch 6; the largest document (4 pairs) also needs exactly 4
    assert all(len(batch) == 6 and len(set(batch)) == 6 for batch in seen)
