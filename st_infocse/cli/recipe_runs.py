"""``st-infocse recipes`` and ``train --recipe NAME``: a paper's released run (:mod:`st_infocse.recipes`), whose
flags are read before the user's by the same parser (:mod:`~st_infocse.cli.parsing`), so every flag given wins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from st_infocse.cli.errors import CLIError
from st_infocse.cli.output import summary
from st_infocse.cli.parsing import asks_for_help, recipe_by_name
from st_infocse.recipes import Recipe, format_recipe, format_recipe_list


def check_requires(recipe: Recipe, typed: set[str]) -> None:
    """A recipe that needs the user's own data (documents, queries) is refused without it, before anything loads.
    ``typed``: the flags the user gave (field names)."""
    missing = [flag for flag in recipe.requires if flag[2:] not in typed]
    if missing:
        raise CLIError(f"recipe {recipe.name} needs {' and '.join(missing)} (st-infocse recipes {recipe.name} says why)")


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
