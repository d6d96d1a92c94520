"""The command line's flags: one dataclass per ``--help`` section, ``--config`` files, and one parser
(transformers' ``HfArgumentParser``) that reads them: first the command's own sections, before torch is imported,
so that bad input is refused at once (:func:`read_flags`), then everything, the trainer's flags included
(:func:`parse`).

Defaults that belong to an objective are not written here: the loss flags default to None ("the objective's own")
and their help text is generated from :mod:`st_infocse.losses.registry`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import OBJECTIVES as OBJECTIVE_REGISTRY
from st_infocse.losses.registry import PRESETS, STAGE1, flag_value, objective_names

OBJECTIVES = objective_names()
WIKI1M = "hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt"
BUNDLED = "demo"  # --train_data demo / --stsb_dev demo: the data shipped in st_infocse/data



# ``_argument_group_name`` gives each dataclass its own titled section in --help, listed before the trainer's flags.


@dataclass
class ModelArguments:
    _argument_group_name = "model"

    model: str = field(
        default="bert-base-uncased",
        metadata={"help": "Hub id or local folder of a Hugging Face or Sentence Transformer model."},
    )
    pooling: str | None = field(
        default=None,
        metadata={
            "help": "Default: a saved Sentence Transformer keeps its own modules (Pooling, Dense, Normalize, ...); a "
            "plain Hugging Face encoder is pooled with cls (the papers' setting, SimCSE's cls_before_pooler). cls, "
            "mean or max replaces only the Pooling module of a saved Sentence Transformer; 'model' keeps the "
            "modules sentence-transformers loads.",
            "choices": ["cls", "mean", "max", "model"],
        },
    )
    max_seq_length: int = field(
        default=32,
        metadata={
            "help": "Maximum tokens per sentence while training (the papers' 32); the saved model keeps the base "
            "model's own maximum length."
        },
    )
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow custom model code from the hub."})


@dataclass
class SavedModelArguments(ModelArguments):
    """For commands that use a trained model as it is: its own modules and length unless told otherwise."""

    max_seq_length: int | None = field(
        default=None, metadata={"help": "Maximum tokens per sentence (default: the model's)."}
    )


@dataclass
class DataArguments:
    _argument_group_name = "training data"

    train_data: str = field(
        default=WIKI1M,
        metadata={
            "help": "Training text: a .txt(.gz) file (one sentence per line), .jsonl(.gz)/.json/.csv/.tsv/.parquet, "
            "a save_to_disk folder, an hf:// file, a hub dataset id, or 'demo' (4,096 Wikipedia sentences shipped "
            "with the package). Missing, non-string and blank rows are dropped and counted."
        },
    )
    text_column: str | None = field(
        default=None, metadata={"help": "Column holding the text (default: 'text' or the only string column)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training texts."})
    split_sentences: bool = field(
        default=False,
        metadata={
            "help": "Split each training text into sentences first (the splitter IDC mining uses), so that long "
            "texts such as whole abstracts are not cut at --max_seq_length."
        },
    )
    stsb_dev: str = field(
        default="hub",
        metadata={
            "help": "STS-B dev for checkpoint selection: 'hub', 'demo' (the 1,500 pairs shipped with the package), a SentEval data/downstream folder, a sentence1/sentence2/score file, or 'none'."
        },
    )


@dataclass
class RunEvaluationArguments:
    _argument_group_name = "measuring the run (start -> end) and the model handed back"

    eval_retrieval: str | None = field(
        default=None,
        metadata={
            "help": "Your own retrieval set, a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): "
            "nDCG@10 and Recall@100 before, during and after training; it chooses the checkpoint unless "
            "--metric_for_best_model says otherwise.",
            "metavar": "DIR",
        },
    )
    eval_retrieval_split: str | None = field(
        default=None, metadata={"help": "Its qrels split (default: dev, else test)."}
    )
    eval_retrieval_max_corpus: int | None = field(
        default=10_000,
        metadata={
            "help": "Larger corpora are sub-sampled to every judged document plus a --seed sample of the rest, up "
            "to this many documents (0: the whole corpus)."
        },
    )
    keep_start_if_better: bool = field(
        default=True,
        metadata={
            "help": "With an evaluator, hand back the model as given when no checkpoint and not the end beat it on "
            "the checkpoint metric."
        },
    )
    keep_trained_if: str = field(
        default="better",
        metadata={
            "help": "Which model the run hands back, with an evaluator: 'better' keeps the trained model when its "
            "checkpoint metric is not below the start's; 'reliable' only when its gain is reliable over your "
            "queries (STS pairs): the 95 percent interval of a paired bootstrap over them lies above zero. The "
            "adapt-* recipes set 'reliable'.",
            "choices": ["better", "reliable"],
        },
    )
    weight_anchor: float = field(
        default=1.0,
        metadata={
            "help": "Keep this share of the trained change: after the last step the model becomes start + share x "
            "(trained - start) (WiSE-FT), and that is what is scored against the start and saved. 1: the trained "
            "model; 0.5: halfway back (docs/adapting-your-model.md). Below 1 the last step is the model kept, so "
            "load_best_model_at_end is off unless given.",
            "metavar": "SHARE",
        },
    )


@dataclass
class OutputArguments:
    _argument_group_name = "the output folder"

    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Replace an earlier run in --output_dir (its checkpoints, saved model and run summary are removed "
            "first). Without it, a folder holding a run is refused unless --resume_from_checkpoint resumes it."
        },
    )


@dataclass
class LossArguments:
    _argument_group_name = "objective and loss"

    objective: str = field(default="infocse", metadata={"help": f"One of {', '.join(OBJECTIVES)}."})
    lambda_: float | None = field(
        default=None,
        metadata={
            "aliases": ["--lambda"],
            "help": "Weight of the auxiliary term ("
            + ", ".join(
                f"{objective.title} {flag_value(objective.lambda_)}"
                for objective in OBJECTIVE_REGISTRY.values()
                if objective.lambda_ is not None
            )
            + " by default).",
        },
    )
    temperature: float | None = field(
        default=None,
        metadata={"help": "Contrastive temperature (default: the loss's, 0.05; IDC with --idc_loss mnrl: "
                  "MultipleNegativesRankingLoss's scale 20, that is 1 / 0.05)."},
    )
    projection: str | None = field(
        default=None,
        metadata={
            "help": "Training-only projection head: mlp, bn-mlp or none (default: the objective's own: bn-mlp for "
            "infocse, mlp for simcse, cmlm-cse and informin)."
        },
    )
    k: int | None = field(
        default=None, metadata={"help": "Frozen lower layers of the auxiliary decoder (default: the preset's)."}
    )
    n: int | None = field(
        default=None, metadata={"help": "Fusion layers of the auxiliary decoder (default: the preset's)."}
    )
    mask_rate: float | None = field(
        default=None,
        metadata={
            # Each preset once, under the objective named after it, then stage 1.
            "help": "Masking rate of the auxiliary MLM (default: "
            + "; ".join(f"{name} {preset.describe_mask_rate()}" for name, preset in PRESETS.items())
            + f"; {STAGE1.name} {STAGE1.mask_rate:.2f}).",
        },
    )
    fusion_init: str | None = field(
        default=None,
        metadata={"help": "fresh (default, as the authors' code) or copy (the encoder layers above k) fusion layers."},
    )
    detach: bool | None = field(
        default=None,
        metadata={"help": "Freeze the decoder's lower copy (default: the preset's, true as in paper 000; false is "
                  "the 'w/o detach' ablation). Give a value: --detach false."},
    )
    decoder: str | None = field(default=None, metadata={"help": "Stage-1 decoder folder (from pretrain-aux)."})
    tie_head: bool | None = field(
        default=None,
        metadata={"help": "pretrain-aux only: tie the MLM head's output projection to the word embeddings (Condenser; "
                  "default true)."},
    )
    masking: str | None = field(
        default=None,
        metadata={"help": "pretrain-aux only: whole_word (Condenser, default) or token masking.",
                  "choices": ["whole_word", "token"]},
    )
    informin_weight: float | None = field(
        default=None, metadata={"help": "infocse, cmlm-cse: add InforMin's reconstruction term with this weight "
                                "(default 0: off)."}
    )
    gather_across_devices: bool | None = field(
        default=None, metadata={"help": "Contrast against the embeddings of all processes (multi-GPU; default false)."}
    )
    aux_learning_rate: float | None = field(
        default=None, metadata={"help": "Own learning rate for the loss's auxiliary modules."}
    )
    aux_gradient: str | None = field(
        default=None,
        metadata={
            "help": "infocse, cmlm-cse: what the auxiliary decoder learns from: weighted (default, the released "
            "script: lambda times the MLM gradient, like the encoder) or full (the unweighted MLM gradient; the "
            "encoder still gets lambda times it).",
            "choices": ["weighted", "full"],
        },
    )
    decoder_warmup_steps: int | None = field(
        default=None,
        metadata={
            "help": "infocse, cmlm-cse: first train the auxiliary decoder alone for this many steps on the frozen "
            "model's embeddings of the training texts (written to OUTPUT/decoder_warmup), then train from it; a "
            "decoder that already reads the sentence embedding (docs: 'Does the auxiliary objective help my "
            "model?')."
        },
    )
    decoder_warmup_learning_rate: float = field(
        default=5e-4, metadata={"help": "Learning rate of --decoder_warmup_steps (AdamW, the decoder's own)."}
    )
    docs: str | None = field(
        default=None,
        metadata={"help": "idc, ict: documents, in any form that `st-infocse mine --docs` reads."},
    )
    rounds: int = field(default=3, metadata={"help": "idc: maximum mine -> train rounds."})
    idc_loss: str = field(
        default="mnrl",
        metadata={"help": "idc: loss trained on the mined pairs, mnrl or infocse.", "choices": ["mnrl", "infocse"]},
    )
    idc_k: int = field(default=1, metadata={"help": "idc: top-K neighbours per sentence."})
    idc_similarity: str = field(
        default="cosine",
        metadata={
            "help": "idc: sentence score for mining, cosine or dot (inner product, paper 002 eq. 2).",
            "choices": ["cosine", "dot"],
        },
    )
    initial_annotation: str = field(
        default="model", metadata={"help": "idc: first-round pairs from the 'model' or 'adjacent' sentences."}
    )
    idc_annotator: str | None = field(
        default=None,
        metadata={
            "help": "idc: another Sentence Transformer (folder or hub id) whose mining gives the first round's pairs, "
            "e.g. sentence-transformers/all-mpnet-base-v2 (paper 002 Table 3 (5)); later rounds mine with the "
            "model being trained."
        },
    )
    idc_max_docs: int | None = field(
        default=None,
        metadata={"help": "idc: mine and train on a --seed sample of this many of the documents (in their order)."},
    )


@dataclass
class MineArguments:
    _argument_group_name = "mining"

    docs: str = field(
        default=None,
        metadata={
            "help": "Documents: a .txt(.gz) file with documents separated by blank lines (each line is split into "
            "sentences), .jsonl(.gz)/.json objects with 'sentences' (list) or 'text' (and 'id'), a save_to_disk "
            "folder, or a hub dataset id."
        },
    )
    output_dir: str = field(
        default="pairs", metadata={"help": "Folder for the mined pairs (datasets save_to_disk) and report.json."}
    )
    k: int = field(default=1, metadata={"help": "Top-K neighbours per sentence."})
    threshold: float | None = field(
        default=None,
        metadata={"help": "Floor on the edge score: a cosine, or the raw inner product with --similarity dot."},
    )
    similarity: str = field(
        default="cosine",
        metadata={
            "help": "Edge score: cosine, or dot (inner product, paper 002 eq. 2; the same as cosine for models "
            "ending in Normalize).",
            "choices": ["cosine", "dot"],
        },
    )
    min_sentences: int = field(default=2, metadata={"help": "Skip documents with fewer sentences."})
    max_sentences: int | None = field(default=1000, metadata={"help": "Skip documents with more sentences."})
    max_pairs_per_cluster: int | None = field(default=None, metadata={"help": "Cap on pairs per cluster."})
    batch_size: int = field(default=64, metadata={"help": "Encoding batch size."})
    max_docs: int | None = field(default=None, metadata={"help": "Mine only the first N documents."})
    seed: int = field(default=0, metadata={"help": "Seed for the pair cap's sample."})


@dataclass
class EvaluateArguments:
    sts: str | None = field(
        default=None, metadata={"help": "STS suite source: 'mteb' (online) or a SentEval data/downstream folder."}
    )
    beir: list[str] | None = field(
        default=None,
        metadata={"help": "BEIR datasets, e.g. scifact nfcorpus, or paths of BEIR-layout folders (corpus.jsonl, "
                  "queries.jsonl, qrels/<split>.tsv), read by their layout whatever their name."},
    )
    beir_source: str = field(
        default="mteb", metadata={"help": "'mteb' (online) or a folder with one BEIR folder per dataset."}
    )
    split: str | None = field(
        default=None,
        metadata={"help": "The qrels split --beir reads (qrels/<split>.tsv). Default: test; in a local folder "
                  "without qrels/test.tsv, dev (the file the guide has you write for your own queries)."},
    )
    transfer: str | None = field(
        default=None, metadata={"help": "SentEval data/downstream folder for the transfer tasks."}
    )
    output_dir: str = field(
        default="evaluation", metadata={"help": "Where evaluation.json, evaluation.md and plots go."}
    )
    batch_size: int = field(default=64, metadata={"help": "Encoding batch size."})
    plots: bool = field(default=True, metadata={"help": "Draw bar charts (needs matplotlib)."})
    verbose: bool = field(default=False, metadata={"help": "Also show beir's INFO log (every metric at every k)."})
    compare: str | None = field(
        default=None,
        metadata={
            "help": "A second model scored on the same sets: each STS task's and BEIR dataset's change from --compare "
            "to --model, with its 95 percent interval from a paired bootstrap over the pairs / queries and a "
            "verdict (comparison.json, comparison.md). Loaded as --model is.",
            "metavar": "MODEL",
        },
    )


def training_arguments_class():
    from st_infocse.training.arguments import PaperTrainingArguments

    return PaperTrainingArguments


NO_EVALUATION = ["--eval_strategy", "no", "--load_best_model_at_end", "false"]


@dataclass
class EarlyTrainerFlags:
    """The trainer flags the command line checks before the trainer's arguments (and torch) are loaded. None means
    "not given" (the switches are off unless given, as in the trainer); their help is ``PaperTrainingArguments``'
    (``--help`` lists them there)."""

    max_steps: int | None = None
    num_train_epochs: float | None = None
    output_dir: str | None = None
    use_cpu: bool = False
    fp16: bool = False
    bf16: bool = False


def _parser(dataclass_types: Sequence[type], prog: str, allow_abbrev: bool = True):
    from transformers import HfArgumentParser  # argument parsing only: no torch, no model

    return HfArgumentParser(
        list(dataclass_types),
        prog=prog,
        # argparse would otherwise spell out every trainer flag in the usage line.
        usage=f"{prog} [flags]   (--config FILE: JSON or YAML with any of these flags)",
        allow_abbrev=allow_abbrev,
    )


def read_flags(argv: Sequence[str], dataclass_types: Sequence[type], prog: str) -> tuple[Any, ...]:
    """The command's own sections parsed from ``argv`` by the parser that :func:`parse` uses, leaving the trainer's
    flags (all but :class:`EarlyTrainerFlags`) for it: the flags are read once, by one parser, before torch loads.

    Abbreviations are left to the full parse: here a trainer flag this parser does not know could otherwise be
    taken for one of the command's own that it abbreviates.
    """
    parsed = _parser(dataclass_types, prog, allow_abbrev=False).parse_args_into_dataclasses(
        args=list(argv), return_remaining_strings=True
    )
    return tuple(parsed[:-1])  # the remaining strings are the trainer's flags


def parse(dataclass_types: Sequence[type], argv: Sequence[str], prog: str, evaluates: bool = True) -> tuple[Any, ...]:
    """Parse flags into the dataclasses; ``--config FILE`` (JSON/YAML) is expanded first so later flags win.

    Without evaluation (``evaluates=False``: ``--stsb_dev none`` without ``--eval_retrieval``, or a command that does
    not evaluate) the best-checkpoint defaults are switched off before the training arguments validate themselves.
    """
    argv = expand_config(argv)
    if not evaluates:
        argv = NO_EVALUATION + argv
    return tuple(_parser(dataclass_types, prog).parse_args_into_dataclasses(args=argv))


def expand_config(argv: Sequence[str]) -> list[str]:
    """``--config FILE`` replaced by the flags it holds, placed first so that flags on the command line win."""
    argv = list(argv)
    if "--config" in argv:
        index = argv.index("--config")
        if index + 1 >= len(argv):
            raise CLIError("--config needs a file")
        argv = config_to_flags(argv[index + 1]) + argv[:index] + argv[index + 2 :]
    return argv


def config_to_flags(path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise CLIError(f"config file not found: {path}")
    text = file.read_text()
    try:
        if file.suffix in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(text)
        else:
            values = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file
        raise CLIError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(values, dict):
        raise CLIError(f"config {path} must hold a mapping of flag names to values")
    flags: list[str] = []
    for key, value in values.items():
        if value is None:
            continue
        flags.append(f"--{key}")
        if isinstance(value, list):
            flags.extend(str(v) for v in value)
        elif isinstance(value, dict):
            flags.append(json.dumps(value))
        else:
            flags.append(str(value).lower() if isinstance(value, bool) else str(value))
    return flags


@dataclass
class RecipeArguments:
    """Only for ``train --help``: ``--recipe`` is taken out of the flags before they are parsed."""

    _argument_group_name = "recipe"

    recipe: str | None = field(
        default=None,
        metadata={
            "help": "A paper's released run by name, e.g. infocse-bert-base ('list', or `st-infocse recipes`, "
            "shows them all): its flags come first, so every flag you give wins. The scripts' fp16 is kept on a "
            "GPU; on a CPU it becomes bf16 where the CPU has native bf16, else fp32.",
            "metavar": "NAME",
        },
    )


def flag_names(argv: Sequence[str]) -> set[str]:
    """The names of the flags typed, as the parser sees them: ``--learning-rate=1`` and ``--lambda_`` are
    learning_rate and lambda (which flags a user set, as opposed to the values, which the parser reads)."""
    return {item[2:].split("=", 1)[0].replace("-", "_").rstrip("_") for item in argv if item.startswith("--")}


def asks_for_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv
