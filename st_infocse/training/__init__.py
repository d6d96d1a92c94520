"""Trainer glue: keeping loss-owned auxiliary state across checkpoints and clipping it with the model."""

from st_infocse.training.arguments import STSB_DEV_METRIC, PaperTrainingArguments
from st_infocse.training.callbacks import (
    AUXILIARY_STATE_NAME,
    AuxiliaryStateCallback,
    auxiliary_state_dict,
    clip_gradients_jointly,
    load_auxiliary_state,
    save_auxiliary_state,
)

__all__ = [
    "AUXILIARY_STATE_NAME",
    "STSB_DEV_METRIC",
    "PaperTrainingArguments",
    "AuxiliaryStateCallback",
    "auxiliary_state_dict",
    "clip_gradients_jointly",
    "load_auxiliary_state",
    "save_auxiliary_state",
]
