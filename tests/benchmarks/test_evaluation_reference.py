"""``benchmarks/evaluation_reference.py``'s cross-check: the package's retrieval metrics equal mteb.evaluate's on the
same local data, and mteb's seeding leaves the caller's random states as found."""

from __future__ import annotations

import importlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from st_infocse.evaluation import beir_task_info, evaluate_retrieval, load_beir_folder

from ..conftest import random_sentences

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def reference():
    pytest.importorskip("mteb")
    return importlib.import_module("benchmarks.evaluation_reference")


def _toy(folder: Path, corpus: dict[str, str], queries: dict[str, str], qrels: list[tuple[str, str, int]]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                                 for k, v in corpus.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n"
                                                                                       for q, d, s in qrels))
    return folder


def test_the_package_scores_as_mteb_evaluate_does(reference, make_model, tmp_path):
    texts = random_sentences(20, seed=1)
    corpus = {f"d{i}": text for i, text in enumerate(texts)}
    queries = {f"q{i}": " ".join(texts[i].split()[:3]) for i in range(0, 20, 3)}
    qrels = [(q, f"d{int(q[1:])}", 1) for q in queries] + [("q0", "d5", 2)]
    data = load_beir_folder(_toy(tmp_path / "toy", corpus, queries, qrels))
    model = make_model()
    ours = evaluate_retrieval(model, data, k_values=(1, 3, 10))
    theirs = reference.evaluate_with_mteb(model, data, (1, 3, 10), beir_task_info(data.name).ignore_identical_ids,
                                          64, False)
    assert ours.metrics.keys() == theirs.keys()
    for key, value in ours.metrics.items():
        assert theirs[key] == pytest.approx(value, abs=2e-5), key


def test_mteb_leaves_the_global_random_states_as_found(reference, make_model, tmp_path):
    """mteb seeds Python's, NumPy's and torch's global generators whenever it builds a task or an evaluator."""
    data = load_beir_folder(_toy(tmp_path / "toy", {"d1": "the cat sat", "d2": "a dog ran", "d3": "stocks fell"},
                                 {"q1": "cat"}, [("q1", "d1", 1)]))
    model = make_model()
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    states = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state()
    reference.evaluate_with_mteb(model, data, (1, 3), False, 64, False)
    assert random.getstate() == states[0]
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert torch.equal(torch.get_rng_state(), states[2])
