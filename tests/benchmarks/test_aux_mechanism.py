"""The auxiliary-mechanism benchmark's pieces that need no training: the job plan, the gradient ratio, the report."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

from st_infocse import losses

from ..conftest import random_sentences

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    return importlib.import_module("benchmarks.aux_mechanism")


def _config(bench, tmp_path, settings):
    return bench.Config(
        steps=200, stage1_steps=10, stage1_lr=1e-4, stage1_eval_steps=5, probe_steps=150, probe_lr=5e-4,
        eval_steps=50, batch_size=64, max_length=32, eval_max_length=128, learning_rate=3e-5, seeds=[0, 1],
        mechanism_seeds=[0], weight_seeds=[0], ratio_batches=1, settings=settings, sentences=tmp_path,
        senteval=tmp_path, work_dir=tmp_path / "work", model=None, device="cpu", threads=1,
    )


def test_jobs_follow_the_given_order_and_only_need_stage1_when_asked(bench, tmp_path):
    cfg = _config(bench, tmp_path, ["weight-1", "simcse"])
    assert cfg.jobs() == ["probe", "weight-1-s0", "simcse-s0", "simcse-s1"]
    cfg = _config(bench, tmp_path, ["infocse-stage1"])
    assert cfg.jobs() == ["probe", "stage1", "infocse-stage1-s0"]


def test_gradient_ratio_is_linear_in_lambda(bench, make_model):
    texts = random_sentences(8, seed=5)
    ratios = []
    for lambda_ in (1e-3, 1e-1):
        model = make_model(seed=0)
        torch.manual_seed(1)
        loss = losses.InfoCSELoss(model, lambda_=lambda_)
        torch.manual_seed(2)
        ratios.append(bench.gradient_ratio(model, loss, texts, batch_size=8, batches=1))
    assert ratios[0]["ratio"] > 0
    assert ratios[1]["ratio"] == pytest.approx(100 * ratios[0]["ratio"], rel=1e-3)
    assert ratios[1]["contrastive_norm"] == pytest.approx(ratios[0]["contrastive_norm"], rel=1e-5)
    assert loss.cmlm.metrics.steps == 0  # the measurement leaves the logged MLM metrics alone


def _row(job, setting, seed, sts_avg, dev, gains):
    curve = [{"step": 50 * i, "eval_sts-dev_spearman_cosine": 0.8, "eval_live_information_gain": g,
              "eval_live_accuracy": 0.18, "eval_live_accuracy_gap": 0.01} for i, g in enumerate(gains)]
    return {"job": job, "setting": setting, "seed": seed, "description": setting, "steps": 200, "curve": curve,
            "log_history": [], "gradient_ratio": {"start": {"ratio": 6.5}, "end": {"ratio": 22.0}} if gains else {},
            "sts": {t: sts_avg for t in ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]},
            "sts_avg": sts_avg, "stsb_dev": dev, "device_name": "cpu"}


@pytest.fixture(scope="module")
def reporter():
    return importlib.import_module("benchmarks.aux_mechanism_report")


def test_report_compares_with_simcse_and_reads_the_curves(bench, reporter, tmp_path, monkeypatch):
    monkeypatch.setattr(reporter, "RESULTS", tmp_path / "results")
    cfg = _config(bench, tmp_path, list(bench.SETTINGS))
    done = cfg.work_dir / "done"
    done.mkdir(parents=True)
    rows = [_row("simcse-s0", "simcse", 0, 76.2, 84.5, []), _row("simcse-s1", "simcse", 1, 76.4, 84.7, []),
            _row("weight-1-s0", "weight-1", 0, 78.0, 85.1, [0.1156, 0.3, 0.5, 0.6, 0.65])]
    for row in rows:
        (done / f"{row['job']}.json").write_text(json.dumps(row))
    markdown = reporter.report(cfg, "cmd", "aux_test")
    line = next(line for line in markdown.splitlines() if line.startswith("| InfoCSE, decoder trained alone first, full gradient, aux lr 1e-4, lambda 1 |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[2:5] == ["0.1156", "0.5000", "0.6500"]  # own gain at start, middle, end
    assert cells[8:10] == ["6.50e+00", "2.20e+01"]  # gradient ratio at start and end
    assert cells[11] == "+1.70" and cells[13] == "+0.50"  # one seed against SimCSE's mean: no test
    assert (tmp_path / "results" / "aux_test.json").exists() and (tmp_path / "results" / "aux_test_gain.png").exists()


def test_restore_copies_long_budget_rows_once(bench, reporter, tmp_path):
    cfg = _config(bench, tmp_path, ["simcse"])
    first = reporter.restore(cfg, "no_such_results")
    assert first == 6  # SimCSE and InfoCSE, 3 seeds each, from the committed long_budget.json
    row = json.loads((cfg.work_dir / "done" / "simcse-s0.json").read_text())
    assert row["setting"] == "simcse" and row["source"] == "long_budget.json" and row["sts_avg"] == pytest.approx(76.4, abs=0.5)
    assert reporter.restore(cfg, "no_such_results") == 0
