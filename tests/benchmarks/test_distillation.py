"""The distillation benchmark on a tiny random model and a BEIR folder made here: its jobs run on the shared queue,
a repeated command resumes from the store, and the record the report reads is written by the run."""

from __future__ import annotations

import argparse
import importlib
import json
import random
from pathlib import Path

import pytest

from ..conftest import random_sentences


@pytest.fixture(scope="module")
def distillation():
    return importlib.import_module("benchmarks.distillation")


def _beir(folder: Path) -> Path:
    sentences = random_sentences(120, seed=3)
    (folder / "qrels").mkdir(parents=True)
    docs = {f"d{i}": ". ".join(s.capitalize() for s in sentences[3 * i:3 * i + 3]) + "." for i in range(40)}
    with (folder / "corpus.jsonl").open("w") as out:
        for key, text in docs.items():
            out.write(json.dumps({"_id": key, "title": f"Title {key}", "text": text}) + "\n")
    rng = random.Random(0)
    queries = {f"q{i}": sentences[rng.randrange(120)] for i in range(8)}
    with (folder / "queries.jsonl").open("w") as out:
        for key, text in queries.items():
            out.write(json.dumps({"_id": key, "text": text}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                               + "".join(f"q{i}\td{5 * i}\t1\n" for i in range(8)))
    return folder


def test_the_rows_run_on_the_queue_and_the_run_writes_the_record_its_report_reads(distillation, tmp_path,
                                                                                   tiny_bert_dir, monkeypatch):
    out = tmp_path / "results" / "distillation.json"
    args = argparse.Namespace(model=str(tiny_bert_dir), beir=str(_beir(tmp_path / "beir")), out=str(out),
                              rows=["held_out-kl"], seed=0, batch_size=16, train_batch=4, work=str(tmp_path / "work"),
                              tiny=True, report=False)
    distillation.measure(args)
    record = json.loads(out.read_text())
    assert list(record["rows"]) == ["shipped", "BM25", "hybrid", "held_out-kl"]
    assert record["rows"]["held_out-kl"]["settings"]["steps"] == 2 and set(record["rows"]["held_out-kl"]["per_query"]) \
        == set(record["rows"]["shipped"]["per_query"])
    assert "job" not in record["rows"]["held_out-kl"] and record["documents"] == 40
    table = distillation.report(out)
    line = next(row for row in table.splitlines() if row.startswith("| held_out-kl"))
    assert line.startswith("| held_out-kl (chosen on the selection half: the claim) |")  # the only trained row
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    raw_p = cells[4].rsplit(", ", 1)[1].rstrip(")")  # one row judged: Holm leaves its p as it is
    assert cells[5] == raw_p and cells[6] in ("a gain", "within noise", "a loss")
    assert "Holm's step-down rule" in table and "| BM25 |" in table  # the references: not in the family

    ran = []
    monkeypatch.setattr(distillation, "run_row", lambda name, *rest: ran.append(name) or {})
    distillation.measure(args)  # the same settings: every job is in the store already
    assert ran == [] and json.loads(out.read_text())["rows"]["held_out-kl"] == record["rows"]["held_out-kl"]
    distillation.measure(argparse.Namespace(**vars(args) | {"seed": 1, "rows": []}))  # other settings: a new store
    assert len(list((tmp_path / "work" / "jobs").iterdir())) == 2
