"""IDC positive-pair mining (paper 002): pairs from documents, document-aware batches, mutually reinforced rounds.

Example:
    >>> from st_infocse.mining import adjacent_pairs
    >>> pairs, report = adjacent_pairs([["A cat sat.", "It purred.", "Then it slept."], "Too short."])
    >>> len(pairs), report.skipped["too_few_sentences"]
    (2, 1)

Names are imported on first use, so documents are checked before torch or datasets are imported.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    "CycleStats": "round_results",
    "DEFAULT_TRAINING_ARGS": "rounds",
    "DISTILLATION_LOSSES": "distillation",
    "DOCUMENT_FORMATS": "documents",
    "DistillationReport": "distillation",
    "DocumentAwareBatchSampler": "sampler",
    "DocumentAwareSamplerFactory": "sampler",
    "MinedPairs": "idc",
    "MiningReport": "report",
    "PAIR_FEATURES": "idc",
    "PlusPlusResult": "round_results",
    "PreparedDocument": "sentences",
    "PseudoQueries": "distillation",
    "QUERY_KINDS": "distillation",
    "RoundStats": "round_results",
    "RoundsResult": "round_results",
    "SKIP_REASONS": "sentences",
    "Skipped": "sentences",
    "adjacent_pairs": "idc",
    "check_documents": "documents",
    "cluster_documents": "graph",
    "cluster_sentences": "graph",
    "context_pairs": "idc",
    "distillation_loss": "distillation",
    "hybrid_teacher_dataset": "distillation",
    "load_documents": "documents",
    "mine_pairs": "idc",
    "prepare_documents": "sentences",
    "pseudo_queries": "distillation",
    "split_sentences": "sentences",
    "train_idc_rounds": "rounds",
    "train_infocse_plus_plus": "rounds",
}

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
