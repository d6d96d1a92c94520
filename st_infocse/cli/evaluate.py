"""``st-infocse evaluate``: the STS suite, BEIR and the transfer tasks; JSON, markdown and plots. With
``--compare MODEL``, the second model on the same sets and each change with its interval over queries / pairs.

    st-infocse evaluate --model out --sts ../shared/data/senteval --beir scifact --beir_source ../shared/data/beir
    st-infocse evaluate --model out --compare all-MiniLM-L6-v2 --beir scifact --beir_source ../shared/data/beir
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import EvaluateArguments, LexicalArguments, SavedModelArguments
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_model_source, check_output_dir, model_from_args
from st_infocse.cli.output import summary
from st_infocse.cli.parsing import parse_command
from st_infocse.files import beir_parts

SECTIONS = (SavedModelArguments, EvaluateArguments, LexicalArguments)


def precheck_evaluate(model_args: SavedModelArguments, eval_args: EvaluateArguments) -> None:
    """Paths that do not exist, told before torch and the model are loaded."""
    check_model_source(model_args.model)
    for other in eval_args.compare or ():
        check_model_source(other, "--compare")
    check_output_dir(eval_args.output_dir)
    if not (eval_args.sts or eval_args.beir or eval_args.transfer):
        raise CLIError("nothing to evaluate: give --sts, --beir and/or --transfer")
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    for flag, value in (("--sts", eval_args.sts), ("--transfer", eval_args.transfer)):
        if offline and value in ("mteb", "hub"):
            raise CLIError(f"{flag} {value} reads the Hugging Face hub, which is offline (HF_HUB_OFFLINE); give a "
                           "SentEval data/downstream folder")
        if value and value not in ("mteb", "hub") and not Path(value).expanduser().exists():
            raise CLIError(f"{flag}: not found: {value}")
    for name in eval_args.beir or []:
        local = Path(name).expanduser()  # a folder given by its path: read by its layout, whatever its name
        if not local.is_dir() and eval_args.beir_source in ("mteb", "hub"):
            if offline:
                raise CLIError(f"--beir {name}: no such folder, and the hub is offline (HF_HUB_OFFLINE); give the "
                               "folder's path or --beir_source DIR")
            continue
        try:
            parts, split = beir_parts(*((local.name, local) if local.is_dir() else (name, eval_args.beir_source)),
                                      eval_args.split)
        except FileNotFoundError as exc:
            raise CLIError(f"--beir {name}: {exc}") from None
        qrels = next(iter(parts.values())) / "qrels"
        if not (qrels / f"{split}.tsv").is_file():
            listed = ", ".join(sorted(p.name for p in qrels.glob("*.tsv"))) or "no .tsv file"
            raise CLIError(f"--beir {name}: {qrels / f'{split}.tsv'} not found (qrels/ holds {listed}; --split names "
                           "the split)")


def cmd_evaluate(argv: Sequence[str]) -> int:
    parsed = parse_command(SECTIONS, argv, "st-infocse evaluate")
    if parsed is None:  # --help
        return 0
    model_args, eval_args, lexical_args = parsed
    precheck_evaluate(model_args, eval_args)
    from st_infocse import evaluation

    # --verbose sets the retrieval loggers' level, which the evaluators then leave alone; restored afterwards
    with evaluation.quiet_logs(level=logging.INFO if eval_args.verbose else logging.WARNING):
        results, settings = _evaluate(model_args, eval_args, lexical_args.settings())
        others = [_evaluate(replace(model_args, model=name), eval_args)[0] for name in eval_args.compare or ()]
    written = evaluation.save_report(results, eval_args.output_dir, plots=eval_args.plots, settings=settings)
    if others:  # several models: one family of rows for Holm's rule, so that the verdicts hold together
        comparisons = evaluation.judge_together([evaluation.compare_results(other, results) for other in others])
        for comparison in comparisons:
            print(comparison)
        written["comparison"] = evaluation.save_comparisons(comparisons, eval_args.output_dir)
    summary("Evaluation done", written)
    return 0


def _evaluate(model_args: SavedModelArguments, eval_args: EvaluateArguments, lexical: Any = None) -> tuple[dict, dict]:
    """One model on every set asked for, and the settings it was scored with. ``lexical``: BM25's settings, for the
    reference lines beside each BEIR dataset (None: none)."""
    from st_infocse import evaluation

    model_loaded = model_from_args(model_args)
    model = model_loaded.model
    label = Path(model_args.model).name or model_args.model
    # truncation changes the scores, so the length in force is part of every report
    settings = {"model": model_args.model, "max_seq_length": model.max_seq_length, "modules": model_loaded.how,
                "batch_size": eval_args.batch_size}
    summary("Evaluating", settings)
    results: dict[str, Any] = {}
    per_query = ["ndcg@10"] if eval_args.compare else []
    if eval_args.sts:  # a data file the evaluators cannot read raises the library's one-line InputError
        results["STS"] = evaluation.evaluate_sts_suite(model, eval_args.sts, batch_size=eval_args.batch_size,
                                                       model_label=label)
    if eval_args.beir:
        results["BEIR"] = evaluation.evaluate_beir(
            model, eval_args.beir, source=eval_args.beir_source, batch_size=eval_args.batch_size, model_label=label,
            per_query=per_query, split=eval_args.split, lexical=lexical)
    if eval_args.transfer:
        results["Transfer"] = evaluation.evaluate_transfer(model, eval_args.transfer,
                                                           batch_size=eval_args.batch_size, model_label=label)
    for result in results.values():
        print(result)
    return results, settings
