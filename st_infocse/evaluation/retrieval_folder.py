"""The user's own BEIR-layout retrieval folder as a training-time evaluator.

A folder of ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` becomes a
:class:`~st_infocse.evaluation.RetrievalEvaluator`, so ``SentenceTransformerTrainer`` logs its nDCG@10 and Recall@100
at every evaluation, can keep the best checkpoint by them, and keeps each query's nDCG@10 for an interval over the
queries. :func:`check_retrieval_folder` validates the folder without a model, every problem one
:class:`~st_infocse.files.InputError`. Queries are those with a relevant document (a qrels score above 0). A large
corpus is cut to every judged document plus a seeded sample of the rest, which scores higher than the whole corpus:
it compares checkpoints of one run, not models across papers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from st_infocse.files import InputError, existing_path, qrels_split

from .lexical import FUSION_DEPTH
from .loaders import PathLike, RetrievalData, load_beir_folder

#: The default evaluator name: the prefix of every logged key (``eval_retrieval_cosine_ndcg@10``).
RETRIEVAL_EVALUATOR_NAME = "retrieval"

#: The splits tried, in order, when no split is named.
DEFAULT_SPLITS: tuple[str, ...] = ("dev", "test")

# The cut-offs of the training-time evaluator; nDCG@10 (the largest ndcg_at_k) is its primary metric, and Recall@100
# reaches the depth the BM25 hybrid is fused at.
_CUTOFFS = {"accuracy_at_k": [1, 10], "precision_recall_at_k": [10, FUSION_DEPTH], "mrr_at_k": [10], "ndcg_at_k": [10],
            "map_at_k": [100]}


@dataclass(frozen=True)
class RetrievalFolderInfo:
    """What a BEIR-layout folder holds, and how much of its corpus an evaluator searches.

    Attributes:
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
        return self.n_corpus_used < self.n_corpus

    @property
    def name(self) -> str:
        """``<folder name>-<split>``, e.g. ``"scifact-dev"``."""
        return f"{self.folder.name or self.folder.resolve().name}-{self.split}"

    def describe(self) -> str:
        """One line for a start-up summary.

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


def _load_checked(folder: PathLike, split: str | None) -> tuple[RetrievalData, set[str], RetrievalFolderInfo]:
    """The folder's data on its judged queries, the documents judged relevant, and its info; every problem as one
    InputError."""
    folder = Path(folder)
    try:  # a malformed file (or a judged document not in the corpus) is a DataFormatError, an InputError
        split = qrels_split(existing_path(folder, folder=True, expected="expected a BEIR dataset folder"), split,
                            DEFAULT_SPLITS)
        data = load_beir_folder(folder, split, refuse_unknown=True)
    except FileNotFoundError as exc:  # the folder, corpus.jsonl, queries.jsonl or the qrels split
        raise InputError(str(exc)) from None
    relevant = {qid: {d for d, score in rel.items() if score > 0} for qid, rel in data.qrels.items()}
    relevant = {qid: docs for qid, docs in relevant.items() if docs}
    if not relevant:
        raise InputError(f"{folder / 'qrels' / f'{split}.tsv'}: no relevant documents (every row scores 0 or less; "
                         "relevant means above 0)")
    judged = {d for docs in relevant.values() for d in docs}
    data = replace(data, queries={q: data.queries[q] for q in relevant}, qrels={q: data.qrels[q] for q in relevant})
    return data, judged, RetrievalFolderInfo(folder, split, len(data.corpus), len(relevant), len(judged))


def check_retrieval_folder(folder: PathLike, split: str | None = None) -> RetrievalFolderInfo:
    """Validate a BEIR-layout folder fully and cheaply (every file read, no model loaded) and count what it holds.

    Every problem is one :class:`InputError` naming the file: a missing folder or file, a malformed line (which it
    names), a split with no relevant document, or qrels naming ids not in ``queries.jsonl`` or ``corpus.jsonl``.
    ``split`` None is the first of :data:`DEFAULT_SPLITS` whose ``qrels/<split>.tsv`` exists: ``dev``, else ``test``.
    """
    return _load_checked(folder, split)[2]


def _sample_corpus(doc_ids: list[str], judged: set[str], max_corpus: int | None, seed: int) -> set[str]:
    """Every judged document plus a ``random.Random(seed)`` sample of the others, ``max_corpus`` in all."""
    if max_corpus is None or len(doc_ids) <= max_corpus:
        return set(doc_ids)
    others = [d for d in doc_ids if d not in judged]  # file order, so the sample depends on the seed alone
    return judged | set(random.Random(seed).sample(others, max(0, max_corpus - len(judged))))


def retrieval_evaluator(folder: PathLike, split: str | None = None, *, max_corpus: int | None = 10_000, seed: int = 0,
                        name: str = RETRIEVAL_EVALUATOR_NAME, batch_size: int = 32,
                        show_progress_bar: bool = False) -> tuple[Any, RetrievalFolderInfo]:
    """A :class:`~st_infocse.evaluation.RetrievalEvaluator` on the user's own BEIR-layout folder, and the folder's
    counts with how much of the corpus it searches (``info.describe()`` is a one-line summary).

    Queries are the judged ones, a document is ``title + " " + text`` as mteb reads it. It reports Accuracy@1/10,
    Precision and Recall@10/100, MRR@10, nDCG@10 and MAP@100 under the model's similarity, nDCG@10 first, so the
    trainer logs e.g. ``eval_retrieval_cosine_ndcg@10`` (:func:`retrieval_metric_keys`). A corpus larger than
    ``max_corpus`` (None: no cap) is cut to every judged document plus a ``random.Random(seed)`` sample of the others,
    ``max_corpus`` in all. A folder problem (:func:`check_retrieval_folder`) or a ``max_corpus`` below 1 is one
    :class:`InputError`.

    Example:
        >>> evaluator, info = retrieval_evaluator("../shared/data/beir/scifact", max_corpus=1200)  # doctest: +SKIP
        >>> print(info.describe())  # doctest: +SKIP
        scifact-test: 300 queries, 1,200 of 5,183 documents (all 283 judged + a seed-0 sample)
    """
    from .retrieval import data_evaluator

    if max_corpus is not None and (isinstance(max_corpus, bool) or not isinstance(max_corpus, int) or max_corpus < 1):
        raise InputError(f"max_corpus must be a whole number of documents above 0, or None; got {max_corpus!r}")
    data, judged, info = _load_checked(folder, split)
    keep = _sample_corpus(list(data.corpus), judged, max_corpus, seed)
    used = replace(data, corpus={d: doc for d, doc in data.corpus.items() if d in keep})
    evaluator = data_evaluator(used, None, False, batch_size, show_progress_bar, name=name, **_CUTOFFS)
    info = replace(info, n_corpus_used=len(used.corpus), max_corpus=max_corpus)
    return evaluator, replace(info, seed=seed) if info.sampled else info  # the seed only where it drew a sample


def retrieval_metric_keys(evaluator_or_name: Any, similarity_fn_name: str, *, prefix: str = "eval") -> dict[str, str]:
    """Metric -> the key under which the trainer logs it: ``{prefix}_{name}_{similarity}_{metric}@{k}``, for an
    evaluator or the name a :func:`retrieval_evaluator` was built with; ``prefix=""`` gives the evaluator's own keys.

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
