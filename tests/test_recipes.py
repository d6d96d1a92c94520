"""Named recipes (``st-infocse train --recipe NAME``): each resolves to its source's settings, your flags win, and the
command line lists them and refuses unknown ones. Offline: no recipe model is downloaded; the runs use tiny models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import st_infocse.training.precision
import st_infocse.training.trainer
from st_infocse.cli import main
from st_infocse.cli import train as cli_train
from st_infocse.cli.objective_flags import OBJECTIVES
from st_infocse.recipes import RECIPES, Published, Recipe, UnknownRecipeError, get_recipe
from st_infocse.training.arguments import STSB_DEV_METRIC
from st_infocse.training.precision import choose_precision as choose_recipe_precision

from .conftest import _build, random_sentences, run_cli_listing_imports
from .test_docs import ROOT
from .test_docs import _generate as _docs_generate

# What each recipe must resolve to, written out from the sources (not from st_infocse.recipes): the authors' scripts
# for SimCSE and InfoCSE, paper 001 §4.1/Table 3 for InforMin-CL, paper 003 for CMLM-CSE (SimCSE's settings where it
# states none). None: the recipe leaves the objective's own default.
COMMON = dict(
    pooling="cls",
    temperature=0.05,
    max_seq_length=32,
    eval_steps=125,
    eval_strategy="steps",
    load_best_model_at_end=True,
    metric_for_best_model=STSB_DEV_METRIC,
)
_IDC_MPNET = dict(
    objective="idc",
    model="sentence-transformers/all-MiniLM-L6-v2",
    idc_annotator="sentence-transformers/all-mpnet-base-v2",
    idc_max_docs=500,
    rounds=1,
    idc_loss="mnrl",
    temperature=None,  # MultipleNegativesRankingLoss's own scale, 20 (1 / 0.05)
    keep_trained_if="reliable",  # the trained model only with a reliable gain on the user's queries
    learning_rate=2e-5,
    num_train_epochs=1,
    max_steps=100,
    per_device_train_batch_size=32,
    max_seq_length=128,
    pooling=None,  # the model's own
)

EXPECTED = {
    "simcse-bert-base": dict(
        detach=None,  # no decoder: not given
        objective="simcse",
        model="bert-base-uncased",
        projection="mlp",
        learning_rate=3e-5,
        num_train_epochs=1,
        per_device_train_batch_size=64,
        lambda_=None,
        k=None,
        n=None,
        mask_rate=None,
    ),
    "infocse-bert-base": dict(
        detach=True,  # the recipe gives it, as its source does
        objective="infocse",
        model="Luyu/condenser",
        projection="bn-mlp",
        learning_rate=7e-6,
        num_train_epochs=2,
        per_device_train_batch_size=64,
        lambda_=1e-5,
        k=6,
        n=2,
        mask_rate=0.4,
        fusion_init="fresh",
    ),
    "infocse-bert-large": dict(
        detach=True,  # the recipe gives it, as its source does
        objective="infocse",
        model="ffgcc/condenser-bert-large-uncased",
        projection="bn-mlp",
        learning_rate=7e-6,
        num_train_epochs=2,
        per_device_train_batch_size=64,
        lambda_=1e-5,
        k=6,
        n=2,
        mask_rate=0.3,
        fusion_init="fresh",
    ),
    "informin-bert-base": dict(
        objective="informin",
        model="bert-base-uncased",
        projection="mlp",
        learning_rate=3e-5,
        num_train_epochs=1,
        per_device_train_batch_size=128,
        lambda_=0.4,
        k=None,
        n=None,
        mask_rate=None,
    ),
    "cmlm-cse-bert-base": dict(
        detach=True,  # the recipe gives it, as its source does
        objective="cmlm-cse",
        model="bert-base-uncased",
        projection="mlp",
        learning_rate=3e-5,
        num_train_epochs=1,
        per_device_train_batch_size=64,
        lambda_=0.005,
        k=8,
        n=3,
        mask_rate=0.15,
        fusion_init="fresh",
    ),
    # Measured by this package (benchmarks/aux_mechanism.py), not a paper's run.
    "infocse-minilm-decoder-first": dict(
        objective="infocse",
        model="sentence-transformers/all-MiniLM-L6-v2",
        projection="bn-mlp",
        learning_rate=3e-5,
        num_train_epochs=1,
        max_steps=200,
        per_device_train_batch_size=64,
        lambda_=1.0,
        aux_gradient="full",
        aux_learning_rate=1e-4,
        decoder_warmup_steps=150,
        decoder_warmup_learning_rate=5e-4,
        eval_steps=50,
    ),
    # Measured by this package (benchmarks/adaptation.py), not a paper's run; needs the user's documents and queries.
    "adapt-idc-mpnet": _IDC_MPNET,
    "adapt-idc-mpnet-lora": {
        **_IDC_MPNET,
        "lora_r": 8,  # a rank-8 adapter on query, key and value, scaled by 16 / 8
        "lora_alpha": 16.0,
        "lora_target_modules": ["query", "key", "value"],
        "learning_rate": 1e-4,  # the adapter's rate in the benchmark's row
        "idc_precision": "bf16",  # the annotator mines in bf16 where the CPU computes it natively
        "bf16": False,  # the recipe's bf16 training, on the fixture's CPU without native bf16: fp32
    },
    "adapt-informin": dict(
        objective="informin",
        model="sentence-transformers/all-MiniLM-L6-v2",
        lambda_=None,  # the loss's own: InforMin-CL's released weight
        temperature=None,  # the loss's own, 0.05
        keep_trained_if="reliable",
        projection="mlp",  # the loss's default, which the benchmark trained with
        split_sentences=True,
        learning_rate=2e-5,
        num_train_epochs=1,
        max_steps=100,
        per_device_train_batch_size=32,
        max_seq_length=128,
        eval_steps=100,
        save_steps=100,
        pooling=None,  # the model's own
    ),
}
# The papers' numbers, written in the recipes.
PUBLISHED = {
    "simcse-bert-base": {"STS avg": 76.25, "STS-B dev": 82.45},
    "infocse-bert-base": {"STS avg": 78.85, "STS-B dev": 85.49},
    "infocse-bert-large": {"STS avg": 80.18},
    "informin-bert-base": {"STS avg": 77.30},
    "cmlm-cse-bert-base": {"STS avg": 76.80, "STS-B dev": 83.76},
}
# The numbers measured by this package, which the recipes cite but do not copy: what the cited results files hold
# (mean over the seeds), and for the adaptation rows the change on the confirmation half of the test queries, with
# its 95% interval and the seeds whose models were scored query by query.
MEASURED = {
    "infocse-minilm-decoder-first": {"STS avg": (77.94, None), "STS-B dev": (84.98, None)},
    "adapt-idc-mpnet": {
        "Reuters article -> headline nDCG@10": (66.21, "+8.56 (95% CI +7.61 to +9.48): a gain, 2,729 queries, seed 0"),
        "SciFact nDCG@10": (64.80, "-0.34 (95% CI -2.33 to +1.66): within noise, 150 queries, seed 0"),
    },
    "adapt-idc-mpnet-lora": {
        "Reuters article -> headline nDCG@10": (62.16,
                                                "+4.23 (95% CI +3.67 to +4.78): a gain, 2,729 queries, seeds 0,1,2"),
        "SciFact nDCG@10": (65.14, "+0.99 (95% CI -0.05 to +2.08): within noise, 150 queries, seeds 0,1,2"),
    },
    "adapt-informin": {
        "Reuters article -> headline nDCG@10": (63.19,
                                                "+5.41 (95% CI +4.79 to +6.04): a gain, 2,729 queries, seeds 0,1,2"),
        "SciFact nDCG@10": (64.76, "+0.69 (95% CI -1.92 to +3.28): within noise, 150 queries, seeds 0,1,2"),
    },
}


class _Stop(Exception):
    """Raised by a spy to end a command at the point under test (``main`` lets it through)."""


@pytest.fixture
def cpu_without_bf16(monkeypatch):
    """This machine as a CPU without native bf16, whatever it is."""
    monkeypatch.setattr(st_infocse.training.precision, "accelerator_type", lambda: "cpu")
    monkeypatch.setattr(st_infocse.training.precision, "cpu_has_native_bf16", lambda *a, **k: False)


@pytest.fixture
def parsed(monkeypatch, tmp_path):
    """``parsed(argv)`` runs ``st-infocse train argv`` until its flags are parsed, and returns every section's values
    merged into one dict; nothing is loaded, nothing is downloaded."""
    monkeypatch.chdir(tmp_path)
    real = cli_train.read_training_flags

    def run(argv: list[str]) -> dict:
        seen: dict = {}

        def spy(*args, **kwargs):
            seen["flags"] = real(*args, **kwargs)
            raise _Stop

        monkeypatch.setattr(cli_train, "read_training_flags", spy)
        with pytest.raises(_Stop):
            main(["train", *argv])
        flags = seen["flags"]
        merged: dict = {"objective": flags.objective}
        for part in (flags.model, flags.output, flags.run, flags.keep, flags.data, flags.loss, flags.aux,
                     flags.warmup, flags.idc, flags.ict, flags.lora, flags.trainer):
            if part is not None:
                merged.update(vars(part))
        return merged

    return run


# ------------------------------------------------------------------------------------------------ registry


def test_registry_names_every_recipe_each_consistent():
    assert list(RECIPES) == list(EXPECTED)
    for name, recipe in RECIPES.items():
        assert isinstance(recipe, Recipe) and recipe.name == name
        assert recipe.objective == recipe.flags["--objective"] == EXPECTED[name]["objective"]
        assert recipe.objective in OBJECTIVES
        assert set(recipe.origins) == set(recipe.flags) and all(recipe.origins.values())
        if recipe.released:
            assert {p.metric: p.value for p in recipe.published} == PUBLISHED[name]
            assert recipe.precision == "fp16"  # every released script passes --fp16
            assert all("Table" in p.where for p in recipe.published)
        else:  # measured here: the results file is named, its numbers are not copied into the package
            assert {p.metric for p in recipe.published} == set(MEASURED[name])
            # the adapter recipe trains in bf16 where it is native, measured so (adaptation_recipe.py)
            assert recipe.precision == ("bf16" if name == "adapt-idc-mpnet-lora" else None)
            assert all(p.value is None and p.where.startswith("benchmarks/results/") for p in recipe.published)
        assert [item for item in recipe.to_argv() if item.startswith("--")] == list(recipe.flags)
        assert "--train_data" not in recipe.flags and "--stsb_dev" not in recipe.flags  # the user's (or the hub's)
    with pytest.raises(TypeError):
        RECIPES["simcse-bert-base"].flags["--learning_rate"] = "1"  # type: ignore[index]


@pytest.mark.parametrize("name", list(MEASURED))
def test_a_measured_recipe_cites_the_file_and_row_that_hold_its_numbers(name):
    generate = _docs_generate()
    for published in RECIPES[name].published:
        path = ROOT / published.where.split(",")[0]
        assert path.is_file(), published.where
        expected, confirmed = MEASURED[name][published.metric]
        number = generate.measured(published)
        assert round(number.mean, 2) == pytest.approx(expected), published
        assert number.confirmed() == (confirmed or "")
        assert f"{expected:.2f}" in generate.published_text(published)
    if name.startswith("adapt-"):  # the seeds the recipe's notes state are the ones scored
        seeds = {tuple(generate.measured(p).confirmation_seeds) for p in RECIPES[name].published}
        assert seeds == ({(0,)} if name == "adapt-idc-mpnet" else {(0, 1, 2)})
        assert ("seed 0's model only" in RECIPES[name].notes[0]) == (seeds == {(0,)})


def test_a_citation_that_names_no_row_is_refused():
    generate = _docs_generate()
    wrong = Published("STS avg", None, "benchmarks/results/aux_mechanism.json, setting weight-7")
    with pytest.raises(ValueError, match="no such row"):
        generate.measured(wrong)
    with pytest.raises(ValueError, match="not a results citation"):
        generate.measured(Published("STS avg", None, "my notebook"))


def test_unknown_recipe_error_names_the_known_ones():
    with pytest.raises(UnknownRecipeError) as info:
        get_recipe("infocse-bert-huge")
    assert isinstance(info.value, ValueError)
    assert all(name in str(info.value) for name in EXPECTED)


# ------------------------------------------------------------------------------------ resolved arguments


def _required_data(name: str) -> list[str]:
    """The user's own data a recipe requires, made in the current folder: documents and a retrieval folder."""
    flags = []
    if "--docs" in RECIPES[name].requires:
        Path("docs.jsonl").write_text(json.dumps({"id": "d", "sentences": ["A cat sat.", "It purred."]}) + "\n")
        flags += ["--docs", "docs.jsonl"]
    if "--train_data" in RECIPES[name].requires:
        Path("texts.txt").write_text("A cat sat on the mat. It purred.\n")
        flags += ["--train_data", "texts.txt"]
    if "--eval_retrieval" in RECIPES[name].requires:
        Path("mine", "qrels").mkdir(parents=True, exist_ok=True)
        flags += ["--eval_retrieval", "mine"]
    return flags


