"""Losses for ``SentenceTransformerTrainer`` and ``model.fit``, one objective per file.

The names below are imported on first use, so that ``st_infocse.losses.registry`` (the objectives, their defaults
and citations) can be read without importing torch: the command line checks its flags before loading anything heavy.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

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
    "LossTerms": "terms",
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

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
