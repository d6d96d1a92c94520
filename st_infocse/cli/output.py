"""What the commands print: titled summaries of a run before it starts and once it is done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from st_infocse.cli.inputs import check_planned_steps

__all__ = ["checkpoint_plan", "lengths", "start_summary", "summary"]


def summary(title: str, rows: dict[str, Any]) -> None:
    width = max(len(k) for k in rows)
    print(f"\n{title}")
    for key, value in rows.items():
        print(f"  {key.ljust(width)}  {value}")


def checkpoint_plan(training_args) -> str:
    strategy = getattr(training_args.save_strategy, "value", training_args.save_strategy)
    if strategy == "no":
        return "none (final model only)"
    every = f"every {training_args.save_steps:g} steps" if strategy == "steps" else f"every {strategy}"
    kept = f", last {training_args.save_total_limit} kept" if training_args.save_total_limit else ""
    return f"{Path(training_args.output_dir) / 'checkpoint-N'} {every}{kept}"


def lengths(training_length: int | None, saved_length: int | None) -> str:
    own = "" if saved_length is not None else " (the model states no length of its own)"
    return f"training max length {training_length}, saved model max length {training_length if saved_length is None else saved_length}{own}"


def start_summary(
    title: str,
    texts: int,
    training_args,
    training_length: int | None,
    own_length: int | None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Print what the run will do, before it starts."""
    steps = check_planned_steps(texts, training_args)
    batch = training_args.per_device_train_batch_size
    world, accumulation = max(1, training_args.world_size), training_args.gradient_accumulation_steps
    effective = f" ({batch * world * accumulation} per optimizer step)" if world * accumulation > 1 else ""
    summary(
        title,
        {
            "texts": texts,
            "batch size": f"{batch}{effective}",
            "optimizer steps": steps,
            "checkpoints": checkpoint_plan(training_args),
            "max length": lengths(training_length, own_length),
            **(extra or {}),
        },
    )
