"""How every command reads its flags: transformers' ``HfArgumentParser`` over the command's dataclasses.

A first stage reads ``--config FILE`` (a mapping of flag names to values) and ``train``'s ``--recipe NAME``. Each
later stage reads its sections from each source in turn (the recipe's flags, the file's values, the command line's
strings, which win) and hands on what it does not know; what no stage knows is refused by name, with the closest
flag's name. A stage keeps only the flags given; ``parse_dict`` builds the dataclasses, whose ``__post_init__``
checks each value under its flag's name. No args file is looked up, and a flag is spelled in full.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import flag
from st_infocse.cli.errors import CLIError

Source = Sequence[str] | Mapping[str, Any]


@dataclass
class ConfigArguments:
    _argument_group_name = "flags from a file"

    config: str | None = flag(None, "A JSON or YAML file mapping flag names to values; flags given on the command "
                              "line win.", metavar="FILE")


@dataclass
class RecipeArguments:
    _argument_group_name = "recipe"

    recipe: str | None = flag(
        None, "A paper's released run by name, e.g. infocse-bert-base ('list', or `st-infocse recipes`, shows them "
        "all): its flags come first, so every flag you give wins. The scripts' fp16 is kept on a GPU; on a CPU it "
        "becomes bf16 where the CPU has native bf16, else fp32.", metavar="NAME", action="append")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """A default shown only where there is one: None means "the objective's own", which the help text gives."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


