"""Named recipes: one command per published row, ``st-infocse train --recipe NAME``.

A recipe is the configuration of one released run (the authors' training script where there is one, the paper's
stated settings where there is none) as ``st-infocse train`` flags, each with the line or section it was read from,
and the number the run should reach. The recipe's flags go first, so every flag you give wins. Recipes set no
training data and no STS-B dev source: both default to the authors' own (:data:`TRAIN_DATA_NOTE`). The objectives'
own values (weight, mask rate, ``k``, ``n``) come from the presets in :mod:`st_infocse.losses.registry`, which the
losses use as defaults, so a recipe and a loss built without arguments agree. Nothing heavy is imported: the
command line expands a recipe before torch loads.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from st_infocse.losses.registry import INFORMIN_LAMBDA, PRESETS, flag_value

__all__ = ["RECIPES", "TRAIN_DATA_NOTE", "Published", "Recipe", "UnknownRecipeError", "format_recipe",
           "format_recipe_list", "get_recipe", "run_data_flags"]

WIKI1M_URL = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
TRAIN_DATA_NOTE = (
    "Every recipe trains on wiki1m_for_simcse.txt, SimCSE's 1M Wikipedia sentences, as papers 000, 001 and 003 do "
    f"({WIKI1M_URL}, what the authors' data/download_wiki.sh fetches). Without --train_data the command line reads "
    "it from the hub (the train command's default); offline, download it once and pass --train_data "
    "wiki1m_for_simcse.txt. STS-B dev likewise: --stsb_dev hub (default) or a SentEval data/downstream folder."
)


class UnknownRecipeError(ValueError):
    """A recipe name that is not in :data:`RECIPES`; the message names the known ones."""


@dataclass(frozen=True)
class Published:
    """One number a recipe should reach (x100), and where it was reported.

    ``metric`` is ``"STS avg"`` (Spearman, SentEval's "all": STS12-16, STS-B test, SICK-R), ``"STS-B dev"`` or a
    retrieval metric. A paper's number is its ``value``; a number measured by this package has none (``None``), as
    measurements live with their benchmark: ``where`` names the results file, domain and row that hold it.
    """

    metric: str
    value: float | None
    where: str

    def __str__(self) -> str:
        if self.value is None:
            return f"{self.metric} (measured: {self.where})"
        return f"{self.metric} {self.value:.2f} ({self.where})"


@dataclass(frozen=True)
class Recipe:
    """One run as ``st-infocse train`` flags, built from ``(flag, value, origin)`` rows kept in the order given.

    ``flags`` maps each ``--flag`` to its value as typed on a command line; ``origins`` says where each value comes
    from (script line, paper section or table); ``notes`` where the recipe departs from its source, and why.
    ``released`` is False for a setting measured by this package rather than a paper's run. ``requires`` names the
    flags the recipe cannot set for you (your documents, your queries): the command line refuses it without them.
    """

    name: str
    source: str
    published: tuple[Published, ...]
    settings: tuple[tuple[str, str, str], ...] = field(repr=False)
    notes: tuple[str, ...] = ()
    released: bool = True
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        flags = [flag for flag, _, _ in self.settings]
        if len(set(flags)) != len(flags) or "--objective" not in flags:
            raise ValueError(f"recipe {self.name}: --objective is needed and no flag may be set twice")
        if not all(flag.startswith("--") for flag in flags):
            raise ValueError(f"recipe {self.name}: flags are spelled --name")

    @property
    def flags(self) -> Mapping[str, str]:
        return MappingProxyType({flag: value for flag, value, _ in self.settings})

    @property
    def origins(self) -> Mapping[str, str]:
        return MappingProxyType({flag: origin for flag, _, origin in self.settings})

    @property
    def objective(self) -> str:
        return self.flags["--objective"]

    @property
    def precision(self) -> str | None:
        """``"fp16"``/``"bf16"`` when the recipe trains in mixed precision, else ``None`` (fp32)."""
        for kind in ("fp16", "bf16"):
            if self.flags.get(f"--{kind}", "false").lower() == "true":
                return kind
        return None

    def to_argv(self) -> list[str]:
        """The flags as a command line: ``["--objective", "infocse", "--model", ...]``; a value of several words
        (``--lora_target_modules query key value``) is that flag's list of values."""
        return [item for flag, value in self.flags.items() for item in (flag, *value.split(" "))]


# Line numbers refer to the scripts in the authors' repositories (princeton-nlp/SimCSE at 49fa580,
# caskcsg/sentemb at 5eeec55, ShaobinChen-AH/InforMin-CL at 37adb01); sections and tables to the papers
# (000 InfoCSE, 001 InforMin-CL, 003 CMLM-CSE). docs/REPRODUCING.md maps each flag to the authors' code.

_SIMCSE = "princeton-nlp/SimCSE run_unsup_example.sh"
_INFOCSE = "caskcsg/sentemb InfoCSE/Infocse-bert-base.sh"
_INFOCSE_LARGE = "caskcsg/sentemb InfoCSE/InfoCSE-bert-large.sh"
_NOT_STATED_003 = "not stated in paper 003; SimCSE's unsupervised setting, which its §4.1 adopts"
_INFOCSE_PRESET, _CMLM_CSE_PRESET = PRESETS["infocse"], PRESETS["cmlm-cse"]
# SimCSE's unsupervised training as (flag, value, line of run_unsup_example.sh): the SimCSE recipe's rows, and the
# setting paper 003 §4.1 adopts without stating it, so the CMLM-CSE recipe takes these values.
_SIMCSE_TRAINING = (
    ("--temperature", "0.05", "line 22 (--temp 0.05)"),
    ("--learning_rate", "3e-5", "line 13"),
    ("--num_train_epochs", "1", "line 11"),
    ("--per_device_train_batch_size", "64", "line 12"),
    ("--max_seq_length", "32", "line 14"),
    ("--eval_steps", "125", "lines 15-18 (STS-B dev every 125 steps, best checkpoint kept)"),
    ("--fp16", "true", "line 25"),
)
_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# The measured recipes' numbers: the results file, domain and row that hold them (mean over the row's seeds, last
# step, CPU fp32). The documentation reads the numbers there at every build.
_AUX_MECHANISM = "benchmarks/results/aux_mechanism.json, setting weight-1"
_ADAPTATION = "benchmarks/results/adaptation.json, domain {domain}, row {row}"
_REUTERS, _SCIFACT = "Reuters article -> headline nDCG@10", "SciFact nDCG@10"
# The adaptation benchmark's budget, shared by its recipes: (flag, value, origin).
_ADAPT_BUDGET = (
    ("--learning_rate", "2e-5", "the benchmark's budget (paper 002 Table 5's learning rate)"),
    ("--warmup_steps", "0.1", "the benchmark's linear warm-up, a tenth of the steps"),
    ("--num_train_epochs", "1", "at most; --max_steps ends the run first"),
    ("--max_steps", "100", "the benchmark's budget (100 x 32)"),
    ("--per_device_train_batch_size", "32", "the benchmark's batch"),
    ("--max_seq_length", "128", "the training length; the model is scored and saved at its own"),
    ("--keep_trained_if", "reliable", "the trained model only when its gain on your queries is reliable (95% "
     "interval over them above zero), else your model as given (docs/your-own-model.md)"),
)
_ADAPT_MODEL = ("--model", _MINILM, "the benchmark's start model; give yours (its pooling, Normalize and length stay)")
# The IDC settings of the adaptation benchmark's rows idc-mpnet-mnrl-r1*, shared by their recipes.
_IDC_MPNET = (
    ("--objective", "idc", "paper 002: pairs of sentences of one document, clustered by a model"),
    _ADAPT_MODEL,
    ("--idc_annotator", "sentence-transformers/all-mpnet-base-v2", "paper 002 Table 3 (5): a stronger "
     "model's annotations for the first round (the benchmark's best row)"),
    ("--idc_max_docs", "500", "the benchmark mined a seeded 500-document subset (all-mpnet-base-v2 encodes "
     "several times slower than all-MiniLM-L6-v2)"),
    ("--rounds", "1", "one round: the benchmark's row (round 2 not measured)"),
    ("--idc_loss", "mnrl", "MultipleNegativesRankingLoss on the mined pairs, document-aware batches"),
)
_ADAPT_CHECK = (
    "Judged on test queries no choice had used: a gain on some domains and none on others, which only your own "
    "held-out queries can tell. So the recipe requires --eval_retrieval, a folder of your queries and documents in "
    "BEIR's layout (docs/your-own-model.md); the run is scored on it before and after training and keeps the trained "
    "model only when its gain on your queries is reliable, else hands back yours."
)


def _adapt(name: str, row: str, settings: tuple, measured: str, data: str, requires: str) -> Recipe:
    """A recipe of the adaptation benchmark's ``row``: its notes are how it was measured, the check every adapt-*
    recipe makes on your queries, and the data it needs (``requires``, beside --eval_retrieval); its published
    metrics are the benchmark's two test metrics of ``row``, cited where they are stored."""
    published = tuple(Published(metric, None, _ADAPTATION.format(domain=domain, row=row))
                      for domain, metric in (("reuters", _REUTERS), ("scifact", _SCIFACT)))
    return Recipe(name, source=f"benchmarks/adaptation.py, row {row} (measured by this package on {_MINILM[22:]})",
                  published=published, settings=settings, notes=(measured, _ADAPT_CHECK, data), released=False,
                  requires=(requires, "--eval_retrieval"))


def _infocse_script(script: str, layers: int, model: tuple[str, str], pooling: str, lambda_note: str, detach: str,
                    fusion: str, eval_steps: str) -> tuple[tuple[str, str, str], ...]:
    """The rows of an InfoCSE release script (base and large share its line numbers): ``model`` is the checkpoint and
    its line's note; the other arguments are the notes that differ between the two scripts."""
    mask_rate = flag_value(_INFOCSE_PRESET.mask_rate(layers))
    return (
        ("--objective", "infocse", f"{script} lines 5, 26 (train_cls_mlm.py --do_mlm)"),
        ("--model", model[0], f"{script} {model[1]}"),
        ("--pooling", "cls", f"{script} {pooling}"),
        ("--projection", _INFOCSE_PRESET.projection, f"{script} lines 17-18, 27 (--mlp_only_train --batchnorm)"),
        ("--k", str(_INFOCSE_PRESET.k(layers)), f"{script} line 25 (--skip_from 6)"),
        ("--n", str(_INFOCSE_PRESET.n), f"{script} line 24 (--n_head_layers 2)"),
        ("--mask_rate", mask_rate, f"{script} lines 1, 29 (mlm_rate={mask_rate})"),
        ("--lambda", flag_value(_INFOCSE_PRESET.lambda_), f"{script} {lambda_note}"),
        ("--detach", str(_INFOCSE_PRESET.detach).lower(), detach),
        ("--fusion_init", _INFOCSE_PRESET.fusion_init, fusion),
        ("--temperature", "0.05", f"{script} line 20 (--temp 0.05)"),
        ("--learning_rate", "7e-6", f"{script} line 11"),
        ("--num_train_epochs", "2", f"{script} line 9"),
        ("--per_device_train_batch_size", "64", f"{script} line 10"),
        ("--max_seq_length", "32", f"{script} line 12"),
        ("--eval_steps", "125", f"{script} {eval_steps}"),
        ("--fp16", "true", f"{script} line 23"),
    )


_RECIPES = (
    Recipe(
        "simcse-bert-base",
        source=f"{_SIMCSE} (SimCSE, Gao et al. 2021)",
        published=(Published("STS avg", 76.25, "paper 000 Table 2, the released unsup-simcse-bert-base-uncased"),
                   Published("STS-B dev", 82.45, "paper 000 Tables 5 and 9")),
        settings=(
            ("--objective", "simcse", f"{_SIMCSE} (train.py: unsupervised SimCSE)"),
            ("--model", "bert-base-uncased", f"{_SIMCSE} line 8"),
            ("--pooling", "cls", f"{_SIMCSE} line 19 (--pooler_type cls; evaluated as cls_before_pooler)"),
            ("--projection", "mlp", f"{_SIMCSE} lines 19-20 (--pooler_type cls --mlp_only_train)"),
            *((flag, value, f"{_SIMCSE} {line}") for flag, value, line in _SIMCSE_TRAINING),
        ),
    ),
    Recipe(
        "infocse-bert-base",
        source=f"{_INFOCSE} (paper 000, InfoCSE)",
        published=(Published("STS avg", 78.85, "paper 000 Table 2"),
                   Published("STS-B dev", 85.49, "paper 000 Tables 4-9")),
        settings=_infocse_script(
            _INFOCSE, 12, ("Luyu/condenser", "line 6 (stage 1 = Condenser's pre-training)"),
            pooling="line 17 (--pooler_type cls; evaluated as cls_before_pooler)",
            lambda_note="lines 2, 28 (mlm_weight=0.00001); paper 000 Table 8",
            detach=f"{_INFOCSE} line 30 (--mlm_eval: frozen copy, eval mode); paper 000 §3.2",
            fusion="docs/REPRODUCING.md: the hub checkpoint carries no Condenser head",
            eval_steps="lines 13-16 (STS-B dev every 125 steps, best checkpoint kept)",
        ),
        notes=(
            "The script, not paper 000 §4.2, is the configuration: §4.2 says one epoch at lr 3e-5 with lambda 0.005, "
            "but the released script (2 epochs, lr 7e-6, lambda 1e-5) produced the published numbers, and the "
            "paper's own Table 8 finds lambda 1e-5 best (docs/REPRODUCING.md).",
            "Table 12 of paper 000 lists 78.49 as the STS average of the same configuration; Table 2 and the "
            "authors' README give 78.85, the number used here.",
        ),
    ),
    Recipe(
        "infocse-bert-large",
        source=f"{_INFOCSE_LARGE} (paper 000, InfoCSE)",
        published=(Published("STS avg", 80.18, "paper 000 Table 2"),),
        settings=_infocse_script(
            _INFOCSE_LARGE, 24,
            ("ffgcc/condenser-bert-large-uncased",
             "line 6 (the authors' Condenser-style BERT-large, InfoCSE/README.md)"),
            pooling="line 17 (--pooler_type cls)", lambda_note="lines 2, 28 (mlm_weight=0.00001)",
            detach="paper 000 §3.2 (frozen lower layers); see notes on --mlm_eval",
            fusion="docs/REPRODUCING.md (as infocse-bert-base)", eval_steps="lines 13-16",
        ),
        notes=(
            "The large script has no --mlm_eval, so the authors' frozen copy ran with dropout on (under no_grad); the "
            "package runs it in eval mode, as the base script and the paper do (docs/REPRODUCING.md, 'Large model').",
            "The released script does not run as written: line 6 ends in '\\ # the large model ...', so bash passes "
            "the comment as arguments and ends the command there. The values are read from lines 1-29 as intended.",
            "Paper 000 reports no STS-B dev score for BERT-large.",
        ),
    ),
    Recipe(
        "informin-bert-base",
        source="paper 001 (InforMin-CL) §4.1 'Training Details' and Table 3",
        published=(Published("STS avg", 77.30, "paper 001 Table 2; Tables 5-7"),),
        settings=(
            ("--objective", "informin", "paper 001 §3, eq. 9 (contrastive + lambda * reconstruction)"),
            ("--model", "bert-base-uncased", "paper 001 §4.1 (pre-trained BERT, uncased); Table 3 'BERT base'"),
            ("--pooling", "cls", "paper 001 §4.1 ([CLS] representation at testing time)"),
            ("--projection", "mlp", "paper 001 §4.1 (an MLP layer on top of [CLS] during training)"),
            ("--lambda", flag_value(INFORMIN_LAMBDA), "paper 001 Table 3 (BERT-base); Table 5"),
            ("--temperature", "0.05", "paper 001 §4.1 (temperature 0.05)"),
            ("--learning_rate", "3e-5", "paper 001 Table 3 (BERT-base)"),
            ("--num_train_epochs", "1", "paper 001 §4.1 (epoch: 1)"),
            ("--per_device_train_batch_size", "128", "paper 001 Table 3 (BERT-base); Table 7"),
            ("--max_seq_length", "32", "not stated in paper 001; released run_unsup_example.sh line 14 (SimCSE's)"),
            ("--eval_steps", "125", "paper 001 §4.1 keeps the best STS-B dev checkpoint, interval not stated; "
             "released run_unsup_example.sh line 18"),
            ("--fp16", "true", "not stated in paper 001; released run_unsup_example.sh line 25"),
        ),
        notes=(
            "The paper's Table 3 setting, not the released run_unsup_example.sh: that script is SimCSE's example "
            "(lr 5e-5, cls_before_pooler without MLP, reconstruction weight 1.0, train.py's MLM term at 0.1), the "
            "paper's 'w/ MLM' variant at 63.25 (Table 6), which cannot have produced 77.30 (docs/REPRODUCING.md).",
            "Paper 001 reports no STS-B dev score.",
        ),
    ),
    Recipe(
        "cmlm-cse-bert-base",
        source="paper 003 (CMLM-CSE) §3.2, §4.1 and Tables 2-6; no code released",
        published=(Published("STS avg", 76.80, "paper 003 Table 6, row 8-3"),
                   Published("STS-B dev", 83.76, "paper 003 Tables 2-6")),
        settings=(
            ("--objective", "cmlm-cse", "paper 003 §3, eq. 6 (contrastive + lambda * conditional MLM)"),
            ("--model", "bert-base-uncased", f"paper 003 §4.1 'Bert' (casing {_NOT_STATED_003})"),
            ("--pooling", "cls", "paper 003 §3.1 ('the same structure as SimCSE': the [CLS] embedding)"),
            ("--projection", _CMLM_CSE_PRESET.projection, f"{_NOT_STATED_003} (MLP on [CLS], training only)"),
            ("--k", str(_CMLM_CSE_PRESET.k(12)), "paper 003 §4.1 (the first eight layers, frozen); Table 6 row 8-3"),
            ("--n", str(_CMLM_CSE_PRESET.n), "paper 003 §4.1 (three Transformer blocks); Table 6 row 8-3"),
            ("--mask_rate", flag_value(_CMLM_CSE_PRESET.mask_rate(12)),
             "paper 003 §4.3.2 (2) (random word masking of 15%); Table 4"),
            ("--lambda", flag_value(_CMLM_CSE_PRESET.lambda_), "paper 003 Table 5; §4.3.2 (5) (lambda = 0.005)"),
            ("--detach", str(_CMLM_CSE_PRESET.detach).lower(), "paper 003 §3.2, §4.1 (lexical feature extractor frozen)"),
            ("--fusion_init", _CMLM_CSE_PRESET.fusion_init,
             "no code: the package's choice, as InfoCSE's code (docs/REPRODUCING.md)"),
            *((flag, value, _NOT_STATED_003 + (" (§3.2: 'the fixed sentence length')" if flag == "--max_seq_length"
                                                else "")) for flag, value, _ in _SIMCSE_TRAINING),
        ),
        notes=(
            "Without code, three choices are the package's (docs/REPRODUCING.md): fresh fusion layers, the "
            "checkpoint's own MLM head (untied) and the frozen extractor in eval mode.",
            "Mask 0.15, not Table 4's best 0.40 (84.09 dev in that ablation only): the headline 83.76 / 76.80 row is "
            "the 15% one. Table 1's own CMLM-CSE-BERT-base row is unreadable in the paper's text; 76.80 is Table 6's "
            "8-3 row, SimCSE's 76.25 + the 0.55 the abstract states.",
        ),
    ),
    Recipe(
        "infocse-minilm-decoder-first",
        source=f"benchmarks/aux_mechanism.py, setting weight-1 (measured by this package on {_MINILM})",
        published=(Published("STS avg", None, _AUX_MECHANISM), Published("STS-B dev", None, _AUX_MECHANISM)),
        settings=(
            ("--objective", "infocse", "paper 000: contrastive + lambda * conditional MLM"),
            ("--model", _MINILM, "a contrastively pre-trained sentence-transformers model (the benchmark's)"),
            ("--pooling", "cls", "the benchmark's pooling (InfoCSE's h is the [CLS] embedding)"),
            ("--projection", _INFOCSE_PRESET.projection, "InfoCSE's released head (its default)"),
            ("--lambda", "1", "benchmark weight sweep 1e-5, 1e-3, 0.1, 1: best STS avg and STS-B dev at 1"),
            ("--aux_gradient", "full", "the decoder learns from the unweighted MLM gradient (not damped by lambda)"),
            ("--aux_learning_rate", "1e-4", "the decoder's own learning rate in the benchmark"),
            ("--decoder_warmup_steps", "150", "the decoder first trained alone on the frozen model (the probe's 150)"),
            ("--decoder_warmup_learning_rate", "5e-4", "the probe decoder's learning rate"),
            ("--temperature", "0.05", "SimCSE's and InfoCSE's"),
            ("--learning_rate", "3e-5", "the benchmark's encoder learning rate"),
            ("--num_train_epochs", "1", "at most; --max_steps ends the run first"),
            ("--max_steps", "200", "the benchmark's budget (200 x 64 sentences)"),
            ("--per_device_train_batch_size", "64", "the benchmark's batch"),
            ("--max_seq_length", "32", "the benchmark's training length"),
            ("--eval_steps", "50", "the benchmark's STS-B dev interval"),
            ("--save_steps", "50", "a checkpoint at every evaluation, so the best one can be kept"),
        ),
        notes=(
            "Measured on CPU in fp32 over seeds 0-2, 200 steps on 12,800 Wikipedia sentences from the model re-pooled "
            "with [CLS], scored at the last step: above SimCSE and InfoCSE as released on STS avg and STS-B dev, with "
            "the decoder reading the sentence embedding. This recipe warms the decoder on your texts and keeps the "
            "best STS-B dev checkpoint. Not measured on BERT-base or longer runs (docs/auxiliary-objective.md).",
            "Not for retrieval in your domain: on SciFact it lowered nDCG@10 while STS-B dev held "
            "(docs/your-own-model.md); the adapt-* recipes measure your own queries and hand back your model.",
        ),
        released=False,
    ),
    _adapt(
        "adapt-idc-mpnet", "idc-mpnet-mnrl-r1", (*_IDC_MPNET, *_ADAPT_BUDGET),
        "Measured with the benchmark's one budget for every row: nDCG@10 over seeds 0-2, the confirmation half "
        "(test queries no choice used) for seed 0's model only: on Reuters-21578 news well above the model as "
        "shipped, on SciFact within noise.",
        "--docs: documents as `st-infocse mine --docs` reads them; 500 of them (a --seed sample) are mined by "
        "all-mpnet-base-v2 (downloaded once from the hub) and trained on. No STS-B dev unless you add it.", "--docs",
    ),
    _adapt(
        "adapt-idc-mpnet-lora", "idc-mpnet-mnrl-r1-lora-lr1e-4", (
            *_IDC_MPNET,
            ("--lora_r", "8", "a rank-8 LoRA adapter trains, every other weight frozen (the benchmark's rank, fixed "
             "before any run); merged into the saved model"),
            ("--lora_alpha", "16", "the benchmark's scaling, alpha / r = 2"),
            ("--lora_target_modules", "query key value", "the attention projections of BERT-family encoders "
             "(all-MiniLM-L6-v2); MPNet calls them q k v"),
            ("--learning_rate", "1e-4", "the adapter's rate in the benchmark (its 2e-5 barely moves a rank-8 "
             "adapter in 100 steps)"),
            ("--idc_precision", "bf16", "the annotator mines under bf16 autocast where the CPU or GPU computes bf16 "
             "natively (fp32 elsewhere): nearly all of fp32's pairs in less time, and the same verdicts and "
             "confirmation-half change within noise (benchmarks/annotator_backends.py, benchmarks/adaptation_recipe.py; "
             "docs/mining.md)"),
            ("--bf16", "true", "the adapter trains under bf16 autocast where bf16 is native (on a CPU without it, "
             "fp32 with a warning): the same verdicts and confirmation-half change within noise in less time "
             "(benchmarks/adaptation_recipe.py)"),
            *(row for row in _ADAPT_BUDGET if row[0] != "--learning_rate"),
        ),
        "Measured with the benchmark's one budget for every row, nDCG@10 over seeds 0-2 (each query's score "
        "averaged over them) on the confirmation half of the test queries (no choice used them), the 95% "
        "interval over those queries: on Reuters-21578 news a gain, on SciFact within noise (its interval "
        "touches zero); STS avg and STS-B dev held at the shipped model's, where adapt-idc-mpnet, which trains "
        "every weight, lowers STS avg.",
        "--docs: as adapt-idc-mpnet (500 of them, a --seed sample, mined by all-mpnet-base-v2). Only the "
        "adapter trains and the saved model is your model with the adapter merged in; when the keep rule hands "
        "back your model, the summary says the adapter is not in it. Needs the lora extra (peft).", "--docs",
    ),
    _adapt(
        "adapt-informin", "informin", (
            ("--objective", "informin", "paper 001: SimCSE's contrastive loss plus the reconstruction term, defaults"),
            _ADAPT_MODEL,
            ("--split_sentences", "true", "the benchmark trained on the domain's sentences, not whole documents"),
            ("--projection", "mlp", "InforMinReconstructionLoss's default head, as the benchmark trained it"),
            *_ADAPT_BUDGET,
            ("--eval_steps", "100", "one evaluation, at the end: the benchmark scored the last step"),
            ("--save_steps", "100", "a checkpoint at that evaluation"),
        ),
        "Measured as adapt-idc-mpnet, seeds 0-2 (the confirmation half too): on Reuters-21578 news a gain, on "
        "SciFact within noise; STS avg rose. No annotator and no documents needed; adapt-idc-mpnet gains more on "
        "news but needs both and lowers STS avg. Half of the change (--weight_anchor 0.5) kept less of the news "
        "gain, within noise on SciFact.",
        "--train_data: your unlabelled text (a text file, one text per line, or JSON lines / CSV with a text "
        "column); each text is split into sentences. The benchmark kept sentences of five words or more.",
        "--train_data",
    ),
)

RECIPES: Mapping[str, Recipe] = MappingProxyType({recipe.name: recipe for recipe in _RECIPES})
"""Every recipe by name, in the order ``st-infocse recipes`` lists them."""


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; :class:`UnknownRecipeError` (a ``ValueError``) naming the known ones otherwise.

    >>> recipe = get_recipe("infocse-bert-base")
    >>> recipe.flags["--learning_rate"], recipe.flags["--mask_rate"], recipe.precision
    ('7e-6', '0.4', 'fp16')
    """
    try:
        return RECIPES[name]
    except KeyError:
        raise UnknownRecipeError(f"unknown recipe {name!r}; known recipes: {', '.join(RECIPES)}") from None


def _published(recipe: Recipe) -> str:
    return "; ".join(str(number) for number in recipe.published)


_SHOWN = (("--lambda", "lambda"), ("--k", "k"), ("--n", "n"), ("--mask_rate", "mask"), ("--projection", "head"))


def _key_settings(recipe: Recipe) -> str:
    flags, epochs = recipe.flags, recipe.flags["--num_train_epochs"]
    parts = [f"{recipe.objective} on {flags['--model']}", f"lr {flags['--learning_rate']}",
             f"{epochs} epoch{'' if epochs == '1' else 's'}", f"batch {flags['--per_device_train_batch_size']}"]
    return ", ".join(parts + [f"{label} {flags[flag]}" for flag, label in _SHOWN if flag in flags])


def format_recipe_list() -> str:
    """What ``st-infocse recipes`` (or ``train --recipe list``) prints: each recipe's key settings, source and
    published numbers with their tables.

    >>> "STS avg 78.85 (paper 000 Table 2)" in format_recipe_list()
    True
    """
    lines = ["Recipes for st-infocse train --recipe NAME (x100, Spearman for STS; a measured recipe names the results "
             "file that holds its numbers):", ""]
    for recipe in RECIPES.values():
        lines += [recipe.name, f"    settings   {_key_settings(recipe)}", f"    source     {recipe.source}",
                  f"    published  {_published(recipe)}"]
    lines += [
        "",
        "st-infocse train --recipe NAME [--train_data wiki1m_for_simcse.txt] [--output_dir DIR] [any other flag]",
        "  every flag you give wins over the recipe's, wherever it stands; st-infocse recipes NAME shows a recipe's",
        "  flags, where each value comes from, and its notes.",
        "",
        textwrap.fill(TRAIN_DATA_NOTE, width=116, break_long_words=False, break_on_hyphens=False),
    ]
    return "\n".join(lines)


def format_recipe(name: str) -> str:
    """One recipe in full: source, published numbers, every flag with its origin, and the notes.

    >>> print(format_recipe("simcse-bert-base").splitlines()[0])
    simcse-bert-base: princeton-nlp/SimCSE run_unsup_example.sh (SimCSE, Gao et al. 2021)
    """
    recipe = get_recipe(name)
    width = max(len(flag) + 1 + len(value) for flag, value in recipe.flags.items())
    lines = [f"{recipe.name}: {recipe.source}", f"published: {_published(recipe)}", "", "flags:"]
    lines += [f"  {f'{flag} {value}'.ljust(width)}  {recipe.origins[flag]}" for flag, value in recipe.flags.items()]
    if recipe.notes:
        lines += ["", "notes:", *(f"  - {note}" for note in recipe.notes)]
    lines += ["", f"run: st-infocse train --recipe {recipe.name} {run_data_flags(recipe)} --output_dir DIR"]
    return "\n".join(lines)


def run_data_flags(recipe: Recipe) -> str:
    """The data part of a recipe's command line: what it requires, or the authors' training data."""
    placeholders = {"--docs": "YOUR_DOCUMENTS.jsonl", "--eval_retrieval": "YOUR_QUERIES_DIR", "--model": "YOUR_MODEL",
                    "--train_data": "YOUR_TEXT.txt"}
    if recipe.requires:
        return " ".join(f"{flag} {placeholders.get(flag, flag[2:].upper())}" for flag in recipe.requires)
    return "--train_data wiki1m_for_simcse.txt"
