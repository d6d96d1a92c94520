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

from st_infocse.cli.arguments import EvaluateArguments, LexicalArguments, SavedModelArguments, flag_error
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_model_source, check_output_dir, model_from_args
from st_infocse.cli.output import summary
from st_infocse.cli.parsing import parse_command
from st_infocse.files import InputError, check_sources

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
    try:  # the library's own checks of the sets, under the flags' names
        check_sources(eval_args.sts, eval_args.beir or (), eval_args.beir_source, eval_args.split, eval_args.transfer,
                      hub=not offline)
    except (InputError, FileNotFoundError) as exc:
        raise flag_error(exc, eval_args) from None


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
