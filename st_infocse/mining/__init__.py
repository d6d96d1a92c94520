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

_MODULES = {  # submodule -> the names it exports
    "distillation": ("DistillationLoss", "DistillationReport", "PseudoQueries", "QueryKind",
        "distillation_loss", "hybrid_teacher_dataset", "pseudo_queries"),
    "documents": ("DOCUMENT_FORMATS", "check_documents", "load_documents"),
    "graph": ("cluster_documents", "cluster_sentences"),
    "idc": ("MinedPairs", "PAIR_FEATURES", "adjacent_pairs", "context_pairs", "mine_pairs"),
    "report": ("MiningReport",),
    "round_results": ("CycleStats", "PlusPlusResult", "RoundStats", "RoundsResult"),
    "plus_plus": ("train_infocse_plus_plus",),
    "rounds": ("DEFAULT_TRAINING_ARGS", "round_training_args", "train_idc_rounds"),
    "sampler": ("DocumentAwareBatchSampler", "DocumentAwareSamplerFactory"),
    "sentences": ("PreparedDocument", "SKIP_REASONS", "Skipped", "prepare_documents", "split_sentences"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
