"""Evaluation: the papers' STS table, BEIR zero-shot retrieval, in-domain retrieval, transfer tasks,
alignment/uniformity, a training-time STS-B dev evaluator, and JSON/markdown/plot output.

Online sources go through mteb (Hugging Face hub); offline sources are a SentEval ``data/downstream`` folder,
jsonl/csv/Hugging Face folders of sentence1/sentence2/score, and BEIR folders (also as a training-time retrieval
evaluator on the user's own folder, :func:`retrieval_evaluator`).
mteb, beir, scikit-learn and matplotlib (the ``eval`` extra) are imported only when a function needs them.
"""

from ._format import x100
from .beir import download_beir, evaluate_beir
from .beir_tasks import BEIR_PAPER_DATASETS, BEIRTaskInfo, beir_task_info
from .compare import Comparison, compare_results
from .geometry import GeometryResult, alignment_loss, evaluate_alignment_uniformity, uniformity_loss
from .h_shuffle import ConditionalMLMEvaluator
from .in_domain import InDomainRetrievalResult, evaluate_in_domain_retrieval
from .lexical import FUSIONS, LexicalSettings, bm25_search, fuse_runs
from .loaders import (
    STS_TASKS,
    TRANSFER_TASKS,
    DataFormatError,
    RetrievalData,
    STSPairs,
    TransferData,
    find_senteval_root,
    load_beir_folder,
    load_mteb_retrieval,
    load_mteb_sts,
    load_senteval_sts,
    load_senteval_transfer,
    load_sts,
    load_sts_file,
    load_sts_hf,
)
from .own_retrieval import (
    RETRIEVAL_EVALUATOR_NAME,
    RetrievalFolderInfo,
    check_retrieval_folder,
    resolve_retrieval_split,
    retrieval_evaluator,
    retrieval_metric_keys,
)
from .paired import PairedChange, paired_change, paired_spearman_change, queries_needed
from .report import (
    markdown_report,
    plot_beir,
    plot_sts,
    plot_training_curve,
    save_report,
    sts_markdown,
    write_json,
)
from .results import EvaluationResult, TaskTableResult
from .retrieval import (
    BEIRResult,
    RetrievalResult,
    evaluate_retrieval,
    per_query_metrics,
    retrieval_metrics,
    search,
)
from .scored_units import (
    PairScoredSimilarityEvaluator,
    QueryScoredRetrievalEvaluator,
    UnitScores,
    paired_changes,
    primary_unit_key,
    unit_scores,
)
from .sts import (
    STSB_DEV_METRIC,
    STSResult,
    STSTaskResult,
    evaluate_sts,
    evaluate_sts_suite,
    stsb_dev_evaluator,
)
from .transfer import TransferResult, TransferTaskResult, classify, evaluate_transfer

__all__ = [
    "BEIR_PAPER_DATASETS",
    "FUSIONS",
    "RETRIEVAL_EVALUATOR_NAME",
    "STSB_DEV_METRIC",
    "STS_TASKS",
    "TRANSFER_TASKS",
    "BEIRResult",
    "BEIRTaskInfo",
    "Comparison",
    "ConditionalMLMEvaluator",
    "DataFormatError",
    "EvaluationResult",
    "TaskTableResult",
    "GeometryResult",
    "InDomainRetrievalResult",
    "LexicalSettings",
    "PairScoredSimilarityEvaluator",
    "PairedChange",
    "QueryScoredRetrievalEvaluator",
    "RetrievalData",
    "RetrievalFolderInfo",
    "RetrievalResult",
    "STSPairs",
    "STSResult",
    "STSTaskResult",
    "TransferData",
    "TransferResult",
    "TransferTaskResult",
    "UnitScores",
    "alignment_loss",
    "beir_task_info",
    "bm25_search",
    "check_retrieval_folder",
    "classify",
    "compare_results",
    "download_beir",
    "evaluate_alignment_uniformity",
    "evaluate_beir",
    "evaluate_in_domain_retrieval",
    "evaluate_retrieval",
    "evaluate_sts",
    "evaluate_sts_suite",
    "evaluate_transfer",
    "find_senteval_root",
    "fuse_runs",
    "load_beir_folder",
    "load_mteb_retrieval",
    "load_mteb_sts",
    "load_senteval_sts",
    "load_senteval_transfer",
    "load_sts",
    "load_sts_file",
    "load_sts_hf",
    "markdown_report",
    "paired_change",
    "paired_changes",
    "paired_spearman_change",
    "per_query_metrics",
    "plot_beir",
    "plot_sts",
    "plot_training_curve",
    "primary_unit_key",
    "queries_needed",
    "resolve_retrieval_split",
    "retrieval_evaluator",
    "retrieval_metric_keys",
    "retrieval_metrics",
    "save_report",
    "search",
    "sts_markdown",
    "stsb_dev_evaluator",
    "uniformity_loss",
    "unit_scores",
    "write_json",
    "x100",
]
