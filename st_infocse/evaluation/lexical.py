"""BM25 on the user's own queries, and its hybrid with a dense model: the reference lines printed beside every
in-domain retrieval score, so a user sees whether words matter in their domain and how much room there is.

BM25 is ``bm25s``'s (Lucene's variant, k1 1.5, b 0.75) over the documents' title and text, tokenised by ``bm25s``
(lower-cased word tokens of two or more characters) with a Snowball stemmer and a stop-word list of one language
(:class:`LexicalSettings`). The hybrid fuses a dense run and the BM25 run per query (:func:`fuse_runs`): the two
scores min-max normalised over each run's hits and summed with a weight, or reciprocal rank fusion.

:func:`reference_runs` is the one builder of the BM25 and hybrid runs. Min-max fusion normalises over the hits each run
contributes, so the hybrid depends on how deep each run goes: both runs are cut to :data:`FUSION_DEPTH` documents per
query, whatever depth the dense search itself kept, so that the training-time evaluator, ``st-infocse evaluate`` and
the distillation teacher fuse the same runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from st_infocse.files import check_choice, check_range

from ._deps import require
from .bm25_language import check_language

Run = dict[str, dict[str, float]]  # query id -> {document id -> score}, the format beir and pytrec_eval read
FUSIONS = ("minmax", "rrf")
#: Documents per query each run contributes to the hybrid (the training-time evaluator's deepest cut-off, Recall@100).
FUSION_DEPTH = 100


@dataclass(frozen=True)
class LexicalSettings:
    """How BM25 tokenises (the Snowball stemmer's and ``bm25s``' stop words' ``language``), and how the hybrid of
    BM25 with the model fuses the two runs.

    Attributes:
        language: BM25's stemmer (Snowball) and stop-word language.
        stem: Stem BM25's tokens.
        stopwords: Drop the language's stop words from BM25's tokens.
        fusion: How the hybrid fuses the two runs per query: ``"minmax"`` (each run's scores min-max normalised per
            query, then ``weight`` x BM25 + (1 - ``weight``) x dense) or ``"rrf"`` (reciprocal rank fusion,
            1 / (60 + rank) summed).
        weight: BM25's weight in the minmax hybrid.
    """

    language: str = "english"
    stem: bool = True
    stopwords: bool = True
    fusion: Literal["minmax", "rrf"] = "minmax"
    weight: float = 0.5

    def __post_init__(self) -> None:
        check_choice("fusion", self.fusion, FUSIONS)
        check_range("weight", self.weight, (0, 1, True, True))
        check_language(self.language, self.stem, self.stopwords)

    def describe(self) -> str:
        """``BM25 (bm25s; english stemmer, english stop words); hybrid: min-max sum, BM25 weight 0.5``."""
        words = ", ".join(part for part in (f"{self.language} stemmer" * self.stem,
                                            f"{self.language} stop words" * self.stopwords) if part) or "raw tokens"
        fusion = f"min-max sum, BM25 weight {self.weight:g}" if self.fusion == "minmax" else "reciprocal rank fusion"
        return f"BM25 (bm25s; {words}); hybrid: {fusion}"


def bm25_search(
    corpus: Mapping[str, str], queries: Mapping[str, str], top_k: int = 100, settings: LexicalSettings | None = None
) -> Run:
    """Each query's ``top_k`` documents by BM25 (query id -> {document id -> score}, scores of 0 left out); the
    corpus is document id -> text as the dense search reads it.

    Example:
        >>> run = bm25_search({"d1": "cats sit on mats", "d2": "dogs run"}, {"q": "a cat sat"}, top_k=2)
        >>> list(run["q"])
        ['d1']
    """
    bm25s = require("bm25s", "BM25")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each index build at DEBUG otherwise
    settings = settings or LexicalSettings()
    stemmer = require("Stemmer", "BM25's stemmer").Stemmer(settings.language).stemWords if settings.stem else None
    stopwords = settings.language if settings.stopwords else None
    doc_ids, texts = list(corpus), list(corpus.values())
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords=stopwords, stemmer=stemmer, show_progress=False), show_progress=False)
    query_ids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in query_ids], stopwords=stopwords, stemmer=stemmer,
                            show_progress=False)
    hits, scores = index.retrieve(tokens, k=min(top_k, len(doc_ids)), show_progress=False)
    return {
        query_id: {doc_ids[int(d)]: float(s) for d, s in zip(row_hits, row_scores, strict=True) if s > 0}
        for query_id, row_hits, row_scores in zip(query_ids, hits, scores, strict=True)
    }


def fuse_runs(dense: Run, lexical: Run, settings: LexicalSettings | None = None) -> Run:
    """The hybrid of a dense and a BM25 run, query by query, over the union of their hits.

    Example:
        >>> fuse_runs({"q": {"a": 0.9, "b": 0.5}}, {"q": {"b": 7.0, "c": 1.0}})["q"]
        {'a': 0.5, 'b': 0.5, 'c': 0.0}
    """
    settings = settings or LexicalSettings()
    fused: Run = {}
    for query_id in dense.keys() | lexical.keys():
        a, b = dense.get(query_id, {}), lexical.get(query_id, {})
        if settings.fusion == "rrf":
            ranks_a, ranks_b = _ranks(a), _ranks(b)
            fused[query_id] = {doc: sum(1 / (60 + ranks[doc]) for ranks in (ranks_a, ranks_b) if doc in ranks)
                               for doc in a.keys() | b.keys()}
        else:
            norm_a, norm_b = _min_max(a), _min_max(b)
            weight = settings.weight
            fused[query_id] = {doc: (1 - weight) * norm_a.get(doc, 0.0) + weight * norm_b.get(doc, 0.0)
                               for doc in sorted(a.keys() | b.keys())}
    return fused


def reference_runs(dense: Run, corpus: Mapping[str, str], queries: Mapping[str, str],
                   settings: LexicalSettings | None = None, depth: int = FUSION_DEPTH) -> dict[str, Run]:
    """``{"BM25": run, "hybrid": run}``: BM25's run and its hybrid with ``dense`` (the model's run, at least ``depth``
    deep where the corpus allows), each cut to ``depth`` documents per query before fusion.

    Example:
        >>> runs = reference_runs({"q": {"d2": 0.9, "d1": 0.1}}, {"d1": "cats sit", "d2": "dogs run"}, {"q": "a cat"})
        >>> list(runs["BM25"]["q"]), runs["hybrid"]["q"]
        (['d1'], {'d1': 0.5, 'd2': 0.5})
    """
    bm25 = bm25_search(corpus, queries, top_k=depth, settings=settings)
    top = {query_id: dict(sorted(hits.items(), key=lambda hit: (-hit[1], hit[0]))[:depth])
           for query_id, hits in dense.items()}
    return {"BM25": bm25, "hybrid": fuse_runs(top, bm25, settings)}


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    return {doc: rank for rank, doc in enumerate(sorted(scores, key=lambda doc: (-scores[doc], doc)), start=1)}


def _min_max(scores: Mapping[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, span = min(scores.values()), max(scores.values()) - min(scores.values())
    return {doc: (value - low) / span if span > 0 else 1.0 for doc, value in scores.items()}
