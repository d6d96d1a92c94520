"""What the command line checks before the heavy work: flags read from the command line before the argument parser
(and torch) are imported, the STS-B dev source, and whether a run makes any optimizer step.

The files themselves are checked by the library (``st_infocse.training.texts``, ``st_infocse.mining.documents``),
through the package's one line reader and JSON-lines reader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import (
    BUNDLED,
    OBJECTIVES,
    DataArguments,
    LossArguments,
    ModelArguments,
    asks_for_help,
    flag_names,
    given_value,
)
from st_infocse.cli.errors import CLIError
from st_infocse.files import looks_local
from st_infocse.mining.documents import check_documents
from st_infocse.training.texts import check_text_source

__all__ = [
    "check_idc_flags",
    "check_model_source",
    "check_output_dir",
    "check_planned_steps",
    "check_step_counts",
    "dev_evaluator",
    "finish_training_args",
    "model_from_args",
    "planned_steps",
    "precheck_training",
    "text_source",
]


def text_source(source: str) -> str:
    """``demo`` names the 4,096 Wikipedia sentences shipped with the package; anything else is returned as is."""
    if source == BUNDLED:
        from st_infocse.data import sentences_file

        return str(sentences_file())
    return source


def check_model_source(source: str) -> None:
    if looks_local(source) and not Path(source).expanduser().exists():
        raise CLIError(f"model not found: {source}")


def check_output_dir(output_dir: str | None, flag: str = "--output_dir") -> None:
    """A folder to write into: an existing file there would fail only after the model loaded (or the evaluation ran)."""
    if output_dir and Path(output_dir).expanduser().is_file():
        raise CLIError(f"{flag}: {output_dir} is a file, not a folder")


def check_step_counts(max_steps: float, epochs: float) -> None:
    """transformers trains ``max_steps`` when it is 0 or more (so 0 trains nothing) and epochs only when it is
    negative, so ``-5`` would silently mean "epochs": only -1 is that setting's spelling."""
    if max_steps < 0 and max_steps != -1:
        raise CLIError(f"--max_steps must be a positive number of steps, or -1 to train --num_train_epochs; got {max_steps:g}")
    if max_steps == 0 or (max_steps < 0 and epochs <= 0):
        raise CLIError(
            f"--max_steps {max_steps:g} with --num_train_epochs {epochs:g} makes no optimizer step: "
            "give --max_steps N > 0, or --max_steps -1 (the default) with --num_train_epochs > 0"
        )


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


# Trainer flags with no meaning inside a round: the rounds evaluate and keep the best round themselves.
IDC_REFUSED_TRAINER_FLAGS = (
    "eval_strategy",
    "eval_steps",
    "eval_delay",
    "load_best_model_at_end",
    "metric_for_best_model",
    "greater_is_better",
    "resume_from_checkpoint",
)
# Flags of other sections that IDC does not read: it trains on pairs mined from --docs.
IDC_REFUSED_FLAGS = ("train_data", "text_column", "max_train_samples", "split_sentences", "keep_start_if_better")


def check_idc_flags(argv: Sequence[str]) -> None:
    """Refuse, before the model loads, a flag that cannot apply to IDC's rounds (it would be dropped unused)."""
    given = flag_names(argv)
    refused = [f"--{name}" for name in IDC_REFUSED_TRAINER_FLAGS + IDC_REFUSED_FLAGS if name in given]
    if refused:
        raise CLIError(
            f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to --objective idc: its rounds "
            "train on pairs mined from --docs, evaluate after each round and keep the best round, the model as "
            "given included"
        )


def precheck_training(argv: Sequence[str], command: str) -> None:
    """What can be told from the flags alone, before the trainer's argument parser (and torch) are imported.

    The values are read as the parser will read them (last one wins); an abbreviated flag slips past this and is
    checked by the same functions after parsing, only later.
    """
    if asks_for_help(argv):
        return
    objective = given_value(argv, "--objective", LossArguments.objective) if command == "train" else None
    if objective is not None and objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    steps = given_value(argv, "--max_steps", -1), given_value(argv, "--num_train_epochs", 1)  # 1: any positive
    if all(_is_number(value) for value in steps):  # anything else is the argument parser's to report
        check_step_counts(*(float(value) for value in steps))
    check_model_source(given_value(argv, "--model", ModelArguments.model))
    check_output_dir(given_value(argv, "--output_dir", None))
    retrieval = given_value(argv, "--eval_retrieval", None)
    if retrieval and not Path(retrieval).expanduser().is_dir():
        raise CLIError(f"--eval_retrieval: no folder at {retrieval} (a BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/)")
    decoder = given_value(argv, "--decoder", None)
    if decoder and not Path(decoder).expanduser().exists():
        raise CLIError(f"--decoder: not found: {decoder}")
    stsb_dev = given_value(argv, "--stsb_dev", DataArguments.stsb_dev)
    known = ("hub", "none", BUNDLED)
    if command == "train" and stsb_dev.lower() not in known and not Path(stsb_dev).expanduser().exists():
        raise CLIError(f"STS-B dev data not found: {stsb_dev}")
    if objective == "idc":
        check_idc_flags(argv)
        docs = given_value(argv, "--docs", None)
        if not docs:
            raise CLIError("--objective idc needs --docs (documents to mine pairs from)")
        check_documents(docs)
    else:
        train_data = text_source(given_value(argv, "--train_data", DataArguments.train_data))
        check_text_source(train_data, given_value(argv, "--text_column", None))


def model_from_args(args: ModelArguments, seed: int | None = None):
    """The model the flags name, by the package's one loading rule (:func:`st_infocse.training.load_model`), as a
    :class:`~st_infocse.training.builder.LoadedModel`.

    Given ``seed``, seeds Python, NumPy and torch with it first, as the authors' scripts do before building the
    model, so that what is initialised fresh after it (a new pooling or MLM head, the loss's projection, fusion
    layers and MLM head) is the same at every run with the same ``--seed``; the trainer seeds again only when it is
    built, after the loss.
    """
    from transformers import set_seed

    from st_infocse.training.builder import load_model

    if seed is not None:
        set_seed(seed)
    return load_model(args.model, args.pooling, args.max_seq_length, args.trust_remote_code)


def dev_evaluator(source: str):
    """The STS-B dev evaluator of ``--stsb_dev``, or None for ``none``."""
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
        # RuntimeError: the hub copy could not be fetched (offline); name the copy that ships with the package.
        if source == "hub":
            raise CLIError(
                "cannot load STS-B dev from the Hugging Face hub (sentence-transformers/stsb); offline, use "
                f"--stsb_dev {BUNDLED} (the 1,500 STS-B dev pairs shipped with the package), a SentEval "
                "data/downstream folder or a sentence1/sentence2/score file, or --stsb_dev none"
            ) from exc
        raise CLIError(f"cannot load STS-B dev from {source!r}: {exc}".splitlines()[0]) from exc


def finish_training_args(training_args, evaluator) -> None:
    """Without an evaluator there is no dev score to evaluate or to keep the best checkpoint by."""
    if evaluator is None:
        training_args.eval_strategy = "no"
        training_args.load_best_model_at_end = False
        training_args.metric_for_best_model = None


def planned_steps(texts: int, training_args) -> int:
    """Optimizer steps the trainer will take on ``texts`` texts, counted as transformers' Trainer counts them."""
    if training_args.max_steps >= 0:
        return int(training_args.max_steps)
    per_batch = training_args.per_device_train_batch_size * max(1, training_args.world_size)
    batches = texts // per_batch if training_args.dataloader_drop_last else math.ceil(texts / per_batch)
    if batches == 0:
        return 0
    accumulation = training_args.gradient_accumulation_steps
    return math.ceil(training_args.num_train_epochs * max(1, math.ceil(batches / accumulation)))


def check_planned_steps(texts: int, training_args) -> int:
    """The run's optimizer steps; a run of none is an error (checked before the model is loaded)."""
    steps = planned_steps(texts, training_args)
    if steps <= 0:
        batch = training_args.per_device_train_batch_size * max(1, training_args.world_size)
        raise CLIError(
            f"this run makes no optimizer step: {texts} texts, batch size {batch}"
            + (" with --dataloader_drop_last" if training_args.dataloader_drop_last else "")
        )
    return steps
