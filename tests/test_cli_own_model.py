"""The user's own model through the command line: kept as given, measured start -> end, never handed back worse."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from sentence_transformers import SentenceTransformer

from st_infocse.cli import main

from .conftest import random_sentences, run_cli_listing_imports

FAST = ["--per_device_train_batch_size", "8", "--logging_steps", "1", "--use_cpu", "true"]


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def user_model(tiny_bert_dir, tmp_path_factory) -> Path:
    """A saved Sentence Transformer of the user's: mean pooling, a Dense layer, Normalize, its own 48 tokens, a
    prompt and dot-product similarity."""
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    torch.manual_seed(0)
    transformer = Transformer(str(tiny_bert_dir), max_seq_length=48)
    model = SentenceTransformer(
        modules=[transformer, Pooling(32, "mean"), Dense(32, 16), Normalize()],
        device="cpu",
        prompts={"query": "q: "},
        similarity_fn_name="dot",
    )
    path = tmp_path_factory.mktemp("user_model") / "st"
    model.save(str(path))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("own_data")
    long_text = ". ".join(random_sentences(8, seed=9)) + "."  # over 32 tokens, eight sentences
    texts = _write(root / "texts.txt", random_sentences(40, seed=1) + [long_text])
    # STS-B dev on which any sensible encoder scores high: near-duplicates 5, unrelated pairs 0.
    rows = []
    for i, sentence in enumerate(random_sentences(20, seed=3)):
        rows.append({"sentence1": sentence, "sentence2": sentence + " the", "score": 5.0})
        rows.append({"sentence1": sentence, "sentence2": random_sentences(1, seed=100 + i)[0], "score": 0.0})
    dev = _write(root / "dev.jsonl", [json.dumps(r) for r in rows])
    beir = root / "beir"
    corpus = {f"c{i}": s for i, s in enumerate(random_sentences(30, seed=5, min_words=8, max_words=14))}
    _write(beir / "corpus.jsonl", [json.dumps({"_id": k, "title": "", "text": v}) for k, v in corpus.items()])
    queries = [json.dumps({"_id": f"q{i}", "text": " ".join(corpus[f"c{i}"].split()[:5])}) for i in range(10)]
    _write(beir / "queries.jsonl", queries)
    _write(beir / "qrels" / "dev.tsv", ["query-id\tcorpus-id\tscore", *(f"q{i}\tc{i}\t1" for i in range(10))])
    return {"texts": texts, "dev": dev, "beir": beir, "root": root}


def _train(model: Path, data: dict[str, Path], out: Path, *flags: str) -> list[str]:
    return [
        "train", "--objective", "simcse", "--model", str(model), "--train_data", str(data["texts"]),
        "--stsb_dev", str(data["dev"]), "--output_dir", str(out), "--max_steps", "2", *FAST, *flags,
    ]  # fmt: skip


def _module_types(path: Path) -> list[str]:
    return [entry["type"].rsplit(".", 1)[-1] for entry in json.loads((path / "modules.json").read_text())]


def _pooling_mode(path: Path) -> str:
    folder = next(p for p in path.iterdir() if p.name.endswith("_Pooling"))
    return json.loads((folder / "config.json").read_text())["pooling_mode"]


# ------------------------------------------------------------------------------ the model kept as given


def test_a_saved_sentence_transformer_keeps_its_modules_length_prompts_and_similarity(user_model, data, tmp_path,
                                                                                      capsys):
    out = tmp_path / "run"
    assert main(_train(user_model, data, out)) == 0
    printed = capsys.readouterr().out
    assert "kept the model's modules: Transformer, Pooling(mean), Dense, Normalize" in printed
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert _pooling_mode(out) == "mean"
    saved = SentenceTransformer(str(out), device="cpu")
    assert saved.max_seq_length == 48  # its own, not the training length 32 nor the encoder's 64
    assert saved.prompts["query"] == "q: " and saved.similarity_fn_name == "dot"
    norms = saved.encode(["a cat sat on the mat"], convert_to_tensor=True).norm(dim=-1)
    assert torch.allclose(norms, torch.ones(1), atol=1e-5)  # Normalize still applies


def test_an_explicit_pooling_replaces_only_the_pooling_module(user_model, data, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(user_model, data, out, "--pooling", "cls", "--learning_rate", "1e-30",
                       "--keep_start_if_better", "false")) == 0
    printed = capsys.readouterr().out
    assert "re-pooled with cls (was Pooling(mean)); kept: Dense, Normalize" in printed
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert _pooling_mode(out) == "cls"
    given, saved = SentenceTransformer(str(user_model), device="cpu"), SentenceTransformer(str(out), device="cpu")
    assert saved.max_seq_length == 48
    # a learning rate too small to move a weight: the Dense layer's weights are the user's, carried over as they were
    assert torch.equal(given[2].linear.weight, saved[2].linear.weight)


def test_a_plain_encoder_is_pooled_with_cls(tiny_bert_dir, data, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(tiny_bert_dir, data, out, "--stsb_dev", "none")) == 0
    assert "a plain encoder (no saved Sentence Transformer modules), pooled with cls" in capsys.readouterr().out
    assert _module_types(out) == ["Transformer", "Pooling"] and _pooling_mode(out) == "cls"


def test_mine_and_evaluate_keep_the_saved_modules_too(user_model, data, tmp_path, capsys):
    docs = _write(tmp_path / "docs.jsonl", [json.dumps({"sentences": random_sentences(4, seed=i)}) for i in range(4)])
    assert main(["mine", "--model", str(user_model), "--docs", str(docs), "--output_dir", str(tmp_path / "p")]) == 0
    assert "kept the model's modules: Transformer, Pooling(mean), Dense, Normalize" in capsys.readouterr().out


# ------------------------------------------------------------------------------ start -> end, never worse


def _summary(printed: str) -> str:
    return printed[printed.index("Training done"):]


def test_the_summary_and_json_hold_start_and_end_for_every_evaluator(user_model, data, tmp_path, capsys):
    out = tmp_path / "run"
    flags = ("--eval_retrieval", str(data["beir"]), "--eval_steps", "1", "--save_steps", "1")
    assert main(_train(user_model, data, out, *flags)) == 0
    printed = capsys.readouterr().out
    assert "retrieval set" in printed and "beir-dev: 10 queries, 30 documents" in printed
    assert re.search(r"checkpoint metric +eval_retrieval_dot_ndcg@10", printed)  # the user's own set chooses
    assert "the model's own 48 tokens (training at 32)" in printed  # scored as the model is saved
    done = _summary(printed)
    for label in ("STS-B dev", "retrieval nDCG@10", "retrieval Recall@100"):
        assert re.search(rf"{re.escape(label)} +\d+\.\d\d -> \d+\.\d\d", done), done
    record = json.loads((out / "run_summary.json").read_text())
    start_end = record["start_end"]
    assert start_end["metric"] == "eval_retrieval_dot_ndcg@10"
    for key in ("eval_sts-dev_spearman_cosine", "eval_retrieval_dot_ndcg@10", "eval_retrieval_dot_recall@100"):
        assert 0 <= start_end["start"][key] <= 1 and 0 <= start_end["end"][key] <= 1
    # the printed numbers are the recorded ones
    ndcg = start_end["start"]["eval_retrieval_dot_ndcg@10"], start_end["end"]["eval_retrieval_dot_ndcg@10"]
    assert re.search(rf"retrieval nDCG@10 +{100 * ndcg[0]:.2f} -> {100 * ndcg[1]:.2f}", done), done
    # each start -> end with its interval over the queries (STS-B dev: over the pairs) and a verdict
    change = start_end["changes"]["eval_retrieval_dot_ndcg@10"]
    assert change["n"] == 10 and change["unit"] == "queries"
    assert change["delta"] == pytest.approx(100 * (ndcg[1] - ndcg[0]), abs=1e-6)
    assert change["low"] <= change["delta"] <= change["high"]
    assert change["verdict"] in ("a gain", "within noise", "a loss")
    line = next(x for x in done.splitlines() if "retrieval nDCG@10" in x)
    assert f", {change['delta']:+.2f} (95% CI {change['low']:+.2f} to {change['high']:+.2f}, " in line
    # 10 queries: below RELIABLE_FROM, the line says its interval is approximate
    assert f"10 queries): {change['verdict']} (10 queries: intervals are approximate; docs: How far the " in line
    sts = start_end["changes"]["eval_sts-dev_spearman_cosine"]
    assert sts["unit"] == "pairs" and sts["n"] > 10
    assert re.search(r"STS-B dev +\d+\.\d\d -> \d+\.\d\d, [+-]\d+\.\d\d \(95% CI .* pairs\): ", done)
    # Recall@100 too: the retrieval evaluator keeps its per-query scores, so its line has an interval and a verdict
    recall = start_end["changes"]["eval_retrieval_dot_recall@100"]
    assert recall["n"] == 10 and recall["verdict"] in ("a gain", "within noise", "a loss")
    line = next(x for x in done.splitlines() if "retrieval Recall@100" in x)
    assert f", {recall['delta']:+.2f} (95% CI {recall['low']:+.2f} to {recall['high']:+.2f}, " in line
    assert f"10 queries): {recall['verdict']} (10 queries: intervals are approximate" in line
    # the checkpoint metric's line, and only it, says that it chose the model kept
    deciding = [x for x in done.splitlines() if "decides: the checkpoint metric" in x]
    assert len(deciding) == 1 and "retrieval nDCG@10" in deciding[0], done


def _destroying(user_model, data, out, *flags):
    # A learning rate of 10 wrecks a tiny model within two steps.
    return _train(user_model, data, out, "--learning_rate", "10", "--eval_strategy", "no", "--save_strategy", "no",
                  "--load_best_model_at_end", "false", *flags)


def test_training_that_lowers_the_score_warns_and_hands_back_the_starting_weights(user_model, data, tmp_path,
                                                                                  capsys):
    out = tmp_path / "run"
    assert main(_destroying(user_model, data, out)) == 0
    printed = capsys.readouterr().out
    # a collapsed model makes the correlation undefined (nan), which counts as worse than any score; the start was
    # saved, so the line notes where the trained model ended rather than warning about the saved one
    assert re.search(r"note: the trained model's STS-B dev ended below its start \(\d+\.\d\d -> (\d+\.\d\d|nan)\); "
                     r"the starting model was saved", printed), printed
    assert "warning: STS-B dev ended below its start" not in printed
    assert "the starting model: no checkpoint beat the model you started with" in printed
    given = SentenceTransformer(str(user_model), device="cpu").state_dict()
    saved = SentenceTransformer(str(out), device="cpu").state_dict()
    assert given.keys() == saved.keys()
    assert all(torch.equal(given[key], saved[key]) for key in given)
    assert json.loads((out / "run_summary.json").read_text())["start_end"]["kept"] == "start"


def test_a_lora_run_that_saved_its_start_says_the_adapter_is_not_in_the_saved_model(user_model, data, tmp_path,
                                                                                    capsys):
    pytest.importorskip("peft")
    out = tmp_path / "run"
    assert main(_destroying(user_model, data, out, "--lora_r", "2", "--learning_rate", "100")) == 0
    printed = capsys.readouterr().out
    assert json.loads((out / "run_summary.json").read_text())["start_end"]["kept"] == "start"
    assert re.search(r"LoRA adapter +rank 2, .*; not in the saved model, which is the starting model \(see saved\)",
                     printed), printed
    assert "merged into the saved model" not in printed.split("Training done")[1]


def test_a_lora_run_that_saved_its_trained_model_says_the_adapter_is_merged_in(user_model, data, tmp_path, capsys):
    pytest.importorskip("peft")
    out = tmp_path / "run"
    assert main(_destroying(user_model, data, out, "--lora_r", "2", "--keep_start_if_better", "false")) == 0
    printed = capsys.readouterr().out.split("Training done")[1]
    assert re.search(r"LoRA adapter +rank 2, .*; merged into the saved model", printed), printed


def test_a_run_shorter_than_the_save_interval_names_its_one_checkpoint(user_model, data, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(user_model, data, out, "--eval_strategy", "no", "--load_best_model_at_end", "false",
                       "--save_strategy", "steps", "--save_steps", "100")) == 0
    printed = capsys.readouterr().out.split("Training done")[0]
    assert f"{out / 'checkpoint-2'} at the last step only (the run is 2 steps, shorter than --save_steps 100" in printed
    assert "every 100 steps" not in printed and (out / "checkpoint-2").is_dir()
    assert main(_train(user_model, data, tmp_path / "none", "--eval_strategy", "no", "--save_strategy", "no",
                       "--load_best_model_at_end", "false")) == 0
    assert "none (final model only)" in capsys.readouterr().out and not list((tmp_path / "none").glob("checkpoint-*"))


def test_keep_start_if_better_false_hands_back_the_trained_model(user_model, data, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_destroying(user_model, data, out, "--keep_start_if_better", "false")) == 0
    printed = capsys.readouterr().out
    assert "warning: STS-B dev ended below its start" in printed
    assert re.search(r"saved +the model at the last step, 2", printed), printed
    given = SentenceTransformer(str(user_model), device="cpu").state_dict()
    saved = SentenceTransformer(str(out), device="cpu").state_dict()
    assert any(not torch.equal(given[key], saved[key]) for key in given)


def test_keep_trained_if_reliable_hands_back_the_start_when_the_gain_is_not_reliable(user_model, data, tmp_path,
                                                                                      capsys):
    from safetensors.torch import load_file

    out = tmp_path / "run"
    # a learning rate so small that the queries' scores cannot move beyond noise
    flags = ("--eval_retrieval", str(data["beir"]), "--learning_rate", "1e-9", "--keep_trained_if", "reliable",
             "--eval_strategy", "no", "--save_strategy", "no", "--load_best_model_at_end", "false")
    assert main(_train(user_model, data, out, *flags)) == 0
    done = _summary(capsys.readouterr().out)
    record = json.loads((out / "run_summary.json").read_text())
    assert record["start_end"]["kept"] == "start" and record["start_end"]["keep_trained_if"] == "reliable"
    assert record["start_end"]["changes"]["eval_retrieval_dot_ndcg@10"]["verdict"] == "within noise"
    assert re.search(r"saved +the starting model: eval_retrieval_dot_ndcg@10 changed .*within noise, not a reliable "
                     r"gain \(--keep_trained_if reliable: the trained model only when the interval lies above zero\)",
                     done)
    saved, given = load_file(out / "model.safetensors"), load_file(user_model / "model.safetensors")
    assert saved.keys() == given.keys() and all(torch.equal(saved[k], given[k]) for k in given)


@pytest.mark.parametrize(("flags", "message"), [
    (("--stsb_dev", "none"), "--keep_trained_if reliable judges the gain on your queries: give --eval_retrieval"),
    (("--keep_start_if_better", "false"), "--keep_start_if_better=False turns off keep_trained_if='reliable', which"),
    (("--metric_for_best_model", "eval_retrieval_dot_recall@100"), "only retrieval nDCG@10 and"),
])
def test_keep_trained_if_reliable_that_cannot_apply_is_refused(user_model, data, tmp_path, capsys, flags, message):
    extra = () if "--stsb_dev" in flags else ("--eval_retrieval", str(data["beir"]))
    argv = _train(user_model, data, tmp_path / "run", "--keep_trained_if", "reliable", *extra, *flags)
    assert main(argv) == 2
    assert message in _one_line_error(capsys)


def test_without_an_evaluator_the_summary_says_nothing_was_measured(user_model, data, tmp_path, capsys):
    assert main(_train(user_model, data, tmp_path / "run", "--stsb_dev", "none")) == 0
    assert "not measured (no evaluator" in capsys.readouterr().out


def test_a_weight_anchor_saves_the_given_share_of_the_trained_change(user_model, data, tmp_path, capsys):
    from st_infocse.training import toward_start

    # 0.25, not WeightAnchorCallback's default share of 0.5: a share dropped on its way would fail here

    flags = ("--stsb_dev", "none", "--learning_rate", "1e-2")
    assert main(_train(user_model, data, tmp_path / "free", *flags)) == 0
    assert main(_train(user_model, data, tmp_path / "anchored", *flags, "--weight_anchor", "0.25")) == 0
    printed = capsys.readouterr().out
    assert "weight anchor" in printed and "0.25 of the trained change kept after step 2" in printed
    given = SentenceTransformer(str(user_model), device="cpu").state_dict()
    trained = SentenceTransformer(str(tmp_path / "free"), device="cpu").state_dict()
    anchored = SentenceTransformer(str(tmp_path / "anchored"), device="cpu").state_dict()
    assert any(not torch.equal(given[key], trained[key]) for key in given)
    for key, value in toward_start(given, trained, 0.25).items():
        torch.testing.assert_close(anchored[key], value)
    assert _module_types(tmp_path / "anchored") == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert json.loads((tmp_path / "anchored" / "run_summary.json").read_text())["settings"]["weight_anchor"] == 0.25


def test_a_weight_anchor_compares_the_anchored_last_step_with_the_start(user_model, data, tmp_path, capsys):
    # Evaluations at every step: the best checkpoint (the default) would be unanchored, so the last step is kept.
    flags = ("--eval_retrieval", str(data["beir"]), "--eval_steps", "1", "--save_steps", "1",
             "--keep_start_if_better", "false", "--weight_anchor", "0.5")
    out = tmp_path / "run"
    assert main(_train(user_model, data, out, *flags)) == 0
    assert re.search(r"saved +the model at the last step, 2", capsys.readouterr().out)
    record = json.loads((out / "run_summary.json").read_text())
    assert record["start_end"]["kept"] == "end" and record["settings"]["weight_anchor"] == 0.5


@pytest.mark.parametrize(("flags", "message"), [
    (["--weight_anchor", "0"], "--weight_anchor must lie in (0, 1]"),
    (["--weight_anchor", "1.5"], "--weight_anchor must lie in (0, 1]"),
    (["--weight_anchor", "0.5", "--eval_steps", "1", "--load_best_model_at_end", "true"],
     "--weight_anchor moves the last step's model only, and --load_best_model_at_end could hand back"),
])
def test_a_weight_anchor_that_cannot_apply_is_refused(user_model, data, tmp_path, capsys, flags, message):
    assert main(_train(user_model, data, tmp_path / "run", *flags)) == 2
    assert message in _one_line_error(capsys)


# ------------------------------------------------------------------------------ bad input, one line each


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def _beir(root: Path, corpus=True, queries=True, qrels: list[str] | None = None) -> Path:
    if corpus:
        _write(root / "corpus.jsonl", [json.dumps({"_id": "c1", "text": "a cat"})])
    if queries:
        _write(root / "queries.jsonl", [json.dumps({"_id": "q1", "text": "cat"})])
    if qrels is not None:
        _write(root / "qrels" / "dev.tsv", ["query-id\tcorpus-id\tscore", *qrels])
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda root: root / "missing", "missing: folder not found (expected a BEIR dataset folder)"),
        (lambda root: _beir(root, corpus=False, qrels=["q1\tc1\t1"]), "corpus.jsonl"),
        (lambda root: _beir(root, queries=False, qrels=["q1\tc1\t1"]), "queries.jsonl"),
        (lambda root: _beir(root), "qrels"),
        (lambda root: _beir(root, qrels=["q1\tc1\t0"]), "no relevant"),
        (lambda root: _beir(root, qrels=["q9\tc1\t1"]), "q9"),
        (lambda root: _beir(root, qrels=["q1\tc9\t1"]), "c9"),
    ],
)
def test_bad_retrieval_folders_fail_in_one_line(user_model, data, tmp_path, capsys, build, message):
    folder = build(tmp_path / "beir")
    code = main(_train(user_model, data, tmp_path / "run", "--eval_retrieval", str(folder)))
    assert code == 2
    assert message in _one_line_error(capsys)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_missing_stsb_dev_file_or_retrieval_folder_is_refused_under_its_flag(user_model, data, tmp_path, capsys):
    missing = tmp_path / "no-such"  # checked once, by the library's run_evaluation, before the model loads
    for flag, message in (("--stsb_dev", f"--stsb_dev: cannot load STS-B dev from {missing}: "),
                          ("--eval_retrieval", f"--eval_retrieval: {missing}: folder not found")):
        assert main(_train(user_model, data, tmp_path / "run", flag, str(missing))) == 2
        assert _one_line_error(capsys).startswith(f"st-infocse train: error: {message}")
        assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "--model", "./missing-folder", "--sts", "x"], "model not found: ./missing-folder"),
        (["evaluate", "--model", ".", "--beir", "scifact", "--beir_source", "beir"], "qrels"),
        (["evaluate", "--model", ".", "--sts", "x", "--output_dir", "afile"], "--output_dir: afile is a file"),
        (["mine", "--docs", "corpus.txt", "--output_dir", "afile"], "--output_dir: afile is a file"),
        (["train", "--objective", "ict", "--docs", "corpus.txt", "--train_data", "corpus.txt"],
         "--train_data (a flag of simcse, infocse, cmlm-cse, informin, cmlm, pretrain-aux) is not a flag of "
         "--objective ict"),
        (["train", "--objective", "ict", "--docs", "corpus.txt", "--rounds", "2"],
         "--rounds (a flag of idc) is not a flag of --objective ict"),
        (["train", "--objective", "idc", "--docs", "corpus.txt", "--idc_annotator", "./missing"],
         "--idc_annotator: model not found: ./missing"),
        (["train", "--objective", "idc", "--docs", "corpus.txt", "--idc_max_docs", "0"], "--idc_max_docs must be"),
        (["train", "--objective", "ict", "--docs", "corpus.txt", "--idc_annotator", "x"],
         "--idc_annotator (a flag of idc) is not a flag of --objective ict"),
        (["train", "--objective", "ict", "--docs", "corpus.txt", "--temperature", "0.1"],
         "--temperature (a flag of simcse, infocse, cmlm-cse, informin, idc) is not a flag of --objective ict"),
        (["train", "--objective", "ict"], "--objective ict needs --docs"),
        (["train", "--objective", "simcse", "--train_data", "corpus.txt", "--docs", "corpus.txt"],
         "--docs (a flag of ict, distill, idc) is not a flag of --objective simcse"),
    ],
)
def test_rough_edges_are_refused_before_heavy_imports(tmp_path, argv, message):
    (tmp_path / "corpus.txt").write_text("a cat sat\n\nthe dog ran\n")
    (tmp_path / "afile").write_text("not a folder")
    _write(tmp_path / "beir" / "scifact" / "corpus.jsonl", [json.dumps({"_id": "c1", "text": "a cat"})])
    result, imported = run_cli_listing_imports(argv, tmp_path)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and message in errors[0], errors
    assert not {name for name in imported if name.split(".")[0] in ("torch", "sentence_transformers", "datasets")}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--train_data", "corpus.txt", "--max_steps", "-5"], "--max_steps must be a positive number"),
        (["train", "--train_data", "corpus.txt", "--output_dir", "afile"], "--output_dir: afile is a file"),
        (["train", "--objective", "idc", "--docs", "corpus.txt", "--eval_steps", "10"], "--eval_steps does not apply"),
        (["train", "--train_data", "corpus.txt", "--learnin_rate", "1e-5"], "--learnin_rate is not a flag of"),
    ],
)
def test_trainer_flag_errors_are_refused_before_the_model_loads(tmp_path, capsys, monkeypatch, argv, message):
    """The trainer's flags are read after the command's own (their dataclass imports torch), still before any model,
    text or document loads: a model that cannot load offline shows no loading was tried."""
    (tmp_path / "corpus.txt").write_text("a cat sat\n\nthe dog ran\n")
    (tmp_path / "afile").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--model", "no-such-org/no-such-model", "--stsb_dev", "none"]) == 2
    assert message in _one_line_error(capsys)


def test_long_texts_are_counted_and_split_sentences_fixes_them(user_model, data, tmp_path, capsys):
    assert main(_train(user_model, data, tmp_path / "a", "--stsb_dev", "none")) == 0
    printed = capsys.readouterr().out
    assert "1 of 41 texts are longer than 32 tokens and will be cut to their first 32; pass --split_sentences" in printed
    assert main(_train(user_model, data, tmp_path / "b", "--stsb_dev", "none", "--split_sentences", "true")) == 0
    printed = capsys.readouterr().out
    assert "--split_sentences: 41 texts -> " in printed
    assert "longer than 32 tokens" not in printed


def test_offline_hub_sts_b_dev_names_the_bundled_copy(user_model, data, tmp_path, capsys, monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    assert main(_train(user_model, data, tmp_path / "run", "--stsb_dev", "hub")) == 2
    error = _one_line_error(capsys)
    assert "(ConnectionError)" in error and error.endswith("(--stsb_dev demo: the shipped pairs; none: no STS-B dev)")


# ------------------------------------------------------------------------------ IDC rounds get every trainer flag


@pytest.fixture
def recorded_round_args(monkeypatch):
    """The training arguments each IDC round's trainer is built with."""
    import st_infocse.mining.rounds as rounds

    seen = []
    real = rounds.build_trainer

    def recording(model, loss, dataset, args, *rest, **kwargs):
        seen.append(args)
        return real(model, loss, dataset, args, *rest, **kwargs)

    monkeypatch.setattr(rounds, "build_trainer", recording)
    return seen


