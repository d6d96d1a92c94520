"""How every command reads its flags: transformers' ``HfArgumentParser`` over the command's dataclasses.

Each string of the command line is read once. A stage reads the flags of its sections and hands on the strings it
does not know (``parse_known_args``), so a command reads its own sections before torch is imported and the
trainer's from what remains; whatever no stage knows is refused by name. A stage keeps only the flags that were
given (the parser's defaults are suppressed), so that "was this flag set" is a fact of the parse, not a second
scan of the strings, and the dataclasses fill in their own defaults when they are built (:meth:`FlagParser.build`).

No args file is looked up, and abbreviations of flag names are not accepted: a flag is spelled in full or refused.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from st_infocse.cli.errors import CLIError

__all__ = ["FlagParser", "asks_for_help", "config_to_flags", "expand_config", "flag_of", "parse_command",
           "refuse_unknown"]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """A default shown only where there is one: None means "the objective's own", which the help text gives."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def _hf_parser_class():
    from transformers import HfArgumentParser  # argument parsing only: no torch, no model

    class CommandParser(HfArgumentParser):
        """argparse's errors (a bad value, a wrong choice) as one line through :class:`CLIError`, not a usage dump
        and ``SystemExit``."""

        def error(self, message: str):
            raise CLIError(message)

    return CommandParser


class FlagParser:
    """The flags of ``dataclass_types``, read with one ``HfArgumentParser``.

    :meth:`read` returns only the flags given (field name -> parsed value) and the strings left for a later stage;
    :meth:`build` makes the dataclasses from such values, each field not given keeping its default.
    """

    def __init__(self, dataclass_types: Sequence[type], prog: str):
        self.dataclass_types = list(dataclass_types)
        self.prog = prog

    def _parser(self, suppress_defaults: bool):
        parser = _hf_parser_class()(
            self.dataclass_types,
            prog=self.prog,
            # argparse would otherwise spell out every trainer flag in the usage line.
            usage=f"{self.prog} [flags]   (--config FILE: JSON or YAML with any of these flags)",
            allow_abbrev=False,
            add_help=False,
            formatter_class=_HelpFormatter,
        )
        if suppress_defaults:  # a flag not given is left out of the namespace (argparse's SUPPRESS default)
            for action in parser._actions:  # set_defaults() would put the SUPPRESS string itself in the namespace
                action.default = argparse.SUPPRESS
        return parser

    def read(self, argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        if not hasattr(self, "_reader"):  # one parser for every read (the recipe's flags, then the user's)
            self._reader = self._parser(suppress_defaults=True)
        namespace, rest = self._reader.parse_known_args(list(argv))
        return vars(namespace), rest

    def build(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """One instance per dataclass from the values given; a dataclass's own checks (``__post_init__``) run here."""
        built = []
        for dtype in self.dataclass_types:
            names = {item.name for item in fields(dtype) if item.init}
            built.append(dtype(**{name: value for name, value in values.items() if name in names}))
        return tuple(built)

    def format_help(self) -> str:
        return self._parser(suppress_defaults=False).format_help()


def parse_command(dataclass_types: Sequence[type], argv: Sequence[str], prog: str) -> tuple[Any, ...] | None:
    """The flags of a command read in one stage (``mine``, ``evaluate``): ``--config`` expanded, a flag it does not
    take refused by name; None when ``--help`` was asked for (and printed)."""
    argv = expand_config(argv)
    parser = FlagParser(dataclass_types, prog)
    if asks_for_help(argv):
        print(parser.format_help())
        return None
    values, rest = parser.read(argv)
    refuse_unknown(rest, prog, f"the flags `{prog} --help` lists")
    return parser.build(values)


def flag_of(item: str) -> str | None:
    """The field name a command-line string sets (``--learning-rate=1`` -> ``learning_rate``), or None for a value."""
    if not item.startswith("--"):
        return None
    return item[2:].split("=", 1)[0].replace("-", "_")


def refuse_unknown(rest: Iterable[str], what: str, takes: str, elsewhere: Mapping[str, str] | None = None) -> None:
    """Raise one line for the strings no stage read: the flags that ``what`` does not take, whose they are when
    another objective takes them (``elsewhere``: field name -> who takes it), and what ``what`` takes instead."""
    rest = list(rest)
    if not rest:
        return
    unknown = dict.fromkeys(item.split("=", 1)[0] for item in rest if re.match(r"--?[A-Za-z_]", item))  # not -1
    if not unknown:
        raise CLIError(f"unexpected value {rest[0]!r} (every value follows its flag: --name value)")
    elsewhere = elsewhere or {}
    named = [f"{flag} (a flag of {elsewhere[name]})" if (name := flag_of(flag)) in elsewhere else flag
             for flag in unknown]
    verb = "is not a flag" if len(named) == 1 else "are not flags"
    raise CLIError(f"{', '.join(named)} {verb} of {what}; it takes {takes}")


def expand_config(argv: Sequence[str]) -> list[str]:
    """``--config FILE`` (or ``--config=FILE``) replaced by the flags it holds, placed first so that flags on the
    command line win."""
    argv = list(argv)
    for index, item in enumerate(argv):
        if item == "--config":
            if index + 1 >= len(argv):
                raise CLIError("--config needs a file")
            return config_to_flags(argv[index + 1]) + argv[:index] + argv[index + 2 :]
        if item.startswith("--config="):
            return config_to_flags(item.split("=", 1)[1]) + argv[:index] + argv[index + 1 :]
    return argv


def config_to_flags(path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise CLIError(f"config file not found: {path}")
    text = file.read_text()
    try:
        if file.suffix in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(text)
        else:
            values = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file
        raise CLIError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(values, dict):
        raise CLIError(f"config {path} must hold a mapping of flag names to values")
    flags: list[str] = []
    for key, value in values.items():
        if value is None:
            continue
        flags.append(f"--{key}")
        if isinstance(value, list):
            flags.extend(str(v) for v in value)
        elif isinstance(value, dict):
            flags.append(json.dumps(value))
        else:
            flags.append(str(value).lower() if isinstance(value, bool) else str(value))
    return flags


def asks_for_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv
