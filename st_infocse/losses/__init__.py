"""Losses for ``SentenceTransformerTrainer`` and ``model.fit``, one objective per file."""

from st_infocse.losses._checks import EmptyBatchError, NonFiniteLossError, PredictionBoundError, clean_texts_hint
from st_infocse.losses.auxiliary_pretraining import AuxiliaryPretrainingLoss
from st_infocse.losses.cmlm_cse import CMLMCSELoss
from st_infocse.losses.conditional_mlm import INFOCSE_MASK_RATE, PRESETS, ConditionalMLMLoss
from st_infocse.losses.contract import TrainingLoss, training_losses
from st_infocse.losses.infocse import InfoCSELoss
from st_infocse.losses.informin import InforMinReconstructionLoss, reconstruction_term
from st_infocse.losses.simcse import SimCSELoss

__all__ = [
    "INFOCSE_MASK_RATE",
    "PRESETS",
    "AuxiliaryPretrainingLoss",
    "CMLMCSELoss",
    "ConditionalMLMLoss",
    "EmptyBatchError",
    "InfoCSELoss",
    "InforMinReconstructionLoss",
    "NonFiniteLossError",
    "PredictionBoundError",
    "SimCSELoss",
    "TrainingLoss",
    "clean_texts_hint",
    "reconstruction_term",
    "training_losses",
]
