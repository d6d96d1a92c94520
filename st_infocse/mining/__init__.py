"""IDC positive-pair mining (paper 002): pairs from documents, document-aware batches, mutually reinforced rounds.

Example:
    >>> from st_infocse.mining import adjacent_pairs
    >>> pairs, report = adjacent_pairs([["A cat sat.", "It purred.", "Then it slept."], "Too short."])
    >>> len(pairs), report.skipped["too_few_sentences"]
    (2, 1)
"""

from st_infocse.mining.idc import (
    PAIR_FEATURES,
    MinedPairs,
    MiningReport,
    adjacent_pairs,
    cluster_documents,
    cluster_sentences,
    mine_pairs,
)
from st_infocse.mining.rounds import (
    DEFAULT_TRAINING_ARGS,
    CycleStats,
    PlusPlusResult,
    RoundsResult,
    RoundStats,
    train_idc_rounds,
    train_infocse_plus_plus,
)
from st_infocse.mining.sampler import DocumentAwareBatchSampler, DocumentAwareSamplerFactory
from st_infocse.mining.sentences import SKIP_REASONS, PreparedDocument, Skipped, prepare_documents, split_sentences

__all__ = [
    "PAIR_FEATURES",
    "SKIP_REASONS",
    "DEFAULT_TRAINING_ARGS",
    "CycleStats",
    "DocumentAwareBatchSampler",
    "DocumentAwareSamplerFactory",
    "MinedPairs",
    "MiningReport",
    "PlusPlusResult",
    "PreparedDocument",
    "RoundStats",
    "RoundsResult",
    "Skipped",
    "adjacent_pairs",
    "cluster_documents",
    "cluster_sentences",
    "mine_pairs",
    "prepare_documents",
    "split_sentences",
    "train_idc_rounds",
    "train_infocse_plus_plus",
]
