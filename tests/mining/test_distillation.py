"""Hybrid-teacher distillation: pseudo-queries from documents, the teacher's candidates and scores, the losses."""

import pytest
import torch

from st_infocse.evaluation import LexicalSettings, RetrievalData, bm25_search, fuse_runs, search
from st_infocse.mining import distillation_loss, hybrid_teacher_dataset, pseudo_queries

from ..conftest import random_sentences

DOCS = [
    {"id": "a", "title": "Cats at rest", "sentences": ["Cats sleep on warm mats.", "They purr loudly.", "Mats are soft."]},
    {"id": "b", "title": "Markets", "sentences": ["The stock market fell.", "Rates rose again.", "Traders sold."]},
    {"id": "c", "sentences": ["A dog ran in the park.", "It chased a ball.", "The ball was red."]},
    {"id": "d", "title": "Rain", "sentences": ["Rain fell all day.", "The river rose.", "Roads were closed."]},
    {"id": "e", "title": "Only one", "sentences": ["A lone sentence."]},
]


def test_held_out_queries_leave_their_document_without_them():
    drawn = pseudo_queries(DOCS, "held_out", seed=0)
    assert sorted(drawn.corpus) == ["a", "b", "c", "d"] and drawn.skipped == {"too_few_sentences": 1}
    for query_id, query in drawn.queries.items():
        own = drawn.positives[query_id]
        sentences = next(doc["sentences"] for doc in DOCS if doc["id"] == own)
        assert query in sentences and query not in drawn.corpus[own]
        assert drawn.corpus[own] == " ".join(s for s in sentences if s != query)


def test_title_and_sentence_queries():
    titles = pseudo_queries(DOCS, "title")
    assert set(titles.queries.values()) == {"Cats at rest", "Markets", "Rain"}
    assert titles.skipped == {"too_few_sentences": 1, "no_title": 1}
    assert titles.corpus["a"] == "Cats sleep on warm mats. They purr loudly. Mats are soft."
    sentences = pseudo_queries(DOCS, "sentence", seed=1)
    assert all(query in sentences.corpus[sentences.positives[q]] for q, query in sentences.queries.items())
    assert len(pseudo_queries(DOCS, "held_out", max_queries=2).queries) == 2
    assert titles.summary() == "3 title pseudo-queries over 3 documents; skipped documents: no_title=1, too_few_sentences=1"
    assert pseudo_queries(DOCS[:4], "sentence").summary() == "4 sentence pseudo-queries over 4 documents"
    with pytest.raises(ValueError, match="query_kind must be one of held_out, title, sentence"):
        pseudo_queries(DOCS, "question")
    with pytest.raises(ValueError, match=r"^documents: none gave a title pseudo-query \(no_title=1, too_few_sentences=1\)$"):
        pseudo_queries([DOCS[2], DOCS[4]], "title")  # before any model is asked to score
    with pytest.raises(ValueError, match=r"^documents: none gave a held_out pseudo-query \(no document\)$"):
        pseudo_queries([])


def test_the_teacher_scores_are_bm25_fused_with_the_model_as_documented(make_model):
    model = make_model()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    settings = LexicalSettings(weight=0.5)
    dataset, report = hybrid_teacher_dataset(model, DOCS, "held_out", "kl", candidates=3, settings=settings, seed=0)
    assert dataset.column_names == ["query", "positive", "negative_1", "negative_2", "label"]
    assert len(dataset) == report.queries == 4 and report.documents == 4
    # the teacher recomputed by hand: the model's own similarity over the corpus (the package's exact search; a tiny
    # random model's cosines differ in the fourth decimal, which min-max stretches, so the same search is used) and
    # BM25, min-max fused
    drawn = pseudo_queries(DOCS, "held_out", seed=0)
    ids = list(drawn.corpus)
    data = RetrievalData("d", {d: {"title": "", "text": t} for d, t in drawn.corpus.items()}, drawn.queries,
                         {q: {d: 1} for q, d in drawn.positives.items()}, "test", "pseudo")
    dense_run = search(model, data)
    for row in dataset:
        query_id = next(q for q, text in drawn.queries.items() if text == row["query"])
        assert set(dense_run[query_id]) == set(ids)
        run = {query_id: dense_run[query_id]}
        teacher = fuse_runs(run, bm25_search(drawn.corpus, {query_id: row["query"]}, settings=settings), settings)
        texts = [row["positive"], row["negative_1"], row["negative_2"]]
        by_text = {drawn.corpus[d]: teacher[query_id][d] for d in ids}
        assert row["label"] == pytest.approx([by_text[t] for t in texts], abs=1e-5)
        assert row["positive"] == drawn.corpus[drawn.positives[query_id]]
        # the negatives are the teacher's best other documents, best first
        others = sorted((d for d in ids if d != drawn.positives[query_id]), key=lambda d: -teacher[query_id][d])
        assert [row["negative_1"], row["negative_2"]] == [drawn.corpus[d] for d in others[:2]]
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())  # the model only read


def test_margin_mse_rows_hold_the_teachers_margin(make_model):
    dataset, report = hybrid_teacher_dataset(make_model(), DOCS, "title", "margin_mse")
    assert dataset.column_names == ["query", "positive", "negative", "label"] and report.candidates == 2
    kl, _ = hybrid_teacher_dataset(make_model(), DOCS, "title", "kl", candidates=2)
    for margin, listwise in zip(dataset, kl, strict=True):
        assert margin["label"] == pytest.approx(listwise["label"][0] - listwise["label"][1])


def test_distillation_trains_only_the_student_and_keeps_its_modules(make_model, run_trainer):
    model = make_model()
    documents = [{"id": str(i), "sentences": random_sentences(4, seed=i)} for i in range(24)]
    dataset, _ = hybrid_teacher_dataset(model, documents, "held_out", "kl", candidates=3)
    labels = list(dataset["label"])
    modules = [type(module).__name__ for module in model]
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    loss = distillation_loss(model, "kl")
    assert loss.student_temperature == 0.05 and loss.teacher_temperature == 0.1
    run_trainer(model, loss, dataset, steps=3, batch_size=8)
    assert [type(module).__name__ for module in model] == modules
    assert any(not torch.equal(before[name], p) for name, p in model.named_parameters())
    assert list(dataset["label"]) == labels  # the teacher's scores are fixed before training
    # the loss owns no module of its own: the student's weights are all it trains
    assert sorted(name.removeprefix("model.") for name, _ in loss.named_parameters()) == sorted(
        name for name, _ in model.named_parameters())
