"""Helpers for the mining tests: a lookup "model" with hand-built embeddings, small topic documents."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
import torch

# Words of the tiny test tokenizer's vocabulary, grouped so that documents have topics.
TOPICS = {
    "animals": "cat dog bird fish horse cow sheep mouse sat ran flew swam ate".split(),
    "places": "city house tree river road car north south east west built moved".split(),
    "people": "man woman child boy girl people king queen army party state law court".split(),
    "culture": "book song film game team school church wrote sang played won lost".split(),
}


def topic_documents(n_docs: int, seed: int = 0, min_sentences: int = 4, max_sentences: int = 8) -> list[list[str]]:
    """Documents whose sentences each come from one of two topics, so sentences do have neighbours."""
    rng = random.Random(seed)
    names = sorted(TOPICS)
    docs = []
    for _ in range(n_docs):
        topics = rng.sample(names, 2)
        n = rng.randint(min_sentences, max_sentences)
        sentences = [" ".join(["the"] + rng.choices(TOPICS[topics[i % 2]], k=rng.randint(4, 9))) for i in range(n)]
        docs.append(list(dict.fromkeys(sentences)))
    return docs


class LookupEncoder:
    """Stands in for a SentenceTransformer: returns a fixed vector per text and records each call."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = {text: np.asarray(vector, dtype=np.float32) for text, vector in table.items()}
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], **kwargs) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, 2), dtype=np.float32)


class ScriptedEvaluator:
    """Returns scores from a script and keeps a copy of the weights it was shown each time."""

    greater_is_better = True

    def __init__(self, scores: list[float]) -> None:
        self.scores = list(scores)
        self.seen: list[dict[str, torch.Tensor]] = []

    def __call__(self, model) -> float:
        self.seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return self.scores[len(self.seen) - 1]


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture
def lookup_encoder() -> Callable[[dict[str, list[float]]], LookupEncoder]:
    return LookupEncoder


@pytest.fixture
def scripted_evaluator() -> type[ScriptedEvaluator]:
    return ScriptedEvaluator


@pytest.fixture(name="same_weights")
def same_weights_fixture() -> Callable[[dict, dict], bool]:
    return same_weights


@pytest.fixture
def topic_docs() -> list[list[str]]:
    return topic_documents(24)


@pytest.fixture
def small_training_args() -> dict:
    """A handful of CPU steps, batch 8."""
    return {"per_device_train_batch_size": 8, "max_steps": 2, "learning_rate": 1e-3, "disable_tqdm": True}
