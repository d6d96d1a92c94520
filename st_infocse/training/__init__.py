"""Trainer glue: checked training text, loss-owned auxiliary state kept across checkpoints and clipped with the model."""

from st_infocse.training.arguments import STSB_DEV_METRIC, PaperTrainingArguments
from st_infocse.training.callbacks import (
    AUXILIARY_STATE_NAME,
    AuxiliaryStateCallback,
    auxiliary_state_dict,
    clip_gradients_jointly,
    load_auxiliary_state,
    save_auxiliary_state,
)
from st_infocse.training.data import TextReport, clean_texts
from st_infocse.training.guards import check_training_dataset

__all__ = [
    "AUXILIARY_STATE_NAME",
    "STSB_DEV_METRIC",
    "PaperTrainingArguments",
    "AuxiliaryStateCallback",
    "TextReport",
    "auxiliary_state_dict",
    "check_training_dataset",
    "clean_texts",
    "clip_gradients_jointly",
    "load_auxiliary_state",
    "save_auxiliary_state",
]
