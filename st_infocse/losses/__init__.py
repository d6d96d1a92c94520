"""Losses for ``SentenceTransformerTrainer`` and ``model.fit``, one objective per file.

The names below are imported on first use, so that ``st_infocse.losses.registry`` (the objectives, their defaults
and citations) can be read without importing torch: the command line checks its flags before loading anything heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from st_infocse.lazy import lazy_exports

if TYPE_CHECKING:
    from st_infocse.losses._checks import EmptyBatchError, NonFiniteLossError, PredictionBoundError, clean_texts_hint
    from st_infocse.losses.auxiliary_pretraining import AuxiliaryPretrainingLoss
    from st_infocse.losses.cmlm_cse import CMLMCSELoss
    from st_infocse.losses.conditional_mlm import ConditionalMLMLoss
    from st_infocse.losses.contract import TrainingLoss, training_losses
    from st_infocse.losses.infocse import InfoCSELoss
    from st_infocse.losses.informin import InforMinReconstructionLoss, reconstruction_term
    from st_infocse.losses.registry import INFOCSE_MASK_RATE, OBJECTIVES, PRESETS, Objective, get_objective
    from st_infocse.losses.simcse import SimCSELoss

_WHERE = {
    "INFOCSE_MASK_RATE": "registry",
    "OBJECTIVES": "registry",
    "PRESETS": "registry",
    "AuxiliaryPretrainingLoss": "auxiliary_pretraining",
    "CMLMCSELoss": "cmlm_cse",
    "ConditionalMLMLoss": "conditional_mlm",
    "EmptyBatchError": "_checks",
    "InfoCSELoss": "infocse",
    "InforMinReconstructionLoss": "informin",
    "NonFiniteLossError": "_checks",
    "Objective": "registry",
    "PredictionBoundError": "_checks",
    "SimCSELoss": "simcse",
    "TrainingLoss": "contract",
    "clean_texts_hint": "_checks",
    "get_objective": "registry",
    "reconstruction_term": "informin",
    "training_losses": "contract",
}

__all__ = [
    "INFOCSE_MASK_RATE",
    "OBJECTIVES",
    "PRESETS",
    "AuxiliaryPretrainingLoss",
    "CMLMCSELoss",
    "ConditionalMLMLoss",
    "EmptyBatchError",
    "InfoCSELoss",
    "InforMinReconstructionLoss",
    "NonFiniteLossError",
    "Objective",
    "PredictionBoundError",
    "SimCSELoss",
    "TrainingLoss",
    "clean_texts_hint",
    "get_objective",
    "reconstruction_term",
    "training_losses",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