class FlagParser:
    """The flags of ``dataclass_types``, read with one ``HfArgumentParser``: :meth:`read` returns the flags a source
    gives (field name -> value) and what it leaves for a later stage; :meth:`build` makes the dataclasses."""

    def __init__(self, dataclass_types: Sequence[type], prog: str):
        self.dataclass_types = list(dataclass_types)
        self.prog = prog

    def _parser(self, suppress_defaults: bool):
        from transformers import HfArgumentParser  # argument parsing only: no torch, no model

        class CommandParser(HfArgumentParser):
            def error(self, message: str):  # argparse's errors as one line through CLIError
                missing = re.match(r"argument (--\w+).*: expected one argument", message)
                if missing:
                    action = next(a for a in self._actions if missing[1] in a.option_strings)
                    raise CLIError(f"{action.option_strings[0]} needs a {(action.metavar or 'value').lower()}")
                raise CLIError(message.removeprefix("argument "))  # the flag first, as every other error

        # the usage line would otherwise spell out every trainer flag
        parser = CommandParser(self.dataclass_types, prog=self.prog, allow_abbrev=False, add_help=False,
                               usage=f"{self.prog} [flags]   (--config FILE: JSON or YAML with any of these flags)",
                               formatter_class=_HelpFormatter)
        if suppress_defaults:  # a flag not given is left out of the namespace (set_defaults would store the string)
            for action in parser._actions:
                action.default = argparse.SUPPRESS
        return parser

    @cached_property
    def reader(self):
        return self._parser(suppress_defaults=True)

    @property
    def flags(self) -> list[str]:
        """Every flag spelling this parser takes."""
        return [option for action in self.reader._actions for option in action.option_strings]

    def read(self, source: Source) -> tuple[dict[str, Any], list[str] | dict[str, Any]]:
        """The values ``source`` gives for these sections, and the rest: strings of a command line, or the keys of
        a file's mapping; a file's string, list or choice is read as the command line's would be, another value
        (a number, true/false) taken as it is."""
        if not isinstance(source, Mapping):
            namespace, rest = self.reader.parse_known_args(list(source))
            return vars(namespace), rest
        actions = {option[2:]: action for action in self.reader._actions for option in action.option_strings}
        given = {key: value for key, value in source.items() if key in actions and value is not None}
        # read by the command line's parser: converted (YAML leaves 1e-4 a string), their choices checked
        read = {key: value for key, value in given.items() if isinstance(value, (str, list)) or actions[key].choices}
        argv = [item for key, value in read.items() for item in ([f"--{key}", *map(str, value)]
                                                                 if isinstance(value, list) else [f"--{key}={value}"])]
        values = {actions[key].dest: value for key, value in given.items() if key not in read}
        return {**values, **vars(self.reader.parse_args(argv))}, {key: value for key, value in source.items()
                                                                  if key not in actions}

    def read_layers(self, layers: Sequence[Source]) -> tuple[dict[str, Any], dict[str, Any], list[Source]]:
        """The recipe's values, the user's (the file's, then the command line's, which win) and what each of the
        three layers leaves for a later stage."""
        (recipe, recipe_rest), (config, config_rest), (argv, argv_rest) = map(self.read, layers)
        return recipe, {**config, **argv}, [recipe_rest, config_rest, argv_rest]

    def build(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """One instance per dataclass (``parse_dict``), each field not given at its default; the dataclasses' own
        checks run here."""
        return tuple(self.reader.parse_dict(dict(values), allow_extra_keys=True))

    def format_help(self) -> str:
        return self._parser(suppress_defaults=False).format_help()


def read_sources(argv: Sequence[str], prog: str, recipes: bool = False) -> tuple[Any, list[Source]]:
    """The first stage: ``--config`` read into a mapping, ``--recipe`` (``recipes``) looked up. Returns the recipe
    (None, or "list" for the table) and where the flags come from, in the order they apply: the recipe's, the file's,
    the command line's other strings, left for the command's stages."""
    given, rest = FlagParser([ConfigArguments, *([RecipeArguments] if recipes else [])], prog).read(argv)
    config = read_config(given["config"]) if given.get("config") else {}
    names = given.get("recipe") or ([config.pop("recipe")] if recipes and "recipe" in config else [])
    if len(set(names)) > 1:
        raise CLIError(f"--recipe given more than once ({', '.join(names)}); a run follows one recipe")
    recipe = None if not names else names[0] if names[0] == "list" else recipe_by_name(names[0])
    flags = [] if recipe in (None, "list") else ["--output_dir", f"output/{recipe.name}", *recipe.to_argv()]
    return recipe, [flags, config, list(rest)]


def recipe_by_name(name: str) -> Any:
    from st_infocse.recipes import UnknownRecipeError, get_recipe

    try:
        return get_recipe(name)
    except UnknownRecipeError as exc:
        raise CLIError(f"{exc} (st-infocse recipes describes them)") from None


def read_config(path: str) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise CLIError(f"config file not found: {path}")
    try:
        import yaml

        values = yaml.safe_load(file.read_text()) if file.suffix in (".yaml", ".yml") else json.loads(file.read_text())
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file
        raise CLIError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(values, dict):
        raise CLIError(f"config {path} must hold a mapping of flag names to values")
    return values


def parse_command(dataclass_types: Sequence[type], argv: Sequence[str], prog: str) -> tuple[Any, ...] | None:
    """The flags of a command read in one stage (``mine``, ``evaluate``, ``demo``); None when ``--help`` was asked
    for (and printed)."""
    parser = FlagParser(dataclass_types, prog)
    if asks_for_help(argv):
        print(FlagParser([*dataclass_types, ConfigArguments], prog).format_help())
        return None
    recipe, user, left = parser.read_layers(read_sources(argv, prog)[1])
    refuse_unknown(unknown_flags(left), prog, f"the flags `{prog} --help` lists", known=parser.flags)
    return parser.build({**recipe, **user})


def unknown_flags(left: Sequence[Source]) -> list[str]:
    """What a stage left of each layer, as command-line strings (a file's keys as ``--key``)."""
    return [item for layer in left for item in ([f"--{key}" for key in layer] if isinstance(layer, Mapping) else layer)]


def flag_of(item: str) -> str | None:
    """The field name a command-line string sets (``--learning-rate=1`` -> ``learning_rate``), or None for a value."""
    return item[2:].split("=", 1)[0].replace("-", "_") if item.startswith("--") else None


def refuse_unknown(rest: Iterable[str], what: str, takes: str, elsewhere: Mapping[str, str] | None = None,
                   known: Iterable[str] = ()) -> None:
    """Raise one line for the strings no stage read: the flags that ``what`` does not take, whose they are when
    another objective takes them (``elsewhere``: field name -> who takes it), else the closest of ``known``."""
    rest, elsewhere, known = list(rest), elsewhere or {}, list(known)
    if not rest:
        return
    unknown = dict.fromkeys(item.split("=", 1)[0] for item in rest if re.match(r"--?[A-Za-z_]", item))  # not -1
    if not unknown:
        raise CLIError(f"unexpected value {rest[0]!r} (every value follows its flag: --name value)")
    named = [f"{flag} (a flag of {elsewhere[name]})" if (name := flag_of(flag)) in elsewhere else flag
             for flag in unknown]
    close = [match[0] for flag in unknown if flag_of(flag) not in elsewhere
             if (match := difflib.get_close_matches(flag, known, n=1))]
    guess = f"; did you mean {' and '.join(close)}?" if close else ""
    raise CLIError(f"{', '.join(named)} {'is not a flag' if len(named) == 1 else 'are not flags'} of {what}; it takes "
                   f"{takes}{guess}")


def asks_for_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv
