"""The quality benchmark's pieces that need no training: sweep plan, noise, and the report built from run files."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("quality_benchmark", REPO / "benchmarks" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_sweep_plan_varies_one_knob_from_the_best(quality):
    best = quality.SWEEP_STAGE_A[3]
    assert best.lambda_ == 0.1 and best.aux_lr == quality.SWEEP_AUX_LR
    variants = quality.stage_b(best)
    changed = [{k for k, v in asdict(v).items() if v != asdict(best)[k]} for v in variants]
    assert changed == [{"stage1"}, {"k"}, {"fusion_init"}, {"mask_rate"}, {"detach"}]
    assert len({v.key() for v in [*quality.SWEEP_STAGE_A, *variants]}) == 10  # cache keys never collide
    assert quality.PAPER_DEFAULT.label() == "lambda=1e-05, aux_lr=lr"


def test_deletion_noise_keeps_word_order_and_never_empties(quality):
    rng = random.Random(0)
    text = " ".join(f"w{i}" for i in range(200))
    damaged = quality.delete_words(text, rng).split()
    assert 50 < len(damaged) < 110  # ratio 0.6 deleted
    assert damaged == sorted(damaged, key=lambda w: int(w[1:]))
    assert quality.delete_words("single", random.Random(1)) == "single"


def _run(quality, name, part, seed, sts_avg, dev, scifact, history=()):
    sts = {c: sts_avg for c in quality.STS_COLUMNS} if sts_avg is not None else {}
    return quality.RunResult(name, part, seed, f"desc {name}", 10.0, 40, sts, sts_avg, dev, scifact, 5.0,
                             list(history))


def test_report_builds_table_json_plots_and_readme_block(quality, tmp_path, monkeypatch):
    results = tmp_path / "results"
    readme = tmp_path / "benchmarks" / "README.md"
    readme.parent.mkdir()
    readme.write_text("intro\n<!-- quality-table -->\nold\n<!-- /quality-table -->\noutro\n")
    monkeypatch.setattr(quality, "RESULTS", results)
    monkeypatch.setattr(quality, "REPO", tmp_path)
    cfg = quality.Config(40, 64, 32, 128, 3e-5, Path("s"), Path("d"), Path("e"), Path("b"), tmp_path / "work", 1,
                         10, 10, 40)
    bench = quality.Bench(cfg)
    history = [{"step": 5, "loss": 2.0, "cmlm_loss": 9.5, "cmlm_accuracy": 0.01},
               {"step": 10, "loss": 1.0, "cmlm_loss": 7.0, "cmlm_accuracy": 0.2}]
    for seed, avg in ((0, 75.0), (1, 77.0)):
        bench.store(_run(quality, "simcse", "table", seed, avg, 83.0, 60.0, history[:1]))
    bench.store(_run(quality, "untrained-cls", "table", 0, 73.0, 79.0, 58.0))
    bench.store(_run(quality, "lambda0.1", "sweep", 0, None, 84.5, None, history))
    bench.store(_run(quality, "simcse", "domain", 0, None, 80.0, 66.0))
    bench.store(_run(quality, "simcse", "domain", 1, None, 80.0, 67.0))
    bench.store(_run(quality, "mean-pooling", "domain", 0, None, 82.0, 64.5))
    for seed, score in ((0, 68.0), (1, 69.0)):
        bench.store(_run(quality, "infocse-tuned", "domain", seed, None, 80.0, score))
    (cfg.work_dir / "sweep_choice.json").write_text(json.dumps({"label": "lambda=0.1", "setting": {}}))

    quality.report(cfg, "python benchmarks/quality.py all")

    md = (results / "quality.md").read_text()
    assert "| desc simcse | 0,1 |" in md and "76.00 ± 1.41" in md  # mean and sample std over two seeds
    assert md.index("desc untrained-cls") < md.index("desc simcse")  # fixed row order
    assert "| desc lambda0.1 | 84.5 | 9.5 → 7.0 | 0.01 → 0.2 |" in md
    assert "Sweep choice (best STS-B dev): lambda=0.1." in md
    assert "| desc simcse | 0,1 | 66.50 ± 0.71 | +2.00 |" in md  # mean change against the model as shipped
    domain = md[md.index("SciFact adaptation"):]
    # means 68.5 vs 66.5, each std 0.71: t = 2 / sqrt(0.5 / 2 + 0.5 / 2) = 2.83
    assert "InfoCSE (sweep choice) minus SimCSE: SciFact +2.00 (Welch t = 2.83, p = 0.11, seeds 2 vs 2)." in domain
    assert "minus SimCSE" not in md[:md.index("SciFact adaptation")]  # one seed of InfoCSE in the table: no test
    assert domain.index("| desc mean-pooling | 0 | 64.50 | +0.00 |") < domain.index("| desc simcse | 0,1 | 66.50")
    payload = json.loads((results / "quality.json").read_text())
    assert [r["seed"] for r in payload["runs"]["table"]["simcse"]] == [0, 1]
    assert (results / "quality_sts_avg.png").stat().st_size > 0
    assert (results / "quality_loss_curves.png").stat().st_size > 0
    text = readme.read_text()
    assert "old" not in text and "76.00 ± 1.41" in text and text.endswith("<!-- /quality-table -->\noutro\n")
    assert bench.cached("table", "simcse", 1).sts_avg == 77.0


def test_idc_infocse_row_trains_from_the_rows_starting_point(quality, tmp_path, monkeypatch):
    """The IDC + InfoCSE row must start where its part says (mean pooling for SciFact adaptation), not at CLS."""
    from datasets import Dataset

    cfg = quality.Config(40, 64, 32, 128, 3e-5, Path("s"), Path("d"), Path("e"), Path("b"), tmp_path / "work", 1,
                         10, 10, 40)
    bench = quality.Bench(cfg)
    loaded, forwarded = [], {}
    monkeypatch.setattr(quality, "load_model", lambda pooling, max_length: loaded.append(pooling))
    pairs = Dataset.from_dict({"anchor": ["a", "b"], "positive": ["c", "d"], "doc_id": ["x", "y"]})
    monkeypatch.setattr(bench, "idc_pairs", lambda documents, tag, model: (pairs, {"pairs": 2}))
    monkeypatch.setattr(bench, "run_infocse", lambda *args, **kwargs: forwarded.update(kwargs))

    bench.idc_row("domain", "idc-infocse", 0, [], "scifact", sts=False, start="mean",
                  setting=quality.PAPER_DEFAULT)
    assert loaded == ["mean"] and forwarded["start"] == "mean"
