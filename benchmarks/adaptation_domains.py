"""The two domains of ``benchmarks/adaptation.py``: unlabelled training text, a retrieval test that training and model
choice never see, a cheaper sub-sample of that test for the curve, and a pseudo-dev set from the training documents.

- SciFact (BEIR): the corpus abstracts are the training text (a title is not training text); the test is the 300
  test queries over the whole corpus, scored by :func:`st_infocse.evaluation.evaluate_retrieval` (equal to mteb's,
  as the package's tests check). Pseudo-dev: a title retrieving the last two sentences of its own abstract (its
  conclusion) among those of other abstracts: whole abstracts were found at nDCG@10 98 by the shipped model, too
  close to the ceiling to show a change, and cost four times as much to encode.
- Reuters-21578, paper 002's zero-shot task: the bodies of ``lewissplit == "TRAIN"`` are the training text; on
  ``TEST`` each article, represented as the mean of its sentences' embeddings (L2-normalised, cosine scores),
  retrieves its own headline among all test headlines, and the reverse. An article whose body is identical to
  another's, or whose headline is identical to another's, counts every identical one as relevant (their texts
  cannot be told apart); :func:`judge_duplicates` counts them. Pseudo-dev: the first sentence of a TRAIN article
  retrieving the rest of its body.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.harness import read_jsonl
from st_infocse.evaluation import (
    LexicalSettings,
    RetrievalData,
    evaluate_retrieval,
    load_beir_folder,
    per_query_metrics,
    reference_runs,
)
from st_infocse.mining import split_sentences

# Training sentences need this many words: shorter pieces of abstracts and news ("(1)", "Methods:", "Shr 12 cts")
# are headings and table cells, not sentences.
MIN_WORDS = 5
K_VALUES = (1, 5, 10, 20, 100)
# Kept query by query for the paired test over queries (the report's intervals and selection/confirmation halves)
PER_QUERY = {"retrieval": ("ndcg@10", "recall@100"), "headline": ("ndcg@10",)}
SEED = 0  # every sample of the data (curve corpus, pseudo-dev, smoke test sets) is drawn with this seed


@dataclass
class Sizes:
    """How much of the domain a run uses: the curve and pseudo-dev samples, and the smoke run's cuts."""

    curve_docs: int = 500
    pseudo_queries: int = 300
    pseudo_docs: int = 1000
    max_docs: int | None = None  # training documents (a smoke run's cut; None: all)
    smoke_queries: int | None = None  # test queries / articles kept by a smoke run (None: all)


class RetrievalTask:
    """A BEIR-style set scored by the package's native retrieval (the same numbers as mteb)."""

    def __init__(self, data: RetrievalData, ignore_identical_ids: bool | None = None) -> None:
        self.data = data
        self.ignore_identical_ids = ignore_identical_ids

    def evaluate(self, model: Any) -> dict[str, float]:
        return self.evaluate_queries(model, per_query=False)[0]

    def evaluate_queries(self, model: Any, per_query: bool = True) -> tuple[dict[str, float], dict[str, dict]]:
        """The metrics, and each query's score for ``PER_QUERY`` (empty without ``per_query``)."""
        result = evaluate_retrieval(model, self.data, k_values=K_VALUES, ignore_identical_ids=self.ignore_identical_ids,
                                    batch_size=64, show_progress_bar=False,
                                    per_query=PER_QUERY["retrieval"] if per_query else ())
        return {k: v for k, v in result.metrics.items() if k.split("@")[0] in ("ndcg", "recall")}, result.per_query

    def lexical_references(self, model: Any, settings: LexicalSettings) -> dict[str, dict[str, float]]:
        """Each query's nDCG@10 with BM25 and with the hybrid of BM25 and ``model``: reference lines, not rows."""
        result = evaluate_retrieval(model, self.data, k_values=K_VALUES, ignore_identical_ids=self.ignore_identical_ids,
                                    batch_size=64, show_progress_bar=False, lexical=settings)
        return {name: reference.per_query["ndcg@10"] for name, reference in result.references.items()}

    def describe(self) -> dict[str, int]:
        return {"queries": len(self.data.queries), "documents": len(self.data.corpus)}


