"""Hybrid-teacher distillation on the user's own documents: the model as it starts, fused with BM25
(:mod:`st_infocse.evaluation.lexical`), scores candidates for pseudo-queries drawn from the documents, and the same
model learns to rank them so, listwise (``DistillKLDivLoss``, ``"kl"``) or by GPL's margin (``MarginMSELoss``,
``"margin_mse"``; Wang et al., NAACL 2022). SPAR (Chen et al., 2022) imitates BM25 alone; imitating BM25 fused with
the model keeps what the model knows.

Pseudo-queries (``query_kind``): ``"held_out"``, one drawn sentence against the rest of its document (the inverse
cloze task; the corpus holds each document without it); ``"title"``, the title against the text (documents without
one are skipped); ``"sentence"``, one drawn sentence against the whole document.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from st_infocse.evaluation import LexicalSettings, RetrievalData, reference_runs, search
from st_infocse.files import check_at_least, check_choice
from st_infocse.mining.report import skip_counts
from st_infocse.mining.sentences import PreparedDocument, prepare_documents

QueryKind = Literal["held_out", "title", "sentence"]
DistillationLoss = Literal["kl", "margin_mse"]


@dataclass
class PseudoQueries:
    """Queries (id -> text) drawn from documents, the corpus (id -> text) they are asked over, each query's own
    document (``positives``), the documents that gave no query by reason (``skipped``) and the ``query_kind``."""

    queries: dict[str, str]
    corpus: dict[str, str]
    positives: dict[str, str]
    skipped: dict[str, int] = field(default_factory=dict)
    query_kind: str = "held_out"

    def __len__(self) -> int:  # one training example per query
        return len(self.queries)

    def summary(self) -> str:
        """One line: ``"12 held_out pseudo-queries over 12 documents; skipped documents: too_few_sentences=1"``."""
        skipped = skip_counts(self.skipped)
        return (f"{len(self.queries):,} {self.query_kind} pseudo-queries over {len(self.corpus):,} documents"
                + (f"; skipped documents: {skipped}" if skipped else ""))


def pseudo_queries(
    documents: Iterable[Any], query_kind: QueryKind = "held_out", seed: int = 0,
    title_key: str = "title", max_queries: int | None = None,
) -> PseudoQueries:
    """One pseudo-query per document (see the module's description of ``query_kind``); refused when none gives one.

    Args:
        documents: As :func:`~st_infocse.mining.mine_pairs` reads them: lists of sentences, or dicts with
            ``sentences`` or ``text`` (and ``id``, ``title``).
        query_kind: ``"held_out"``: one sentence held out of each document (its rest the document); ``"title"``: the
            document's title (a ``title_key`` field); ``"sentence"``: one sentence left in its document.
        seed: Which sentence is drawn.
        title_key: The documents' title field, for ``"title"``.
        max_queries: Keep a ``seed`` sample of this many queries (all by default); the corpus keeps every document.

    Example:
        >>> drawn = pseudo_queries([["A cat sat.", "It purred."], ["Dogs ran.", "They barked."]], seed=0)
        >>> len(drawn.queries), sorted(drawn.corpus) == sorted(drawn.positives.values())
        (2, True)
    """
    check_choice("query_kind", query_kind, QueryKind)
    documents = list(documents)
    # a title read by the document's id, as prepare_documents names it (its "id", else its position)
    titles = {str(doc.get("id", index)) if isinstance(doc, dict) else str(index):
              doc.get(title_key) if isinstance(doc, dict) else None for index, doc in enumerate(documents)}
    items = list(prepare_documents(documents))  # two sentences at least, as every miner here reads documents
    skipped = Counter(item.reason for item in items if not isinstance(item, PreparedDocument))
    rng = random.Random(seed)
    queries, corpus, positives = {}, {}, {}
    for doc in (item for item in items if isinstance(item, PreparedDocument)):
        sentences = doc.sentences
        if query_kind == "title":
            title = (titles.get(doc.doc_id) or "").strip()
            if not title:
                skipped["no_title"] += 1
                continue
            query, text = title, " ".join(sentences)
        else:
            index = rng.randrange(len(sentences))
            query = sentences[index]
            rest = sentences[:index] + sentences[index + 1:]
            text = " ".join(rest if query_kind == "held_out" else sentences)
        queries[f"q-{doc.doc_id}"], corpus[doc.doc_id], positives[f"q-{doc.doc_id}"] = query, text, doc.doc_id
    if max_queries is not None and len(queries) > max_queries:
        kept = set(random.Random(seed).sample(sorted(queries), max_queries))
        queries = {q: text for q, text in queries.items() if q in kept}
        positives = {q: d for q, d in positives.items() if q in kept}
    if not queries:  # nothing to distil on, refused before a model scores anything
        raise ValueError(f"documents: none gave a {query_kind} pseudo-query ({skip_counts(skipped) or 'no document'})")
    return PseudoQueries(queries, corpus, positives, dict(skipped), query_kind)


@dataclass
class DistillationReport:
    """What :func:`hybrid_teacher_dataset` built: ``queries`` (training examples), ``documents`` (the corpus),
    the settings asked, the ``teacher``'s description, ``own_first`` (the share of queries whose own document it
    ranks first), the documents ``skipped`` by reason and the wall time."""

    queries: int
    documents: int
    query_kind: str
    loss: str
    candidates: int
    teacher: str
    own_first: float
    skipped: dict[str, int]
    seconds: float

    def summary(self) -> str:
        skipped = skip_counts(self.skipped) or "none"
        return (f"{self.queries:,} {self.query_kind} queries over {self.documents:,} documents; the teacher ranks "
                f"the query's own document first for {100 * self.own_first:.1f}%; {self.candidates} candidates each "
                f"({self.loss}); teacher: {self.teacher}; skipped documents: {skipped}; {self.seconds:.0f} s")


def hybrid_teacher_dataset(
    model: Any, documents: Iterable[Any], query_kind: QueryKind = "held_out",
    loss: DistillationLoss = "kl", candidates: int = 4, settings: LexicalSettings | None = None,
    seed: int = 0, top_k: int = 100, batch_size: int = 64, max_queries: int | None = None, title_key: str = "title",
    show_progress_bar: bool | None = None, drawn: PseudoQueries | None = None,
) -> tuple[Any, DistillationReport]:
    """Training examples scored by the hybrid teacher, for :func:`distillation_loss`.

    The teacher scores each pseudo-query against the corpus: the model's own similarity over its ``top_k``
    documents and BM25's ``top_k``, fused by ``settings`` (min-max sum, BM25 weight 0.5 by default), so scores lie
    in [0, 1] (a document outside both lists scores 0). The model is only read (``encode``), never changed.

    Args:
        model: The ``SentenceTransformer`` to distil into, as it starts.
        documents: As for :func:`pseudo_queries`.
        query_kind: See :func:`pseudo_queries`.
        loss: ``"kl"``: columns ``query, positive, negative_1 .. negative_{candidates-1}`` and ``label`` (the
            teacher's score of each); ``"margin_mse"``: ``query, positive, negative`` (the teacher's first other
            document) and ``label`` (teacher(positive) - teacher(negative)).
        candidates: Documents per query for ``"kl"``, the query's own included (at least 2).
        settings: BM25's tokenisation and the fusion.
        seed: The pseudo-queries' draw.
        top_k: Documents each run keeps per query before fusion.
        batch_size: Encoding batch size.
        max_queries: See :func:`pseudo_queries`.
        title_key: See :func:`pseudo_queries`.
        show_progress_bar: ``None``: shown for 1,000+ texts.
        drawn: The pseudo-queries, when already drawn (:func:`pseudo_queries`); ``documents`` is then not read.

    Returns:
        The ``datasets.Dataset`` and a :class:`DistillationReport`.

    Example:
        >>> dataset, report = hybrid_teacher_dataset(model, documents, candidates=4)  # doctest: +SKIP
        >>> dataset.column_names  # doctest: +SKIP
        ['query', 'positive', 'negative_1', 'negative_2', 'negative_3', 'label']
    """
    from datasets import Dataset

    check_choice("loss", loss, DistillationLoss)
    check_at_least("candidates (the query's document and one other)", candidates, 2)
    settings = settings or LexicalSettings()
    start = time.perf_counter()
    drawn = drawn or pseudo_queries(documents, query_kind, seed, title_key, max_queries)
    needed = candidates if loss == "kl" else 2
    if len(drawn.corpus) < needed:
        raise ValueError(f"{len(drawn.corpus)} documents gave a query; {needed} candidates need at least that many")
    data = RetrievalData(name="documents", corpus={d: {"title": "", "text": t} for d, t in drawn.corpus.items()},
                         queries=drawn.queries, qrels={q: {d: 1} for q, d in drawn.positives.items()},
                         source="documents", split="pseudo")
    dense = search(model, data, top_k=top_k, batch_size=batch_size, show_progress_bar=show_progress_bar)
    teacher = reference_runs(dense, drawn.corpus, drawn.queries, settings, depth=top_k)["hybrid"]
    wanted = candidates - 1 if loss == "kl" else 1
    rows: list[dict[str, Any]] = []
    own_first = 0
    for query_id, query in drawn.queries.items():
        own = drawn.positives[query_id]
        scores = teacher.get(query_id, {})
        ranked = sorted(scores, key=lambda doc: (-scores[doc], doc))
        own_first += bool(ranked) and ranked[0] == own
        others = [doc for doc in ranked if doc != own][:wanted]
        if len(others) < wanted:  # too few hits: the rest from the corpus, scored 0 by the teacher
            rest = [doc for doc in drawn.corpus if doc != own and doc not in others]
            others += random.Random(f"{seed}-{query_id}").sample(rest, wanted - len(others))
        row: dict[str, Any] = {"query": query, "positive": drawn.corpus[own]}
        labels = [scores.get(own, 0.0)] + [scores.get(doc, 0.0) for doc in others]
        if loss == "kl":
            row.update({f"negative_{i}": drawn.corpus[doc] for i, doc in enumerate(others, start=1)})
            row["label"] = labels
        else:
            row.update(negative=drawn.corpus[others[0]], label=labels[0] - labels[1])
        rows.append(row)
    report = DistillationReport(
        queries=len(rows), documents=len(drawn.corpus), query_kind=query_kind, loss=loss,
        candidates=candidates if loss == "kl" else 2, teacher=settings.describe(),
        own_first=own_first / max(1, len(rows)), skipped=drawn.skipped, seconds=time.perf_counter() - start,
    )
    return Dataset.from_list(rows), report


def distillation_loss(model: Any, loss: DistillationLoss = "kl", student_temperature: float = 0.05,
                      teacher_temperature: float = 0.1):
    """sentence-transformers' loss for a :func:`hybrid_teacher_dataset`, the student scoring with the model's own
    similarity function.

    Args:
        loss: ``"kl"``: ``DistillKLDivLoss`` over the query's document and the teacher's next candidates;
            ``"margin_mse"``: ``MarginMSELoss`` on the teacher's margin to its first other document (GPL).
        student_temperature: ``"kl"``: the student's temperature.
        teacher_temperature: ``"kl"``: the teacher's temperature (its fused scores lie in [0, 1], so 0.1 spreads them
            over 10 logits).
    """
    from sentence_transformers.sentence_transformer.losses import DistillKLDivLoss, MarginMSELoss

    check_choice("loss", loss, DistillationLoss)
    if loss == "kl":
        return DistillKLDivLoss(model, similarity_fct=model.similarity_pairwise,
                                student_temperature=student_temperature, teacher_temperature=teacher_temperature)
    return MarginMSELoss(model, similarity_fct=model.similarity_pairwise)
