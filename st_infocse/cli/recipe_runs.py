"""``st-infocse recipes`` and ``train --recipe NAME``: a paper's released run (:mod:`st_infocse.recipes`), as flags
applied to a run.

``--recipe NAME`` is expanded as ``--config`` is: the recipe's flags first, so that every flag the user gives wins,
wherever it stands. ``train`` expands it before its input checks, which so see the recipe's values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from st_infocse.cli.arguments import asks_for_help, flag_names
from st_infocse.cli.errors import CLIError
from st_infocse.cli.output import summary
from st_infocse.recipes import (
    Recipe,
    UnknownRecipeError,
    format_recipe,
    format_recipe_list,
    get_recipe,
    recipe_names,
)

logger = logging.getLogger("st_infocse")


def take_recipe(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The ``--recipe NAME`` (or ``--recipe=NAME``) given, or None, and the flags without it."""
    names: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(argv):
        item = argv[index]
        if item == "--recipe":
            if index + 1 >= len(argv) or argv[index + 1].startswith("-") or not argv[index + 1]:
                raise CLIError(f"--recipe needs a name: {', '.join(recipe_names())} (or 'list')")
            names.append(argv[index + 1])
            index += 2
            continue
        if item.startswith("--recipe="):
            names.append(item.split("=", 1)[1])
        else:
            rest.append(item)
        index += 1
    if len(set(names)) > 1:
        raise CLIError(f"--recipe given more than once ({', '.join(names)}); a run follows one recipe")
    return (names[0] if names else None), rest


def recipe_by_name(name: str) -> Recipe:
    try:
        return get_recipe(name)
    except UnknownRecipeError as exc:
        raise CLIError(f"{exc} (st-infocse recipes describes them)") from None


def with_recipe(recipe: Recipe, user_argv: Sequence[str]) -> list[str]:
    """The recipe's flags, then the user's: the parser keeps the last value of a flag, so the user's win."""
    return ["--output_dir", f"output/{recipe.name}", *recipe.to_argv(), *user_argv]


def accelerator_type() -> str:
    """Where the trainer will put the model unless told --use_cpu: the accelerator's type, or ``cpu``."""
    import torch

    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    if accelerator is not None:
        return accelerator.current_accelerator().type if accelerator.is_available() else "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def choose_recipe_precision(wanted: str | None, device: str, native_bf16: bool | None) -> tuple[list[str], str]:
    """Flags to append to a recipe's run, and what was chosen, for the recipe's precision ``wanted`` (fp16, bf16 or
    None) on ``device``; ``native_bf16`` tells whether the CPU has native bf16 (None: unknown).

    The scripts' fp16 is a GPU setting: on an accelerator it is kept; on a CPU it becomes bf16 where the CPU computes
    bf16 natively, and fp32 otherwise (bf16 without it is 13-16x slower than fp32 per step, measured).
    """
    if wanted is None:
        return [], "fp32 (the recipe's)"
    if device != "cpu":
        return [], f"{wanted} on {device} (the recipe's)"
    if native_bf16:
        # transformers refuses bf16 without a GPU unless told to use the CPU
        flags = ([] if wanted == "bf16" else ["--fp16", "false", "--bf16", "true"]) + ["--use_cpu", "true"]
        return flags, f"bf16 on cpu (the recipe's {wanted} is a GPU setting; this CPU has native bf16)"
    reason = "has no native bf16" if native_bf16 is False else "may lack native bf16 (its flags are unreadable)"
    chosen = f"fp32 on cpu (the recipe's {wanted} is a GPU setting; this CPU {reason})"
    return ["--fp16", "false", "--bf16", "false"], chosen


def check_requires(recipe: Recipe, user_argv: Sequence[str]) -> None:
    """A recipe that needs the user's own data (documents, queries) is refused without it, before anything loads."""
    if asks_for_help(user_argv):
        return
    given = flag_names(user_argv)
    missing = [flag for flag in recipe.requires if flag[2:] not in given]
    if missing:
        raise CLIError(f"recipe {recipe.name} needs {' and '.join(missing)} (st-infocse recipes {recipe.name} says why)")


def start_recipe(recipe: Recipe, argv: list[str], user_argv: Sequence[str], flags: Any) -> list[str]:
    """Settle the recipe's precision for this machine and print what the run takes from the recipe and from you.

    ``flags``: the run's flags as :func:`st_infocse.cli.inputs.precheck_training` read them (the recipe's, then
    yours)."""
    given = flag_names(user_argv)
    device = "cpu" if flags.trainer.use_cpu else accelerator_type()
    if {"fp16", "bf16"} & given:
        fp16, bf16 = bool(flags.trainer.fp16), bool(flags.trainer.bf16)
        # --bf16 true alone replaces the recipe's fp16 rather than clashing with it
        extra = ["--fp16", "false"] if bf16 and "fp16" not in given else []
        fp16 = fp16 and not extra
        if bf16 and device == "cpu":
            extra += ["--use_cpu", "true"]  # transformers refuses bf16 without a GPU unless told to use the CPU
        precision = f"{'fp16' if fp16 else 'bf16' if bf16 else 'fp32'} (as you set it)"
    else:
        from st_infocse.training.precision import cpu_has_native_bf16

        native = cpu_has_native_bf16() if device == "cpu" else None
        extra, precision = choose_recipe_precision(recipe.precision, device, native)
        if device == "cpu" and recipe.precision and not native:
            logger.warning(
                "recipe %s: its %s is a GPU setting, and on a CPU without native bf16 (no avx512_bf16 / AMX) bf16 is "
                "much slower than fp32 (13-16x per training step measured on an AVX2 CPU): training in fp32; pass "
                "--bf16 true or --fp16 true to insist.",
                recipe.name,
                recipe.precision,
            )
    overridden = [flag for flag in recipe.flags if flag[2:].rstrip("_") in given]
    recipe_names_given = {flag[2:].rstrip("_") for flag in recipe.flags}
    added = sorted(f"--{name}" for name in given - recipe_names_given - {"fp16", "bf16"})
    if flags.loss.objective in ("idc", "ict"):
        train_data = f"{flags.loss.docs} (documents)"
    else:
        train_data = flags.data.train_data
        if "train_data" not in given:
            train_data += " (wiki1m from the hub, the authors' data; --train_data for a local copy)"
    summary(
        f"Recipe {recipe.name}",
        {
            "source": recipe.source,
            "published": "; ".join(str(number) for number in recipe.published),
            "your flags": (
                f"override {', '.join(overridden) or 'none of the recipe'}; add {', '.join(added) or 'nothing'}"
                if given
                else "none: the recipe as released"
            ),
            "precision": precision,
            "training data": train_data,
        },
    )
    return [*argv, *extra]


def cmd_recipes(argv: Sequence[str]) -> int:
    """``st-infocse recipes``: the table; ``st-infocse recipes NAME``: one recipe's flags, origins and notes."""
    if asks_for_help(argv):
        print("usage: st-infocse recipes [NAME]   (the table, or one recipe's flags, their origins and notes)")
        return 0
    if len(argv) > 1:
        raise CLIError("give at most one recipe name")
    print(format_recipe(recipe_by_name(argv[0]).name) if argv else format_recipe_list())
    return 0
