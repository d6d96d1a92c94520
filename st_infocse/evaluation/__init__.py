"""Evaluation: the papers' STS table, BEIR zero-shot retrieval, in-domain retrieval, transfer tasks,
alignment/uniformity, a training-time STS-B dev evaluator, and JSON/markdown/plot output.

Online sources go through mteb (Hugging Face hub); offline sources are a SentEval ``data/downstream`` folder,
jsonl/csv/Hugging Face folders of sentence1/sentence2/score, and BEIR folders (also as a training-time retrieval
evaluator on the user's own folder, :func:`retrieval_evaluator`); retrieval is scored by one evaluator,
:class:`RetrievalEvaluator`, at training time and on the command line.
mteb, beir, scikit-learn and matplotlib (the ``eval`` extra) are imported only when a function needs them.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    **dict.fromkeys(("encode_unique", "model_name"), "encoding"),
    "x100": "_format",
    "require": "_deps",
    "AtLengthEvaluator": "at_length",
    **dict.fromkeys(("download_beir", "evaluate_beir"), "beir"),
    "check_language": "bm25_language",
    **dict.fromkeys(("BEIR_PAPER_DATASETS", "BEIRTaskInfo"), "beir_tasks"),
    "beir_task_info": "beir_tasks",
    "Comparison": "compare",
    "compare_results": "compare",
    "judge_together": "compare",
    "save_comparisons": "compare",
    "GeometryResult": "geometry",
    **dict.fromkeys(("alignment_loss", "evaluate_alignment_uniformity", "uniformity_loss"), "geometry"),
    "ConditionalMLMEvaluator": "h_shuffle",
    **dict.fromkeys(("InDomainRetrievalResult", "evaluate_in_domain_retrieval"), "in_domain"),
    **dict.fromkeys((
        "FUSIONS", "FUSION_DEPTH", "reference_runs", "LexicalSettings", "bm25_search", "fuse_runs",
    ), "lexical"),
    **dict.fromkeys((
        "STS_TASKS", "TRANSFER_TASKS", "DataFormatError", "RetrievalData", "STSPairs", "TransferData",
        "find_senteval_root", "load_beir_folder", "load_mteb_retrieval", "load_mteb_sts", "load_senteval_sts",
        "load_senteval_transfer", "load_sts", "load_sts_file", "load_sts_hf",
    ), "loaders"),
    **dict.fromkeys((
        "RETRIEVAL_EVALUATOR_NAME", "RetrievalFolderInfo", "check_retrieval_folder",
        "retrieval_evaluator",
    ), "retrieval_folder"),
    "retrieval_metric_keys": "retrieval_folder",
    "PairedChange": "paired",
    "UnitScores": "paired",
    "paired_changes": "paired",
    "unit_change": "paired",
    "paired_change": "paired",
    "paired_spearman_change": "paired",
    "queries_needed": "paired",
    "markdown_report": "report",
    **dict.fromkeys(("LexicalReferenceCallback", "RunEvaluation", "run_evaluation"), "run_evaluators"),
    **dict.fromkeys((
        "plot_beir", "plot_sts", "plot_training_curve", "save_report", "sts_markdown", "write_json",
    ), "report"),
    **dict.fromkeys(("EvaluationResult", "TaskTableResult"), "results"),
    **dict.fromkeys((
        "BEIRResult", "RETRIEVAL_LOGGERS", "RetrievalEvaluator", "RetrievalResult", "evaluate_retrieval",
        "per_query_metrics", "quiet_logs", "search",
    ), "retrieval"),
    **dict.fromkeys(("PairScoredSimilarityEvaluator", "primary_unit_key", "unit_scores"), "scored_units"),
    **dict.fromkeys((
        "STSB_DEV_METRIC", "STSResult", "STSTaskResult", "evaluate_sts", "evaluate_sts_suite", "stsb_dev_evaluator",
    ), "sts"),
    **dict.fromkeys(("TransferResult", "TransferTaskResult", "classify", "evaluate_transfer"), "transfer"),
}

__all__ = sorted(_WHERE)  # every exported name, listed once above

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
