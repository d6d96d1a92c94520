"""Helpers for the evaluation tests: an encoder with hand-set embeddings and writers of tiny data folders.

Tests reach the helpers through the ``ev`` fixture (a namespace), which works under any pytest import mode.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from sentence_transformers.util import cos_sim

from st_infocse.evaluation.loaders import SENTEVAL_STS_SUBSETS


class StubEncoder:
    """Maps each known text to a fixed vector, so expected scores can be computed by hand.

    Records every ``encode`` call's inputs; unknown texts raise ``KeyError`` (catches text normalisation bugs).
    """

    similarity_fn_name = "cosine"
    # sentence-transformers' evaluators write their metrics into the model's card data
    model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *args, **kwargs: None)

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, default: Sequence[float] | None = None):
        self.table = {k: list(v) for k, v in (table or {}).items()}
        self.default = default
        self.calls: list[list[str]] = []

    def encode(self, sentences, batch_size=32, show_progress_bar=None, convert_to_tensor=False,
               normalize_embeddings=False, **kwargs):
        sentences = list(sentences)
        self.calls.append(sentences)
        rows = []
        for s in sentences:
            if s in self.table:
                rows.append(self.table[s])
            elif self.default is not None:
                rows.append(list(self.default))
            else:
                raise KeyError(s)
        out = torch.tensor(rows, dtype=torch.float32)
        if normalize_embeddings:  # as SentenceTransformer.encode normalises
            out = torch.nn.functional.normalize(out, p=2, dim=1)
        return out if convert_to_tensor else out.numpy()

    def encode_query(self, sentences, **kwargs):
        return self.encode(sentences, **kwargs)

    encode_document = encode_query

    def similarity(self, a, b):
        return cos_sim(a, b)


def unit(degrees: float) -> list[float]:
    """A 2-d unit vector at ``degrees`` (cosine between two of them = cos of the angle difference)."""
    radians = torch.deg2rad(torch.tensor(degrees, dtype=torch.float64))
    return [float(torch.cos(radians)), float(torch.sin(radians))]


def write_lines(path: Path, lines: Iterable[str], encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding=encoding)
    return path


def write_sts_year(root: Path, task: str, subsets: Mapping[str, Sequence[tuple[str, str, str]]]) -> Path:
    """SentEval ``STS/STS1x-en-test`` files; each row is (s1, s2, gold score text, "" = unscored)."""
    folder = root / "STS" / SENTEVAL_STS_SUBSETS[task][0]
    for subset, rows in subsets.items():
        write_lines(folder / f"STS.input.{subset}.txt", [f"{a}\t{b}" for a, b, _ in rows])
        write_lines(folder / f"STS.gs.{subset}.txt", [g for _, _, g in rows])
    return folder


def write_stsb(root: Path, split: str, rows: Sequence[tuple[str, str, float]]) -> Path:
    lines = [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{a}\t{b}" for i, (a, b, score) in enumerate(rows)]
    return write_lines(root / "STS" / "STSBenchmark" / f"sts-{split}.csv", lines)


def write_sick(root: Path, rows: Sequence[tuple[str, str, float]], name: str = "SICK_test_annotated.txt") -> Path:
    lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
    lines += [f"{i}\t{a}\t{b}\t{score}\tNEUTRAL" for i, (a, b, score) in enumerate(rows, start=1)]
    return write_lines(root / "SICK" / name, lines)


def write_jsonl(path: Path, rows: Iterable[Mapping]) -> Path:
    return write_lines(path, [json.dumps(r) for r in rows])


def write_beir(folder: Path, corpus: Mapping[str, str], queries: Mapping[str, str], qrels: Sequence[tuple]) -> Path:
    write_jsonl(folder / "corpus.jsonl", [{"_id": k, "title": "", "text": v} for k, v in corpus.items()])
    write_jsonl(folder / "queries.jsonl", [{"_id": k, "text": v} for k, v in queries.items()])
    write_lines(folder / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore", *("\t".join(map(str, r)) for r in qrels)])
    return folder


def random_pairs(rng: random.Random, words: Sequence[str], n: int) -> list[tuple[str, str, float]]:
    def sentence() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 8)))

    return [(sentence(), sentence(), round(rng.uniform(0, 5), 1)) for _ in range(n)]


WORDS = "the a cat dog man woman child city house river car book song game team big small old new red blue".split()


@pytest.fixture
def senteval_tree(tmp_path) -> Path:
    """A complete but tiny SentEval ``data/downstream`` folder with every STS task (random sentences)."""
    rng = random.Random(0)
    root = tmp_path / "SentEval" / "data" / "downstream"
    for task, (_, subsets) in SENTEVAL_STS_SUBSETS.items():
        write_sts_year(
            root, task, {s: [(a, b, f"{g:.1f}") for a, b, g in random_pairs(rng, WORDS, 4)] for s in subsets}
        )
    for split in ("train", "dev", "test"):
        write_stsb(root, split, random_pairs(rng, WORDS, 12))
    write_sick(root, random_pairs(rng, WORDS, 10))
    return root


@pytest.fixture
def ev() -> SimpleNamespace:
    """The helpers above, as a namespace."""
    return SimpleNamespace(
        StubEncoder=StubEncoder,
        unit=unit,
        write_lines=write_lines,
        write_sts_year=write_sts_year,
        write_stsb=write_stsb,
        write_sick=write_sick,
        write_jsonl=write_jsonl,
        write_beir=write_beir,
        random_pairs=random_pairs,
        WORDS=WORDS,
    )