@pytest.mark.parametrize("name", list(EXPECTED))
def test_recipe_resolves_to_its_sources_arguments(name, parsed, cpu_without_bf16):
    args = parsed(["--recipe", name, *_required_data(name)])
    expected = {**COMMON, **EXPECTED[name]}
    for key, value in expected.items():
        # a flag the objective does not take (k for simcse) has no section: None, as a flag not given
        actual = getattr(args.get(key), "value", args.get(key))  # eval_strategy is an enum
        if isinstance(value, float):
            assert actual == pytest.approx(value), key
        else:
            assert actual == value, key
    assert args["output_dir"] == f"output/{name}"
    # The released scripts' fp16, settled for this machine (a CPU without native bf16): fp32.
    if RECIPES[name].released:
        assert RECIPES[name].flags["--fp16"] == "true"  # the recipe's, as released, then settled below
    assert args["fp16"] is False and args["bf16"] is False
    assert args["max_grad_norm"] == 1.0  # the authors' trainers' default, clipped jointly (below)


def test_flags_you_give_win_wherever_they_stand(parsed, cpu_without_bf16):
    args = parsed(
        [
            "--learning_rate",
            "1e-4",
            "--k=4",
            "--recipe",
            "infocse-bert-base",
            "--lambda_",
            "0.1",
            "--num-train-epochs",
            "3",
            "--model",
            "some-org/some-model",
            "--output_dir",
            "mine",
        ]
    )
    assert args["learning_rate"] == pytest.approx(1e-4) and args["k"] == 4 and args["lambda_"] == pytest.approx(0.1)
    assert args["num_train_epochs"] == 3 and args["model"] == "some-org/some-model" and args["output_dir"] == "mine"
    # untouched flags keep the recipe's values
    assert args["n"] == 2 and args["mask_rate"] == pytest.approx(0.4) and args["projection"] == "bn-mlp"