def _docs(tmp_path: Path) -> Path:
    rows = [json.dumps({"id": f"d{i}", "sentences": random_sentences(5, seed=i)}) for i in range(12)]
    return _write(tmp_path / "docs.jsonl", rows)


def _idc(model: Path, docs: Path, out: Path, *flags: str) -> list[str]:
    return ["train", "--objective", "idc", "--model", str(model), "--docs", str(docs), "--rounds", "1",
            "--stsb_dev", "none", "--output_dir", str(out), "--use_cpu", "true", *flags]  # fmt: skip


def test_idc_rounds_train_with_every_trainer_flag_given(user_model, tmp_path, capsys, recorded_round_args):
    given = {
        "learning_rate": "0.0001",
        "weight_decay": "0.01",
        "gradient_accumulation_steps": "2",
        "max_grad_norm": "0.5",
        "lr_scheduler_type": "constant",
        "warmup_steps": "0",
        "max_steps": "2",
        "per_device_train_batch_size": "8",
        "seed": "3",
        "adam_beta2": "0.99",
    }
    flags = [item for name, value in given.items() for item in (f"--{name}", value)]
    assert main(_idc(user_model, _docs(tmp_path), tmp_path / "run", *flags)) == 0
    (args,) = recorded_round_args
    for name, value in given.items():
        received = getattr(args, name)
        received = getattr(received, "value", received)  # enums (lr_scheduler_type)
        assert str(received) == value or float(received) == float(value), (name, received, value)
    assert args.use_cpu is True
    assert Path(args.output_dir) == tmp_path / "run" / "rounds" / "round-1" / "trainer"
    printed = capsys.readouterr().out
    assert "each round trains with" in printed and "weight_decay=0.01" in printed and "adam_beta2=0.99" in printed


