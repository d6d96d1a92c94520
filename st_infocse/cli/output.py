"""What the commands print and record: a titled summary before a run starts and one when it ends, shared by every
training run (one trainer, or IDC's rounds), and the run's ``run_summary.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def summary(title: str, rows: dict[str, Any]) -> None:
    width = max(len(k) for k in rows)
    print(f"\n{title}")
    for key, value in rows.items():
        print(f"  {key.ljust(width)}  {value}")


def start_summary(title: str, texts: int, steps: int, training_args, loaded, extra: dict[str, Any] | None = None) -> None:
    """Print what the run will do, before it starts: ``steps`` optimizer steps on ``texts`` examples with the model
    ``loaded`` (:class:`~st_infocse.training.builder.LoadedModel`: its lengths and how it was built)."""
    batch = training_args.per_device_train_batch_size
    per_step = batch * max(1, training_args.world_size) * training_args.gradient_accumulation_steps
    summary(title, {"texts": texts, "batch size": f"{batch}{f' ({per_step} per optimizer step)' if per_step > batch else ''}",
                    "optimizer steps": steps, "checkpoints": training_args.checkpoint_plan(steps),
                    "max length": loaded.lengths(), "model": loaded.how, **(extra or {})})


def finish_run(loaded, flags, measured, title: str, rows: dict[str, Any], record: dict[str, Any], anchor: str | None,
               result: Any = None, loss: Any = None) -> None:
    """Every training run's end (one trainer, or IDC's rounds): the adapter merged, the model saved (by
    ``flags.entry.save``), ``record`` with the run's settings written to ``run_summary.json``, and the end summary:
    ``rows``, each metric of ``measured`` (the run's :class:`~st_infocse.evaluation.RunEvaluation`, whose notes name
    the adapter) start -> end with its interval and which model was saved (``result``'s ``summary``: a
    StartEndResult's or IDC's RoundsResult's; None without an evaluator), the adapter, the anchor, the lengths and the
    folder; then a warning per metric that ended below its start."""
    ended, warnings, start_saved = result.summary(measured.labels) if result is not None else ({}, [], False)
    adapter = measured.notes.get("LoRA adapter")
    model, out, training_length = loaded.model, Path(flags.trainer.output_dir), loaded.model.max_seq_length
    if adapter:
        from st_infocse.training.lora import merge_lora

        merge_lora(model)
    rows.update(flags.entry.save(model, loss, out, loaded.own_length))
    if adapter:
        rows["LoRA adapter"] = (f"{adapter}; not in the saved model, which is the starting model (see saved)"
                                if start_saved else f"{adapter}; merged into the saved model")
    if anchor:
        rows["weight anchor"] = anchor
    rows.update(ended)
    if not ended and flags.run is not None:  # stage 1 takes no evaluator
        rows["start -> end"] = "not measured (no evaluator: --stsb_dev none and no --eval_retrieval)"
    path = out / "run_summary.json"  # beside the saved model; scores as the evaluators return them, in [0, 1]
    path.write_text(json.dumps({**record, "model": loaded.how, "settings": flags.settings(), "max_seq_length": {
        "training": training_length, "saved": loaded.own_length}}, indent=2, default=str) + "\n")
    summary(title, {**rows, "max length": loaded.lengths(), "model": out,
                    "run summary": path})
    for line in warnings:
        print(line)
