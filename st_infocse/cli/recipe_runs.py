"""``st-infocse recipes`` and ``train --recipe NAME``: a paper's released run (:mod:`st_infocse.recipes`), whose
flags are read before the user's by the same parser (:mod:`~st_infocse.cli.parsing`), so every flag given wins."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from st_infocse.cli.errors import CLIError
from st_infocse.cli.output import summary
from st_infocse.cli.parsing import asks_for_help, recipe_by_name
from st_infocse.recipes import Recipe, format_recipe, format_recipe_list
from st_infocse.training.precision import accelerator_type  # nothing heavy: torch is imported when called

logger = logging.getLogger("st_infocse")


def choose_recipe_precision(wanted: str | None, device: str, native_bf16: bool | None) -> tuple[dict[str, bool], str]:
    """Trainer flags to set, and what was chosen, for the recipe's precision ``wanted`` (fp16, bf16 or None) on
    ``device``; ``native_bf16`` tells whether the CPU has native bf16 (None: unknown).

    The scripts' fp16 is a GPU setting: on an accelerator it is kept; on a CPU it becomes bf16 where the CPU computes
    bf16 natively, and fp32 otherwise (bf16 without native support is much slower than fp32 per step).
    """
    if wanted is None:
        return {}, "fp32 (the recipe's)"
    if device != "cpu":
        return {}, f"{wanted} on {device} (the recipe's)"
    if native_bf16:
        # transformers refuses bf16 without a GPU unless told to use the CPU
        return {"fp16": False, "bf16": True, "use_cpu": True}, (
            f"bf16 on cpu (the recipe's {wanted} is a GPU setting; this CPU has native bf16)")
    reason = "has no native bf16" if native_bf16 is False else "may lack native bf16 (its flags are unreadable)"
    return {"fp16": False, "bf16": False}, f"fp32 on cpu (the recipe's {wanted} is a GPU setting; this CPU {reason})"


def check_requires(recipe: Recipe, typed: set[str]) -> None:
    """A recipe that needs the user's own data (documents, queries) is refused without it, before anything loads.
    ``typed``: the flags the user gave (field names)."""
    missing = [flag for flag in recipe.requires if flag[2:] not in typed]
    if missing:
        raise CLIError(f"recipe {recipe.name} needs {' and '.join(missing)} (st-infocse recipes {recipe.name} says why)")


def recipe_precision(recipe: Recipe, trainer_values: dict[str, Any], typed: frozenset[str]) -> tuple[dict, str]:
    """The trainer flags that settle the recipe's precision on this machine, and the line that says what it is.
    ``trainer_values``: the trainer flags given (the recipe's, then the user's); ``typed``: the user's flags."""
    device = "cpu" if trainer_values.get("use_cpu") else accelerator_type()
    if {"fp16", "bf16"} & typed:
        bf16 = bool(trainer_values.get("bf16"))
        # --bf16 true alone replaces the recipe's fp16 rather than clashing with it
        extra: dict[str, bool] = {"fp16": False} if bf16 and "fp16" not in typed else {}
        fp16 = bool(trainer_values.get("fp16")) and not extra
        if bf16 and device == "cpu":
            extra["use_cpu"] = True  # transformers refuses bf16 without a GPU unless told to use the CPU
        return extra, f"{'fp16' if fp16 else 'bf16' if bf16 else 'fp32'} (as you set it)"
    from st_infocse.training.precision import cpu_has_native_bf16

    native = cpu_has_native_bf16() if device == "cpu" else None
    if device == "cpu" and recipe.precision and not native:
        logger.warning("recipe %s: its %s is a GPU setting, and on a CPU without native bf16 (no avx512_bf16 / AMX) "
                       "bf16 is much slower than fp32 per training step: training in fp32; pass --bf16 true or --fp16 "
                       "true to insist.", recipe.name, recipe.precision)
    return choose_recipe_precision(recipe.precision, device, native)


def recipe_summary(recipe: Recipe, flags: Any, precision: str) -> None:
    """Print what the run takes from the recipe and from the user (``flags``: the run's
    :class:`~st_infocse.cli.training_flags.TrainingFlags`)."""
    typed = {name.rstrip("_") for name in flags.typed}
    overridden = [flag for flag in recipe.flags if flag[2:].rstrip("_") in typed]
    added = sorted(f"--{name}" for name in typed - {flag[2:].rstrip("_") for flag in recipe.flags} - {"fp16", "bf16"})
    train_data = f"{flags.docs} (documents)" if flags.docs is not None else flags.data.train_data + (
        "" if "train_data" in typed else " (wiki1m from the hub, the authors' data; --train_data for a local copy)")
    yours = (f"override {', '.join(overridden) or 'none of the recipe'}; add {', '.join(added) or 'nothing'}" if typed
             else "none: the recipe as released")
    summary(f"Recipe {recipe.name}", {"source": recipe.source, "published": "; ".join(map(str, recipe.published)),
                                      "your flags": yours, "precision": precision, "training data": train_data})


def cmd_recipes(argv: Sequence[str]) -> int:
    """``st-infocse recipes``: the table; ``st-infocse recipes NAME``: one recipe's flags, origins and notes."""
    if asks_for_help(argv):
        print("usage: st-infocse recipes [NAME]   (the table, or one recipe's flags, their origins and notes)")
        return 0
    if len(argv) > 1:
        raise CLIError("give at most one recipe name")
    print(format_recipe(recipe_by_name(argv[0]).name) if argv else format_recipe_list())
    return 0
