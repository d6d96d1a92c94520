"""The user's own BEIR-layout retrieval folder as a training-time evaluator.

A folder holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (read by
:func:`~st_infocse.evaluation.loaders.load_beir_folder`) becomes a :class:`~st_infocse.evaluation.RetrievalEvaluator`,
sentence-transformers' ``InformationRetrievalEvaluator`` scored by pytrec_eval as beir and mteb score, so
``SentenceTransformerTrainer`` logs its nDCG@10 and Recall@100 at every evaluation and can keep the best checkpoint by
them, and each query's nDCG@10 is kept for an interval over the queries.

:func:`check_retrieval_folder` validates the folder cheaply (it reads the files, loads no model) and reports every
problem as one :class:`~st_infocse.files.InputError`; :func:`retrieval_evaluator` builds the evaluator, with a large
corpus cut down to every judged document plus a seeded random sample of the rest; :func:`retrieval_metric_keys` names
the keys the trainer logs. Queries are those with a relevant document (a qrels score above 0); grades above 1 count
more in nDCG, as in beir and mteb. On a sampled corpus the scores are higher than on the whole one: they compare
checkpoints of one run, not models across papers.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from st_infocse.files import InputError

from .loaders import PathLike, RetrievalData, load_beir_folder

__all__ = [
    "RETRIEVAL_EVALUATOR_NAME",
    "RetrievalFolderInfo",
    "check_retrieval_folder",
    "resolve_retrieval_split",
    "retrieval_evaluator",
    "retrieval_metric_keys",
]

#: The default evaluator name: the prefix of every logged key (``eval_retrieval_cosine_ndcg@10``).
RETRIEVAL_EVALUATOR_NAME = "retrieval"

#: The splits tried, in order, when no split is named.
DEFAULT_SPLITS: tuple[str, ...] = ("dev", "test")

# The cut-offs of the training-time evaluator; nDCG@10 (the largest ndcg_at_k) is its primary metric, and Recall@100
# reaches the depth the BM25 hybrid is fused at (lexical.FUSION_DEPTH).
_CUTOFFS = {"accuracy_at_k": [1, 10], "precision_recall_at_k": [10, 100], "mrr_at_k": [10], "ndcg_at_k": [10],
            "map_at_k": [100]}


@dataclass(frozen=True)
class RetrievalFolderInfo:
    """What a BEIR-layout folder holds, and how much of its corpus an evaluator uses.

    Attributes:
        folder: The dataset folder.
        split: The qrels split (``qrels/<split>.tsv``).
        n_corpus: Documents in ``corpus.jsonl``.
        n_queries: Judged queries: those with at least one relevant document (qrels score above 0).
        n_judged_docs: Distinct documents judged relevant to some query of the split.
        n_corpus_used: Documents the evaluator searches (``n_corpus`` unless the corpus was sampled).
        seed: The sampling seed, when the corpus was sampled.
        max_corpus: The corpus cap the evaluator was built with (None: no cap, or no evaluator built).
    """

    folder: Path
    split: str
    n_corpus: int
    n_queries: int
    n_judged_docs: int
    n_corpus_used: int = -1
    seed: int | None = None
    max_corpus: int | None = None

    def __post_init__(self) -> None:
        if self.n_corpus_used < 0:  # not given: the whole corpus
            object.__setattr__(self, "n_corpus_used", self.n_corpus)

    @property
    def sampled(self) -> bool:
        """Whether the evaluator searches fewer documents than the corpus holds."""
        return self.n_corpus_used < self.n_corpus

    @property
    def name(self) -> str:
        """``<folder name>-<split>``, e.g. ``"scifact-dev"``."""
        folder_name = self.folder.name or self.folder.resolve().name
        return f"{folder_name}-{self.split}"

    def describe(self) -> str:
        """One line for a start-up summary.

        Returns:
            E.g. ``"scifact-test: 300 queries, 1,200 of 5,183 documents (all 283 judged + a seed-0 sample)"``.

        Example:
            >>> info = RetrievalFolderInfo(Path("scifact"), "test", 5183, 300, 283, n_corpus_used=1200, seed=0)
            >>> info.describe()
            'scifact-test: 300 queries, 1,200 of 5,183 documents (all 283 judged + a seed-0 sample)'
        """
        head = f"{self.name}: {_count(self.n_queries, 'query', 'queries')}, "
        if not self.sampled:
            return f"{head}{_count(self.n_corpus, 'document')} ({self.n_judged_docs:,} judged)"
        used = f"{self.n_corpus_used:,} of {self.n_corpus:,} documents"
        if self.n_corpus_used > self.n_judged_docs:
            return f"{head}{used} (all {self.n_judged_docs:,} judged + a seed-{self.seed} sample)"
        return f"{head}{used} (all {self.n_judged_docs:,} judged and no sample: max_corpus={self.max_corpus:,})"


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def _qrels_listing(folder: Path) -> str:
    qrels = folder / "qrels"
    if not qrels.is_dir():
        return f"{folder} has no qrels/ folder"
    splits = sorted(path.name for path in qrels.glob("*.tsv"))
    return f"qrels/ holds {', '.join(splits)}" if splits else "qrels/ holds no .tsv file"


def resolve_retrieval_split(folder: PathLike, split: str | None = None) -> str:
    """The qrels split to evaluate on: ``split`` itself, or with None the first of ``dev``, ``test`` that exists.

    Reads nothing but the folder listing (no torch needed).

    Args:
        folder: A BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
        split: A split name (``"dev"`` reads ``qrels/dev.tsv``); None tries ``dev``, then ``test``.

    Returns:
        The split name.

    Raises:
        InputError: the folder is missing, the named split's qrels file is missing, or (``split=None``) neither
            ``qrels/dev.tsv`` nor ``qrels/test.tsv`` exists; one line naming the folder or file.

    Example:
        >>> resolve_retrieval_split("../shared/data/beir/scifact")  # doctest: +SKIP
        'test'
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: folder not found (expected a BEIR dataset folder)")
    if split is not None:
        path = folder / "qrels" / f"{split}.tsv"
        if not path.is_file():
            raise InputError(f"{path}: file not found ({_qrels_listing(folder)})")
        return split
    for candidate in DEFAULT_SPLITS:
        if (folder / "qrels" / f"{candidate}.tsv").is_file():
            return candidate
    tried = " nor ".join(f"qrels/{s}.tsv" for s in DEFAULT_SPLITS)
    raise InputError(f"{folder}: neither {tried} found ({_qrels_listing(folder)}); name the split to use")