class HeadlineTask:
    """Articles (lists of sentences) against their headlines, both ways; metrics prefixed ``a2h_`` and ``h2a_``."""

    def __init__(self, ids: list[str], articles: list[list[str]], headlines: list[str],
                 qrels: dict[str, dict[str, int]]) -> None:
        self.ids, self.articles, self.headlines, self.qrels = ids, articles, headlines, qrels

    def evaluate(self, model: Any) -> dict[str, float]:
        return self.evaluate_queries(model, per_query=False)[0]

    def evaluate_queries(self, model: Any, per_query: bool = True) -> tuple[dict[str, float], dict[str, dict]]:
        """The metrics, and each article's (a2h) and headline's (h2a) score for ``PER_QUERY``."""
        out: dict[str, float] = {}
        kept: dict[str, dict] = {}
        for prefix, results in self.runs(model).items():
            # one evaluation gives the means and the queries kept; the relation is symmetric: one qrels
            scores = per_query_metrics(self.qrels, results, [f"{m}@{k}" for m in ("ndcg", "recall") for k in K_VALUES])
            out |= {f"{prefix}_{k}": float(np.mean(list(v.values()))) for k, v in scores.items()}
            if per_query:
                kept |= {f"{prefix}_{k}": scores[k] for k in PER_QUERY["headline"]}
        return out, kept

    def lexical_references(self, model: Any, settings: LexicalSettings) -> dict[str, dict[str, float]]:
        """Each article's a2h nDCG@10 with BM25 (the article's text against the headlines) and with the hybrid of
        BM25 and ``model``: the reference lines, not trainable rows."""
        articles = {doc_id: " ".join(article) for doc_id, article in zip(self.ids, self.articles, strict=True)}
        headlines = dict(zip(self.ids, self.headlines, strict=True))
        # the package's one reference builder; the dense run is already max(K_VALUES) deep, so the cut changes nothing
        runs = reference_runs(self.runs(model)["a2h"], headlines, articles, settings, depth=max(K_VALUES))
        return {name: per_query_metrics(self.qrels, run, ["ndcg@10"])["ndcg@10"] for name, run in runs.items()}

    def runs(self, model: Any) -> dict[str, dict[str, dict[str, float]]]:
        """The model's top documents both ways: each article's headlines (a2h) and each headline's articles (h2a)."""
        unique = list(dict.fromkeys(s for article in self.articles for s in article))
        index = {s: i for i, s in enumerate(unique)}
        encoded = torch.as_tensor(model.encode(unique, batch_size=64, convert_to_tensor=True)).float().cpu()
        # Paper 002: the document is the average of its sentences' embeddings; normalised, so scores are cosines.
        rows = [encoded[[index[s] for s in article]].mean(0) for article in self.articles]
        articles = torch.nn.functional.normalize(torch.stack(rows), dim=-1)
        headlines = torch.as_tensor(model.encode(self.headlines, batch_size=64, convert_to_tensor=True)).float().cpu()
        headlines = torch.nn.functional.normalize(headlines, dim=-1)
        scores = articles @ headlines.T
        runs = {}
        for prefix, matrix in (("a2h", scores), ("h2a", scores.T)):
            top = torch.topk(matrix, min(max(K_VALUES), len(self.ids)), dim=1)
            runs[prefix] = {self.ids[q]: {self.ids[d]: float(s) for d, s in zip(ids.tolist(), values.tolist(),
                                                                                 strict=True)}
                            for q, (values, ids) in enumerate(zip(top.values, top.indices, strict=True))}
        return runs

    def describe(self) -> dict[str, int]:
        return {"queries": len(self.ids), "documents": len(self.ids)}


@dataclass
class Domain:
    name: str
    documents: list[dict[str, Any]]  # {"id", "sentences"}: the training documents (IDC, ICT)
    test: RetrievalTask | HeadlineTask
    curve: RetrievalTask | HeadlineTask
    pseudo_dev: RetrievalTask
    info: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def sentences(self) -> list[str]:
        return [s for doc in self.documents for s in doc["sentences"]]


def training_documents(items: list[tuple[str, str]], max_docs: int | None) -> list[dict[str, Any]]:
    """``(id, text)`` pairs -> documents of their sentences with at least ``MIN_WORDS`` words (none left: dropped)."""
    documents = []
    for doc_id, text in items[:max_docs] if max_docs else items:
        kept = [s for s in split_sentences(text) if len(s.split()) >= MIN_WORDS]
        if kept:
            documents.append({"id": doc_id, "sentences": kept})
    return documents


def judge_duplicates(ids: list[str], bodies: list[str], titles: list[str]) -> tuple[dict[str, dict[str, int]],
                                                                                   dict[str, int]]:
    """Qrels where article ``i`` and headline ``j`` match when ``j == i``, or their bodies or their headlines are
    identical; and how many articles that concerns."""
    by_body: dict[str, list[str]] = defaultdict(list)
    by_title: dict[str, list[str]] = defaultdict(list)
    for doc_id, body, title in zip(ids, bodies, titles, strict=True):
        by_body[body.strip()].append(doc_id)
        by_title[title.strip()].append(doc_id)
    qrels = {doc_id: {j: 1 for j in by_body[body.strip()] + by_title[title.strip()]}
             for doc_id, body, title in zip(ids, bodies, titles, strict=True)}
    body_groups = [g for g in by_body.values() if len(g) > 1]
    title_groups = [g for g in by_title.values() if len(g) > 1]
    info = {
        "articles": len(ids),
        "identical_body_articles": sum(map(len, body_groups)), "identical_body_groups": len(body_groups),
        "identical_headline_articles": sum(map(len, title_groups)), "identical_headline_groups": len(title_groups),
        "articles_with_several_relevant": sum(1 for judged in qrels.values() if len(judged) > 1),
    }
    return qrels, info


