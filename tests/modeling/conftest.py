"""Tiny random checkpoints of each supported encoder family, built in the test session (never downloaded)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from transformers import (
    BertConfig,
    BertTokenizerFast,
    DistilBertConfig,
    ElectraConfig,
    ModernBertConfig,
    MPNetConfig,
    PretrainedConfig,
    RobertaConfig,
)

from ..conftest import WORDS

FAMILIES = ("bert", "roberta", "distilbert", "mpnet", "modernbert")
LAYERS = 4
MAX_LENGTH = 32

# RoBERTa and MPNet checkpoints put <s>, <pad>, </s>, <unk> first, so their padding id is 1 and their position ids
# start at padding_idx + 1; BERT-style vocabularies start with [PAD].
_ROBERTA_ORDER = ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]
_BERT_ORDER = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def family_vocab(family: str) -> dict[str, int]:
    special = _ROBERTA_ORDER if family in ("roberta", "mpnet") else _BERT_ORDER
    return {token: i for i, token in enumerate(special + list(WORDS))}


def family_config(family: str, vocab: dict[str, int], layers: int = LAYERS) -> PretrainedConfig:
    """Hidden 32, 2 heads. Encoder activations differ from the MLM heads' on purpose, so that a head built with
    the wrong activation gives different logits."""
    ids = {
        "vocab_size": len(vocab),
        "pad_token_id": vocab["[PAD]"],
        "bos_token_id": vocab["[CLS]"],
        "eos_token_id": vocab["[SEP]"],
    }
    shape = {"hidden_size": 32, "num_hidden_layers": layers, "num_attention_heads": 2, "intermediate_size": 64}
    # Learned absolute positions are offset by padding_idx + 1 in RoBERTa and MPNet.
    positions = MAX_LENGTH + vocab["[PAD]"] + 2
    if family == "bert":
        return BertConfig(**ids, **shape, max_position_embeddings=positions)
    if family == "electra":
        # A generator-shaped ELECTRA: embeddings (and the MLM head) narrower than the hidden size.
        return ElectraConfig(**ids, **shape, embedding_size=16, max_position_embeddings=positions)
    if family == "roberta":
        return RobertaConfig(**ids, **shape, max_position_embeddings=positions, type_vocab_size=1, hidden_act="relu")
    if family == "mpnet":
        return MPNetConfig(**ids, **shape, max_position_embeddings=positions, hidden_act="relu")
    if family == "distilbert":
        return DistilBertConfig(
            **ids,
            dim=32,
            n_layers=layers,
            n_heads=2,
            hidden_dim=64,
            max_position_embeddings=positions,
            activation="relu",
        )
    if family == "modernbert":
        # Global and local layers alternate; a window of 8 tokens is shorter than most test sentences.
        return ModernBertConfig(
            **ids,
            **shape,
            cls_token_id=vocab["[CLS]"],
            sep_token_id=vocab["[SEP]"],
            max_position_embeddings=positions,
            global_attn_every_n_layers=2,
            local_attention=8,
            classifier_activation="silu",
        )
    raise ValueError(family)


def build_family_checkpoint(path: Path, family: str, with_mlm_head: bool = True) -> Path:
    from transformers import AutoModel, AutoModelForMaskedLM

    path.mkdir(parents=True, exist_ok=True)
    vocab = family_vocab(family)
    # Only BERT-style models take segment ids; the others' tokenizers do not produce them.
    inputs = None if family in ("bert", "electra") else ["input_ids", "attention_mask"]
    tokenizer = BertTokenizerFast(vocab=vocab, **({"model_input_names": inputs} if inputs else {}))
    config = family_config(family, vocab)
    torch.manual_seed(0)
    model = (AutoModelForMaskedLM if with_mlm_head else AutoModel).from_config(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> Callable[[str], Path]:
    """``family -> path`` of a 4-layer checkpoint saved with its MLM head (built once per session)."""
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = build_family_checkpoint(tmp_path_factory.mktemp(f"tiny_{family}"), family)
        return built[family]

    return get


@pytest.fixture
def make_family_model(family_dirs) -> Callable[..., object]:
    """Factory for a CLS-pooled ``SentenceTransformer`` on the tiny checkpoint of a family."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    def factory(family: str, seed: int = 0):
        torch.manual_seed(seed)
        transformer = Transformer(str(family_dirs(family)), max_seq_length=MAX_LENGTH)
        pool = Pooling(transformer.get_embedding_dimension(), "cls")
        return SentenceTransformer(modules=[transformer, pool], device="cpu")

    return factory