@contextmanager
def _loader_warnings_held() -> Iterator[None]:
    # load_beir_folder only warns about judged documents missing from the corpus; that is an error here, raised with
    # a count and examples, so the warning would only say it twice.
    loader_logger = logging.getLogger(load_beir_folder.__module__)

    def keep(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    loader_logger.addFilter(keep)
    try:
        yield
    finally:
        loader_logger.removeFilter(keep)


def _examples(ids: list[str], n: int = 3) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return f"e.g. {shown}" if len(ids) > n else shown


def _load_checked(
    folder: PathLike, split: str | None
) -> tuple[RetrievalData, dict[str, set[str]], RetrievalFolderInfo]:
    """The folder's data, its relevant documents per judged query, and its info; every problem as one InputError."""
    folder = Path(folder)
    split = resolve_retrieval_split(folder, split)
    qrels_path = folder / "qrels" / f"{split}.tsv"
    try:
        with _loader_warnings_held():
            # raises DataFormatError (an InputError naming file and line) for malformed files and for a qrels row
            # whose query id is not in queries.jsonl
            data = load_beir_folder(folder, split=split)
    except FileNotFoundError as exc:  # a missing corpus.jsonl or queries.jsonl
        raise InputError(str(exc)) from None

    unknown_docs = list(dict.fromkeys(d for rel in data.qrels.values() for d in rel if d not in data.corpus))
    if unknown_docs:
        raise InputError(
            f"{qrels_path} names {_count(len(unknown_docs), 'document id')} not in corpus.jsonl "
            f"({_examples(unknown_docs)})"
        )
    relevant = {qid: {d for d, score in rel.items() if score > 0} for qid, rel in data.qrels.items()}
    relevant = {qid: docs for qid, docs in relevant.items() if docs}
    if not relevant:
        raise InputError(f"{qrels_path}: no relevant documents (every row scores 0 or less; relevant means above 0)")
    judged_docs = {d for docs in relevant.values() for d in docs}
    info = RetrievalFolderInfo(folder, split, len(data.corpus), len(relevant), len(judged_docs))
    return data, relevant, info


def check_retrieval_folder(folder: PathLike, split: str | None = None) -> RetrievalFolderInfo:
    """Validate a BEIR-layout folder fully and cheaply: every file is read, no model is loaded.

    Args:
        folder: The folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
        split: The qrels split; None: ``dev``, else ``test`` (see :func:`resolve_retrieval_split`).

    Returns:
        Its counts (judged queries, documents, judged documents).

    Raises:
        InputError: one line naming the file and the problem: a missing folder or file, a malformed line
            (:class:`~st_infocse.evaluation.DataFormatError`, which names the line), a split with no relevant
            document (no qrels score above 0), or qrels naming query ids not in ``queries.jsonl`` or document ids
            not in ``corpus.jsonl``.

    Example:
        >>> info = check_retrieval_folder("../shared/data/beir/scifact")  # doctest: +SKIP
        >>> info.split, info.n_queries, info.n_corpus, info.n_judged_docs  # doctest: +SKIP
        ('test', 300, 5183, 283)
    """
    return _load_checked(folder, split)[2]


def _sample_corpus(doc_ids: list[str], judged: set[str], max_corpus: int | None, seed: int) -> set[str]:
    """Every judged document plus a ``random.Random(seed)`` sample of the others, ``max_corpus`` in all."""
    if max_corpus is None or len(doc_ids) <= max_corpus:
        return set(doc_ids)
    others = [d for d in doc_ids if d not in judged]  # file order, so the sample depends on the seed alone
    room = max(0, max_corpus - len(judged))
    return judged | set(random.Random(seed).sample(others, room))


def retrieval_evaluator(
    folder: PathLike,
    split: str | None = None,
    *,
    max_corpus: int | None = 10_000,
    seed: int = 0,
    name: str = RETRIEVAL_EVALUATOR_NAME,
    batch_size: int = 32,
    show_progress_bar: bool = False,
) -> tuple[Any, RetrievalFolderInfo]:
    """A :class:`~st_infocse.evaluation.RetrievalEvaluator` on the user's own BEIR-layout folder.

    Queries are the judged ones (at least one qrels score above 0), and a document is read as mteb and beir read it:
    ``title + " " + text``, stripped (just the text when there is no title). The evaluator reports Accuracy@1/10,
    Precision and Recall@10/100, MRR@10, nDCG@10 and MAP@100 under the model's own similarity; its primary metric is
    nDCG@10, so the trainer logs e.g. ``eval_retrieval_cosine_ndcg@10`` (:func:`retrieval_metric_keys` gives the
    exact keys).

    A corpus larger than ``max_corpus`` is cut down to every judged document plus a ``random.Random(seed)`` sample of
    the others, ``max_corpus`` documents in all (all judged documents when they alone reach ``max_corpus``); the same
    seed gives the same documents.

    Args:
        folder: The folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
        split: The qrels split; None: ``dev``, else ``test``.
        max_corpus: The most documents to search; None searches the whole corpus.
        seed: Seed of the corpus sample.
        name: The evaluator's name, the prefix of its metric keys.
        batch_size: Encoding batch size.
        show_progress_bar: Progress bars while encoding.

    Returns:
        ``(evaluator, info)``: the evaluator, and the folder's counts with how much of the corpus is used
        (``info.describe()`` is a one-line summary).

    Raises:
        InputError: a problem with the folder (see :func:`check_retrieval_folder`), or ``max_corpus`` below 1.

    Example:
        >>> evaluator, info = retrieval_evaluator("../shared/data/beir/scifact", max_corpus=1200)  # doctest: +SKIP
        >>> print(info.describe())  # doctest: +SKIP
        scifact-test: 300 queries, 1,200 of 5,183 documents (all 283 judged + a seed-0 sample)
        >>> keys = retrieval_metric_keys(evaluator, model.similarity_fn_name)  # doctest: +SKIP
        >>> args = SentenceTransformerTrainingArguments(  # doctest: +SKIP
        ...     "out", eval_strategy="steps", eval_steps=125, save_steps=125,
        ...     load_best_model_at_end=True, metric_for_best_model=keys["ndcg@10"])
    """
    from .retrieval import RetrievalEvaluator, document_text

    if max_corpus is not None and (isinstance(max_corpus, bool) or not isinstance(max_corpus, int) or max_corpus < 1):
        raise InputError(f"max_corpus must be a whole number of documents above 0, or None; got {max_corpus!r}")
    data, relevant, info = _load_checked(folder, split)
    judged = {d for docs in relevant.values() for d in docs}
    keep = _sample_corpus(list(data.corpus), judged, max_corpus, seed)
    corpus = {doc_id: document_text(doc) for doc_id, doc in data.corpus.items() if doc_id in keep}
    evaluator = RetrievalEvaluator({qid: data.queries[qid] for qid in relevant}, corpus,
                                   {qid: data.qrels[qid] for qid in relevant}, name=name, batch_size=batch_size,
                                   show_progress_bar=show_progress_bar, write_csv=False, **_CUTOFFS)
    sampled = len(corpus) < len(data.corpus)
    return evaluator, replace(info, n_corpus_used=len(corpus), seed=seed if sampled else None, max_corpus=max_corpus)


def retrieval_metric_keys(evaluator_or_name: Any, similarity_fn_name: str, *, prefix: str = "eval") -> dict[str, str]:
    """The keys under which the trainer logs a :func:`retrieval_evaluator`'s metrics:
    ``{prefix}_{name}_{similarity}_{metric}@{k}`` (the similarity is the model's ``similarity_fn_name``).

    Args:
        evaluator_or_name: The evaluator (its name and cut-offs are read) or the name it was built with (the
            cut-offs are :func:`retrieval_evaluator`'s).
        similarity_fn_name: The evaluated model's ``similarity_fn_name`` (``"cosine"`` unless set otherwise).
        prefix: ``"eval"`` for the trainer's keys; ``""`` for the keys the evaluator itself returns.

    Returns:
        Metric -> key for every metric the evaluator reports.

    Example:
        >>> keys = retrieval_metric_keys("retrieval", "cosine")
        >>> keys["ndcg@10"], keys["recall@100"]
        ('eval_retrieval_cosine_ndcg@10', 'eval_retrieval_cosine_recall@100')
        >>> retrieval_metric_keys("retrieval", "cosine", prefix="")["ndcg@10"]
        'retrieval_cosine_ndcg@10'
    """
    from .retrieval import RetrievalEvaluator

    evaluator = evaluator_or_name
    if isinstance(evaluator_or_name, str):
        evaluator = RetrievalEvaluator({}, {}, {}, name=evaluator_or_name, **_CUTOFFS)
    return {metric: "_".join(part for part in (prefix, evaluator.name, similarity_fn_name, metric) if part)
            for metric in evaluator.metric_names}
