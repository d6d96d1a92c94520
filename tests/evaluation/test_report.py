"""Results out: JSON, markdown, plots; and the error raised when the eval extra is missing."""

from __future__ import annotations

import json

import pytest

from st_infocse.evaluation import (
    STSB_DEV_METRIC,
    BEIRResult,
    RetrievalResult,
    STSResult,
    STSTaskResult,
    markdown_report,
    plot_beir,
    plot_sts,
    plot_training_curve,
    save_report,
    sts_markdown,
    write_json,
)
from st_infocse.evaluation._deps import require
from st_infocse.evaluation.in_domain import InDomainRetrievalResult

PNG = b"\x89PNG\r\n\x1a\n"


def _sts(model, values):
    tasks = {
        name: STSTaskResult(name, v, v, 10, "hand-made", "test", note="a note" if name == "SICK-R" else "")
        for name, v in values.items()
    }
    return STSResult(model, tasks, seconds=1.5, n_sentences=20)


def _beir():
    make = lambda n, v: RetrievalResult(n, {"ndcg@10": v, "recall@100": 2 * v}, 3, 9, "hand-made", "test", "native")  # noqa: E731
    return BEIRResult("m", {"scifact": make("scifact", 0.25), "nfcorpus": make("nfcorpus", 0.125)})


def test_json_round_trip(tmp_path):
    sts = _sts("m", {"STS12": 70.0, "SICK-R": 80.0})
    path = write_json({"sts": sts, "beir": _beir(), "nan": float("nan")}, tmp_path / "deep" / "r.json")
    data = json.loads(path.read_text())
    assert data["sts"]["average"] == 75.0
    assert data["sts"]["tasks"]["SICK-R"]["note"] == "a note"
    # the JSON keeps each result's own values and names their scale
    assert data["sts"]["scale"] == "x100"
    assert data["beir"]["scale"] == "0-1" and data["beir"]["datasets"]["scifact"]["scale"] == "0-1"
    assert data["beir"]["average_ndcg@10"] == pytest.approx(0.1875)
    assert data["beir"]["datasets"]["scifact"]["metrics"]["recall@100"] == 0.5
    assert data["nan"] is None
    assert data["environment"]["sentence-transformers"] != "not installed" and "created" in data


def test_markdown(tmp_path):
    table = sts_markdown([_sts("a", {"STS12": 70.0, "SICK-R": 80.0}), _sts("b", {"STS12": 60.0, "SICK-R": 61.0})])
    lines = table.splitlines()
    assert lines[:4] == [
        "| Model | STS12 | SICK-R | Avg. |",
        "|---|---:|---:|---:|",
        "| a | 70.00 | 80.00 | 75.00 |",
        "| b | 60.00 | 61.00 | 60.50 |",
    ]
    assert lines[-3:] == ["- SICK-R: a note", "- STS12 data: hand-made", "- SICK-R data: hand-made"]
    report = markdown_report(
        {
            "STS": _sts("a", {"STS12": 70.0}),
            "BEIR": _beir(),
            "In-domain": InDomainRetrievalResult({1: 50.0}, 2, 8, "x"),
            "n": 3,
        }
    )
    assert "## STS\n\n| Model | STS12 | Avg. |" in report
    # tables are x100 like the STS table; the note says the JSON is not
    assert "| scifact | 25.00 | 50.00 |" in report and "| average | 18.75 | 37.50 |" in report
    assert "- scores x100 (the JSON keeps beir's 0-1 values)" in report
    assert "| recall (2 queries) | 50.00 |" in report
    assert "## n\n\n```json\n3\n```" in report


def test_settings_lead_the_json_and_the_markdown(tmp_path):
    settings = {"model": "m", "max_seq_length": 128}
    written = save_report({"BEIR": _beir()}, tmp_path, plots=False, settings=settings)
    data = json.loads(written["json"].read_text())
    assert list(data)[:2] == ["settings", "BEIR"] and data["settings"] == settings
    assert written["markdown"].read_text().startswith("## Settings\n\n- model: m\n- max_seq_length: 128\n\n## BEIR")
    with pytest.raises(ValueError, match="titled 'settings'"):
        write_json({"settings": 1}, tmp_path / "x.json", settings=settings)


def test_plots_and_report_files(tmp_path):
    pytest.importorskip("matplotlib")
    sts = _sts("m", {"STS12": 70.0, "SICK-R": 80.0})
    assert (
        plot_sts([sts, _sts("n", {"STS12": 50.0, "SICK-R": 40.0})], tmp_path / "s.png", {"STS12": 72.0}).read_bytes()[
            :8
        ]
        == PNG
    )
    assert plot_beir([_beir()], tmp_path / "b.png").read_bytes()[:8] == PNG
    written = save_report({"STS table": sts, "BEIR": _beir()}, tmp_path / "out", name="run")
    assert sorted(p.name for p in written.values()) == ["run.json", "run.md", "run_beir.png", "run_sts_table.png"]


def test_beir_plot_is_x100(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from st_infocse.evaluation import report

    figures = []
    make_figure = report._figure
    monkeypatch.setattr(report, "_figure", lambda *size: figures.append(make_figure(*size)) or figures[-1])
    plot_beir([_beir()], tmp_path / "b.png")
    axes = figures[0].axes[0]
    assert axes.get_xlabel() == "ndcg@10 x100"
    assert [bar.get_width() for bar in axes.patches] == pytest.approx([25.0, 12.5])


def test_training_curve(tmp_path):
    pytest.importorskip("matplotlib")
    history = [{"loss": 1.0, "step": 1}, {STSB_DEV_METRIC: 0.5, "step": 2}, {STSB_DEV_METRIC: 0.7, "step": 4}]
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    assert plot_training_curve(tmp_path / "ckpt", tmp_path / "c.png").read_bytes()[:8] == PNG
    assert plot_training_curve(history, tmp_path / "d.png").is_file()
    with pytest.raises(ValueError, match="no 'eval_other' entries"):
        plot_training_curve(history, tmp_path / "e.png", metric="eval_other")
    with pytest.raises(FileNotFoundError, match="trainer_state.json: file not found"):
        plot_training_curve(tmp_path, tmp_path / "f.png")


def test_missing_extra_says_how_to_install():
    with pytest.raises(
        ImportError, match=r"Plots needs the optional package 'no_such_pkg'.*pip install \"st-infocse\[eval\]\""
    ):
        require("no_such_pkg.sub", "Plots")
    # an installed package with a missing part is not reported as "not installed"
    with pytest.raises(ModuleNotFoundError, match="sklearn.no_such_module"):
        require("sklearn.no_such_module", "Transfer tasks")


def test_a_file_that_is_not_a_trainer_state_is_refused_in_one_line(tmp_path):
    from st_infocse.evaluation import plot_training_curve

    (tmp_path / "a.json").write_text("[1, 2]")
    (tmp_path / "b.json").write_text('{"global_step": 3}')  # a trainer state that logged nothing
    for name, words in (("a.json", "a.json: not a trainer_state.json with a log_history"),
                        ("b.json", "no 'eval_sts-dev_spearman_cosine' entries in the training log")):
        with pytest.raises(ValueError, match=words) as raised:
            plot_training_curve(tmp_path / name, tmp_path / "curve.png")
        assert "\n" not in str(raised.value)