def sub_corpus(data: RetrievalData, size: int, queries: int | None = None, name: str | None = None) -> RetrievalData:
    """Every document judged for the (first ``queries``) queries, plus a seeded sample of the others up to ``size``."""
    kept_queries = list(data.queries)[:queries] if queries else list(data.queries)
    qrels = {q: data.qrels[q] for q in kept_queries}
    judged = sorted({d for docs in qrels.values() for d in docs})
    others = sorted(set(data.corpus) - set(judged))
    sample = random.Random(SEED).sample(others, max(0, min(len(others), size - len(judged))))
    corpus = {d: data.corpus[d] for d in judged + sample}
    return RetrievalData(name or data.name, corpus, {q: data.queries[q] for q in kept_queries}, qrels, data.source,
                         data.split)


def _pseudo(name: str, pairs: list[tuple[str, str, str]], queries: int, source: str) -> RetrievalTask:
    """(id, query text, document text) -> the first ``queries`` query their own document among all documents."""
    corpus = {doc_id: {"title": "", "text": text} for doc_id, _, text in pairs}
    asked = {f"q-{doc_id}": query for doc_id, query, _ in pairs[:queries]}
    qrels = {f"q-{doc_id}": {doc_id: 1} for doc_id, _, _ in pairs[:queries]}
    return RetrievalTask(RetrievalData(name, corpus, asked, qrels, source, "pseudo-dev"), ignore_identical_ids=False)


def load_scifact(folder: Path, sizes: Sizes) -> Domain:
    start = time.perf_counter()
    data = load_beir_folder(folder, "test")
    items = [(doc_id, doc["text"]) for doc_id, doc in data.corpus.items()]
    documents = training_documents(items, sizes.max_docs)
    test = sub_corpus(data, sizes.curve_docs * 2, sizes.smoke_queries) if sizes.smoke_queries else data
    curve = sub_corpus(data, sizes.curve_docs, sizes.smoke_queries, "scifact-curve")
    titled = [(d, doc["title"], doc["text"]) for d, doc in data.corpus.items() if doc["title"].strip()]
    chosen = random.Random(SEED).sample(titled, min(sizes.pseudo_docs, len(titled)))
    pairs = [(d, title, " ".join(split_sentences(text)[-2:])) for d, title, text in chosen]
    pseudo = _pseudo("scifact-titles", pairs, sizes.pseudo_queries, str(folder))
    info = {"training_documents": len(documents), "training_sentences": sum(len(d["sentences"]) for d in documents),
            "test": RetrievalTask(test).describe(), "curve": RetrievalTask(curve).describe(),
            "pseudo_dev": pseudo.describe()}
    return Domain("scifact", documents, RetrievalTask(test), RetrievalTask(curve), pseudo, info,
                  time.perf_counter() - start)


def _headline_task(rows: list[dict[str, Any]]) -> tuple[HeadlineTask, dict[str, int]]:
    ids = [r["id"] for r in rows]
    qrels, info = judge_duplicates(ids, [r["text"] for r in rows], [r["title"] for r in rows])
    articles = [split_sentences(r["text"]) or [r["text"]] for r in rows]
    return HeadlineTask(ids, articles, [r["title"] for r in rows], qrels), info


def load_reuters(path: Path, sizes: Sizes) -> Domain:
    start = time.perf_counter()
    rows = [r for r in read_jsonl(path) if r["text"].strip()]
    train = [r for r in rows if r["lewissplit"] == "TRAIN"]
    test_rows = [r for r in rows if r["lewissplit"] == "TEST" and r["title"].strip()]
    documents = training_documents([(r["id"], r["text"]) for r in train], sizes.max_docs)
    if sizes.smoke_queries:
        test_rows = random.Random(SEED).sample(test_rows, min(sizes.smoke_queries, len(test_rows)))
    test, duplicates = _headline_task(test_rows)
    curve, _ = _headline_task(random.Random(SEED).sample(test_rows, min(sizes.curve_docs, len(test_rows))))
    long_enough = [d for d in documents if len(d["sentences"]) >= 3]
    chosen = random.Random(SEED).sample(long_enough, min(sizes.pseudo_docs, len(long_enough)))
    pairs = [(d["id"], d["sentences"][0], " ".join(d["sentences"][1:])) for d in chosen]
    pseudo = _pseudo("reuters-first-sentence", pairs, sizes.pseudo_queries, str(path))
    info = {"training_documents": len(documents), "training_sentences": sum(len(d["sentences"]) for d in documents),
            "test": test.describe() | {"duplicates": duplicates}, "curve": curve.describe(),
            "pseudo_dev": pseudo.describe()}
    return Domain("reuters", documents, test, curve, pseudo, info, time.perf_counter() - start)
