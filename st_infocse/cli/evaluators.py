"""What a training run is measured with, read from its flags: the evaluators of
:func:`~st_infocse.evaluation.run_evaluators.run_evaluation`, each refusal under its flag's name."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import BUNDLED, RunEvaluationArguments, flag_error
from st_infocse.cli.errors import CLIError
from st_infocse.files import InputError


def run_evaluation(run_args: RunEvaluationArguments | None, training_args: Any, given: Collection[str]):
    """The run's evaluators, built before the model loads. With ``--eval_retrieval`` the user's own retrieval
    nDCG@10 chooses the checkpoint (and decides whether the starting model is handed back), unless
    ``--metric_for_best_model`` is given (``given``: the flags set)."""
    from st_infocse.evaluation.run_evaluators import RunEvaluation
    from st_infocse.evaluation.run_evaluators import run_evaluation as build

    if run_args is None:  # stage 1: nothing to measure
        return RunEvaluation()
    source = run_args.stsb_dev
    if source.lower() == BUNDLED:
        from st_infocse.data import demo_stsb_dev

        dev: Any = demo_stsb_dev()
    else:
        dev = None if source.lower() == "none" else source if source == "hub" else Path(source).expanduser()
    try:
        return build(dev, run_args.eval_retrieval, split=run_args.eval_retrieval_split,
                     max_corpus=run_args.eval_retrieval_max_corpus or None, seed=training_args.seed,
                     retrieval_chooses="metric_for_best_model" not in given)
    except InputError as exc:  # its message starts with the argument's name, here the flag's
        if str(exc).startswith("stsb_dev:") and source == "hub":
            raise CLIError("cannot load STS-B dev from the Hugging Face hub (sentence-transformers/stsb); offline, use "
                           f"--stsb_dev {BUNDLED} (the 1,500 STS-B dev pairs shipped with the package), a SentEval "
                           "data/downstream folder or a sentence1/sentence2/score file, or --stsb_dev none") from exc
        raise flag_error(exc, run_args) from exc

