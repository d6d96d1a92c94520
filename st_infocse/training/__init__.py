"""Trainer glue: checked training text, one trainer builder, loss-owned auxiliary state kept across checkpoints and
clipped with the model.

The names below are imported on first use, so that the command line can check training text
(``st_infocse.training.texts``) before torch, transformers or datasets are imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from st_infocse.lazy import lazy_exports

if TYPE_CHECKING:
    from st_infocse.training.anchor import WeightAnchorCallback, evaluates_before_last_step, toward_start
    from st_infocse.training.arguments import STSB_DEV_METRIC, PaperTrainingArguments
    from st_infocse.training.at_length import AtLengthEvaluator
    from st_infocse.training.builder import build_trainer, load_model, own_max_length, save_model
    from st_infocse.training.callbacks import (
        AUXILIARY_STATE_NAME,
        AuxiliaryStateCallback,
        auxiliary_state_dict,
        clip_gradients_jointly,
        load_auxiliary_state,
        save_auxiliary_state,
    )
    from st_infocse.training.guards import check_training_dataset
    from st_infocse.training.probe_decoder import seeded_global_generators, train_probe_decoder
    from st_infocse.training.snapshot import StartingWeights, weights_snapshot
    from st_infocse.training.start_end import StartEndCallback, StartEndResult
    from st_infocse.training.texts import TextReport, check_text_source, clean_texts, load_texts

_WHERE = {
    "AtLengthEvaluator": "at_length",
    "AUXILIARY_STATE_NAME": "callbacks",
    "STSB_DEV_METRIC": "arguments",
    "PaperTrainingArguments": "arguments",
    "AuxiliaryStateCallback": "callbacks",
    "StartEndCallback": "start_end",
    "StartEndResult": "start_end",
    "StartingWeights": "snapshot",
    "TextReport": "texts",
    "WeightAnchorCallback": "anchor",
    "auxiliary_state_dict": "callbacks",
    "build_trainer": "builder",
    "check_text_source": "texts",
    "check_training_dataset": "guards",
    "clean_texts": "texts",
    "clip_gradients_jointly": "callbacks",
    "load_auxiliary_state": "callbacks",
    "load_model": "builder",
    "load_texts": "texts",
    "seeded_global_generators": "probe_decoder",
    "evaluates_before_last_step": "anchor",
    "toward_start": "anchor",
    "train_probe_decoder": "probe_decoder",
    "own_max_length": "builder",
    "save_auxiliary_state": "callbacks",
    "save_model": "builder",
    "weights_snapshot": "snapshot",
}

__all__ = [
    "AtLengthEvaluator",
    "AUXILIARY_STATE_NAME",
    "STSB_DEV_METRIC",
    "PaperTrainingArguments",
    "AuxiliaryStateCallback",
    "StartEndCallback",
    "StartEndResult",
    "StartingWeights",
    "TextReport",
    "WeightAnchorCallback",
    "auxiliary_state_dict",
    "build_trainer",
    "check_text_source",
    "check_training_dataset",
    "clean_texts",
    "clip_gradients_jointly",
    "evaluates_before_last_step",
    "load_auxiliary_state",
    "load_model",
    "load_texts",
    "own_max_length",
    "save_auxiliary_state",
    "save_model",
    "seeded_global_generators",
    "toward_start",
    "train_probe_decoder",
    "weights_snapshot",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