def test_a_config_file_can_name_the_recipe_and_override_it(parsed, cpu_without_bf16, tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"recipe": "cmlm-cse-bert-base", "mask_rate": 0.4, "n": 2}))
    args = parsed(["--config", str(config), "--n", "4"])
    assert args["objective"] == "cmlm-cse" and args["k"] == 8
    assert args["mask_rate"] == pytest.approx(0.4)  # the config's over the recipe's
    assert args["n"] == 4  # the command line's over the config's


def test_recipe_given_twice_differently_is_refused(capsys):
    assert main(["train", "--recipe", "simcse-bert-base", "--recipe=infocse-bert-base"]) == 2
    assert "--recipe given more than once" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ precision


@pytest.mark.parametrize(
    ("wanted", "device", "native", "flags", "chosen"),
    [
        ("fp16", "cuda", None, {}, "fp16 on cuda"),
        ("fp16", "cpu", True, {"fp16": False, "bf16": True, "use_cpu": True}, "bf16 on cpu"),
        ("fp16", "cpu", False, {"fp16": False, "bf16": False}, "fp32 on cpu"),
        ("fp16", "cpu", None, {"fp16": False, "bf16": False}, "fp32 on cpu"),
        ("bf16", "cpu", True, {"fp16": False, "bf16": True, "use_cpu": True}, "bf16 on cpu"),
        (None, "cpu", False, {}, "fp32"),
    ],
)
def test_choose_recipe_precision(wanted, device, native, flags, chosen):
    got_flags, description = choose_recipe_precision(wanted, device, native)
    assert got_flags == flags and description.startswith(chosen)


def test_on_a_cpu_without_bf16_the_recipe_trains_in_fp32_and_says_so(parsed, cpu_without_bf16, capsys):
    args = parsed(["--recipe", "simcse-bert-base"])
    assert args["fp16"] is False and args["bf16"] is False
    out = capsys.readouterr().out
    assert "Recipe simcse-bert-base" in out and "fp32 on cpu" in out
    assert "none: the recipe as released" in out
    assert "bf16 is much slower than fp32: pass --bf16 true to insist" in out  # one line says why, and the way out


def test_on_a_cpu_with_native_bf16_the_recipe_trains_in_bf16(parsed, monkeypatch, capsys):
    monkeypatch.setattr(st_infocse.training.precision, "accelerator_type", lambda: "cpu")
    monkeypatch.setattr(st_infocse.training.precision, "cpu_has_native_bf16", lambda *a, **k: True)
    args = parsed(["--recipe", "infocse-bert-base"])
    assert args["fp16"] is False and args["bf16"] is True and args["use_cpu"] is True
    assert "bf16 on cpu" in capsys.readouterr().out


def test_on_a_gpu_the_recipe_keeps_fp16(monkeypatch):
    # fp16 cannot be built into training arguments on a CPU, so the choice is checked where it is made
    monkeypatch.setattr(st_infocse.training.precision, "accelerator_type", lambda: "cuda")
    recipe = RECIPES["infocse-bert-base"]
    extra, chosen = st_infocse.training.precision.settle_precision(recipe.precision, {"fp16": True}, frozenset())
    assert extra == {} and chosen == "fp16 on cuda (the recipe's)"


