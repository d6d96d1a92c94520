"""Every sub-command end to end on tiny models and tiny local files (offline)."""

import json
import random
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from st_infocse.cli import main
from st_infocse.evaluation.data import SENTEVAL_STS_SUBSETS

from .conftest import WORDS, random_sentences

FAST = ["--max_steps", "2", "--per_device_train_batch_size", "8", "--logging_steps", "1", "--use_cpu", "true"]


def _pairs(rng: random.Random, n: int) -> list[tuple[str, str, float]]:
    def sentence() -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(3, 8)))

    return [(sentence(), sentence(), round(rng.uniform(0, 5), 1)) for _ in range(n)]


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


@pytest.fixture
def workspace(tmp_path, tiny_bert_dir) -> dict[str, Path]:
    rng = random.Random(0)
    sentences = tmp_path / "sentences.txt"
    _write(sentences, random_sentences(40) + [""])
    docs = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "sentences": random_sentences(5, seed=i)} for i in range(12)]
    rows.append({"id": "short", "sentences": ["only one sentence here"]})
    _write(docs, [json.dumps(r) for r in rows])
    senteval = tmp_path / "downstream"
    for folder, subsets in SENTEVAL_STS_SUBSETS.values():
        for subset in subsets:
            pairs = _pairs(rng, 4)
            _write(senteval / "STS" / folder / f"STS.input.{subset}.txt", [f"{a}\t{b}" for a, b, _ in pairs])
            _write(senteval / "STS" / folder / f"STS.gs.{subset}.txt", [str(g) for _, _, g in pairs])
    for split in ("train", "dev", "test"):
        lines = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g}\t{a}\t{b}" for i, (a, b, g) in enumerate(_pairs(rng, 12))
        ]
        _write(senteval / "STS" / "STSBenchmark" / f"sts-{split}.csv", lines)
    sick = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
    sick += [f"{i}\t{a}\t{b}\t{g}\tNEUTRAL" for i, (a, b, g) in enumerate(_pairs(rng, 10), start=1)]
    _write(senteval / "SICK" / "SICK_test_annotated.txt", sick)
    beir = tmp_path / "beir" / "scifact"
    corpus = {f"c{i}": s for i, s in enumerate(random_sentences(20, seed=5))}
    _write(beir / "corpus.jsonl", [json.dumps({"_id": k, "title": "", "text": v}) for k, v in corpus.items()])
    _write(beir / "queries.jsonl", [json.dumps({"_id": f"q{i}", "text": corpus[f"c{i}"]}) for i in range(5)])
    _write(beir / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore", *(f"q{i}\tc{i}\t1" for i in range(5))])
    return {
        "model": tiny_bert_dir,
        "sentences": sentences,
        "docs": docs,
        "senteval": senteval,
        "beir": beir.parent,
        "root": tmp_path,
    }


def test_pretrain_aux_then_train_infocse_with_dev_selection(workspace, capsys):
    root = workspace["root"]
    code = main(
        [
            "pretrain-aux",
            "--model",
            str(workspace["model"]),
            "--train_data",
            str(workspace["sentences"]),
            "--output_dir",
            str(root / "stage1"),
            *FAST,
        ]
    )
    assert code == 0
    assert (root / "stage1" / "model" / "modules.json").is_file()
    assert (root / "stage1" / "decoder" / "auxiliary_decoder.safetensors").is_file()
    assert "Stage-1 auxiliary pre-training done" in capsys.readouterr().out

    code = main(
        [
            "train",
            "--objective",
            "infocse",
            "--model",
            str(root / "stage1" / "model"),
            "--decoder",
            str(root / "stage1" / "decoder"),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            str(workspace["senteval"]),
            "--eval_steps",
            "1",
            "--save_steps",
            "1",
            "--output_dir",
            str(root / "out"),
            "--lambda",
            "0.1",
            *FAST,
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "best STS-B dev" in out
    card = (root / "out" / "README.md").read_text()
    assert "InfoCSELoss" in card and '"lambda_": 0.1' in card and "wu2022infocse" in card
    assert SentenceTransformer(str(root / "out"), device="cpu").encode(["a cat"]).shape == (1, 32)


@pytest.mark.parametrize("objective", ["simcse", "cmlm-cse", "informin", "cmlm"])
def test_train_each_objective(workspace, objective, capsys):
    out = workspace["root"] / objective
    code = main(
        [
            "train",
            "--objective",
            objective,
            "--model",
            str(workspace["model"]),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            "none",
            "--output_dir",
            str(out),
            *FAST,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "modules.json").is_file()


def test_train_from_a_config_file(workspace, capsys):
    config = workspace["root"] / "config.json"
    config.write_text(
        json.dumps(
            {
                "objective": "simcse",
                "model": str(workspace["model"]),
                "train_data": str(workspace["sentences"]),
                "stsb_dev": "none",
                "max_steps": 1,
                "per_device_train_batch_size": 8,
                "use_cpu": True,
            }
        )
    )
    out = workspace["root"] / "from-config"
    assert main(["train", "--config", str(config), "--output_dir", str(out)]) == 0
    assert "steps      1" in capsys.readouterr().out


def test_train_idc_and_mine(workspace, capsys):
    out = workspace["root"] / "idc"
    code = main(
        [
            "train",
            "--objective",
            "idc",
            "--model",
            str(workspace["model"]),
            "--docs",
            str(workspace["docs"]),
            "--rounds",
            "1",
            "--stsb_dev",
            "none",
            "--output_dir",
            str(out),
            *FAST,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "modules.json").is_file()

    pairs = workspace["root"] / "pairs"
    code = main(
        ["mine", "--model", str(workspace["model"]), "--docs", str(workspace["docs"]), "--output_dir", str(pairs)]
    )
    assert code == 0
    from datasets import load_from_disk

    mined = load_from_disk(str(pairs / "pairs"))
    assert {"anchor", "positive", "doc_id", "cluster_id"} <= set(mined.column_names) and len(mined) > 0
    report = json.loads((pairs / "report.json").read_text())
    assert "short" not in set(mined["doc_id"])
    assert report  # the skipped one-sentence document is counted in the report
    assert "Mining done" in capsys.readouterr().out


def test_evaluate_sts_and_beir_offline(workspace, capsys):
    out = workspace["root"] / "eval"
    code = main(
        [
            "evaluate",
            "--model",
            str(workspace["model"]),
            "--sts",
            str(workspace["senteval"]),
            "--beir",
            "scifact",
            "--beir_source",
            str(workspace["beir"]),
            "--output_dir",
            str(out),
            "--plots",
            "false",
        ]
    )
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "evaluation.json").read_text())
    assert "STS" in results and "BEIR" in results
    printed = capsys.readouterr().out
    assert "STS12" in printed and "SICK-R" in printed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--objective", "diffcse", "--stsb_dev", "none"], "unknown objective"),
        (["train", "--model", "./missing-model", "--stsb_dev", "none"], "model not found"),
        (["train", "--train_data", "missing.txt", "--stsb_dev", "none"], "not found"),
        (["evaluate", "--sts", "./no-such-folder"], "not found"),
        (["evaluate"], "nothing to evaluate"),
        (["mine"], "--docs is required"),
        (["frobnicate"], "unknown command"),
    ],
)
def test_clear_errors_exit_with_code_2(workspace, argv, message, capsys, monkeypatch):
    monkeypatch.chdir(workspace["root"])
    if argv[0] == "train" and "--model" not in argv:
        argv = [*argv, "--model", str(workspace["model"])]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_incompatible_model_exits_with_code_2(workspace, tiny_bert_nomask_dir, capsys):
    code = main(
        [
            "train",
            "--objective",
            "infocse",
            "--model",
            str(tiny_bert_nomask_dir),
            "--train_data",
            str(workspace["sentences"]),
            "--stsb_dev",
            "none",
            "--output_dir",
            str(workspace["root"] / "x"),
            *FAST,
        ]
    )
    assert code == 2
    assert "no mask token" in capsys.readouterr().err


def test_unknown_flag_exits_with_code_2(capsys):
    assert main(["train", "--no_such_flag", "1"]) == 2
    assert "--no_such_flag" in capsys.readouterr().err


def test_resume_after_interruption_matches_uninterrupted_run(workspace):
    import shutil

    import torch

    root = workspace["root"]
    common = [
        "train",
        "--objective",
        "infocse",
        "--model",
        str(workspace["model"]),
        "--train_data",
        str(workspace["sentences"]),
        "--stsb_dev",
        "none",
        "--lambda",
        "0.1",
        "--max_steps",
        "4",
        "--save_steps",
        "2",
        "--per_device_train_batch_size",
        "8",
        "--use_cpu",
        "true",
        "--save_total_limit",
        "5",
    ]
    assert main([*common, "--output_dir", str(root / "full")]) == 0
    # A run killed after writing checkpoint-2 leaves exactly that folder; resuming continues from it.
    shutil.copytree(root / "full" / "checkpoint-2", root / "killed" / "checkpoint-2")
    assert main([*common, "--output_dir", str(root / "killed"), "--resume_from_checkpoint", "true"]) == 0
    full = SentenceTransformer(str(root / "full"), device="cpu").state_dict()
    resumed = SentenceTransformer(str(root / "killed"), device="cpu").state_dict()
    for key, value in full.items():
        assert torch.allclose(value, resumed[key], atol=1e-6), key
    from safetensors.torch import load_file

    aux_full = load_file(str(root / "full" / "checkpoint-4" / "auxiliary_state.safetensors"))
    aux_resumed = load_file(str(root / "killed" / "checkpoint-4" / "auxiliary_state.safetensors"))
    assert aux_full.keys() == aux_resumed.keys()
    for key, value in aux_full.items():
        assert torch.allclose(value, aux_resumed[key], atol=1e-6), key


@pytest.mark.parametrize(
    ("objective", "projection", "expected"),
    [
        ("simcse", None, "mlp"),
        ("infocse", None, "bn-mlp"),
        ("cmlm-cse", None, "mlp"),
        ("informin", None, "mlp"),
        ("infocse", "mlp", "mlp"),
        ("simcse", "none", None),
    ],
)
def test_each_objective_gets_its_papers_head_unless_told(make_model, objective, projection, expected):
    from st_infocse.cli import LossArguments, build_loss

    loss = build_loss(make_model(), LossArguments(objective=objective, projection=projection))
    contrastive = getattr(loss, "contrastive", loss)
    assert contrastive.projection_kind == expected
    if objective in ("infocse", "cmlm-cse"):
        assert loss.decoder.config.fusion_init == "fresh"
