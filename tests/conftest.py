"""Shared fixtures: tiny random encoders and tokenizers built in the test session, never downloaded."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

# Tiny models gain nothing from a second thread, and on a loaded 2-core machine they wait for it.
torch.set_num_threads(1)

WORDS = (
    "the a an of to in on at by for with from and or but not is are was were be been this that these those "
    "cat dog bird fish horse cow sheep mouse man woman child boy girl people city house tree river road car "
    "train plane ship book song film game team school church war king queen army party state law court "
    "sat ran flew swam ate saw made took gave found said played won lost built wrote sang moved lived died "
    "big small old new red blue green black white long short high low early late fast slow good bad first last "
    "one two three four five many few some all most other same different north south east west"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def run_cli_listing_imports(argv: list[str], cwd: Path) -> tuple[object, set[str]]:
    """Run ``python -m st_infocse argv`` in ``cwd`` under ``-X importtime``; returns the finished process and every
    module it imported, whatever imported it."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "st_infocse", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    return result, imported


def random_sentences(n: int, seed: int = 0, min_words: int = 4, max_words: int = 12) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(min_words, max_words))) for _ in range(n)]


def _build(path: Path, layers: int, with_mlm_head: bool, mask_token: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    special = SPECIAL if mask_token else [t for t in SPECIAL if t != "[MASK]"]
    vocab = {token: i for i, token in enumerate(special + WORDS)}
    kwargs = {} if mask_token else {"mask_token": None}
    tokenizer = BertTokenizerFast(vocab=vocab, **kwargs)
    config = BertConfig(
        vocab_size=len(special) + len(WORDS),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = BertForMaskedLM(config) if with_mlm_head else BertModel(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 4-layer, hidden-32 BERT checkpoint saved with its MLM head."""
    return _build(tmp_path_factory.mktemp("tiny_bert"), layers=4, with_mlm_head=True)


@pytest.fixture(scope="session")
def tiny_bert_headless_dir(tmp_path_factory) -> Path:
    """The same shape saved as a bare ``BertModel`` (no MLM head), like all-MiniLM-L6-v2."""
    return _build(tmp_path_factory.mktemp("tiny_bert_headless"), layers=4, with_mlm_head=False)


@pytest.fixture(scope="session")
def tiny_bert_nomask_dir(tmp_path_factory) -> Path:
    """A checkpoint whose tokenizer has no mask token."""
    return _build(tmp_path_factory.mktemp("tiny_bert_nomask"), layers=2, with_mlm_head=False, mask_token=False)


@pytest.fixture
def make_model(tiny_bert_dir) -> Callable[..., object]:
    """Factory for a fresh CLS-pooled ``SentenceTransformer`` on a tiny checkpoint."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    def factory(path: Path | None = None, pooling: str = "cls", seed: int = 0):
        torch.manual_seed(seed)
        transformer = Transformer(str(path or tiny_bert_dir), max_seq_length=32)
        pool = Pooling(transformer.get_embedding_dimension(), pooling)
        return SentenceTransformer(modules=[transformer, pool], device="cpu")

    return factory


@pytest.fixture
def sentences() -> list[str]:
    return random_sentences(64)


@pytest.fixture
def run_trainer(tmp_path):
    """Train ``model`` with ``loss`` for a few steps through ``SentenceTransformerTrainer``; returns the trainer."""
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    def run(model, loss, dataset, steps: int = 3, batch_size: int = 8, callbacks=None, resume=None, **kwargs):
        defaults = dict(
            output_dir=str(tmp_path / "run"),
            max_steps=steps,
            per_device_train_batch_size=batch_size,
            learning_rate=1e-3,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            seed=0,
            disable_tqdm=True,
            use_cpu=True,
        )
        defaults.update(kwargs)
        args = SentenceTransformerTrainingArguments(**defaults)
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=dataset, loss=loss, callbacks=callbacks
        )
        trainer.train(resume_from_checkpoint=resume)
        return trainer

    return run