def test_your_precision_flags_win(parsed, cpu_without_bf16, capsys):
    args = parsed(["--recipe", "infocse-bert-base", "--bf16", "true"])
    assert args["bf16"] is True and args["fp16"] is False  # --bf16 alone replaces the recipe's fp16
    assert "bf16 (as you set it)" in capsys.readouterr().out
    args = parsed(["--recipe", "infocse-bert-base", "--use_cpu", "--fp16", "false"])
    assert args["bf16"] is False and args["fp16"] is False


# ------------------------------------------------------------------------------------- listing and errors


@pytest.mark.parametrize("argv", [["train", "--recipe", "list"], ["train", "--recipe=list"], ["recipes"]])
def test_recipe_list_shows_every_recipe_with_source_and_published_number(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name, numbers in PUBLISHED.items():
        assert name in out and RECIPES[name].source in out
        for value in numbers.values():
            assert f"{value:.2f}" in out
    for name in MEASURED:  # the results file that holds each measured number
        assert name in out and RECIPES[name].source in out
        assert all(published.where in out for published in RECIPES[name].published)
    assert "wiki1m_for_simcse.txt" in out and "--train_data" in out


def test_one_recipe_in_full(capsys):
    assert main(["recipes", "infocse-bert-large"]) == 0
    out = capsys.readouterr().out
    for flag, value in RECIPES["infocse-bert-large"].flags.items():
        assert f"{flag} {value}" in out
    assert "InfoCSE-bert-large.sh line 6" in out and "--mlm_eval" in out


def test_train_help_mentions_recipes(capsys):
    assert main(["train", "--help"]) == 0
    assert "--recipe" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--recipe", "nope"], "unknown recipe 'nope'; known recipes: " + ", ".join(EXPECTED)),
        (["train", "--objective", "infocse", "--recipe"], "--recipe needs a name"),
        (["recipes", "nope"], "unknown recipe 'nope'"),
        # the input checks see the recipe's flags: the user's own (bad) data
        (["train", "--train_data", "empty.txt", "--recipe", "simcse-bert-base"], "empty.txt is empty (0 bytes)"),
    ],
)
def test_recipe_errors_are_one_line_exit_2_before_heavy_imports(tmp_path, argv, message):
    (tmp_path / "empty.txt").touch()
    result, imported = run_cli_listing_imports(argv, tmp_path)
    assert result.returncode == 2
    assert "st_infocse.recipes" in imported
    assert not {name for name in imported if name.split(".")[0] in ("torch", "sentence_transformers", "datasets")}
    errors = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert len(errors) == 1 and "error:" in errors[0] and message in errors[0], errors


def test_the_trainer_flag_checks_see_the_recipes_values(tmp_path, capsys, monkeypatch):
    """The recipe's 2 epochs meet the user's --max_steps 0: refused in one line before the model loads (the recipe's
    model cannot load offline, so loading was not tried)."""
    monkeypatch.chdir(tmp_path)
    Path("texts.txt").write_text("a cat sat\n")
    assert main(["train", "--recipe", "infocse-bert-base", "--train_data", "texts.txt", "--max_steps", "0"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--max_steps 0 with --num_train_epochs 2" in errors[0], errors


# ------------------------------------------------------------------------------------ runs on tiny models


@pytest.fixture(scope="module")
def tiny12(tmp_path_factory) -> dict[str, Path]:
    """A 12-layer, hidden-32 BERT with its MLM head (deep enough for every recipe's k and n) and 40 sentences."""
    root = tmp_path_factory.mktemp("recipes")
    sentences = root / "sentences.txt"
    sentences.write_text("\n".join(random_sentences(40)) + "\n")
    # A retrieval folder of the user's own (BEIR layout) for the recipes that require one.
    beir = root / "beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = random_sentences(12, seed=5, min_words=8, max_words=14)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"c{i}", "title": "", "text": text}) + "\n"
                                               for i, text in enumerate(corpus)))
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": " ".join(text.split()[:5])})
                                                + "\n" for i, text in enumerate(corpus[:4])))
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\tc{i}\t1\n"
                                                                                     for i in range(4)))
    model = _build(root / "tiny12", layers=12, with_mlm_head=True)
    return {"model": model, "sentences": sentences, "beir": beir, "root": root}


