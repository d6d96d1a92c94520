"""The ``st-infocse`` command: stage-1 pre-training, training, IDC mining and evaluation without a script.

    st-infocse pretrain-aux --model bert-base-uncased --train_data corpus.txt --output_dir stage1
    st-infocse train --objective infocse --model stage1/model --decoder stage1/decoder --output_dir out
    st-infocse mine --model out --docs docs.jsonl.gz --output_dir pairs
    st-infocse evaluate --model out --sts ../shared/data/senteval --beir scifact --beir_source ../shared/data/beir
    st-infocse train --recipe infocse-bert-base --train_data wiki1m_for_simcse.txt --output_dir out   # a paper's run

Every flag of ``SentenceTransformerTrainingArguments`` is accepted by ``train`` and ``pretrain-aux``; ``--config
file.json|yaml`` holds any of them (flags given after it override it). Errors about inputs exit with code 2, and
input files are checked before torch and the model are loaded, so they are reported in well under a second.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from st_infocse.losses.registry import OBJECTIVES as OBJECTIVE_REGISTRY
from st_infocse.losses.registry import PRESETS, STAGE1, flag_value, get_objective, objective_names
from st_infocse.recipes import (
    Recipe,
    UnknownRecipeError,
    format_recipe,
    format_recipe_list,
    get_recipe,
    recipe_names,
)

logger = logging.getLogger("st_infocse")

OBJECTIVES = objective_names()
WIKI1M = "hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt"


class CLIError(Exception):
    """A problem with the user's input: reported in one line, exit code 2."""


# --------------------------------------------------------------------------------------------- arguments


# ``_argument_group_name`` gives each dataclass its own titled section in --help, listed before the trainer's flags.


@dataclass
class ModelArguments:
    _argument_group_name = "model"

    model: str = field(
        default="bert-base-uncased",
        metadata={"help": "Hub id or local folder of a Hugging Face or Sentence Transformer model."},
    )
    pooling: str = field(
        default="cls",
        metadata={
            "help": "Pooling on top of the encoder: cls (SimCSE's cls_before_pooler), mean, max, or 'model' to keep the model's own modules."
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
    """For commands that use a trained model as it is: its own pooling and length unless told otherwise."""

    pooling: str = field(
        default="model", metadata={"help": "'model' keeps the saved modules; cls, mean or max re-pools the encoder."}
    )
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
    stsb_dev: str = field(
        default="hub",
        metadata={
            "help": "STS-B dev for checkpoint selection: 'hub', 'demo' (the 1,500 pairs shipped with the package), a SentEval data/downstream folder, a sentence1/sentence2/score file, or 'none'."
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
    temperature: float = field(default=0.05, metadata={"help": "Contrastive temperature."})
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
    detach: bool = field(default=True, metadata={"help": "Freeze the decoder's lower copy (paper default)."})
    decoder: str | None = field(default=None, metadata={"help": "Stage-1 decoder folder (from pretrain-aux)."})
    tie_head: bool = field(
        default=True,
        metadata={"help": "pretrain-aux only: tie the MLM head's output projection to the word embeddings (Condenser)."},
    )
    masking: str = field(
        default="whole_word",
        metadata={"help": "pretrain-aux only: whole_word (Condenser, default) or token masking."},
    )
    informin_weight: float = field(
        default=0.0, metadata={"help": "Add InforMin's reconstruction term to InfoCSE with this weight."}
    )
    gather_across_devices: bool = field(
        default=False, metadata={"help": "Contrast against the embeddings of all processes (multi-GPU)."}
    )
    aux_learning_rate: float | None = field(
        default=None, metadata={"help": "Own learning rate for the loss's auxiliary modules."}
    )
    aux_gradient: str = field(
        default="weighted",
        metadata={
            "help": "infocse, cmlm-cse: what the auxiliary decoder learns from: weighted (default, the released "
            "script: lambda times the MLM gradient, like the encoder) or full (the unweighted MLM gradient; the "
            "encoder still gets lambda times it).",
            "choices": ["weighted", "full"],
        },
    )
    docs: str | None = field(
        default=None,
        metadata={"help": "idc: documents, in any form that `st-infocse mine --docs` reads."},
    )
    rounds: int = field(default=3, metadata={"help": "idc: maximum mine -> train rounds."})
    idc_loss: str = field(default="mnrl", metadata={"help": "idc: loss trained on the mined pairs, mnrl or infocse."})
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
    beir: list[str] | None = field(default=None, metadata={"help": "BEIR datasets, e.g. scifact nfcorpus."})
    beir_source: str = field(
        default="mteb", metadata={"help": "'mteb' (online) or a folder with one BEIR folder per dataset."}
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


def _training_arguments_class():
    from st_infocse.training.arguments import PaperTrainingArguments

    return PaperTrainingArguments


NO_EVALUATION = ["--eval_strategy", "no", "--load_best_model_at_end", "false"]


def _parse(dataclass_types: Sequence[type], argv: Sequence[str], prog: str, evaluates: bool = True) -> tuple[Any, ...]:
    """Parse flags into the dataclasses; ``--config FILE`` (JSON/YAML) is expanded first so later flags win.

    Without STS-B dev evaluation (``evaluates=False`` or ``--stsb_dev none``) the best-checkpoint defaults are
    switched off before the training arguments validate themselves.
    """
    from transformers import HfArgumentParser

    parser = HfArgumentParser(
        list(dataclass_types),
        prog=prog,
        # argparse would otherwise spell out every trainer flag in the usage line.
        usage=f"{prog} [flags]   (--config FILE: JSON or YAML with any of these flags)",
    )
    argv = _expand_config(argv)
    if not evaluates or _flag_value(argv, "--stsb_dev", "hub").lower() == "none":
        argv = NO_EVALUATION + argv
    return tuple(parser.parse_args_into_dataclasses(args=argv))


def _expand_config(argv: Sequence[str]) -> list[str]:
    """``--config FILE`` replaced by the flags it holds, placed first so that flags on the command line win."""
    argv = list(argv)
    if "--config" in argv:
        index = argv.index("--config")
        if index + 1 >= len(argv):
            raise CLIError("--config needs a file")
        argv = _config_to_flags(argv[index + 1]) + argv[:index] + argv[index + 2 :]
    return argv


def _flag_value(argv: Sequence[str], flag: str, default: Any) -> Any:
    """The last value given for ``flag`` (``--flag value`` or ``--flag=value``, also spelled with dashes)."""
    spellings = {flag, "--" + flag[2:].replace("_", "-")}
    value = default
    for i, item in enumerate(argv):
        if item in spellings and i + 1 < len(argv):
            value = argv[i + 1]
        elif "=" in item and item.split("=", 1)[0] in spellings:
            value = item.split("=", 1)[1]
    return value


def _config_to_flags(path: str) -> list[str]:
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


# ----------------------------------------------------------------------------------------------- recipes
# ``--recipe NAME`` (st_infocse.recipes) is expanded as --config is: the recipe's flags first, so that every flag the
# user gives wins, wherever it stands. ``train`` expands it before its input checks, which so see the recipe's values.


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


def _take_recipe(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The ``--recipe NAME`` (or ``--recipe=NAME``) given, or None, and the flags without it."""
    names: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(argv):
        item = argv[index]
        if item == "--recipe":
            if index + 1 >= len(argv) or argv[index + 1].startswith("-") or not argv[index + 1]:
                raise CLIError(f"--recipe needs a name: {', '.join(recipe_names())} (or 'list')")
            names.append(argv[index + 1])
            index += 2
            continue
        if item.startswith("--recipe="):
            names.append(item.split("=", 1)[1])
        else:
            rest.append(item)
        index += 1
    if len(set(names)) > 1:
        raise CLIError(f"--recipe given more than once ({', '.join(names)}); a run follows one recipe")
    return (names[0] if names else None), rest


def _get_recipe(name: str) -> Recipe:
    try:
        return get_recipe(name)
    except UnknownRecipeError as exc:
        raise CLIError(f"{exc} (st-infocse recipes describes them)") from None


def _with_recipe(recipe: Recipe, user_argv: Sequence[str]) -> list[str]:
    """The recipe's flags, then the user's: the parser keeps the last value of a flag, so the user's win."""
    return ["--output_dir", f"output/{recipe.name}", *recipe.to_argv(), *user_argv]


def _flag_names(argv: Sequence[str]) -> set[str]:
    """Flag names as the parser sees them: ``--learning-rate=1`` and ``--lambda_`` are learning_rate and lambda."""
    return {item[2:].split("=", 1)[0].replace("-", "_").rstrip("_") for item in argv if item.startswith("--")}


def _bool_flag(argv: Sequence[str], flag: str) -> bool:
    """A boolean flag's last value; given bare (``--use_cpu``) it is true, as the parser reads it."""
    value: Any = False
    for index, item in enumerate(argv):
        if item == flag:
            following = argv[index + 1] if index + 1 < len(argv) else "--"
            value = True if following.startswith("--") else following
        elif item.startswith(flag + "="):
            value = item.split("=", 1)[1]
    return value is True or str(value).lower() in ("true", "yes", "t", "y", "1")


def _accelerator_type() -> str:
    """Where the trainer will put the model unless told --use_cpu: the accelerator's type, or ``cpu``."""
    import torch

    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    if accelerator is not None:
        return accelerator.current_accelerator().type if accelerator.is_available() else "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def choose_recipe_precision(wanted: str | None, device: str, native_bf16: bool | None) -> tuple[list[str], str]:
    """Flags to append to a recipe's run, and what was chosen, for the recipe's precision ``wanted`` (fp16, bf16 or
    None) on ``device``; ``native_bf16`` tells whether the CPU has native bf16 (None: unknown).

    The scripts' fp16 is a GPU setting: on an accelerator it is kept; on a CPU it becomes bf16 where the CPU computes
    bf16 natively, and fp32 otherwise (bf16 without it is 13-16x slower than fp32 per step, measured).
    """
    if wanted is None:
        return [], "fp32 (the recipe's)"
    if device != "cpu":
        return [], f"{wanted} on {device} (the recipe's)"
    if native_bf16:
        # transformers refuses bf16 without a GPU unless told to use the CPU
        flags = ([] if wanted == "bf16" else ["--fp16", "false", "--bf16", "true"]) + ["--use_cpu", "true"]
        return flags, f"bf16 on cpu (the recipe's {wanted} is a GPU setting; this CPU has native bf16)"
    reason = "has no native bf16" if native_bf16 is False else "may lack native bf16 (its flags are unreadable)"
    chosen = f"fp32 on cpu (the recipe's {wanted} is a GPU setting; this CPU {reason})"
    return ["--fp16", "false", "--bf16", "false"], chosen


def _start_recipe(recipe: Recipe, argv: list[str], user_argv: Sequence[str]) -> list[str]:
    """Settle the recipe's precision for this machine and print what the run takes from the recipe and from you."""
    given = _flag_names(user_argv)
    device = "cpu" if _bool_flag(argv, "--use_cpu") else _accelerator_type()
    if {"fp16", "bf16"} & given:
        fp16, bf16 = _bool_flag(argv, "--fp16"), _bool_flag(argv, "--bf16")
        # --bf16 true alone replaces the recipe's fp16 rather than clashing with it
        extra = ["--fp16", "false"] if bf16 and "fp16" not in given else []
        fp16 = fp16 and not extra
        if bf16 and device == "cpu":
            extra += ["--use_cpu", "true"]  # transformers refuses bf16 without a GPU unless told to use the CPU
        precision = f"{'fp16' if fp16 else 'bf16' if bf16 else 'fp32'} (as you set it)"
    else:
        from st_infocse.training.precision import cpu_has_native_bf16

        native = cpu_has_native_bf16() if device == "cpu" else None
        extra, precision = choose_recipe_precision(recipe.precision, device, native)
        if device == "cpu" and recipe.precision and not native:
            logger.warning(
                "recipe %s: its %s is a GPU setting, and on a CPU without native bf16 (no avx512_bf16 / AMX) bf16 is "
                "much slower than fp32 (13-16x per training step measured on an AVX2 CPU): training in fp32; pass "
                "--bf16 true or --fp16 true to insist.",
                recipe.name,
                recipe.precision,
            )
    overridden = [flag for flag in recipe.flags if flag[2:].rstrip("_") in given]
    recipe_names_given = {flag[2:].rstrip("_") for flag in recipe.flags}
    added = sorted(f"--{name}" for name in given - recipe_names_given - {"fp16", "bf16"})
    train_data = _flag_value(argv, "--train_data", DataArguments.train_data)
    if "train_data" not in given:
        train_data += " (wiki1m from the hub, the authors' data; --train_data for a local copy)"
    _summary(
        f"Recipe {recipe.name}",
        {
            "source": recipe.source,
            "published": "; ".join(str(number) for number in recipe.published),
            "your flags": (
                f"override {', '.join(overridden) or 'none of the recipe'}; add {', '.join(added) or 'nothing'}"
                if given
                else "none: the recipe as released"
            ),
            "precision": precision,
            "training data": train_data,
        },
    )
    return [*argv, *extra]


def cmd_recipes(argv: Sequence[str]) -> int:
    """``st-infocse recipes``: the table; ``st-infocse recipes NAME``: one recipe's flags, origins and notes."""
    if _asks_for_help(argv):
        print("usage: st-infocse recipes [NAME]   (the table, or one recipe's flags, their origins and notes)")
        return 0
    if len(argv) > 1:
        raise CLIError("give at most one recipe name")
    print(format_recipe(_get_recipe(argv[0]).name) if argv else format_recipe_list())
    return 0


# ------------------------------------------------------------------------------------------------ inputs
# The checks below read only the head of a file with the standard library (pyarrow for parquet), so they run before
# torch, transformers, sentence-transformers or datasets are imported and before a model is downloaded or loaded.

TEXT_FORMATS = (
    ".txt(.gz) (one text per line), .jsonl(.gz) or .json (objects with a text field), .csv, .tsv, .parquet, "
    "a save_to_disk folder, an hf:// file or a hub dataset id"
)
DOCUMENT_FORMATS = (
    ".txt(.gz) (documents separated by blank lines), .jsonl(.gz) or .json (objects with 'sentences' (list) or "
    "'text'), a save_to_disk folder or a hub dataset id"
)
_KINDS = {".txt": "txt", ".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}


def _looks_local(source: str) -> bool:
    if "://" in source:  # hf:// and other remote files are fetched, not looked up on disk
        return False
    return source.startswith((".", "/", "~")) or Path(source).suffix in (
        ".txt",
        ".gz",
        ".jsonl",
        ".json",
        ".csv",
        ".tsv",
        ".parquet",
    )


def _file_kind(path: Path) -> str | None:
    """txt, json, csv or parquet from the file name (a trailing .gz is looked through), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return _KINDS.get(suffixes[-1]) if suffixes else None


def _open_binary(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")  # noqa: SIM115


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a UTF-8 file, plain or gzipped; bad bytes are a one-line error."""
    number = 0
    try:
        with _open_binary(path) as handle:
            for number, raw in enumerate(handle, start=1):  # noqa: B007 - the count is used in the errors
                yield number, raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"{path}, line {number}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8"
        ) from exc
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz file
        raise CLIError(f"cannot read {path}: {exc}") from exc


def _json_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, value) for each record of a JSON-lines file, or of a ``.json`` file holding one array."""
    lines = _lines(path)
    first = next(((n, line) for n, line in lines if line.strip()), None)
    if first is None:
        return
    number, line = first
    single_document = path.name.lower().removesuffix(".gz").endswith(".json")
    try:
        value = json.loads(line)
    except ValueError as exc:
        if not single_document:
            raise CLIError(f"{path}, line {number}: not valid JSON ({exc}); expected one JSON object per line") from exc
        value = exc
    if single_document and isinstance(value, list):
        # A whole array on one line; nothing may follow it.
        yield from ((f"item {index}", item) for index, item in enumerate(value, start=1))
        extra = next((n for n, text in lines if text.strip()), None)
        if extra is not None:
            raise CLIError(f"{path}, line {extra}: more data after the JSON array")
        return
    if isinstance(value, ValueError):
        # A .json file whose first line is not a whole value: one array (or object) spread over lines.
        lines.close()
        try:
            whole = json.loads("\n".join(text for _, text in _lines(path)))
        except ValueError as exc:
            raise CLIError(f"{path} is not valid JSON ({exc}); expected JSON lines or an array of objects") from exc
        if not isinstance(whole, list):
            raise CLIError(f"{path} holds a single JSON {type(whole).__name__}; expected JSON lines or an array")
        for index, item in enumerate(whole, start=1):
            yield f"item {index}", item
        return
    yield f"line {number}", value
    for number, line in lines:
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except ValueError as exc:
            raise CLIError(f"{path}, line {number}: not valid JSON ({exc}); expected one JSON object per line") from exc


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _choose_column(source: str, columns: Sequence[str], strings: Sequence[str], text_column: str | None) -> str:
    """The text column: the one asked for, else ``text``, else the only string column."""
    if text_column is not None:
        if text_column not in columns:
            raise CLIError(f"no column {text_column!r} in {source} (columns: {list(columns)})")
        return text_column
    if "text" in columns:
        return "text"
    if len(strings) == 1:
        return strings[0]
    raise CLIError(
        f"choose the text column with --text_column (columns in {source}: {list(columns)}; "
        f"holding strings: {list(strings)})"
    )


def _check_records(source: str, records: Iterator[tuple[str, Any]], text_column: str | None) -> str:
    """The text column (asked for, or chosen from the first record); reads on until a non-blank string in it."""
    column = text_column
    rows = present = 0
    first_keys: list[str] = []
    for where, record in records:
        if not isinstance(record, dict):
            raise CLIError(f"{source}, {where}: expected a JSON object with a text field, got {type(record).__name__}")
        rows += 1
        if rows == 1:
            first_keys = list(record)
            if column is None:
                strings = [key for key, value in record.items() if isinstance(value, str)]
                column = _choose_column(source, first_keys, strings, None)
        present += column in record
        if _is_text(record.get(column)):
            return column
    if rows == 0:
        raise CLIError(f"no records in {source}")
    if not present:
        raise CLIError(f"no column {column!r} in {source} (columns of its first row: {first_keys})")
    raise CLIError(f"no usable text in {source}: column {column!r} holds no non-blank string in any of {rows} rows")


def _check_csv(source: str, path: Path, text_column: str | None) -> str:
    delimiter = "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","
    reader = csv.DictReader((line for _, line in _lines(path)), delimiter=delimiter)
    columns = list(reader.fieldnames or [])
    if not columns:
        raise CLIError(f"no header row in {source}")
    first = next(reader, None)
    if first is None:
        raise CLIError(f"no rows in {source} (only a header: {columns})")

    def numeric(value: str | None) -> bool:
        try:
            float(value or "")
        except ValueError:
            return False
        return True

    # datasets types numeric columns as numbers, so only the others count as text columns.
    strings = [name for name in columns if not numeric(first.get(name))]
    column = _choose_column(source, columns, strings, text_column)
    rows = 1
    if _is_text(first.get(column)):
        return column
    for row in reader:
        rows += 1
        if _is_text(row.get(column)):
            return column
    raise CLIError(f"no usable text in {source}: column {column!r} holds no non-blank string in any of {rows} rows")


def _check_parquet(source: str, path: Path, text_column: str | None) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise CLIError(f"cannot read {source} as parquet: {exc}") from exc
    schema = parquet.schema_arrow
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    column = _choose_column(source, schema.names, strings, text_column)
    if parquet.metadata.num_rows == 0:
        raise CLIError(f"no rows in {source}")
    return column


def _check_saved_dataset(source: str, path: Path) -> dict[str, Any]:
    """The features of a ``save_to_disk`` folder (empty when not recorded); fails when it is not one."""
    if (path / "dataset_dict.json").is_file():
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
        if "train" not in splits:
            raise CLIError(f"{source} is a DatasetDict without a 'train' split (splits: {splits})")
        path = path / "train"
    if not (path / "state.json").is_file():
        raise CLIError(f"{source} is not a dataset folder written by save_to_disk")
    try:
        return json.loads((path / "dataset_info.json").read_text()).get("features") or {}
    except (OSError, ValueError):
        return {}


BUNDLED = "demo"  # --train_data demo / --stsb_dev demo: the data shipped in st_infocse/data


def bundled_text_source(source: str) -> str:
    """``demo`` names the 4,096 Wikipedia sentences shipped with the package; anything else is returned as is."""
    if source == BUNDLED:
        return str(Path(__file__).resolve().parent / "data" / "wiki_sentences.txt.gz")
    return source


def check_text_source(source: str, text_column: str | None = None) -> str | None:
    """Cheap checks of training text before anything heavy is loaded: the text column, or None for hub data.

    Local files must exist, be non-empty, parse (as far as read), have the text column and hold at least one
    non-blank text; reading stops at the first such row, so this is quick on any size of file.
    """
    source = bundled_text_source(source)
    path = Path(source).expanduser()
    if not path.exists():
        if _looks_local(source):
            raise CLIError(f"training data not found: {source}")
        return text_column  # a hub dataset or hf:// file: checked when it is loaded
    if path.is_dir():
        features = _check_saved_dataset(source, path)
        if not features:
            return text_column
        strings = [name for name, f in features.items() if isinstance(f, dict) and f.get("dtype") == "string"]
        return _choose_column(source, list(features), strings, text_column)
    kind = _file_kind(path)
    if kind is None:
        raise CLIError(f"unsupported file type for training data: {source}; use {TEXT_FORMATS}")
    if path.stat().st_size == 0:
        raise CLIError(f"training data {source} is empty (0 bytes)")
    if kind == "txt":
        if text_column not in (None, "text"):
            raise CLIError(f"{source} is plain text, one text per line, without columns: leave out --text_column")
        lines = 0
        for lines, line in _lines(path):  # noqa: B007 - the count is used in the error
            if line.strip():
                return "text"
        raise CLIError(f"no text in {source}: all of its {lines} lines are blank")
    if kind == "json":
        return _check_records(source, _json_records(path), text_column)
    if kind == "csv":
        return _check_csv(source, path, text_column)
    return _check_parquet(source, path, text_column)


def check_documents(source: str) -> None:
    """Cheap checks of the documents for mining, as :func:`check_text_source` does for training text."""
    path = Path(source).expanduser()
    if not path.exists():
        if _looks_local(source):
            raise CLIError(f"documents not found: {source}")
        return
    if path.is_dir():
        features = _check_saved_dataset(source, path)
        if features and not ({"sentences", "text"} & set(features)):
            raise CLIError(f"documents in {source} need a 'sentences' (list) or 'text' column; found {list(features)}")
        return
    kind = _file_kind(path)
    if kind not in ("txt", "json"):
        raise CLIError(f"unsupported file type for documents: {source}; use {DOCUMENT_FORMATS}")
    if path.stat().st_size == 0:
        raise CLIError(f"documents file {source} is empty (0 bytes)")
    if kind == "txt":
        if not any(line.strip() for _, line in _lines(path)):
            raise CLIError(f"no text in {source}: all of its lines are blank")
        return
    records = 0
    for _, record in _json_records(path):
        records += 1
        if _document_has_text(record):
            return
    raise CLIError(
        f"no usable document in {source} ({records} records): each needs a 'sentences' list or a 'text' string"
    )


def _document_has_text(record: Any) -> bool:
    if isinstance(record, dict):
        sentences, text = record.get("sentences"), record.get("text")
        return (isinstance(sentences, list) and any(_is_text(s) for s in sentences)) or _is_text(text)
    return _is_text(record) or (isinstance(record, list) and any(_is_text(s) for s in record))


def check_model_source(source: str) -> None:
    if _looks_local(source) and not Path(source).expanduser().exists():
        raise CLIError(f"model not found: {source}")


def _check_step_counts(max_steps: float, epochs: float) -> None:
    """transformers trains ``max_steps`` when it is 0 or more (so 0 trains nothing) and epochs only when it is -1."""
    if max_steps == 0 or (max_steps < 0 and epochs <= 0):
        raise CLIError(
            f"--max_steps {max_steps:g} with --num_train_epochs {epochs:g} makes no optimizer step: "
            "give --max_steps N > 0, or --max_steps -1 (the default) with --num_train_epochs > 0"
        )


def _check_positive(flag: str, value: int | None) -> None:
    """A count the user gave is used as given: one that selects nothing is refused rather than ignored."""
    if value is not None and value < 1:
        raise CLIError(f"{flag} must be at least 1, got {value}")


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _asks_for_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv


def _precheck_training(argv: Sequence[str], command: str) -> None:
    """What can be told from the flags alone, before the trainer's argument parser (and torch) are imported.

    The values are read as the parser will read them (last one wins); an abbreviated flag slips past this and is
    checked by the same functions after parsing, only later.
    """
    if _asks_for_help(argv):
        return
    objective = _flag_value(argv, "--objective", LossArguments.objective) if command == "train" else None
    if objective is not None and objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    steps = _flag_value(argv, "--max_steps", -1), _flag_value(argv, "--num_train_epochs", 1)  # 1: any positive
    if all(_is_number(value) for value in steps):  # anything else is the argument parser's to report
        _check_step_counts(*(float(value) for value in steps))
    check_model_source(_flag_value(argv, "--model", ModelArguments.model))
    decoder = _flag_value(argv, "--decoder", None)
    if decoder and not Path(decoder).expanduser().exists():
        raise CLIError(f"--decoder: not found: {decoder}")
    stsb_dev = _flag_value(argv, "--stsb_dev", DataArguments.stsb_dev)
    known = ("hub", "none", BUNDLED)
    if command == "train" and stsb_dev.lower() not in known and not Path(stsb_dev).expanduser().exists():
        raise CLIError(f"STS-B dev data not found: {stsb_dev}")
    if objective == "idc":
        docs = _flag_value(argv, "--docs", None)
        if not docs:
            raise CLIError("--objective idc needs --docs (documents to mine pairs from)")
        check_documents(docs)
    else:
        train_data = _flag_value(argv, "--train_data", DataArguments.train_data)
        check_text_source(train_data, _flag_value(argv, "--text_column", None))


def load_model_with_length(args: ModelArguments):
    """A SentenceTransformer from a hub id or a local folder, with the requested pooling and length, and the
    maximum length the model had of its own (None when it states none).

    The model's own length is its ``max_seq_length`` before ``args.max_seq_length`` is applied: for a saved Sentence
    Transformer the length it was saved with, otherwise the tokenizer's ``model_max_length`` capped at the config's
    ``max_position_embeddings`` (512 for BERT), as sentence-transformers' ``Transformer`` sets it.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    check_model_source(args.model)
    path = Path(args.model).expanduser()
    source = str(path) if path.exists() else args.model
    if args.pooling not in ("cls", "mean", "max", "model"):
        raise CLIError(f"unknown pooling {args.pooling!r}; use cls, mean, max or model")
    try:
        if args.pooling == "model":
            model = SentenceTransformer(source, trust_remote_code=args.trust_remote_code)
        else:
            transformer = Transformer(source, model_kwargs={"trust_remote_code": args.trust_remote_code})
            pooling = Pooling(transformer.get_embedding_dimension(), args.pooling)
            model = SentenceTransformer(modules=[transformer, pooling])
    except OSError as exc:
        raise CLIError(f"cannot load model {args.model!r}: {exc}".splitlines()[0]) from exc
    own = model.max_seq_length
    # Tokenizers without a limit report a huge sentinel (transformers' VERY_LARGE_INTEGER), which is no length.
    own = own if isinstance(own, int) and 0 < own <= 1_000_000 else None
    if args.max_seq_length is not None:
        model.max_seq_length = args.max_seq_length
    return model, own


def load_model(args: ModelArguments):
    """A SentenceTransformer from a hub id or a local folder, with the requested pooling."""
    return load_model_with_length(args)[0]


def _dataset_error(source: str, exc: Exception) -> CLIError:
    """One line from a datasets loading failure: the innermost cause is the one that names the problem."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return CLIError(f"cannot read {source}: {message}")


def load_texts(source: str, text_column: str | None = None, max_samples: int | None = None):
    """A one-column ``text`` dataset of strings; missing, non-string and blank rows are dropped and counted.

    The count is printed once, naming the file. A dataset with no text left is an error.
    """
    _check_positive("--max_train_samples", max_samples)
    from datasets import Dataset, Features, Value, load_dataset, load_from_disk

    from st_infocse.training.data import clean_text_values, clean_texts, read_text_file

    source = bundled_text_source(source)
    column = check_text_source(source, text_column)
    path = Path(source).expanduser()
    kind = _file_kind(path) if path.is_file() else None
    try:
        if kind == "json":
            # Read here rather than by datasets: one field is kept, whatever its type, and cleaned before Arrow types
            # it (a field mixing strings and numbers becomes datasets' Json type, which cannot train).
            values = []
            for where, record in _json_records(path):
                if max_samples is not None and len(values) >= max_samples:
                    break
                if not isinstance(record, dict):
                    raise CLIError(f"{source}, {where}: expected a JSON object, got {type(record).__name__}")
                values.append(record.get(column))
            kept, report = clean_text_values(values)
            dataset = Dataset.from_dict({"text": kept}, features=Features({"text": Value("string")}))
            column = "text"
        else:
            if path.is_dir():
                dataset = load_from_disk(str(path))
            elif kind == "txt":
                dataset = read_text_file(path)
            elif kind in ("csv", "parquet"):
                extra = {"delimiter": "\t"} if ".tsv" in [s.lower() for s in path.suffixes] else {}
                dataset = load_dataset(kind, data_files=str(path), split="train", **extra)
            elif source.startswith("hf://"):
                dataset = load_dataset("text", data_files=source, split="train")
            else:
                dataset = load_dataset(source, split="train")
            if hasattr(dataset, "keys") and not isinstance(dataset, Dataset):  # a DatasetDict saved to disk
                dataset = dataset["train"]
            if column is None or column not in dataset.column_names:
                strings = [n for n, f in dataset.features.items() if getattr(f, "dtype", None) == "string"]
                column = _choose_column(source, dataset.column_names, strings, text_column)
            if max_samples is not None:
                dataset = dataset.select(range(min(max_samples, len(dataset))))
            dataset, report = clean_texts(dataset, column, warn=False)
    except (CLIError, ValueError, FileNotFoundError):
        raise
    except Exception as exc:  # noqa: BLE001 - datasets wraps a bad file in several exception types
        if type(exc).__module__.startswith(("datasets", "pyarrow")):
            raise _dataset_error(source, exc) from exc
        raise
    if report.dropped:
        print(f"{source}: {report}")
    if len(dataset) == 0:
        raise CLIError(f"no usable text in {source}: {report}")
    return dataset.rename_column(column, "text") if column != "text" else dataset


def _text_documents(path: Path) -> list[dict[str, str]]:
    """Blank-line-separated documents of a text file; ids count from 0 in file order."""
    documents: list[dict[str, str]] = []
    block: list[str] = []
    for _, line in [*_lines(path), (0, "")]:  # the sentinel blank line closes the last document
        if line.strip():
            block.append(line)
        elif block:
            documents.append({"id": str(len(documents)), "text": "\n".join(block)})
            block = []
    return documents


def load_documents(source: str, max_docs: int | None = None):
    """Documents for mining: a ``datasets.Dataset`` (folder, hub) or a list of records (local files)."""
    _check_positive("--max_docs", max_docs)
    from datasets import load_dataset, load_from_disk

    check_documents(source)
    path = Path(source).expanduser()
    if path.is_file():
        if _file_kind(path) == "txt":
            docs: Any = _text_documents(path)
        else:
            # Any JSON value is passed on: the miner splits 'text', takes 'sentences' and counts what it cannot use.
            docs = [record for _, record in _json_records(path)]
        return docs if max_docs is None else docs[:max_docs]
    try:
        docs = load_from_disk(str(path)) if path.is_dir() else load_dataset(source, split="train")
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 - as in load_texts
        if type(exc).__module__.startswith(("datasets", "pyarrow")):
            raise _dataset_error(source, exc) from exc
        raise
    if hasattr(docs, "keys") and not hasattr(docs, "column_names"):
        docs = docs["train"]
    if not ({"sentences", "text"} & set(docs.column_names)):
        raise CLIError(f"documents in {source} need a 'sentences' (list) or 'text' column; found {docs.column_names}")
    return docs if max_docs is None else docs.select(range(min(max_docs, len(docs))))


def _dev_evaluator(source: str):
    from st_infocse.evaluation import stsb_dev_evaluator

    if source.lower() == "none":
        return None
    if source.lower() == BUNDLED:
        from st_infocse.data import demo_stsb_dev_evaluator

        return demo_stsb_dev_evaluator()
    path = Path(source).expanduser()
    if source != "hub" and not path.exists():
        raise CLIError(f"STS-B dev data not found: {source}")
    try:
        return stsb_dev_evaluator(source if source == "hub" else path)
    except (OSError, RuntimeError) as exc:
        # RuntimeError: the hub copy could not be fetched (offline); the message says what to pass instead.
        raise CLIError(f"cannot load STS-B dev from {source!r}: {exc}".splitlines()[0]) from exc


# ------------------------------------------------------------------------------------------------ losses


def _loss_options(names: Sequence[str], args: LossArguments) -> dict[str, Any]:
    """The flags among ``names`` that were given (not None), as the loss's keyword arguments of the same names.

    A flag left unset is not passed, so the loss applies its own default; a given value, 0 included, reaches the
    loss as it is, which uses it or refuses it in one line.
    """
    options = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    # "none" turns the objective's own projection head off; only an explicit --projection overrides that head.
    if isinstance(options.get("projection"), str) and options["projection"].lower() == "none":
        options["projection"] = None
    return options


def build_loss(model, args: LossArguments, objective: str | None = None):
    """The loss of ``objective`` (default ``args.objective``) from the registry, given the flags it takes."""
    objective = objective or args.objective
    if objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    entry = get_objective(objective)
    if args.aux_gradient != "weighted" and "aux_gradient" not in entry.options:
        takes = [name for name, other in OBJECTIVE_REGISTRY.items() if "aux_gradient" in other.options]
        raise CLIError(f"--aux_gradient applies to {' and '.join(takes)}, not {objective}")
    if entry.loss is None:
        raise CLIError(f"--objective {objective} trains through its own rounds, not one loss")
    return entry.loss_class()(model, **_loss_options(entry.options, args))


def _learning_rate_mapping(loss, args: LossArguments) -> dict[str, float]:
    if args.aux_learning_rate is None:
        return {}
    names = [name for name, _ in loss.named_parameters() if not name.startswith("model.")]
    if not names:
        raise CLIError("--aux_learning_rate given, but this objective has no auxiliary modules")
    return {r"^(?!model\.)": args.aux_learning_rate}


# ---------------------------------------------------------------------------------------------- commands


def _finish_training_args(training_args, evaluator) -> None:
    if evaluator is None:
        training_args.eval_strategy = "no"
        training_args.load_best_model_at_end = False
        training_args.metric_for_best_model = None
    # Pinned memory only speeds up copies to a GPU; on CPU torch warns about it at every dataloader.
    if training_args.device.type == "cpu":
        training_args.dataloader_pin_memory = False


def _planned_steps(texts: int, training_args) -> int:
    """Optimizer steps the trainer will take on ``texts`` texts, counted as transformers' Trainer counts them."""
    if training_args.max_steps >= 0:
        return int(training_args.max_steps)
    per_batch = training_args.per_device_train_batch_size * max(1, training_args.world_size)
    batches = texts // per_batch if training_args.dataloader_drop_last else math.ceil(texts / per_batch)
    if batches == 0:
        return 0
    accumulation = training_args.gradient_accumulation_steps
    return math.ceil(training_args.num_train_epochs * max(1, math.ceil(batches / accumulation)))


def _checkpoint_plan(training_args) -> str:
    strategy = getattr(training_args.save_strategy, "value", training_args.save_strategy)
    if strategy == "no":
        return "none (final model only)"
    every = f"every {training_args.save_steps:g} steps" if strategy == "steps" else f"every {strategy}"
    kept = f", last {training_args.save_total_limit} kept" if training_args.save_total_limit else ""
    return f"{Path(training_args.output_dir) / 'checkpoint-N'} {every}{kept}"


def _lengths(training_length: int | None, saved_length: int | None) -> str:
    own = "" if saved_length is not None else " (the model states no length of its own)"
    return f"training max length {training_length}, saved model max length {training_length if saved_length is None else saved_length}{own}"


def _check_planned_steps(texts: int, training_args) -> int:
    """The run's optimizer steps; a run of none is an error (checked before the model is loaded)."""
    steps = _planned_steps(texts, training_args)
    if steps <= 0:
        batch = training_args.per_device_train_batch_size * max(1, training_args.world_size)
        raise CLIError(
            f"this run makes no optimizer step: {texts} texts, batch size {batch}"
            + (" with --dataloader_drop_last" if training_args.dataloader_drop_last else "")
        )
    return steps


def _start_summary(title: str, texts: int, training_args, training_length: int | None, own_length: int | None) -> None:
    """Print what the run will do, before it starts."""
    steps = _check_planned_steps(texts, training_args)
    batch = training_args.per_device_train_batch_size
    world, accumulation = max(1, training_args.world_size), training_args.gradient_accumulation_steps
    effective = f" ({batch * world * accumulation} per optimizer step)" if world * accumulation > 1 else ""
    _summary(
        title,
        {
            "texts": texts,
            "batch size": f"{batch}{effective}",
            "optimizer steps": steps,
            "checkpoints": _checkpoint_plan(training_args),
            "max length": _lengths(training_length, own_length),
        },
    )


def _save(model, path: Path, own_length: int | None) -> None:
    """Save with the model's own maximum length: the training length is a training setting, not the model's."""
    training_length = model.max_seq_length
    if own_length is not None:
        model.max_seq_length = own_length
    model.save(str(path))
    model.max_seq_length = training_length


def _train(model, loss, dataset, training_args, evaluator):
    from sentence_transformers import SentenceTransformerTrainer

    from st_infocse.training import AuxiliaryStateCallback
    from st_infocse.training.precision import warn_if_slow_bf16

    warn_if_slow_bf16(bool(training_args.bf16), training_args.device.type == "cpu")
    # --max_grad_norm bounds the encoder and the loss's heads/decoder together, as in the papers' trainer.
    auxiliary = AuxiliaryStateCallback(loss, clip_jointly=True)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training_args,
        train_dataset=dataset,
        loss=loss,
        evaluator=evaluator,
        callbacks=[auxiliary],
    )
    # Reporting integrations (--report_to) receive the logs before user callbacks; going first lets them record
    # the joint grad_norm and the auxiliary metrics this callback adds.
    trainer.callback_handler.callbacks.insert(0, trainer.callback_handler.pop_callback(auxiliary))
    resume = training_args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() in ("true", "last"):
        resume = True  # the newest checkpoint-N in output_dir
    elif isinstance(resume, str) and resume.lower() in ("false", "none", ""):
        resume = None
    elif resume is not None and not Path(resume).is_dir():
        raise CLIError(f"--resume_from_checkpoint: no checkpoint folder at {resume}")
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def _summary(title: str, rows: dict[str, Any]) -> None:
    width = max(len(k) for k in rows)
    print(f"\n{title}")
    for key, value in rows.items():
        print(f"  {key.ljust(width)}  {value}")


def cmd_pretrain_aux(argv: Sequence[str]) -> int:
    argv = _expand_config(argv)
    _precheck_training(argv, "pretrain-aux")
    model_args, data_args, loss_args, training_args = _parse(
        [ModelArguments, DataArguments, LossArguments, _training_arguments_class()],
        argv,
        "st-infocse pretrain-aux",
        evaluates=False,
    )
    _check_step_counts(training_args.max_steps, training_args.num_train_epochs)
    _finish_training_args(training_args, None)
    dataset = load_texts(data_args.train_data, data_args.text_column, data_args.max_train_samples)
    _check_planned_steps(len(dataset), training_args)
    model, own_length = load_model_with_length(model_args)
    loss = STAGE1.loss_class()(model, **_loss_options(STAGE1.options, loss_args))
    training_args.learning_rate_mapping = training_args.learning_rate_mapping or _learning_rate_mapping(loss, loss_args)
    _start_summary("Stage-1 auxiliary pre-training", len(dataset), training_args, model.max_seq_length, own_length)
    start = time.time()
    trainer = _train(model, loss, dataset, training_args, None)
    out = Path(training_args.output_dir)
    _save(model, out / "model", own_length)
    loss.save_decoder(out / "decoder")
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    _summary(
        "Stage-1 auxiliary pre-training done",
        {
            "texts": len(dataset),
            "steps": trainer.state.global_step,
            "last mlm / aux loss": f"{history[-1].get('mlm', float('nan')):.4f} / {history[-1].get('aux', float('nan')):.4f}"
            if history
            else "-",
            "time": f"{time.time() - start:.0f} s",
            "max length": _lengths(model.max_seq_length, own_length),
            "encoder": out / "model",
            "decoder": out / "decoder",
            "next": f"st-infocse train --model {out / 'model'} --decoder {out / 'decoder'}",
        },
    )
    return 0


def cmd_train(argv: Sequence[str]) -> int:
    argv = _expand_config(argv)
    recipe_name, user_argv = _take_recipe(argv)
    if recipe_name == "list":
        print(format_recipe_list())
        return 0
    recipe = _get_recipe(recipe_name) if recipe_name is not None else None
    argv = _with_recipe(recipe, user_argv) if recipe is not None else user_argv
    _precheck_training(argv, "train")
    if recipe is not None and not _asks_for_help(argv):
        argv = _start_recipe(recipe, argv, user_argv)
    _, model_args, data_args, loss_args, training_args = _parse(
        [RecipeArguments, ModelArguments, DataArguments, LossArguments, _training_arguments_class()],
        argv,
        "st-infocse train",
    )
    if loss_args.objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {loss_args.objective!r}; choose one of {', '.join(OBJECTIVES)}")
    _check_step_counts(training_args.max_steps, training_args.num_train_epochs)
    if loss_args.objective == "idc":
        if not loss_args.docs:
            raise CLIError("--objective idc needs --docs (documents to mine pairs from)")
        documents = load_documents(loss_args.docs)
        dataset = None
    else:
        dataset = load_texts(data_args.train_data, data_args.text_column, data_args.max_train_samples)
    evaluator = _dev_evaluator(data_args.stsb_dev)
    _finish_training_args(training_args, evaluator)
    if dataset is not None:
        _check_planned_steps(len(dataset), training_args)
    model, own_length = load_model_with_length(model_args)
    start = time.time()
    if dataset is None:
        return _train_idc(model, own_length, documents, loss_args, training_args, evaluator, start)
    loss = build_loss(model, loss_args)
    if not training_args.learning_rate_mapping:
        training_args.learning_rate_mapping = _learning_rate_mapping(loss, loss_args)
    _start_summary(f"Training {loss_args.objective}", len(dataset), training_args, model.max_seq_length, own_length)
    trainer = _train(model, loss, dataset, training_args, evaluator)
    out = Path(training_args.output_dir)
    training_length = model.max_seq_length
    _save(model, out, own_length)
    rows = {"objective": loss_args.objective, "loss": f"{type(loss).__name__} {json.dumps(loss.get_config_dict())}"}
    rows.update(texts=len(dataset), steps=trainer.state.global_step, time=f"{time.time() - start:.0f} s")
    if evaluator is not None and trainer.state.best_metric is not None:
        rows["best STS-B dev"] = f"{100 * trainer.state.best_metric:.2f} ({trainer.state.best_model_checkpoint})"
    rows["max length"] = _lengths(training_length, own_length)
    rows["model"] = out
    _summary("Training done", rows)
    return 0


def _train_idc(
    model, own_length: int | None, documents, loss_args: LossArguments, training_args, evaluator, start: float
) -> int:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from st_infocse.mining import train_idc_rounds

    if loss_args.idc_loss not in ("mnrl", "infocse"):
        raise CLIError(f"--idc_loss must be mnrl or infocse, got {loss_args.idc_loss!r}")
    if loss_args.idc_loss == "mnrl":
        if loss_args.temperature <= 0:  # the scale is its inverse; InfoCSE's loss checks its own
            raise CLIError(f"--temperature must be positive, got {loss_args.temperature:g}")
        factory: Callable = lambda m: MultipleNegativesRankingLoss(m, scale=1 / loss_args.temperature)  # noqa: E731
    else:
        factory = lambda m: build_loss(m, loss_args, objective="infocse")  # noqa: E731
    keep = (
        "per_device_train_batch_size",
        "learning_rate",
        "num_train_epochs",
        "max_steps",
        "warmup_steps",
        "seed",
        "logging_steps",
        "bf16",
        "dataloader_pin_memory",
    )
    overrides = {name: getattr(training_args, name) for name in keep}
    _summary(
        "IDC training",
        {
            "documents": len(documents),
            "rounds": f"up to {loss_args.rounds} (mine -> train)",
            "batch size": training_args.per_device_train_batch_size,
            "rounds folder": Path(training_args.output_dir) / "rounds",
            "max length": _lengths(model.max_seq_length, own_length),
        },
    )
    result = train_idc_rounds(
        model,
        documents,
        factory,
        rounds=loss_args.rounds,
        initial_annotation=loss_args.initial_annotation,
        evaluator=evaluator,
        training_args=overrides,
        mining_kwargs={"k": loss_args.idc_k, "similarity": loss_args.idc_similarity},
        output_dir=Path(training_args.output_dir) / "rounds",
        seed=training_args.seed,
    )
    out = Path(training_args.output_dir)
    training_length = model.max_seq_length
    _save(model, out, own_length)
    print(result)
    _summary(
        "IDC training done",
        {
            "documents": len(documents),
            "time": f"{time.time() - start:.0f} s",
            "max length": _lengths(training_length, own_length),
            "model": out,
        },
    )
    return 0


def cmd_mine(argv: Sequence[str]) -> int:
    argv = _expand_config(argv)
    if not _asks_for_help(argv):
        docs = _flag_value(argv, "--docs", None)
        if not docs:
            raise CLIError(f"--docs is required (documents: {DOCUMENT_FORMATS})")
        check_documents(docs)
        check_model_source(_flag_value(argv, "--model", SavedModelArguments.model))
    from st_infocse.mining import mine_pairs

    model_args, mine_args = _parse([SavedModelArguments, MineArguments], argv, "st-infocse mine")
    if mine_args.min_sentences < 2:  # the miner would raise it to 2 without a word
        raise CLIError(f"--min_sentences must be at least 2 (a pair needs two sentences), got {mine_args.min_sentences}")
    documents = load_documents(mine_args.docs, mine_args.max_docs)
    model = load_model(model_args)
    # The miner logs its report at INFO; the command prints it once below, and keeps the miner's warnings.
    miner_logger = logging.getLogger("st_infocse.mining.idc")
    level = miner_logger.level
    miner_logger.setLevel(logging.WARNING)
    start = time.time()
    try:
        mined = mine_pairs(
            documents,
            model,
            k=mine_args.k,
            threshold=mine_args.threshold,
            similarity=mine_args.similarity,
            min_sentences=mine_args.min_sentences,
            max_sentences=mine_args.max_sentences,
            max_pairs_per_cluster=mine_args.max_pairs_per_cluster,
            batch_size=mine_args.batch_size,
            seed=mine_args.seed,
            show_progress_bar=True,
        )
    finally:
        miner_logger.setLevel(level)
    out = Path(mine_args.output_dir)
    mined.pairs.save_to_disk(str(out / "pairs"))
    report = mined.report.to_dict() if hasattr(mined.report, "to_dict") else asdict(mined.report)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(mined.report.summary())
    _summary(
        "Mining done",
        {
            "pairs": len(mined.pairs),
            "time": f"{time.time() - start:.0f} s",
            "dataset": out / "pairs",
            "report": out / "report.json",
        },
    )
    return 0


def cmd_evaluate(argv: Sequence[str]) -> int:
    from st_infocse import evaluation

    model_args, eval_args = _parse([SavedModelArguments, EvaluateArguments], argv, "st-infocse evaluate")
    if not (eval_args.sts or eval_args.beir or eval_args.transfer):
        raise CLIError("nothing to evaluate: give --sts, --beir and/or --transfer")
    for flag, value in (
        ("--sts", eval_args.sts),
        ("--beir_source", eval_args.beir_source if eval_args.beir else None),
        ("--transfer", eval_args.transfer),
    ):
        if value and value not in ("mteb", "hub") and not Path(value).expanduser().exists():
            raise CLIError(f"{flag}: not found: {value}")
    if eval_args.verbose:
        # an explicit level on beir's logger is what the evaluators leave alone
        logging.getLogger("beir").setLevel(logging.INFO)
    model = load_model(model_args)
    label = Path(model_args.model).name or model_args.model
    # truncation changes the scores, so the length in force is part of every report
    settings = {
        "model": model_args.model,
        "max_seq_length": model.max_seq_length,
        "pooling": model_args.pooling,
        "batch_size": eval_args.batch_size,
    }
    _summary("Evaluating", settings)
    results: dict[str, Any] = {}
    try:
        if eval_args.sts:
            results["STS"] = evaluation.evaluate_sts_suite(
                model, eval_args.sts, batch_size=eval_args.batch_size, model_label=label
            )
            print(results["STS"])
        if eval_args.beir:
            results["BEIR"] = evaluation.evaluate_beir(
                model, eval_args.beir, source=eval_args.beir_source, batch_size=eval_args.batch_size, model_label=label
            )
            print(results["BEIR"])
        if eval_args.transfer:
            results["Transfer"] = evaluation.evaluate_transfer(
                model, eval_args.transfer, batch_size=eval_args.batch_size, model_label=label
            )
            print(results["Transfer"])
    except evaluation.DataFormatError as exc:
        raise CLIError(str(exc)) from exc
    written = evaluation.save_report(results, eval_args.output_dir, plots=eval_args.plots, settings=settings)
    _summary("Evaluation done", {kind: path for kind, path in written.items()})
    return 0


def cmd_demo(argv: Sequence[str]) -> int:
    # Imported on use: the demo's optional dependencies stay out of every other command.
    try:
        from st_infocse.demo import cmd_demo as run_demo
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("st_infocse"):
            raise CLIError(f"the demo is not part of this installation ({exc.name} is missing)") from exc
        raise CLIError(f"the demo needs {exc.name}: pip install 'st-infocse[demo]'") from exc
    return run_demo(argv)


COMMANDS: dict[str, tuple[Callable[[Sequence[str]], int], str]] = {
    "pretrain-aux": (cmd_pretrain_aux, "stage 1: pre-train the auxiliary decoder (paper 000 §3.1)"),
    "train": (cmd_train, "train with --objective simcse|infocse|cmlm-cse|informin|idc|cmlm"),
    "mine": (cmd_mine, "mine IDC positive pairs from documents into a dataset on disk"),
    "evaluate": (cmd_evaluate, "STS suite, BEIR and transfer tasks; JSON, markdown and plots"),
    "demo": (cmd_demo, "train and evaluate offline on the bundled demo data (pip install 'st-infocse[demo]')"),
    "recipes": (cmd_recipes, "the papers' released runs, for `st-infocse train --recipe NAME`"),
}


def _usage() -> str:
    lines = ["usage: st-infocse <command> [flags]   (st-infocse <command> --help for its flags)", "", "commands:"]
    lines += [f"  {name:<13} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"st-infocse: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[command][0](rest)
    except (CLIError, FileNotFoundError, ValueError) as exc:
        # ValueError: our own input checks raise it with a message meant for the user (UnsupportedModelError too).
        print(f"st-infocse {command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
