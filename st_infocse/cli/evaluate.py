"""``st-infocse evaluate``: the STS suite, BEIR and the transfer tasks; JSON, markdown and plots.

    st-infocse evaluate --model out --sts ../shared/data/senteval --beir scifact --beir_source ../shared/data/beir
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import EvaluateArguments, SavedModelArguments, asks_for_help, given_value, parse
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_model_source, check_output_dir, model_from_args
from st_infocse.cli.output import summary

__all__ = ["cmd_evaluate"]


def flag_values(argv: Sequence[str], flag: str) -> list[str]:
    """Every value given to a list flag (``--beir scifact nfcorpus``), as the parser will read them."""
    values: list[str] = []
    for index, item in enumerate(argv):
        if item == flag:
            values = []
            for value in argv[index + 1 :]:
                if value.startswith("--"):
                    break
                values.append(value)
    return values


def precheck_evaluate(argv: Sequence[str]) -> None:
    """Paths that do not exist, told before the argument parser, torch and the model are loaded."""
    check_model_source(given_value(argv, "--model", SavedModelArguments.model))
    check_output_dir(given_value(argv, "--output_dir", None))
    for flag in ("--sts", "--transfer", "--beir_source"):
        value = given_value(argv, flag, None)
        if value and value not in ("mteb", "hub") and not Path(value).expanduser().exists():
            raise CLIError(f"{flag}: not found: {value}")
    root = given_value(argv, "--beir_source", "mteb")
    if root in ("mteb", "hub"):
        return
    root_path = Path(root).expanduser()
    for name in flag_values(argv, "--beir"):
        folder = root_path / name if (root_path / name).is_dir() else root_path
        if (folder / "corpus.jsonl").is_file() and not (folder / "qrels").is_dir():
            raise CLIError(f"--beir {name}: {folder / 'qrels'} not found (a BEIR folder needs corpus.jsonl, queries.jsonl, qrels/)")
        if not (root_path / name).is_dir() and not (root_path / "corpus.jsonl").is_file():
            raise CLIError(f"--beir {name}: no BEIR dataset folder {root_path / name}")


def cmd_evaluate(argv: Sequence[str]) -> int:
    if not asks_for_help(argv):
        precheck_evaluate(argv)
    from st_infocse import evaluation

    model_args, eval_args = parse([SavedModelArguments, EvaluateArguments], argv, "st-infocse evaluate")
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
    model_loaded = model_from_args(model_args)
    model = model_loaded.model
    label = Path(model_args.model).name or model_args.model
    # truncation changes the scores, so the length in force is part of every report
    settings = {
        "model": model_args.model,
        "max_seq_length": model.max_seq_length,
        "modules": model_loaded.how,
        "batch_size": eval_args.batch_size,
    }
    summary("Evaluating", settings)
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
    summary("Evaluation done", {kind: path for kind, path in written.items()})
    return 0
