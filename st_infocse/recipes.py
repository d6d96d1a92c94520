"""Named recipes: one command per published row, ``st-infocse train --recipe NAME``.

A recipe is the exact configuration of one released run (the authors' training script where there is one, the
paper's stated settings where there is none), written as the ``st-infocse train`` flags that reproduce it, each
with the line or section it was read from, and the published number the run should reach. The command line puts
a recipe's flags first, so every flag you give yourself wins, wherever it stands::

    st-infocse train --recipe infocse-bert-base --train_data wiki1m_for_simcse.txt --output_dir out/infocse
    st-infocse train --recipe infocse-bert-base --learning_rate 3e-5     # the recipe with one change
    st-infocse recipes                                                   # the table (or: train --recipe list)

In Python:

    >>> from st_infocse.recipes import get_recipe, recipe_flags
    >>> recipe = get_recipe("infocse-bert-base")
    >>> recipe.flags["--learning_rate"], recipe.flags["--mask_rate"], recipe.precision
    ('7e-6', '0.4', 'fp16')
    >>> recipe_flags("simcse-bert-base")[:4]
    ['--objective', 'simcse', '--model', 'bert-base-uncased']
    >>> print(recipe.published[0])
    STS avg 78.85 (paper 000 Table 2)

Recipes set no training data and no STS-B dev source: both default to the authors' own (wiki1m and STS-B dev from
the hub, see :data:`TRAIN_DATA_NOTE`); pass ``--train_data`` / ``--stsb_dev`` for local copies. Mixed precision is
the scripts' fp16; the command line keeps it on a GPU and chooses for a CPU at run time (bf16 where the CPU has
native bf16, fp32 otherwise) and prints its choice.

The objectives' own values (weight, mask rate, ``k``, ``n``) are read from their presets in
:mod:`st_infocse.losses.registry`, which the losses use as defaults: a recipe and a loss built without arguments
agree by construction. This module imports nothing heavy: the command line expands a recipe before torch is
imported. Over 500 lines: most of it is data, every flag of every recipe with the line or table it was read from.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from st_infocse.losses.registry import INFORMIN_LAMBDA, PRESETS, flag_value

__all__ = [
    "RECIPES",
    "TRAIN_DATA_NOTE",
    "Published",
    "Recipe",
    "UnknownRecipeError",
    "format_recipe",
    "format_recipe_list",
    "get_recipe",
    "recipe_flags",
    "recipe_names",
    "run_data_flags",
]

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
    """One published number a recipe should reach (x100).

    ``metric`` is ``"STS avg"`` (Spearman, the mean over STS12-16, STS-B test and SICK-R, SentEval's "all" setting),
    ``"STS-B dev"`` (the best checkpoint's STS-B development score), or a retrieval metric of a named test for the
    recipes measured by this package on a domain (e.g. ``"Reuters headline -> article nDCG@10"``); ``where`` names
    the paper and table, or the benchmark's results file.
    """

    metric: str
    value: float
    where: str

    def __str__(self) -> str:
        return f"{self.metric} {self.value:.2f} ({self.where})"


@dataclass(frozen=True)
class Recipe:
    """One released run as ``st-infocse train`` flags.

    Attributes:
        name: what ``--recipe`` takes, e.g. ``infocse-bert-base``.
        objective: the ``--objective`` it trains (also in ``flags``).
        flags: ordered ``--flag -> value`` mapping, every value a string as typed on a command line.
        origins: for each flag, where its value comes from (script line, paper section or table).
        source: the script or paper the recipe reproduces.
        published: the numbers the run should reach, with the table each comes from.
        notes: where the recipe departs from, or goes beyond, its source, and why.
        released: True for a paper's released run; False for a setting measured by this package (its numbers come
            from ``benchmarks/results``, not a paper).
        requires: flags the run cannot go without, which the recipe cannot set for you (your documents, your own
            queries); the command line refuses the recipe without them, naming them.
    """

    name: str
    objective: str
    flags: Mapping[str, str] = field(hash=False)
    origins: Mapping[str, str] = field(hash=False, repr=False)
    source: str
    published: tuple[Published, ...]
    notes: tuple[str, ...] = ()
    released: bool = True
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.flags.get("--objective") != self.objective:
            raise ValueError(f"recipe {self.name}: --objective must be {self.objective!r}")
        if set(self.flags) != set(self.origins):
            raise ValueError(f"recipe {self.name}: every flag needs its origin")
        if not all(flag.startswith("--") for flag in self.flags):
            raise ValueError(f"recipe {self.name}: flags are spelled --name")

    @property
    def model(self) -> str:
        return self.flags["--model"]

    @property
    def precision(self) -> str | None:
        """``"fp16"``/``"bf16"`` when the recipe trains in mixed precision, else ``None`` (fp32)."""
        for kind in ("fp16", "bf16"):
            if self.flags.get(f"--{kind}", "false").lower() == "true":
                return kind
        return None

    def to_argv(self) -> list[str]:
        """The flags as a command line: ``["--objective", "infocse", "--model", ...]``."""
        return [item for flag, value in self.flags.items() for item in (flag, value)]


def _recipe(
    name: str,
    source: str,
    published: Sequence[Published],
    settings: Sequence[tuple[str, str, str]],
    notes: Sequence[str] = (),
    released: bool = True,
    requires: Sequence[str] = (),
) -> Recipe:
    """A :class:`Recipe` from ``(flag, value, origin)`` rows, kept in the order given."""
    flags = {flag: value for flag, value, _ in settings}
    if len(flags) != len(settings):
        raise ValueError(f"recipe {name}: a flag is set twice")
    return Recipe(
        name=name,
        objective=flags["--objective"],
        flags=MappingProxyType(flags),
        origins=MappingProxyType({flag: origin for flag, _, origin in settings}),
        source=source,
        published=tuple(published),
        notes=tuple(notes),
        released=released,
        requires=tuple(requires),
    )


# ------------------------------------------------------------------------------------------------ the recipes
# Line numbers refer to the scripts in the authors' repositories (princeton-nlp/SimCSE at 49fa580,
# caskcsg/sentemb at 5eeec55, ShaobinChen-AH/InforMin-CL at 37adb01); sections and tables to the papers
# (000 InfoCSE, 001 InforMin-CL, 003 CMLM-CSE). docs/REPRODUCING.md maps each flag to the authors' code.

_SIMCSE = "princeton-nlp/SimCSE run_unsup_example.sh"
_INFOCSE = "caskcsg/sentemb InfoCSE/Infocse-bert-base.sh"
_INFOCSE_LARGE = "caskcsg/sentemb InfoCSE/InfoCSE-bert-large.sh"
_NOT_STATED_003 = "not stated in paper 003; SimCSE's unsupervised setting, which its §4.1 adopts"
_INFOCSE_PRESET, _CMLM_CSE_PRESET = PRESETS["infocse"], PRESETS["cmlm-cse"]
_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_MEASURED = "benchmarks/results/aux_mechanism.json, 3 seeds, last step, CPU fp32"
_ADAPTATION = "benchmarks/results/adaptation.json, 3 seeds, last step, CPU fp32"
_ADAPT_REUTERS, _ADAPT_SCIFACT = 66.21, 64.80  # adapt-idc-mpnet (row idc-mpnet-mnrl-r1)
_INFORMIN_REUTERS, _INFORMIN_SCIFACT = 63.19, 64.76  # adapt-informin (row informin)
# Each row's change on the confirmation half of the test queries (no choice used them), 95% interval over them:
# what the benchmark claims (benchmarks/results/adaptation.md, "Over queries").
_CONFIRMED = {
    "idc-mpnet-mnrl-r1": {"reuters": "+8.56 (95% CI +7.65 to +9.51): a gain",
                          "scifact": "-0.34 (95% CI -2.34 to +1.65): within noise"},
    "informin": {"reuters": "+5.41 (95% CI +4.79 to +6.03): a gain",
                 "scifact": "+0.69 (95% CI -1.93 to +3.28): within noise"},
}
_REUTERS_HALF, _SCIFACT_HALF = "on 2,729 confirmation articles", "on 150 confirmation claims"
# The adaptation benchmark's budget, shared by its recipes: (flag, value, origin).
_ADAPT_BUDGET = (
    ("--learning_rate", "2e-5", "the benchmark's budget (paper 002 Table 5's learning rate)"),
    ("--warmup_steps", "0.1", "the benchmark's linear warm-up, a tenth of the steps"),
    ("--num_train_epochs", "1", "at most; --max_steps ends the run first"),
    ("--max_steps", "100", "the benchmark's budget (100 x 32)"),
    ("--per_device_train_batch_size", "32", "the benchmark's batch"),
    ("--max_seq_length", "128", "the training length; the model is scored and saved at its own"),
)

# The adaptation recipes hand back the trained model only when its gain on the user's queries is reliable.
_KEEP_RELIABLE = ("--keep_trained_if", "reliable", "the trained model only when its gain on your queries is reliable "
                  "(95% interval over them above zero), else your model as given (docs/your-own-model.md)")
# InforMin-CL on the sentences of the user's text with that budget: adapt-informin.
_ADAPT_INFORMIN = (
    ("--objective", "informin", "paper 001: SimCSE's contrastive loss plus the reconstruction term, defaults"),
    ("--model", _MINILM, "the benchmark's start model; give yours: its own pooling, Normalize and length stay"),
    ("--split_sentences", "true", "the benchmark trained on the domain's sentences, not whole documents"),
    ("--projection", "mlp", "InforMinReconstructionLoss's default head, as the benchmark trained it"),
    *_ADAPT_BUDGET,
    ("--eval_steps", "100", "one evaluation, at the end: the benchmark scored the last step"),
    ("--save_steps", "100", "a checkpoint at that evaluation"),
    _KEEP_RELIABLE,
)
_OWN_TEXT_NOTES = (
    "So the recipe requires --eval_retrieval: a folder of your own queries and documents in BEIR's layout "
    "(docs/your-own-model.md), not built from the training text. The run is scored on it before and after "
    "training and keeps the trained model only when its gain on your queries is reliable (the 95% interval over "
    "them above zero), else hands back yours.",
    "--train_data: your unlabelled text (a text file, one text per line, or JSON lines / CSV with a text "
    "column); each text is split into sentences. The benchmark kept sentences of five words or more.",
)

def _infocse_script(script: str, layers: int, model: tuple[str, str], pooling: str, lambda_note: str, detach: str,
                    fusion: str, eval_steps: str) -> tuple[tuple[str, str, str], ...]:
    """The rows of an InfoCSE release script (base and large share its line numbers): ``model`` is the checkpoint and
    its line's note; the other arguments are the notes that differ between the two scripts."""
    mask_rate = flag_value(_INFOCSE_PRESET.mask_rate(layers))
    return (
        ("--objective", "infocse", f"{script} lines 5, 26 (train_cls_mlm.py --do_mlm)"),
        ("--model", model[0], f"{script} {model[1]}"),
        ("--pooling", "cls", f"{script} {pooling}"),
        ("--projection", "bn-mlp", f"{script} lines 17-18, 27 (--mlp_only_train --batchnorm)"),
        ("--k", str(_INFOCSE_PRESET.k(layers)), f"{script} line 25 (--skip_from 6)"),
        ("--n", str(_INFOCSE_PRESET.n), f"{script} line 24 (--n_head_layers 2)"),
        ("--mask_rate", mask_rate, f"{script} lines 1, 29 (mlm_rate={mask_rate})"),
        ("--lambda", flag_value(_INFOCSE_PRESET.lambda_), f"{script} {lambda_note}"),
        ("--detach", "true", detach),
        ("--fusion_init", "fresh", fusion),
        ("--temperature", "0.05", f"{script} line 20 (--temp 0.05)"),
        ("--learning_rate", "7e-6", f"{script} line 11"),
        ("--num_train_epochs", "2", f"{script} line 9"),
        ("--per_device_train_batch_size", "64", f"{script} line 10"),
        ("--max_seq_length", "32", f"{script} line 12"),
        ("--eval_steps", "125", f"{script} {eval_steps}"),
        ("--fp16", "true", f"{script} line 23"),
    )


_RECIPES = (
    _recipe(
        "simcse-bert-base",
        source=f"{_SIMCSE} (SimCSE, Gao et al. 2021)",
        published=(
            Published("STS avg", 76.25, "paper 000 Table 2, the released unsup-simcse-bert-base-uncased"),
            Published("STS-B dev", 82.45, "paper 000 Tables 5 and 9"),
        ),
        settings=(
            ("--objective", "simcse", f"{_SIMCSE} (train.py: unsupervised SimCSE)"),
            ("--model", "bert-base-uncased", f"{_SIMCSE} line 8"),
            ("--pooling", "cls", f"{_SIMCSE} line 19 (--pooler_type cls; evaluated as cls_before_pooler)"),
            ("--projection", "mlp", f"{_SIMCSE} lines 19-20 (--pooler_type cls --mlp_only_train)"),
            ("--temperature", "0.05", f"{_SIMCSE} line 22 (--temp 0.05)"),
            ("--learning_rate", "3e-5", f"{_SIMCSE} line 13"),
            ("--num_train_epochs", "1", f"{_SIMCSE} line 11"),
            ("--per_device_train_batch_size", "64", f"{_SIMCSE} line 12"),
            ("--max_seq_length", "32", f"{_SIMCSE} line 14"),
            ("--eval_steps", "125", f"{_SIMCSE} lines 15-18 (STS-B dev every 125 steps, best checkpoint kept)"),
            ("--fp16", "true", f"{_SIMCSE} line 25"),
        ),
    ),
    _recipe(
        "infocse-bert-base",
        source=f"{_INFOCSE} (paper 000, InfoCSE)",
        published=(
            Published("STS avg", 78.85, "paper 000 Table 2"),
            Published("STS-B dev", 85.49, "paper 000 Tables 4-9"),
        ),
        settings=_infocse_script(
            _INFOCSE, 12, ("Luyu/condenser", "line 6 (stage 1 = Condenser's pre-training)"),
            pooling="line 17 (--pooler_type cls; evaluated as cls_before_pooler)",
            lambda_note="lines 2, 28 (mlm_weight=0.00001); paper 000 Table 8",
            detach=f"{_INFOCSE} line 30 (--mlm_eval: frozen copy, eval mode); paper 000 §3.2",
            fusion="docs/REPRODUCING.md: the hub checkpoint carries no Condenser head",
            eval_steps="lines 13-16 (STS-B dev every 125 steps, best checkpoint kept)",
        ),
        notes=(
            "The script, not paper 000 §4.2, is the configuration: §4.2 says one epoch at lr 3e-5 with lambda "
            "0.005, but the released script (2 epochs, lr 7e-6, lambda 1e-5) is what produced the published "
            "numbers, and the paper's own Table 8 finds lambda 1e-5 best (docs/REPRODUCING.md).",
            "Table 12 of paper 000 lists 78.49 as the STS average of the same configuration; Table 2 and the "
            "authors' README give 78.85, which is the number used here.",
        ),
    ),
    _recipe(
        "infocse-bert-large",
        source=f"{_INFOCSE_LARGE} (paper 000, InfoCSE)",
        published=(Published("STS avg", 80.18, "paper 000 Table 2"),),
        settings=_infocse_script(
            _INFOCSE_LARGE, 24,
            ("ffgcc/condenser-bert-large-uncased", "line 6 (the authors' Condenser-style BERT-large, InfoCSE/README.md)"),
            pooling="line 17 (--pooler_type cls)", lambda_note="lines 2, 28 (mlm_weight=0.00001)",
            detach="paper 000 §3.2 (frozen lower layers); see notes on --mlm_eval",
            fusion="docs/REPRODUCING.md (as infocse-bert-base)", eval_steps="lines 13-16",
        ),
        notes=(
            "The large script has no --mlm_eval, so the authors' frozen copy ran with dropout on (under no_grad); "
            "the package always runs it in eval mode, as the base script and the paper's frozen network do "
            "(docs/REPRODUCING.md, 'Large model').",
            "The released script does not run as written: line 6 ends in '\\ # the large model ...', so bash "
            "passes the comment as arguments and ends the command there, and lines 7-29 never reach "
            "train_cls_mlm.py. The values are read from lines 1-29 as evidently intended.",
            "Paper 000 reports no STS-B dev score for BERT-large.",
        ),
    ),
    _recipe(
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
            "(lr 5e-5, cls_before_pooler without MLP, reconstruction weight 1.0, and train.py's default MLM term "
            "at 0.1), the paper's 'w/ MLM' variant at 63.25 (Table 6), which cannot have produced 77.30 "
            "(docs/REPRODUCING.md).",
            "Paper 001 reports no STS-B dev score; max length, evaluation interval and fp16 are not stated in the "
            "paper and come from the released script.",
        ),
    ),
    _recipe(
        "cmlm-cse-bert-base",
        source="paper 003 (CMLM-CSE) §3.2, §4.1 and Tables 2-6; no code released",
        published=(
            Published("STS avg", 76.80, "paper 003 Table 6, row 8-3"),
            Published("STS-B dev", 83.76, "paper 003 Tables 2-6"),
        ),
        settings=(
            ("--objective", "cmlm-cse", "paper 003 §3, eq. 6 (contrastive + lambda * conditional MLM)"),
            ("--model", "bert-base-uncased", f"paper 003 §4.1 'Bert' (casing {_NOT_STATED_003})"),
            ("--pooling", "cls", "paper 003 §3.1 ('the same structure as SimCSE': the [CLS] embedding)"),
            ("--projection", "mlp", f"{_NOT_STATED_003} (MLP on [CLS], training only)"),
            ("--k", str(_CMLM_CSE_PRESET.k(12)), "paper 003 §4.1 (the first eight layers, frozen); Table 6 row 8-3"),
            ("--n", str(_CMLM_CSE_PRESET.n), "paper 003 §4.1 (three Transformer blocks); Table 6 row 8-3"),
            ("--mask_rate", flag_value(_CMLM_CSE_PRESET.mask_rate(12)),
             "paper 003 §4.3.2 (2) (random word masking of 15%); Table 4"),
            ("--lambda", flag_value(_CMLM_CSE_PRESET.lambda_), "paper 003 Table 5; §4.3.2 (5) (lambda = 0.005)"),
            ("--detach", "true", "paper 003 §3.2, §4.1 (lexical feature extractor frozen)"),
            ("--fusion_init", "fresh", "no code: the package's choice, as InfoCSE's code (docs/REPRODUCING.md)"),
            ("--temperature", "0.05", _NOT_STATED_003),
            ("--learning_rate", "3e-5", _NOT_STATED_003),
            ("--num_train_epochs", "1", _NOT_STATED_003),
            ("--per_device_train_batch_size", "64", _NOT_STATED_003),
            ("--max_seq_length", "32", f"{_NOT_STATED_003} (§3.2: 'the fixed sentence length')"),
            ("--eval_steps", "125", _NOT_STATED_003),
            ("--fp16", "true", _NOT_STATED_003),
        ),
        notes=(
            "Paper 003 states no learning rate, epochs, batch size, temperature, maximum length, evaluation "
            "interval or precision, only 'the same settings as the unsupervised SimCSE' (§4.1): those values are "
            "SimCSE's run_unsup_example.sh (the simcse-bert-base recipe), the package's documented defaults.",
            "Without code, three choices are the package's (docs/REPRODUCING.md): fresh fusion layers, the "
            "checkpoint's own MLM head (untied) and the frozen extractor in eval mode.",
            "Mask 0.15, not Table 4's best 0.40 (84.09 dev in that ablation only): the headline 83.76 / 76.80 row "
            "is the 15% one. Table 1's own CMLM-CSE-BERT-base row is unreadable in the paper's text; 76.80 is "
            "Table 6's 8-3 row, SimCSE's 76.25 + the 0.55 the abstract states.",
        ),
    ),
    # Not a paper's run: the setting under which InfoCSE's own decoder reads the sentence embedding, measured on a
    # pretrained sentence-transformers model (docs/auxiliary-objective.md).
    _recipe(
        "infocse-minilm-decoder-first",
        source=f"benchmarks/aux_mechanism.py, setting weight-1 (measured by this package on {_MINILM})",
        published=(
            Published("STS avg", 77.94, _MEASURED),
            Published("STS-B dev", 84.98, _MEASURED),
        ),
        settings=(
            ("--objective", "infocse", "paper 000: contrastive + lambda * conditional MLM"),
            ("--model", _MINILM, "a contrastively pre-trained sentence-transformers model (the benchmark's)"),
            ("--pooling", "cls", "the benchmark's pooling (InfoCSE's h is the [CLS] embedding)"),
            ("--projection", "bn-mlp", "InfoCSE's released head (its default)"),
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
            "Measured on CPU in fp32 over 3 seeds: +1.65 STS avg (p = 0.002) and +0.38 STS-B dev (p = 0.03) over "
            "SimCSE, +1.09 STS avg over InfoCSE as released, in the same 200 steps; the decoder's information gain "
            "grows from 0.12 to 0.65 nats (benchmarks/results/aux_mechanism.md).",
            "The benchmark trained on the first 12,800 sentences of a Wikipedia dump, warmed the decoder on other "
            "sentences and scored the last step; this recipe warms it on the training texts and keeps the best STS-B "
            "dev checkpoint. Not measured on BERT-base or with longer training: check it on your own model with "
            "ConditionalMLMEvaluator (docs/auxiliary-objective.md).",
            "Measured on STS after re-pooling the model with [CLS], not on retrieval in a user's domain: adapting "
            "all-MiniLM-L6-v2 as shipped to SciFact's abstracts with it lowered SciFact nDCG@10 from 64.51 to 58.28 "
            "(CLS) and 51.25 (its own mean pooling) in 60 steps, while STS-B dev stayed at 86.48. To adapt your own "
            "model, measure it on your own queries (--eval_retrieval) and let the run hand back the model you "
            "started with when training made it worse (docs/your-own-model.md).",
        ),
        released=False,
    ),
    # Not a paper's run: the adaptation benchmark's best row for a trained model on its own domain (issue 29).
    _recipe(
        "adapt-idc-mpnet",
        source="benchmarks/adaptation.py, row idc-mpnet-mnrl-r1 (measured by this package on all-MiniLM-L6-v2 as "
        "shipped)",
        published=(
            Published("Reuters article -> headline nDCG@10", _ADAPT_REUTERS,
                      f"{_ADAPTATION}; as shipped 58.09; {_REUTERS_HALF} {_CONFIRMED['idc-mpnet-mnrl-r1']['reuters']}"),
            Published("SciFact nDCG@10", _ADAPT_SCIFACT,
                      f"{_ADAPTATION}; as shipped 64.51; {_SCIFACT_HALF} {_CONFIRMED['idc-mpnet-mnrl-r1']['scifact']}"),
        ),
        settings=(
            ("--objective", "idc", "paper 002: pairs of sentences of one document, clustered by a model"),
            ("--model", _MINILM, "the benchmark's start model; give yours: its own pooling, Normalize and length stay"),
            ("--idc_annotator", "sentence-transformers/all-mpnet-base-v2", "paper 002 Table 3 (5): a stronger "
             "model's annotations for the first round (the benchmark's best row)"),
            ("--idc_max_docs", "500", "the benchmark mined a seeded 500-document subset (all-mpnet-base-v2 encodes "
             "about five times slower than all-MiniLM-L6-v2)"),
            ("--rounds", "1", "one round: the benchmark's row (round 2 not measured)"),
            ("--idc_loss", "mnrl", "MultipleNegativesRankingLoss on the mined pairs, document-aware batches"),
            *_ADAPT_BUDGET,
            _KEEP_RELIABLE,
        ),
        notes=(
            "Measured with one budget for every row (benchmarks/results/adaptation.md) and judged on test queries "
            "no choice had used: on Reuters-21578 news it raised article -> headline nDCG@10 well above the model "
            f"as shipped ({_CONFIRMED['idc-mpnet-mnrl-r1']['reuters']}); on SciFact the change was within noise "
            f"({_CONFIRMED['idc-mpnet-mnrl-r1']['scifact']}). Expect a gain on some domains and none on others: "
            "only your own held-out queries can tell.",
            "So the recipe requires --eval_retrieval: a folder of your own queries and documents in BEIR's layout "
            "(docs/your-own-model.md), not built from the training documents. The round is scored on it before and "
            "after training, and the run keeps it only when its gain on your queries is reliable (the 95% interval "
            "over them above zero), else hands back your model.",
            "--docs: documents as `st-infocse mine --docs` reads them; 500 of them (a --seed sample) are mined by "
            "all-mpnet-base-v2 (downloaded once from the hub) and trained on. No STS-B dev unless you add it.",
        ),
        released=False,
        requires=("--docs", "--eval_retrieval"),
    ),
    # The benchmark's row that raised STS avg and gained on news, with no annotator and no documents.
    _recipe(
        "adapt-informin",
        source="benchmarks/adaptation.py, row informin (measured by this package on all-MiniLM-L6-v2 as shipped)",
        published=(
            Published("Reuters article -> headline nDCG@10", _INFORMIN_REUTERS,
                      f"{_ADAPTATION}; as shipped 58.09; {_REUTERS_HALF} {_CONFIRMED['informin']['reuters']}"),
            Published("SciFact nDCG@10", _INFORMIN_SCIFACT,
                      f"{_ADAPTATION}; as shipped 64.51; {_SCIFACT_HALF} {_CONFIRMED['informin']['scifact']}"),
        ),
        settings=_ADAPT_INFORMIN,
        notes=(
            "Measured with one budget for every row (benchmarks/results/adaptation.md) and judged on test queries "
            "no choice had used: on Reuters-21578 news article -> headline nDCG@10 "
            f"{_CONFIRMED['informin']['reuters']}; on SciFact {_CONFIRMED['informin']['scifact']}; STS avg rose "
            "from 78.87 to about 79.5. It needs neither an annotator nor documents; adapt-idc-mpnet gains more on "
            "news but needs documents and a stronger model, and costs about 1 point of STS avg. Half of the change "
            "(--weight_anchor 0.5) kept less of the news gain and was within noise on SciFact too.",
            *_OWN_TEXT_NOTES,
        ),
        released=False,
        requires=("--train_data", "--eval_retrieval"),
    ),
)

