"""The flags of ``train`` and ``pretrain-aux``, read and checked before any model, dataset or document loads:
``--objective`` (and IDC's ``--idc_loss``) choose the entry (:mod:`~st_infocse.cli.objectives`) that names the
sections read; then those sections and the checks across them that need no torch; then the trainer's flags."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import (
    DataArguments,
    KeepArguments,
    LexicalArguments,
    ModelArguments,
    OutputArguments,
    RunEvaluationArguments,
    flag_error,
    training_arguments_class,
)
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_model_source, check_output_dir
from st_infocse.cli.objective_flags import (
    AuxiliaryRateFlags,
    DecoderWarmupFlags,
    DistillFlags,
    ICTFlags,
    IDCFlags,
    IDCPairLoss,
    LoRAFlags,
    ObjectiveArguments,
)
from st_infocse.cli.objectives import Entry, entry_of, takers
from st_infocse.cli.parsing import (
    ConfigArguments,
    FlagParser,
    RecipeArguments,
    asks_for_help,
    flag_of,
    read_sources,
    refuse_unknown,
    unknown_flags,
)
from st_infocse.cli.recipe_runs import check_requires, recipe_summary
from st_infocse.losses.registry import STAGE1
from st_infocse.mining.documents import check_documents
from st_infocse.recipes import format_recipe_list
from st_infocse.training.precision import settle_precision  # nothing heavy: torch is imported when called
from st_infocse.training.texts import check_text_source

#: The trainer's evaluation settings of a run without an evaluator: nothing to evaluate or keep a checkpoint by.
EVALUATION_OFF = {"eval_strategy": "no", "load_best_model_at_end": False, "metric_for_best_model": None}


@dataclass
class TrainingFlags:
    """A run's flags: one attribute per section (None where the objective takes none), ``loss`` its loss flags,
    ``trainer`` the ``PaperTrainingArguments``; ``given``: every flag set (the recipe's and the user's), ``typed``:
    the user's alone."""

    objective: str
    entry: Entry
    model: ModelArguments
    output: OutputArguments
    trainer: Any = None
    run: RunEvaluationArguments | None = None
    keep: KeepArguments | None = None
    data: DataArguments | None = None
    loss: Any = None
    aux: AuxiliaryRateFlags | None = None
    warmup: DecoderWarmupFlags | None = None
    idc: IDCFlags | None = None
    ict: ICTFlags | None = None
    lexical: LexicalArguments | None = None
    distill: DistillFlags | None = None
    lora: LoRAFlags | None = None
    given: frozenset[str] = frozenset()
    typed: frozenset[str] = frozenset()

    @property
    def docs(self) -> str | None:
        return next((section.docs for section in self.sections() if hasattr(section, "docs")), None)

    @property
    def aux_learning_rate(self) -> float | None:
        return self.aux.aux_learning_rate if self.aux is not None else None

    def sections(self) -> list[Any]:
        return [value for item in fields(self) if hasattr(value := getattr(self, item.name), "__dataclass_fields__")
                and item.name != "entry"]

    def settings(self) -> dict[str, Any]:
        """The run's flags as parsed, every section's and the trainer's, for ``run_summary.json``."""
        values = {"objective": self.objective}
        for section in self.sections():
            values.update(section.to_dict() if hasattr(section, "to_dict") else asdict(section))
        return values


def command_sections(command: str, objective: str, idc_loss: str = "mnrl") -> list[type]:
    """The sections ``train --objective objective`` (or ``pretrain-aux``) reads besides the trainer's."""
    entry = entry_of(objective, idc_loss)
    if command != "train":
        return [ModelArguments, OutputArguments, *entry.all]
    lexical = [LexicalArguments] if entry.run is None else []  # BM25's lines are set beside one trainer's scores
    return [ModelArguments, ObjectiveArguments, RunEvaluationArguments, *lexical, OutputArguments, *entry.all]


def read_training_flags(argv: Sequence[str], command: str) -> TrainingFlags | None:
    """The run's flags from ``argv``: the recipe's, the config file's, then the command line's, which win; None when
    ``--help`` (the help of the objective's flags) or ``--recipe list`` (the recipes) was asked for, and printed."""
    prog = f"st-infocse {command}"
    recipe, layers = read_sources(argv, prog, recipes=command == "train" and not asks_for_help(argv))
    if recipe == "list":
        print(format_recipe_list())
        return None
    objective, idc_loss = STAGE1.name, "mnrl"
    if command == "train":
        first = FlagParser([ObjectiveArguments, IDCPairLoss], prog)
        chosen = first.build({key: value for layer in layers for key, value in first.read(layer)[0].items()})
        objective, idc_loss = chosen[0].objective, chosen[1].idc_loss
    entry = entry_of(objective, idc_loss)
    own = FlagParser(command_sections(command, objective, idc_loss), prog)
    if asks_for_help(argv):
        print(FlagParser([ConfigArguments, *([RecipeArguments] if command == "train" else []),
                          *own.dataclass_types, training_arguments_class()], prog).format_help())
        return None
    recipe_own, user_own, left = own.read_layers(layers)
    what = command if command != "train" else f"--objective {objective}" + (
        f" --idc_loss {idc_loss}" if objective == "idc" else "")
    own_flags = ", ".join(f"--{item.name.rstrip('_')}" for dtype in entry.all
                          if dtype not in (DataArguments, KeepArguments) for item in fields(dtype))
    takes = (f"{own_flags or 'no loss flag'} besides the model's, {'the run' if command == 'train' else 'the output'}'s "
             f"and the trainer's (`{prog}{' ' + what if command == 'train' else ''} --help` lists them)")
    # another objective's flag is refused now; a flag that is none of ours may still be the trainer's
    others = takers()
    refuse_unknown([item for item in unknown_flags(left) if flag_of(item) in others], what, takes, others)
    hints = typing.get_type_hints(TrainingFlags)  # section class -> its attribute, from the attributes' own types
    attributes = {arg: name for name, hint in hints.items() for arg in (typing.get_args(hint) or (hint,))
                  if isinstance(arg, type) and hasattr(arg, "__dataclass_fields__")}
    built = dict(zip(own.dataclass_types, own.build({**recipe_own, **user_own}), strict=True))
    flags = TrainingFlags(objective=objective, entry=entry, loss=built.get(entry.loss_flags),
                          **{attributes[dtype]: value for dtype, value in built.items() if dtype in attributes})
    if recipe is not None:
        check_requires(recipe, set(user_own))
    check_before_loading(flags)

    trainer = FlagParser([training_arguments_class()], prog)
    recipe_trainer, user_trainer, trainer_left = trainer.read_layers(left)
    refuse_unknown(unknown_flags(trainer_left), what, takes, others, known=[*own.flags, *trainer.flags])
    flags.given = frozenset({*recipe_own, *user_own, *recipe_trainer, *user_trainer})
    flags.typed = frozenset({*user_own, *user_trainer})
    trainer_values = {**recipe_trainer, **user_trainer}
    # with or without a recipe: --bf16 true on a CPU needs use_cpu, which transformers does not infer
    precision, chosen_precision = settle_precision(recipe.precision if recipe else None, trainer_values, flags.typed)
    trainer_values.update(precision)
    flags.given |= set(precision)  # settled values are set flags: IDC's rounds pass on every flag set
    if recipe is not None:
        recipe_summary(recipe, flags, chosen_precision)
    refused = [f"--{name}" for name in entry.refused_flags if name in flags.given]
    if refused:
        raise CLIError(f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to --objective "
                       f"{objective}: its rounds train on pairs mined from --docs, evaluate after each round and keep "
                       "the best round, the model as given included")
    if flags.run is None or not flags.run.measured:
        trainer_values.update(EVALUATION_OFF)
    (flags.trainer,) = trainer.build(trainer_values)  # the trainer's own value checks run here (its __post_init__)
    check_keep_rule(flags)
    check_output_dir(flags.trainer.output_dir)
    return flags


def check_before_loading(flags: TrainingFlags) -> None:
    """What the flags of several sections tell together before torch loads: the model, the data, the folders."""
    check_model_source(flags.model.model)
    if flags.distill is not None and not flags.lexical.bm25:
        raise CLIError("--bm25 false leaves --objective distill no teacher: it distils BM25 fused with your model")
    if flags.distill is None and flags.lexical is not None and not flags.run.eval_retrieval:
        given = [f"--{item.name}" for item in fields(LexicalArguments)
                 if getattr(flags.lexical, item.name) != item.default]
        if given:
            raise CLIError(f"{', '.join(given)}: BM25 is scored beside --eval_retrieval, which this run does not have")
    decoder = getattr(flags.loss, "decoder", None)
    if decoder and not Path(decoder).expanduser().exists():
        raise CLIError(f"--decoder: not found: {decoder}")
    if flags.warmup is not None and flags.warmup.decoder_warmup_steps is not None and decoder is not None:
        raise CLIError("give --decoder (a trained decoder) or --decoder_warmup_steps (train one first), not both")
    if flags.idc is not None and flags.idc.idc_annotator is not None:
        check_model_source(flags.idc.idc_annotator, "--idc_annotator")
    if any(hasattr(section, "docs") for section in flags.sections()):
        if not flags.docs:
            raise CLIError(f"--objective {flags.objective} needs --docs (documents, in any form that "
                           "`st-infocse mine --docs` reads)")
        check_documents(flags.docs)
    elif flags.data is not None:
        check_text_source(flags.data.train_data, flags.data.text_column)


def check_keep_rule(flags: TrainingFlags) -> None:
    """The rule for the model handed back, before the model loads: the library's own check
    (:func:`~st_infocse.training.check_keep_rule`); and ``--keep_trained_if reliable``, which judges the gain over the
    queries (pairs) of the checkpoint metric, refused where that metric is not one whose evaluator keeps per-query
    scores (retrieval nDCG@10, STS-B dev); a run that nothing measures is refused by its section."""
    if flags.run is None:
        return
    from st_infocse.training.start_end import check_keep_rule as check

    try:
        check(flags.run.keep_trained_if, flags.keep.keep_start_if_better, flags.run.confirm_share)
    except ValueError as exc:
        raise flag_error(exc, flags.run, flags.keep) from None
    from st_infocse.evaluation import STSB_DEV_METRIC

    metric = flags.trainer.metric_for_best_model if flags.run.keep_trained_if == "reliable" else None
    if metric and not (metric.removeprefix("eval_") == STSB_DEV_METRIC.removeprefix("eval_")
                       or metric.endswith("ndcg@10")):
        raise CLIError(f"--keep_trained_if reliable needs per-query scores for --metric_for_best_model {metric}: "
                       f"only retrieval nDCG@10 and {STSB_DEV_METRIC} keep them")