def test_idc_rounds_keep_paper_002_defaults_unless_told(user_model, tmp_path, capsys, recorded_round_args):
    assert main(_idc(user_model, _docs(tmp_path), tmp_path / "run", "--max_steps", "1")) == 0
    (args,) = recorded_round_args
    # paper 002 Table 5's lr and the rounds' warm-up, not the command line's SimCSE defaults (3e-5, no warm-up)
    assert args.learning_rate == 2e-5 and args.warmup_steps == 0.1
    assert args.per_device_train_batch_size == 64 and args.num_train_epochs == 1
    assert "learning_rate=2e-05" in capsys.readouterr().out


# --keep_start_if_better and --weight_anchor apply to the rounds (tests/test_cli_idc_lora.py)
@pytest.mark.parametrize("flag", [["--load_best_model_at_end", "true"], ["--train_data", "x.txt"],
                                  ["--metric_for_best_model", "x"]])
def test_flags_a_round_cannot_use_are_refused(user_model, tmp_path, capsys, flag):
    assert main(_idc(user_model, _docs(tmp_path), tmp_path / "run", *flag)) == 2
    trainer_flag = flag[0] in ("--load_best_model_at_end", "--metric_for_best_model")
    assert (f"{flag[0]} does not apply to --objective idc" if trainer_flag
            else f"{flag[0]} (a flag of") in _one_line_error(capsys)


