"""The ``st-infocse`` command: stage-1 pre-training, training, IDC mining and evaluation without a script
(``st-infocse --help``; docs/command-line.md). Each command is a module of this package, imported when it runs so
that ``--help`` and the input checks stay fast; a bad input exits with code 2 and one line, before any model,
dataset or document loads."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Sequence

from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import objective_names

__all__ = ["COMMANDS", "CLIError", "main"]

#: name -> ("module:function" under st_infocse.cli, one-line description); the function takes the flags after the
#: command's name and returns the exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "pretrain-aux": ("train:cmd_pretrain_aux", "stage 1: pre-train the auxiliary decoder (paper 000 §3.1)"),
    "train": ("train:cmd_train", f"train with --objective {'|'.join(objective_names())}"),
    "mine": ("mine:cmd_mine", "mine IDC positive pairs from documents into a dataset on disk"),
    "evaluate": ("evaluate:cmd_evaluate", "STS suite, BEIR and transfer tasks; JSON, markdown and plots"),
    "demo": ("demo:cmd_demo", "train and evaluate offline on the bundled demo data (pip install 'st-infocse[demo]')"),
    "recipes": ("recipe_runs:cmd_recipes", "the papers' released runs, for `st-infocse train --recipe NAME`"),
}


def _usage() -> str:
    return "\n".join(["usage: st-infocse <command> [flags]   (st-infocse <command> --help for its flags)", "",
                      "commands:", *(f"  {name:<13} {text}" for name, (_, text) in COMMANDS.items())])


def _command(command: str):
    """The command's function, imported now: a module missing from the installation is a one-line error."""
    module_name, function = COMMANDS[command][0].split(":")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("st_infocse"):
            raise CLIError(f"the {command} is not part of this installation ({exc.name} is missing)") from exc
        raise  # another package missing: one line in main, as an optional package the command needs later
    return getattr(module, function)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"st-infocse: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return _command(command)(rest)
    except KeyboardInterrupt as stop:  # Ctrl-C, in any command: what a training run saved (its message), exit 130
        print(str(stop) or f"st-infocse {command}: interrupted", flush=True)
        return 130
    except (CLIError, FileNotFoundError, ValueError, ImportError) as exc:
        # ValueError: the library's input checks raise it with a message meant for the user (InputError,
        # FileFormatError, UnsupportedModelError); ImportError: an optional package missing, with what to install.
        print(f"st-infocse {command}: error: {exc}", file=sys.stderr)
        return 2
