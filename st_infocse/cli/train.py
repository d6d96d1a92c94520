"""``st-infocse train`` and ``st-infocse pretrain-aux`` (stage 1, paper 000 section 3.1): the entry of the objective
(:mod:`~st_infocse.cli.objectives`) followed through one flow, or IDC's mine -> train rounds on documents.

    st-infocse pretrain-aux --model bert-base-uncased --train_data corpus.txt --output_dir stage1
    st-infocse train --objective infocse --model stage1/model --decoder stage1/decoder --output_dir out
    st-infocse train --recipe infocse-bert-base --train_data wiki1m_for_simcse.txt --output_dir out
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import BUNDLED, flag_error
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_earlier_run, model_from_args
from st_infocse.cli.objectives import add_adapter
from st_infocse.cli.output import finish_run, start_summary
from st_infocse.cli.training_flags import TrainingFlags, read_training_flags
from st_infocse.evaluation.bm25_language import BM25_NEEDS
from st_infocse.files import InputError
from st_infocse.training.builder import learning_rate_mapping
from st_infocse.training.texts import count_long_texts


def run_evaluation(flags: TrainingFlags):
    """The run's evaluators and BM25's reference lines (:func:`~st_infocse.evaluation.run_evaluators.run_evaluation`),
    built before the model loads, each refusal under its flag's name; ``demo`` (the pairs shipped in
    :mod:`st_infocse.data`) and ``none`` are the command line's own values of ``--stsb_dev``. With
    ``--eval_retrieval`` the user's own retrieval nDCG@10 chooses the checkpoint, unless ``--metric_for_best_model``
    is given; BM25 missing is a note, unless ``--bm25 true`` is typed."""
    from st_infocse.evaluation.run_evaluators import run_evaluation as build

    run_args, lexical = flags.run, flags.lexical
    if run_args is None:  # stage 1: nothing to measure
        return build()
    source = run_args.stsb_dev
    if source.lower() == BUNDLED:
        from st_infocse.data import demo_stsb_dev

        dev: Any = demo_stsb_dev()
    else:
        dev = None if source.lower() == "none" else source if source == "hub" else Path(source).expanduser()
    try:
        measured = build(dev, run_args.eval_retrieval, split=run_args.eval_retrieval_split,
                         max_corpus=run_args.eval_retrieval_max_corpus or None, seed=flags.trainer.seed,
                         retrieval_chooses="metric_for_best_model" not in flags.given,
                         lexical=lexical.settings() if lexical is not None else None)
    except InputError as exc:  # its message starts with the argument's name, here the flag's
        hub = f" (--stsb_dev {BUNDLED}: the shipped pairs; none: no STS-B dev)" if source == "hub" else ""
        raise CLIError(f"{flag_error(exc, run_args)}{hub}") from exc
    if "bm25" in flags.typed and lexical.bm25 and measured.retrieval is not None and measured.references is None:
        raise CLIError(f"--bm25 true needs {BM25_NEEDS}")  # typed: not only the library's note that BM25 is missing
    return measured


def run_trainer(model, loss, dataset, training_args, evaluator, callbacks=()):
    """Train ``loss`` on ``dataset`` through the package's trainer builder, resuming where ``--resume_from_checkpoint``
    says (a folder, or True: the newest checkpoint in the output folder), a Ctrl-C saving a checkpoint; returns the
    trainer."""
    from st_infocse.training.builder import build_trainer
    from st_infocse.training.interrupt import interruptible

    trainer = build_trainer(model, loss, dataset, training_args, evaluator, callbacks=callbacks)
    with interruptible(trainer):
        trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    return trainer


def cmd_pretrain_aux(argv: Sequence[str]) -> int:
    return cmd_train(argv, "pretrain-aux")


def cmd_train(argv: Sequence[str], command: str = "train") -> int:
    flags = read_training_flags(argv, command)
    if flags is None:  # --help, or --recipe list
        return 0
    training_args, objective, entry = flags.trainer, flags.objective, flags.entry
    measured = run_evaluation(flags)
    data = entry.prepare(flags)
    anchor = None
    if entry.run is None:
        steps = training_args.planned_steps(len(data))
        if flags.keep is not None:
            from st_infocse.training.anchor import WeightAnchorCallback, fit_to_anchor

            anchor = fit_to_anchor(training_args, flags.keep.weight_anchor, steps,
                                   load_best_asked="load_best_model_at_end" in flags.given)
    replaced = check_earlier_run(training_args.output_dir, training_args.resume_from_checkpoint,
                                 flags.output.overwrite_output_dir)
    loaded = model_from_args(flags.model, training_args.seed)
    model = loaded.model
    measured.for_model(model, training_args, loaded.own_length)
    add_adapter(model, flags.lora, measured.notes)  # IDC's too, before round 1: every round trains it, round 2 mines with it
    start = time.time()
    if entry.run is not None:
        return entry.run(loaded, flags, measured, data, start)
    dataset = entry.finish(model, flags, data) if entry.finish is not None else data
    column = "positive" if "positive" in dataset.column_names else "text"  # a pair's document side, else the text
    cut = count_long_texts(model.tokenizer, dataset[column], model.max_seq_length, seed=training_args.seed).message(
        already_split=flags.data is None or flags.data.split_sentences)  # --split_sentences: a text objective's
    loss = entry.loss(model, flags, dataset)
    if not training_args.learning_rate_mapping:
        try:
            training_args.learning_rate_mapping = learning_rate_mapping(loss, flags.aux_learning_rate)
        except ValueError as error:  # the library names the argument, the user gave the flag
            raise flag_error(error, flags.aux) from None
    start_summary(entry.title or f"Training {objective}", len(dataset), steps, training_args, loaded,
                  {**measured.notes, **({"texts cut": cut} if cut else {}),
                   **({"output folder": replaced} if replaced else {}),
                   **({"weight anchor": anchor} if anchor else {})})
    callbacks, ends = [], None
    if measured.evaluator is not None:
        from st_infocse.training.start_end import StartEndCallback

        ends = StartEndCallback(measured.evaluator, keep_start_if_better=flags.keep.keep_start_if_better, log=False,
                                keep_trained_if=flags.run.keep_trained_if, confirm_share=flags.run.confirm_share)
        callbacks.append(ends)
        if measured.references is not None:  # after StartEndCallback: its start evaluation leaves the hits
            callbacks.append(measured.references)
    if anchor:  # one copy of the start for both callbacks: the anchor shares the start-end callback's
        callbacks.append(WeightAnchorCallback(flags.keep.weight_anchor, start_weights=ends and ends.start_weights))
    # Ctrl-C: Interrupted, saying what was saved, which main prints before it exits with 130
    trainer = run_trainer(model, loss, dataset, training_args, measured.evaluator, callbacks)
    rows = {"objective": objective, "loss": f"{type(loss).__name__} {json.dumps(loss.get_config_dict())}",
            "texts": len(dataset), "steps": trainer.state.global_step, "time": f"{time.time() - start:.0f} s"}
    last = next((log for log in reversed(trainer.state.log_history) if "loss" in log), None)
    if last is not None:  # the loss and each of its terms, as last logged
        rows["last loss"] = ", ".join(f"{key} {value:.4f}" for key, value in last.items() if isinstance(value, float)
                                      and key not in ("learning_rate", "grad_norm", "epoch", "step"))
    record: dict = {"objective": objective, "steps": trainer.state.global_step, "loss": loss.get_config_dict()}
    if ends is not None:
        record.update(start_end=ends.result.to_dict(), saved=ends.result.saved_line())
        if measured.references is not None:
            reference_rows, record["lexical_references"] = measured.references.rows()
            rows.update(reference_rows)
    finish_run(loaded, flags, measured, f"{entry.title} done" if entry.title else "Training done", rows, record,
               anchor, ends and ends.result, loss=loss)
    return 0

