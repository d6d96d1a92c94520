"""Losses for ``SentenceTransformerTrainer`` and ``model.fit``, one objective per file.

The names below are imported on first use, so that ``st_infocse.losses.registry`` (the objectives, their defaults
and citations) can be read without importing torch: the command line checks its flags before loading anything heavy.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    **dict.fromkeys(("INFOCSE_MASK_RATE", "OBJECTIVES", "PRESETS", "Objective", "get_objective"), "registry"),
    **dict.fromkeys(("EmptyBatchError", "NonFiniteLossError", "PredictionBoundError", "clean_texts_hint"), "_checks"),
    **dict.fromkeys(("InforMinReconstructionLoss", "reconstruction_term"), "informin"),
    **dict.fromkeys(("TrainingLoss", "training_losses"), "contract"),
    "AuxiliaryPretrainingLoss": "auxiliary_pretraining",
    "CMLMCSELoss": "cmlm_cse",
    "ConditionalMLMLoss": "conditional_mlm",
    "InfoCSELoss": "infocse",
    "LossTerms": "terms",
    "SimCSELoss": "simcse",
}

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
