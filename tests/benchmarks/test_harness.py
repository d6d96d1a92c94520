"""The benchmarks' shared harness: the statistics, the README block, the model paths, and the two reports built on it
still reporting their committed results exactly."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def harness():
    return importlib.import_module("benchmarks.harness")


def test_statistics(harness):
    assert harness.mean_std([1.0]) == "1.00" and harness.mean_std([1.0, 3.0]) == "2.00 ± 1.41"
    # mean 62, sd 1, n 3 against 64: t = -2 / (1 / sqrt 3) = -3.464
    t, p = harness.against_fixed([62.0, 63.0, 61.0], 64.0)
    assert t == pytest.approx(-3.4641, abs=1e-4) and p == pytest.approx(0.0742, abs=1e-4)
    assert harness.against_fixed([62.0], 64.0) is None and harness.against_fixed([1.0, 1.0], 2.0) is None
    t, p = harness.welch([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])  # t = -2 / sqrt(1/3 + 4/3)
    assert t == pytest.approx(-1.5492, abs=1e-4) and p == pytest.approx(0.2209, abs=1e-4)  # Welch df 2.94
    assert harness.at([{"k": 1}, {"j": 5}, {"k": 2}], "k", -1) == 2 and harness.at([], "k", 0) is None


def test_update_block_replaces_only_between_the_markers(harness, tmp_path):
    with_markers, without = tmp_path / "a.md", tmp_path / "b.md"
    with_markers.write_text("head\n<!-- x:start -->\nold\n<!-- x:end -->\ntail\n")
    without.write_text("nothing\n")
    assert harness.update_block("new\n", "x", (with_markers, without, tmp_path / "missing.md")) == [with_markers]
    assert with_markers.read_text() == "head\n<!-- x:start -->\nnew\n<!-- x:end -->\ntail\n"
    assert without.read_text() == "nothing\n"


def _committed_report(module, reporter, stem, title, tmp_path, monkeypatch, *extra):
    payload = json.loads((REPO / "benchmarks" / "results" / f"{stem}.json").read_text())
    done = tmp_path / "work" / "done"
    done.mkdir(parents=True)
    for job, data in payload["jobs"].items():
        (done / f"{job}.json").write_text(json.dumps(data))
    monkeypatch.setattr(reporter, "RESULTS", tmp_path / "results")
    config = payload["config"] | {"work_dir": tmp_path / "work"}
    config |= {key: Path(config[key]) for key in ("sentences", "senteval")}
    markdown = reporter.report(module.Config(**config), payload["command"], *extra)
    return (REPO / "benchmarks" / "results" / f"{stem}.md").read_text() == f"# {title}\n\n" + markdown


def test_long_budget_and_aux_mechanism_report_their_committed_results_unchanged(harness, tmp_path, monkeypatch):
    long_budget = importlib.import_module("benchmarks.long_budget")
    aux_mechanism = importlib.import_module("benchmarks.aux_mechanism")
    assert _committed_report(long_budget, importlib.import_module("benchmarks.long_budget_report"), "long_budget", "SimCSE vs InfoCSE, longer budget", tmp_path / "lb",
                             monkeypatch)
    assert _committed_report(aux_mechanism, importlib.import_module("benchmarks.aux_mechanism_report"), "aux_mechanism", "When does the auxiliary MLM matter?", tmp_path / "am",
                             monkeypatch, "aux_mechanism")
    assert (tmp_path / "lb" / "results" / "long_budget_curves.png").stat().st_size > 0


def test_a_result_names_the_commit_it_ran_at(harness, monkeypatch):
    monkeypatch.setenv("BENCH_COMMIT", "abc1234")
    assert harness.commit() == "abc1234" and harness.machine()["commit"] == "abc1234"
    monkeypatch.delenv("BENCH_COMMIT")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert head.startswith(harness.commit() or "no git")
    jobs = {"b-s0": {"commit": "1111111"}, "a-s0": {"machine": {"commit": "2222222aaaaaaaa"}}, "c-s0": {}}
    assert harness.commits_line(jobs) == (
        "Commits: 2222222aaa: a-s0; 1111111: b-s0; 1 job(s) from before the bench recorded its commit (the git "
        "history of this file names the commit that added them)."
    )
    assert harness.provenance({"command": "python x.py", "commit": "abc"}) == "`python x.py` at commit abc"
    assert harness.provenance({"command": "c", "commit": "d", "commit_note": "from git"}) == "`c` at commit d (from git)"


def test_model_paths_come_from_an_argument_or_the_environment_and_a_missing_one_names_both(harness, tmp_path,
                                                                                          monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    monkeypatch.delenv(harness.MPNET_ENV, raising=False)
    with pytest.raises(SystemExit, match="--mpnet DIR or set ST_INFOCSE_MPNET"):
        harness.mpnet_path()
    assert harness.mpnet_path(folder) == folder
    monkeypatch.setenv(harness.MPNET_ENV, str(folder))
    assert harness.mpnet_path() == folder
    monkeypatch.setenv(harness.MINILM_ENV, str(tmp_path / "missing"))
    with pytest.raises(SystemExit, match="--model DIR, set ST_INFOCSE_MINILM"):
        harness.minilm_path()
    assert harness.minilm_path(str(folder)) == str(folder)  # the argument first