def _tiny_run(tiny12: dict[str, Path], name: str, *flags: str) -> list[str]:
    return [
        "train",
        "--recipe",
        name,
        "--model",
        str(tiny12["model"]),
        "--train_data",
        str(tiny12["sentences"]),
        "--stsb_dev",
        "none",
        "--per_device_train_batch_size",
        "4",
        "--output_dir",
        str(tiny12["root"] / name),
        *(["--eval_retrieval", str(tiny12["beir"])] if "--eval_retrieval" in RECIPES[name].requires else []),
        *flags,
    ]


@pytest.mark.parametrize("name", [name for name in EXPECTED if RECIPES[name].objective != "idc"])
def test_every_recipe_builds_its_loss_and_clips_jointly(name, tiny12, monkeypatch, cpu_without_bf16):
    """Up to the trainer, cheaply: the recipe's loss with the recipe's settings, handed to a trainer that clips the
    encoder and the loss's own modules together."""
    seen: dict = {}

    class Spy:
        def __init__(self, *args, loss, clip_jointly, **kwargs):
            seen.update(loss=loss, clip_jointly=clip_jointly)
            raise _Stop

    monkeypatch.setattr(st_infocse.training.trainer, "AuxiliaryLossTrainer", Spy)
    with pytest.raises(_Stop):
        main(_tiny_run(tiny12, name))
    assert seen["clip_jointly"] is True
    config = seen["loss"].get_config_dict()
    expected = EXPECTED[name]
    assert config["temperature"] == pytest.approx(0.05) and config["projection"] == expected["projection"]
    if expected["lambda_"] is not None:
        assert config["lambda_"] == pytest.approx(expected["lambda_"])
    for key in ("k", "n", "mask_rate", "fusion_init"):
        if expected.get(key) is not None:
            assert config[key] == pytest.approx(expected[key]) if key == "mask_rate" else config[key] == expected[key]


def test_a_recipe_runs_end_to_end_on_a_tiny_model(tiny12, cpu_without_bf16, capsys):
    from sentence_transformers import SentenceTransformer

    assert main(_tiny_run(tiny12, "infocse-bert-base", "--max_steps", "1", "--use_cpu", "true")) == 0
    out = capsys.readouterr().out
    assert "Recipe infocse-bert-base" in out and "fp32 on cpu" in out
    assert "override --model, --per_device_train_batch_size; add --max_steps, --output_dir" in out
    card = (tiny12["root"] / "infocse-bert-base" / "README.md").read_text()
    assert '"lambda_": 1e-05' in card and '"mask_rate": 0.4' in card and '"projection": "bn-mlp"' in card
    model = SentenceTransformer(str(tiny12["root"] / "infocse-bert-base"), device="cpu")
    assert model.encode(["a cat sat"]).shape == (1, 32)


def test_the_idc_lora_recipe_runs_end_to_end_on_a_tiny_model(tiny12, cpu_without_bf16, capsys):
    """adapt-idc-mpnet-lora as a user runs it (the annotator and the steps made tiny): the adapter trains on query,
    key and value, and the saved model is a plain Sentence Transformer."""
    from sentence_transformers import SentenceTransformer

    pytest.importorskip("peft")
    docs = tiny12["root"] / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "sentences": random_sentences(5, seed=i)}) + "\n"
                            for i in range(10)))
    out = tiny12["root"] / "adapt-idc-mpnet-lora"
    argv = ["train", "--recipe", "adapt-idc-mpnet-lora", "--model", str(tiny12["model"]), "--docs", str(docs),
            "--idc_annotator", str(tiny12["model"]), "--eval_retrieval", str(tiny12["beir"]), "--stsb_dev", "none",
            "--max_steps", "1", "--per_device_train_batch_size", "4", "--use_cpu", "true", "--output_dir", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "LoRA adapter            rank 8, alpha 16 on 36 layers (query, key, value)" in printed
    assert "learning_rate=0.0001" in printed and "--keep_trained_if reliable" in printed
    assert "LoRA adapter          rank 8, alpha 16 on 36 layers (query, key, value)" in printed
    assert SentenceTransformer(str(out), device="cpu").encode(["a cat sat"]).shape == (1, 32)
