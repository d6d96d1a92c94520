"""``st-infocse pretrain-aux``: stage 1, the auxiliary decoder pre-trained on the encoder (paper 000 section 3.1).

    st-infocse pretrain-aux --model bert-base-uncased --train_data corpus.txt --output_dir stage1
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from st_infocse.cli.evaluators import write_run_summary
from st_infocse.cli.inputs import (
    check_earlier_run,
    check_planned_steps,
    model_from_args,
)
from st_infocse.cli.interrupt import Interrupted
from st_infocse.cli.objectives import learning_rate_mapping
from st_infocse.cli.output import lengths, start_summary, summary
from st_infocse.cli.train import run_trainer
from st_infocse.cli.training_flags import read_training_flags
from st_infocse.training.builder import save_model

__all__ = ["cmd_pretrain_aux"]


def cmd_pretrain_aux(argv: Sequence[str]) -> int:
    flags = read_training_flags(argv, "pretrain-aux")
    if flags is None:  # --help
        return 0
    training_args = flags.trainer
    prepared = flags.entry.prepare(flags)
    dataset = prepared.dataset
    check_planned_steps(len(dataset), training_args)
    replaced = check_earlier_run(training_args.output_dir, training_args.resume_from_checkpoint,
                                 flags.output.overwrite_output_dir)
    if replaced:
        print(f"--overwrite_output_dir: {replaced}")
    loaded = model_from_args(flags.model, training_args.seed)
    model, own_length = loaded.model, loaded.own_length
    loss = flags.entry.loss(model, flags, prepared)
    training_args.learning_rate_mapping = (training_args.learning_rate_mapping
                                           or learning_rate_mapping(loss, flags.aux_learning_rate))
    start_summary("Stage-1 auxiliary pre-training", len(dataset), training_args, model.max_seq_length, own_length)
    start = time.time()
    try:
        trainer = run_trainer(model, loss, dataset, training_args, None)
    except Interrupted as stop:
        print(stop.line(training_args.output_dir))
        return 130
    out = Path(training_args.output_dir)
    save_model(model, out / "model", own_length)
    loss.save_decoder(out / "decoder")
    write_run_summary(out, {"objective": flags.objective, "steps": trainer.state.global_step,
                            "settings": flags.settings(), "loss": loss.get_config_dict()})
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    summary(
        "Stage-1 auxiliary pre-training done",
        {
            "texts": len(dataset),
            "steps": trainer.state.global_step,
            "last mlm / aux loss": f"{history[-1].get('mlm', float('nan')):.4f} / {history[-1].get('aux', float('nan')):.4f}"
            if history
            else "-",
            "time": f"{time.time() - start:.0f} s",
            "max length": lengths(model.max_seq_length, own_length),
            "encoder": out / "model",
            "decoder": out / "decoder",
            "next": f"st-infocse train --model {out / 'model'} --decoder {out / 'decoder'}",
        },
    )
    return 0
