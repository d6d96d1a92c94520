"""BM25 and its hybrid with a dense run: the reference lines beside in-domain scores."""

import math

import pytest

from st_infocse.evaluation import LexicalSettings, bm25_search, evaluate_retrieval, fuse_runs
from st_infocse.evaluation.loaders import RetrievalData

CORPUS = {
    "d1": "Cats sleep on warm mats in the afternoon",
    "d2": "The stock market fell sharply on Monday",
    "d3": "A dog running after a cat in the garden",
    "d4": "Interest rates and the markets this week",
}


def test_bm25_ranks_by_shared_stemmed_words_and_drops_stop_words():
    run = bm25_search(CORPUS, {"q1": "the sleeping cats", "q2": "markets falling"}, top_k=4)
    assert next(iter(run["q1"])) == "d1"  # "cats"/"sleeping" stem to cat/sleep
    assert set(run["q2"]) == {"d2", "d4"}  # market(s) in both; fell/falling stem apart, so d2 only via market
    assert all(score > 0 for hits in run.values() for score in hits.values())
    # without the stemmer "cats" no longer matches "cat" in d3, and "sleeping" nothing
    raw = bm25_search(CORPUS, {"q1": "sleeping cats"}, top_k=4, settings=LexicalSettings(stem=False))
    assert set(raw["q1"]) == {"d1"}
    # stop words kept: "the" matches every document that has it
    with_the = bm25_search(CORPUS, {"q": "the"}, settings=LexicalSettings(stopwords=False))
    assert set(with_the["q"]) == {"d1", "d2", "d3", "d4"}
    assert bm25_search(CORPUS, {"q": "the"})["q"] == {}  # a query of stop words only finds nothing


def test_settings_refuse_a_language_bm25_cannot_tokenise_in_when_built():
    """From Python as from the command line: one line, before any corpus is read, the closest language named."""
    with pytest.raises(ValueError, match=r"^language klingon is not a language of the stemmer; it knows .*english"):
        LexicalSettings(language="klingon")
    with pytest.raises(ValueError, match=r"did you mean german\?"):
        LexicalSettings(language="germna")
    with pytest.raises(ValueError, match="^language armenian: bm25s has no stop-word list"):
        LexicalSettings(language="armenian")  # a Snowball stemmer, but no stop-word list
    assert LexicalSettings(language="armenian", stopwords=False).language == "armenian"
    assert LexicalSettings(language="klingon", stem=False, stopwords=False).describe().endswith("min-max sum, "
                                                                                                "BM25 weight 0.5")


def test_minmax_fusion_normalises_each_run_then_weights_bm25():
    dense = {"q": {"a": 0.9, "b": 0.7, "c": 0.5}}
    lexical = {"q": {"c": 12.0, "d": 2.0}}
    fused = fuse_runs(dense, lexical, LexicalSettings(weight=0.25))["q"]
    # dense: a 1, b 0.5, c 0; BM25: c 1, d 0
    assert fused == pytest.approx({"a": 0.75, "b": 0.375, "c": 0.25, "d": 0.0})


def test_reciprocal_rank_fusion_sums_one_over_sixty_plus_rank():
    fused = fuse_runs({"q": {"a": 0.9, "b": 0.7}}, {"q": {"b": 3.0, "c": 1.0}}, LexicalSettings(fusion="rrf"))["q"]
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)


def test_settings_are_checked_and_described():
    with pytest.raises(ValueError, match="fusion must be one of minmax, rrf"):
        LexicalSettings(fusion="sum")
    with pytest.raises(ValueError, match=r"weight must lie in \[0, 1\]"):
        LexicalSettings(weight=2)
    assert LexicalSettings().describe() == (
        "BM25 (bm25s; english stemmer, english stop words); hybrid: min-max sum, BM25 weight 0.5")


def test_evaluate_retrieval_sets_bm25_and_the_hybrid_beside_the_model(make_model):
    queries = {"q1": "cats sleeping on mats", "q2": "stock market", "q3": "dog in the garden"}
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    data = RetrievalData(name="tiny", corpus={k: {"title": "", "text": v} for k, v in CORPUS.items()},
                         queries=queries, qrels=qrels, source="test", split="test")
    result = evaluate_retrieval(make_model(), data, k_values=(1, 3, 10), lexical=LexicalSettings())
    bm25, hybrid = result.references["BM25"], result.references["hybrid"]
    assert bm25.metrics["ndcg@1"] == 1.0  # every query shares its document's words
    assert set(bm25.per_query["ndcg@10"]) == set(queries) and set(hybrid.per_query["ndcg@10"]) == set(queries)
    assert math.isclose(sum(bm25.per_query["ndcg@10"].values()) / 3, bm25.metrics["ndcg@10"])
    changes = result.reference_changes()
    own = result.per_query["ndcg@10"]
    expected = 100 * (sum(own.values()) - sum(bm25.per_query["ndcg@10"].values())) / 3
    assert changes["BM25"].delta == pytest.approx(expected) and changes["BM25"].n == 3
    lines = result.reference_lines()
    assert lines[0].startswith("BM25 100.00; this model against it: ") and lines[1].startswith("hybrid ")
    assert result.to_dict()["references"]["BM25"]["model_against_it"]["n"] == 3


def test_training_time_and_the_command_line_fuse_the_same_hybrid(ev, tmp_path):
    """One builder at one depth: the training-time evaluator (hits 100 deep) and ``evaluate`` (every document here)
    give each query the same BM25 and hybrid scores on a corpus three times deeper than the fusion; fusing
    ``evaluate``'s whole run instead changes the hybrid of several queries."""
    import random

    import numpy as np

    from st_infocse.evaluation import FUSION_DEPTH, load_beir_folder, reference_runs, retrieval_evaluator, search

    rng, gen = random.Random(0), np.random.default_rng(0)
    corpus = {f"d{i}": " ".join(rng.choices(ev.WORDS, k=8)) + f" {i}" for i in range(3 * FUSION_DEPTH)}
    table = {text: gen.normal(size=16).tolist() for text in corpus.values()}
    queries, qrels = {}, []
    for i in range(20):  # two words of its document, and its document's vector plus noise
        doc = f"d{rng.randrange(len(corpus))}"
        queries[f"q{i}"] = " ".join(rng.sample(corpus[doc].split()[:8], 2)) + f" query{i}"
        table[queries[f"q{i}"]] = (np.asarray(table[corpus[doc]]) + gen.normal(scale=1.5, size=16)).tolist()
        qrels.append((f"q{i}", doc, 1))
    folder = ev.write_beir(tmp_path / "deep", corpus, queries, qrels)
    stub = ev.StubEncoder(table)

    training, _ = retrieval_evaluator(folder, "test", max_corpus=None)
    training(stub)
    assert {len(hits) for hits in training.hits.values()} == {FUSION_DEPTH}
    references = training.lexical_references(LexicalSettings())
    result = evaluate_retrieval(stub, load_beir_folder(folder), lexical=LexicalSettings())
    for name in ("BM25", "hybrid"):
        assert references[name] == pytest.approx(result.references[name].per_query["ndcg@10"], abs=1e-12)
    assert training.per_query == pytest.approx(result.per_query["ndcg@10"], abs=1e-6)
    # what the depth decides: the whole run fused gives another hybrid
    whole = reference_runs(search(stub, load_beir_folder(folder)), corpus, queries, depth=len(corpus))["hybrid"]
    deeper = training.metrics_of(whole)[training.primary_key]
    assert sum(abs(deeper[q] - references["hybrid"][q]) > 1e-9 for q in queries) >= 3