def test_ict_trains_each_sentence_against_the_rest_of_its_document(user_model, data, tmp_path, capsys, monkeypatch):
    from st_infocse.mining import DocumentAwareBatchSampler

    made = []
    original = DocumentAwareBatchSampler.for_pairs.__func__
    monkeypatch.setattr(DocumentAwareBatchSampler, "for_pairs",
                        classmethod(lambda cls, pairs, *a, **k: made.append(pairs) or original(cls, pairs, *a, **k)))
    out = tmp_path / "run"
    argv = ["train", "--objective", "ict", "--model", str(user_model), "--docs", str(_docs(tmp_path)),
            "--eval_retrieval", str(data["beir"]), "--stsb_dev", "none", "--output_dir", str(out), "--max_steps", "2",
            *FAST]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "--objective ict: 12 documents -> 60 (sentence, rest of its document) pairs" in printed
    assert "MultipleNegativesRankingLoss" in printed
    assert re.search(r"retrieval nDCG@10 +\d+\.\d\d -> \d+\.\d\d", _summary(printed))
    # one document's pairs are kept out of each other's batch: the sampler sees the pairs with their doc ids
    assert len(made) == 1 and len(made[0]) == 60 and len(set(made[0]["doc_id"])) == 12
    first = made[0][0]
    assert first["anchor"] not in first["positive"] and len(first["positive"].split()) > len(first["anchor"].split())
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]  # the user's model, kept


def test_ict_without_a_document_of_two_sentences_says_so(user_model, tmp_path, capsys):
    docs = _write(tmp_path / "docs.jsonl", [json.dumps({"id": f"d{i}", "sentences": ["one sentence only."]})
                                            for i in range(3)])
    argv = ["train", "--objective", "ict", "--model", str(user_model), "--docs", str(docs), "--stsb_dev", "none",
            "--output_dir", str(tmp_path / "run"), "--max_steps", "2", *FAST]  # fmt: skip
    assert main(argv) == 2
    assert "no document has two sentences, so ICT has no pair to train on" in _one_line_error(capsys)


def test_distill_without_a_document_that_gives_a_query_says_so_before_the_model_loads(tmp_path, capsys, monkeypatch):
    import st_infocse.cli.train as train

    monkeypatch.setattr(train, "model_from_args", lambda *a: pytest.fail("the model loaded"))
    docs = _write(tmp_path / "docs.jsonl", [json.dumps({"id": f"d{i}", "sentences": ["one sentence only."]})
                                            for i in range(3)])
    argv = ["train", "--objective", "distill", "--model", str(tmp_path), "--docs", str(docs), "--stsb_dev", "none",
            "--output_dir", str(tmp_path / "run"), *FAST]
    assert main(argv) == 2
    assert _one_line_error(capsys).endswith("documents: none gave a held_out pseudo-query (too_few_sentences=3)")


def test_the_adapt_recipe_needs_your_documents_and_queries_and_keeps_your_model(user_model, tiny_bert_dir, data,
                                                                               tmp_path, capsys):
    docs = _docs(tmp_path)
    assert main(["train", "--recipe", "adapt-idc-mpnet", "--model", str(user_model), "--docs", str(docs)]) == 2
    assert "recipe adapt-idc-mpnet needs --eval_retrieval" in _one_line_error(capsys)
    out = tmp_path / "run"
    argv = ["train", "--recipe", "adapt-idc-mpnet", "--model", str(user_model), "--docs", str(docs),
            "--eval_retrieval", str(data["beir"]), "--idc_annotator", str(tiny_bert_dir), "--stsb_dev", "none",
            "--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "4", "--use_cpu", "true"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"training data +.*docs.jsonl \(documents\)", printed)
    assert f"round 1 mined by        {tiny_bert_dir}" in printed
    assert re.search(r"retrieval nDCG@10 +\d+\.\d\d -> \d+\.\d\d, .*95% CI", printed)  # start -> end, interval
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["objective"] == "idc" and summary["rounds"]["keep_trained_if"] == "reliable"
    change = summary["rounds"]["changes"].get("retrieval_dot_ndcg@10")
    # the round is kept only with a reliable gain; with 10 queries and 2 steps the start comes back
    assert (summary["rounds"]["best_round"] == 1) == (change is not None and change["verdict"] == "a gain")


def test_the_adapt_informin_recipe_trains_your_sentences_and_keeps_your_model(user_model, data, tmp_path, capsys):
    recipe = "adapt-informin"
    texts = str(data["texts"])
    assert main(["train", "--recipe", recipe, "--model", str(user_model), "--train_data", texts]) == 2
    assert f"recipe {recipe} needs --eval_retrieval" in _one_line_error(capsys)
    out = tmp_path / "run"
    argv = ["train", "--recipe", recipe, "--model", str(user_model), "--train_data", texts,
            "--eval_retrieval", str(data["beir"]), "--stsb_dev", "none", "--output_dir", str(out), "--max_steps", "2",
            "--eval_steps", "2", "--save_steps", "2", "--per_device_train_batch_size", "4", "--use_cpu", "true"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"--split_sentences: 41 texts -> 4\d sentences", printed)  # the long text, split
    assert re.search(r"retrieval nDCG@10 +\d+\.\d\d -> \d+\.\d\d", printed)  # the user's queries, start -> end
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert _pooling_mode(out) == "mean"
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["objective"] == "informin"
    assert summary.get("weight_anchor") is None
    assert summary["start_end"]["keep_trained_if"] == "reliable"  # the adapt recipes' rule
    verdict = summary["start_end"]["changes"]["eval_retrieval_dot_ndcg@10"]["verdict"]
    assert (summary["start_end"]["kept"] == "start") == (verdict != "a gain")
    assert "(--keep_trained_if reliable" in printed


def test_idc_with_an_annotator_on_a_sample_of_the_documents(user_model, tiny_bert_dir, tmp_path, capsys):
    annotator = str(tiny_bert_dir)  # another model: a plain encoder, loaded by the same rule
    out = tmp_path / "run"
    assert main(_idc(user_model, _docs(tmp_path), out, "--idc_annotator", annotator, "--idc_max_docs", "5",
                     "--max_steps", "1", "--per_device_train_batch_size", "4")) == 0
    printed = capsys.readouterr().out
    assert re.search(r"documents +5 of 12 \(a --seed 42 sample, --idc_max_docs\)", printed)
    assert f"round 1 mined by        {annotator}" in printed
    rounds = json.loads((out / "run_summary.json").read_text())["rounds"]["rounds"]
    assert rounds[0]["annotation"] == "idc (annotator)" and rounds[0]["documents_used"] == 5
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]  # the user's model is trained


# ------------------------------------------------------------------------------ Ctrl-C


def _interrupting(monkeypatch, at_step: int, times: int):
    """Make the run's interrupt callback receive ``times`` Ctrl-C (SIGINT) at the end of step ``at_step``."""
    import os
    import signal

    from st_infocse.training.interrupt import InterruptCallback

    on_step_end = InterruptCallback.on_step_end

    def pressed(self, args, state, control, **kwargs):
        if state.global_step == at_step:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
        return on_step_end(self, args, state, control, **kwargs)

    monkeypatch.setattr(InterruptCallback, "on_step_end", pressed)


def _four_steps(user_model, data, out):
    return _train(user_model, data, out, "--max_steps", "4", "--save_strategy", "no", "--eval_strategy", "no",
                  "--load_best_model_at_end", "false")


def test_ctrl_c_saves_a_resumable_checkpoint_and_exits_130(user_model, data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    _interrupting(monkeypatch, at_step=2, times=1)
    argv = _four_steps(user_model, data, out)
    assert main(argv) == 130
    printed = capsys.readouterr().out
    line = f"interrupted at step 2 of 4; checkpoint-2 saved; resume with --resume_from_checkpoint {out / 'checkpoint-2'}"
    assert line in printed
    assert (out / "checkpoint-2" / "trainer_state.json").is_file() and (out / "checkpoint-2" / "optimizer.pt").is_file()
    assert not (out / "model.safetensors").exists() and not (out / "run_summary.json").exists()  # no half-run model
    monkeypatch.undo()
    assert main([*argv, "--resume_from_checkpoint", str(out / "checkpoint-2")]) == 0  # the run goes on from step 2
    assert json.loads((out / "run_summary.json").read_text())["steps"] == 4


def test_ctrl_c_in_pretrain_aux_saves_a_checkpoint_and_exits_130(user_model, data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "stage1"
    _interrupting(monkeypatch, at_step=1, times=1)
    argv = ["pretrain-aux", "--model", str(user_model), "--train_data", str(data["texts"]), "--output_dir", str(out),
            "--max_steps", "3", "--save_strategy", "no", *FAST]
    assert main(argv) == 130
    assert "interrupted at step 1 of 3; checkpoint-1 saved" in capsys.readouterr().out
    assert (out / "checkpoint-1" / "trainer_state.json").is_file() and not (out / "decoder").exists()


def test_ctrl_c_in_idcs_rounds_exits_130_with_the_rounds_mined(user_model, data, tmp_path, capsys, monkeypatch):
    import st_infocse.mining.rounds as rounds

    def pressed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rounds, "train_round", pressed)
    out, docs = tmp_path / "idc", tmp_path / "docs.jsonl"
    _write(docs, [json.dumps({"id": f"d{i}", "sentences": random_sentences(4, seed=i)}) for i in range(6)])
    argv = ["train", "--objective", "idc", "--model", str(user_model), "--docs", str(docs), "--stsb_dev",
            "none", "--output_dir", str(out), "--rounds", "2", "--use_cpu", "true"]
    assert main(argv) == 130
    assert (f"interrupted in IDC's round 1 of 2 (0 finished, their pairs and reports in {out / 'rounds'}); no round "
            "kept or saved") in capsys.readouterr().out
    assert (out / "rounds" / "round-1").is_dir() and not (out / "model.safetensors").exists()


def test_a_second_ctrl_c_stops_at_once_without_a_checkpoint(user_model, data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    _interrupting(monkeypatch, at_step=1, times=2)
    argv = _four_steps(user_model, data, out)
    assert main(argv) == 130
    assert "interrupted at step 1 of 4; no checkpoint saved (second Ctrl-C)" in capsys.readouterr().out
    assert not list(out.glob("checkpoint-*")) and not (out / "model.safetensors").exists()


def test_a_folder_holding_an_earlier_run_is_refused_unless_resumed_or_overwritten(user_model, data, tmp_path,
                                                                                  capsys):
    out = tmp_path / "run"
    argv = _train(user_model, data, out, "--max_steps", "2", "--save_steps", "2", "--eval_steps", "2")
    assert main(argv) == 0
    assert (out / "checkpoint-2").is_dir() and (out / "run_summary.json").is_file()
    (out / "notes.txt").write_text("the user's own file")
    capsys.readouterr()
    again = _train(user_model, data, out, "--max_steps", "1", "--save_steps", "1", "--eval_steps", "1")
    assert main(again) == 2
    error = _one_line_error(capsys)
    assert f"--output_dir {out} holds an earlier run (" in error and "--overwrite_output_dir true" in error
    assert (out / "checkpoint-2").is_dir()  # refused: nothing touched
    assert main([*again, "--overwrite_output_dir", "true"]) == 0
    assert "the earlier run in it removed (" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]  # never a mix of two runs
    assert json.loads((out / "run_summary.json").read_text())["steps"] == 1
    assert (out / "notes.txt").read_text() == "the user's own file"  # only what a run writes goes


def test_a_decoder_warm_up_left_in_the_folder_counts_as_an_earlier_run(tmp_path):
    from st_infocse.cli.errors import CLIError
    from st_infocse.cli.inputs import check_earlier_run

    (tmp_path / "decoder_warmup").mkdir()  # what --decoder_warmup_steps writes first (warm_up_decoder)
    with pytest.raises(CLIError, match=r"holds an earlier run \(decoder_warmup\)"):
        check_earlier_run(str(tmp_path), None, overwrite=False)
    assert check_earlier_run(str(tmp_path), None, overwrite=True) == "the earlier run in it removed (decoder_warmup)"
    assert not (tmp_path / "decoder_warmup").exists()


# ------------------------------------------------------------------------------ BM25 beside the scores


def test_bm25_and_the_hybrid_are_printed_beside_start_to_end(user_model, data, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(user_model, data, out, "--eval_retrieval", str(data["beir"]), "--stsb_dev", "none")) == 0
    printed = capsys.readouterr().out
    assert "BM25 beside the scores  BM25 (bm25s; english stemmer, english stop words)" in printed
    bm25_row = next(line for line in printed.splitlines() if line.strip().startswith("BM25 on your queries"))
    # each query is its document's first five words: BM25 finds every one first
    assert "BM25 on your queries" in bm25_row and " 100.00; the model as given against it " in bm25_row
    assert "at the last step " in bm25_row and "10 queries)" in bm25_row
    assert any(line.strip().startswith("hybrid (BM25 + the model as given)") for line in printed.splitlines())
    summary = json.loads((out / "run_summary.json").read_text())["lexical_references"]
    assert summary["BM25"]["ndcg@10"] == 1.0 and summary["BM25"]["start_against_it"]["n"] == 10
    assert 0 <= summary["hybrid"]["ndcg@10"] <= 1


def test_bm25_can_be_turned_off_and_its_flags_need_a_retrieval_set(user_model, data, tmp_path, capsys):
    assert main(_train(user_model, data, tmp_path / "a", "--eval_retrieval", str(data["beir"]), "--bm25", "false")) == 0
    assert "BM25 on your queries" not in capsys.readouterr().out
    assert main(_train(user_model, data, tmp_path / "b", "--hybrid_fusion", "rrf")) == 2
    assert "--hybrid_fusion: BM25 is scored beside --eval_retrieval" in _one_line_error(capsys)


def test_bm25_true_without_bm25s_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch, data):
    """Left at its default, BM25 missing is a note in the summary (run_evaluation's); typed, a refusal."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bm25s" else find_spec(name, *a))
    argv = ["train", "--train_data", str(data["texts"]), "--model", "no-such-org/no-such-model", "--output_dir",
            str(tmp_path / "run"), "--stsb_dev", "none", "--eval_retrieval", str(data["beir"])]
    assert main([*argv, "--bm25", "true"]) == 2
    assert "--bm25 true needs bm25s and PyStemmer: pip install 'st-infocse[eval]'" in _one_line_error(capsys)
    assert main(argv) == 2  # not refused for BM25: the model is then loaded, and cannot be
    assert "cannot load model 'no-such-org/no-such-model'" in _one_line_error(capsys)


def test_the_retrieval_evaluator_scores_any_run_as_it_scores_its_own(user_model, data):
    from st_infocse.evaluation import LexicalSettings, retrieval_evaluator

    evaluator, _ = retrieval_evaluator(data["beir"], "dev")
    evaluator(SentenceTransformer(str(user_model), device="cpu"))
    assert evaluator.metrics_of(evaluator.hits)[evaluator.primary_key] == evaluator.per_query
    references = evaluator.lexical_references(LexicalSettings(fusion="rrf"))
    assert set(references) == {"BM25", "hybrid"} and set(references["BM25"]) == set(evaluator.per_query)
    assert all(value == 1.0 for value in references["BM25"].values())


# ------------------------------------------------------------------------------ a LoRA adapter (--lora_r)


def test_a_lora_run_saves_the_users_modules_with_the_adapter_merged(user_model, data, tmp_path, capsys):
    pytest.importorskip("peft")
    flags = ("--stsb_dev", "none", "--learning_rate", "1e-2", "--lora_r", "4", "--lora_alpha", "8")
    assert main(_train(user_model, data, tmp_path / "free", *flags)) == 0
    printed = capsys.readouterr().out
    assert re.search(r"LoRA adapter +rank 4, alpha 8 on 12 layers \(query, key, value\); [\d,]+ of [\d,]+ weights",
                     printed), printed
    assert main(_train(user_model, data, tmp_path / "anchored", *flags, "--weight_anchor", "0.5")) == 0
    given = SentenceTransformer(str(user_model), device="cpu").state_dict()
    free = SentenceTransformer(str(tmp_path / "free"), device="cpu").state_dict()
    anchored = SentenceTransformer(str(tmp_path / "anchored"), device="cpu").state_dict()
    assert set(free) == set(given) and _module_types(tmp_path / "free") == ["Transformer", "Pooling", "Dense", "Normalize"]
    moved = [k for k in given if not torch.equal(given[k], free[k])]
    assert moved and all(re.search(r"attention\.self\.(query|key|value)\.weight$", k) for k in moved)  # the rest froze
    for key in moved:  # the anchor keeps half of the adapter's change, exactly (B @ A with B halved)
        torch.testing.assert_close(anchored[key] - given[key], 0.5 * (free[key] - given[key]), atol=1e-6, rtol=1e-4)
    assert json.loads((tmp_path / "free" / "run_summary.json").read_text())["settings"]["lora_r"] == 4


@pytest.mark.parametrize(("flags", "message"), [
    (["--lora_alpha", "8"], "--lora_alpha: the adapter's settings apply with --lora_r R"),
    (["--lora_r", "-1"], "--lora_r must be at least 0 (0: no adapter), got -1"),
])
def test_lora_flags_that_cannot_apply_are_refused(user_model, data, tmp_path, capsys, flags, message):
    pytest.importorskip("peft")
    assert main(_train(user_model, data, tmp_path / "run", "--stsb_dev", "none", *flags)) == 2
    assert message in _one_line_error(capsys)


def test_lora_targets_that_match_no_layer_are_refused_naming_the_layers(user_model, data, tmp_path, capsys):
    pytest.importorskip("peft")  # the encoder's layers are known once it is read: one line after loading
    flags = ("--stsb_dev", "none", "--lora_r", "4", "--lora_target_modules", "q", "v")
    assert main(_train(user_model, data, tmp_path / "run", *flags)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("--lora_target_modules: no linear layer of the encoder is named q, "
                                                 "v; its linear layers are named dense, key, query, value (set the "
                                                 "target modules)")


def test_an_auxiliary_rate_for_a_loss_without_modules_is_refused_under_its_flag(user_model, data, tmp_path, capsys):
    # the loss's modules are known once it is built: the library's refusal, under the flag the user gave
    flags = ("--stsb_dev", "none", "--projection", "none", "--aux_learning_rate", "1e-3")
    assert main(_train(user_model, data, tmp_path / "run", *flags)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("--aux_learning_rate given, but this objective has no auxiliary modules")


def test_lora_without_peft_or_on_idc_is_refused_before_the_model_loads(user_model, data, tmp_path, capsys,
                                                                      monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "peft" else find_spec(name, *a))
    assert main(_train(user_model, data, tmp_path / "run", "--lora_r", "4")) == 2
    assert '--lora_r needs PEFT: pip install "st-infocse[lora]"' in _one_line_error(capsys)
    argv = ["train", "--objective", "idc", "--model", str(user_model), "--docs", str(data["texts"]), "--lora_r", "4",
            "--output_dir", str(tmp_path / "idc")]
    assert main(argv) == 2
    assert "--lora_r" in _one_line_error(capsys)
