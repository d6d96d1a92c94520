"""The registry of objectives: every default it names is the one the losses, the command line and the recipes use."""

import dataclasses
import inspect
import re
import subprocess
import sys

import pytest

from st_infocse import losses
from st_infocse.losses.registry import (
    BOUNDS,
    INFORMIN_LAMBDA,
    MLM_MASK_RATE,
    OBJECTIVES,
    PRESETS,
    STAGE1,
    flag_value,
    get_objective,
    objective_names,
)


def test_every_objective_with_a_loss_names_a_training_loss_that_takes_its_options():
    from st_infocse.cli.objectives import entry_of

    for objective in (*OBJECTIVES.values(), STAGE1):
        sections = entry_of(objective.name)
        if objective.loss is None:
            # IDC trains the loss --idc_loss names on mined pairs; ICT, MultipleNegativesRankingLoss on its pairs;
            # distill, sentence-transformers' distillation losses on the hybrid teacher's scores
            assert objective.name in ("idc", "ict", "distill")
            continue
        cls = objective.loss_class()
        assert issubclass(cls, losses.TrainingLoss)
        parameters = inspect.signature(cls.__init__).parameters
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        for option in dataclasses.fields(sections.loss_flags):
            assert option.name in parameters or accepts_any, (objective.name, option.name)


# The registry's default weight and mask rate of each weighted objective: its preset's (the tiny encoder has fewer
# than 24 layers), or InforMin-CL's constants.
DEFAULTS = {name: (PRESETS[name].lambda_, PRESETS[name].mask_rate(12)) for name in ("infocse", "cmlm-cse")}
DEFAULTS["informin"] = (INFORMIN_LAMBDA, MLM_MASK_RATE)


def test_losses_built_without_arguments_take_the_registry_defaults(make_model):
    model = make_model()
    for name, (lambda_, rate) in DEFAULTS.items():
        objective = OBJECTIVES[name]
        loss = objective.loss_class()(model)
        assert loss.lambda_ == lambda_
        assert loss.citation == objective.citation
        mask_rate = loss.cmlm.mask_rate if hasattr(loss, "cmlm") else loss.mask_rate
        assert mask_rate == rate
    stage1 = STAGE1.loss_class()(model)
    assert stage1.mask_rate == MLM_MASK_RATE and stage1.citation == STAGE1.citation


def test_presets_step_their_mask_rate_by_depth():
    assert PRESETS["infocse"].mask_rate(12) == 0.40 and PRESETS["infocse"].mask_rate(24) == 0.30
    assert PRESETS["infocse"].mask_rate(6) == 0.40 and PRESETS["infocse"].mask_rate(25) == 0.30
    assert PRESETS["cmlm-cse"].mask_rate(24) == 0.15
    assert losses.PRESETS is PRESETS


def test_command_line_help_and_recipes_read_the_registry():
    """The objectives are the registry's; each loss flag's help is its loss's docstring entry and its choices the
    loss's own ``Literal`` (with ``none`` where None is a choice besides the default)."""
    import typing

    from st_infocse.cli.objective_flags import OBJECTIVES as CLI_OBJECTIVES
    from st_infocse.cli.objectives import entry_of
    from st_infocse.recipes import RECIPES

    assert CLI_OBJECTIVES == objective_names() == tuple(OBJECTIVES)
    for objective in [*(OBJECTIVES[name] for name in ("simcse", "infocse", "cmlm-cse", "informin", "cmlm")), STAGE1]:
        cls = objective.loss_class()
        docs = " ".join((inspect.getdoc(k.__init__) or "") for k in cls.__mro__[:3]).replace("``", "")
        docs = " ".join(re.sub(r":\w+:`~?([\w.]+)`", lambda m: m[1].rsplit(".", 1)[-1], docs).split())
        hints: dict = {}
        for k in reversed(cls.__mro__[:3]):
            hints.update(typing.get_type_hints(k.__init__) if "__init__" in vars(k) else {})
        for field in dataclasses.fields(entry_of(objective.name).loss_flags):
            words = " ".join(field.metadata["help"].split()[:5])
            # the help starts as a sentence (capitalised); the docstring entry may not
            assert words and f"{field.name}: {words}".lower() in docs.lower(), (objective.name, field.name)
            declared = [arg for arg in typing.get_args(hints[field.name]) if typing.get_origin(arg) is typing.Literal]
            hinted = hints[field.name]
            literal = typing.get_args(declared[0] if declared else hinted) if declared or typing.get_origin(
                hinted) is typing.Literal else ()
            kind = field.type  # HfArgumentParser may have taken the None out of it already
            kind = next((a for a in typing.get_args(kind) if a is not type(None)), kind) if typing.get_origin(
                kind) is not typing.Literal else kind
            choices = typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else ()
            assert set(choices) - {"none"} == set(literal), (objective.name, field.name)
    for recipe in RECIPES.values():
        if recipe.objective in DEFAULTS and recipe.released:  # a measured recipe sets its own weight
            assert recipe.flags["--lambda"] == flag_value(DEFAULTS[recipe.objective][0])


@pytest.mark.parametrize(
    ("value", "written"), [(1e-5, "1e-5"), (0.4, "0.4"), (0.005, "0.005"), (0.15, "0.15"), (2e20, "2e20"), (0.0, "0")]
)
def test_flag_values_are_written_as_typed(value, written):
    assert flag_value(value) == written
    assert float(written) == value


def test_unknown_objective_names_the_known_ones():
    with pytest.raises(ValueError, match="objective must be one of simcse, infocse, .*, got 'diffcse'"):
        get_objective("diffcse")
    with pytest.raises(ValueError, match="no loss of its own"):
        OBJECTIVES["idc"].loss_class()


def test_the_registry_imports_no_torch():
    code = "import sys, st_infocse.losses.registry; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("loss_class", sorted(
    {entry.loss_class() for entry in (*OBJECTIVES.values(), STAGE1) if entry.loss} | {losses.ConditionalMLMLoss},
    key=lambda cls: cls.__name__), ids=lambda cls: cls.__name__)
def test_every_loss_refuses_a_value_outside_the_bounds_the_command_line_checks(make_model, loss_class):
    # BOUNDS is what the command line checks before the model loads; the loss itself must hold the same range, so a
    # Python user is refused too. mask_rate of InforMin's MLM term needs the term on to apply.
    model = make_model()
    parameters = inspect.signature(loss_class.__init__).parameters
    for name in sorted(set(parameters) & set(BOUNDS)):
        low, _, low_included, _ = BOUNDS[name]
        outside = low - 1 if low_included else low
        extra = {"mlm_weight": 0.1} if name == "mask_rate" and "mlm_weight" in parameters else {}
        with pytest.raises(ValueError, match=rf"(?<!\w){re.escape(name)}(?!\w)"):
            loss_class(model, **{name: outside}, **extra)