RECIPES: Mapping[str, Recipe] = MappingProxyType({recipe.name: recipe for recipe in _RECIPES})
"""Every recipe by name, in the order ``st-infocse recipes`` lists them."""


def recipe_names() -> list[str]:
    """The known recipe names, e.g. ``['simcse-bert-base', 'infocse-bert-base', ...]``."""
    return list(RECIPES)


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; :class:`UnknownRecipeError` (a ``ValueError``) naming the known ones otherwise.

    >>> get_recipe("cmlm-cse-bert-base").flags["--k"]
    '8'
    >>> try:
    ...     get_recipe("nope")
    ... except ValueError as error:
    ...     print(str(error)[:57])
    unknown recipe 'nope'; known recipes: simcse-bert-base, i
    """
    try:
        return RECIPES[name]
    except KeyError:
        raise UnknownRecipeError(f"unknown recipe {name!r}; known recipes: {', '.join(RECIPES)}") from None


def recipe_flags(name: str) -> list[str]:
    """The recipe's ``st-infocse train`` flags, in order, ready to put before your own.

    >>> recipe_flags("informin-bert-base")[:6]
    ['--objective', 'informin', '--model', 'bert-base-uncased', '--pooling', 'cls']
    """
    return get_recipe(name).to_argv()


def _published(recipe: Recipe) -> str:
    return "; ".join(str(number) for number in recipe.published)


def _key_settings(recipe: Recipe) -> str:
    flags = recipe.flags
    epochs = flags["--num_train_epochs"]
    parts = [
        f"{recipe.objective} on {recipe.model}",
        f"lr {flags['--learning_rate']}",
        f"{epochs} epoch{'' if epochs == '1' else 's'}",
        f"batch {flags['--per_device_train_batch_size']}",
    ]
    parts += [f"{label} {flags[flag]}" for flag, label in _SHOWN if flag in flags]
    return ", ".join(parts)


_SHOWN = (("--lambda", "lambda"), ("--k", "k"), ("--n", "n"), ("--mask_rate", "mask"), ("--projection", "head"))


def format_recipe_list() -> str:
    """What ``st-infocse recipes`` (or ``train --recipe list``) prints: each recipe's key settings, source and
    published numbers with their tables.

    >>> text = format_recipe_list()
    >>> "infocse-bert-base" in text and "STS avg 78.85 (paper 000 Table 2)" in text
    True
    """
    lines = ["Recipes for st-infocse train --recipe NAME (Spearman x100 as published, or as measured here):", ""]
    for recipe in RECIPES.values():
        lines += [
            f"{recipe.name}",
            f"    settings   {_key_settings(recipe)}",
            f"    source     {recipe.source}",
            f"    published  {_published(recipe)}",
        ]
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
