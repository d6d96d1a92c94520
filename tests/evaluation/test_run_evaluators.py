"""A training run's evaluators and BM25's reference lines beside them (st_infocse.evaluation.run_evaluators)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

from st_infocse.evaluation import (
    STSB_DEV_METRIC,
    AtLengthEvaluator,
    LexicalReferenceCallback,
    LexicalSettings,
    RetrievalEvaluator,
    STSPairs,
    run_evaluation,
)
from st_infocse.files import InputError

PAIRS = STSPairs("STS-B", ["a cat", "a dog", "the sun"], ["a kitten", "a car", "the moon"], [4.5, 1.0, 2.5],
                 source="test", split="dev")


@pytest.fixture
def folder(tmp_path, ev):
    return ev.write_beir(tmp_path / "mine", {"d1": "cats sleep", "d2": "stock markets", "d3": "a dog runs"},
                         {"q1": "sleeping cats", "q2": "markets"}, [("q1", "d1", 1), ("q2", "d2", 1)])


def test_nothing_to_measure_is_no_evaluator():
    run = run_evaluation()
    assert run.evaluator is None and run.labels == {} and run.retrieval is None


def test_stsb_dev_alone_is_the_evaluator_and_labelled():
    run = run_evaluation(PAIRS)
    assert run.evaluator.primary_metric == "sts-dev_spearman_cosine" and run.retrieval is None
    assert run.labels == {STSB_DEV_METRIC: "STS-B dev"}


def test_both_make_a_sequential_evaluator_with_retrieval_last(folder):
    run = run_evaluation(PAIRS, folder, seed=3)
    assert isinstance(run.evaluator, SequentialEvaluator)
    assert run.evaluator.evaluators[-1] is run.retrieval and isinstance(run.retrieval, RetrievalEvaluator)
    assert run.notes["retrieval set"].startswith("mine-test: 2 queries, 3 documents")
    assert run.retrieval_chooses


@pytest.mark.parametrize("chooses", [True, False])
def test_for_model_names_the_keys_and_lets_retrieval_choose_unless_told_not_to(folder, chooses):
    run = run_evaluation(None, folder, retrieval_chooses=chooses)
    args = SimpleNamespace(metric_for_best_model="eval_other" if not chooses else None, greater_is_better=False)
    run.for_model(SimpleNamespace(similarity_fn_name="dot"), args)
    assert run.labels == {"eval_retrieval_dot_ndcg@10": "retrieval nDCG@10",
                          "eval_retrieval_dot_recall@100": "retrieval Recall@100"}
    expected = "eval_retrieval_dot_ndcg@10" if chooses else "eval_other"
    assert args.metric_for_best_model == expected and run.notes["checkpoint metric"] == expected
    assert args.greater_is_better is chooses


def test_each_source_that_fails_is_one_input_error_naming_its_argument(tmp_path, folder):
    with pytest.raises(InputError, match=r"^eval_retrieval: .*missing"):
        run_evaluation(None, tmp_path / "missing")
    with pytest.raises(InputError, match=r"^stsb_dev: cannot load STS-B dev from .*nothing-here"):
        run_evaluation(tmp_path / "nothing-here", folder)


def test_the_hubs_sts_b_dev_unreachable_names_the_sources_that_need_no_network(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(InputError, match=r"^stsb_dev: cannot load STS-B dev from hub: could not load sentence-transformers"
                       r"/stsb from the Hugging Face hub \(ConnectionError\); offline, pass the 1,500 pairs shipped with "
                       r"the package \(st_infocse.data.demo_stsb_dev\(\)\)"):
        run_evaluation("hub")


@pytest.mark.parametrize("installed", [True, False])
def test_bm25_beside_retrieval_is_a_callback_or_a_note_naming_what_to_install(folder, monkeypatch, installed):
    import importlib.util

    find_spec = importlib.util.find_spec
    if not installed:
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bm25s" else find_spec(name, *a))
    run = run_evaluation(None, folder, lexical=LexicalSettings(weight=0.3))
    assert isinstance(run.references, LexicalReferenceCallback) is installed
    assert run.notes["BM25 beside the scores"] == (LexicalSettings(weight=0.3).describe() if installed else
                                                   "not scored: needs bm25s and PyStemmer: pip install 'st-infocse[eval]'")
    assert run_evaluation(PAIRS, lexical=LexicalSettings()).references is None  # beside retrieval only


def test_bm25_without_stemming_needs_no_stemmer(folder, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "Stemmer" else find_spec(name, *a))
    assert isinstance(run_evaluation(None, folder, lexical=LexicalSettings(stem=False)).references,
                      LexicalReferenceCallback)
    assert run_evaluation(None, folder, lexical=LexicalSettings()).references is None  # stemming: the stemmer needed


def test_reference_rows_set_the_start_and_the_last_evaluation_beside_bm25_and_the_hybrid():
    queries = [f"q{i}" for i in range(8)]
    retrieval = SimpleNamespace(per_query=dict.fromkeys(queries, 0.2),
                                lexical_references=lambda settings: {"BM25": dict.fromkeys(queries, 0.5),
                                                                     "hybrid": dict.fromkeys(queries, 0.2)})
    callback = LexicalReferenceCallback(retrieval, LexicalSettings(weight=0.3))
    callback.on_train_begin(None, None, None)
    retrieval.per_query = dict.fromkeys(queries, 0.6)
    callback.on_evaluate(None, None, None)
    rows, record = callback.rows()
    assert list(rows) == ["BM25 on your queries", "hybrid (BM25 + the model as given)"]
    assert rows["BM25 on your queries"].startswith("50.00; the model as given against it -30.00")
    assert "at the last step +10.00" in rows["BM25 on your queries"]
    assert record["settings"].endswith("BM25 weight 0.3")
    assert record["hybrid"]["ndcg@10"] == pytest.approx(0.2)
    assert record["hybrid"]["start_against_it"]["delta"] == pytest.approx(0.0)
    assert record["BM25"]["end_against_it"]["delta"] == pytest.approx(10.0)


@pytest.mark.parametrize(("own_length", "wrapped"), [(None, False), (8, False), (30, True)])
def test_for_model_scores_at_the_models_own_length_when_it_trains_at_another(own_length, wrapped):
    run = run_evaluation(PAIRS)
    inner = run.evaluator
    run.for_model(SimpleNamespace(similarity_fn_name="cosine", max_seq_length=8),
                  SimpleNamespace(metric_for_best_model=None), own_length)
    assert isinstance(run.evaluator, AtLengthEvaluator) is wrapped
    assert (run.evaluator.inner is inner and run.evaluator.max_seq_length == 30) if wrapped else run.evaluator is inner
    assert run.notes.get("evaluated at") == ("the model's own 30 tokens (training at 8)" if wrapped else None)


def test_at_length_evaluator_scores_at_its_length_and_puts_the_training_length_back(make_model):
    seen = []

    class Recorder:
        primary_metric, greater_is_better = None, True

        def __call__(self, model, output_path=None, epoch=-1, steps=-1):
            seen.append(model.max_seq_length)
            self.primary_metric = "recorded"  # named only when called, as SequentialEvaluator does
            return {"recorded": 1.0}

    model = make_model()
    model.max_seq_length = 8
    wrapped = AtLengthEvaluator(Recorder(), 30)
    assert wrapped(model) == {"recorded": 1.0}
    assert seen == [30] and model.max_seq_length == 8
    assert wrapped.primary_metric == "recorded"
    with pytest.raises(ValueError, match="max_seq_length must be at least 1"):
        AtLengthEvaluator(Recorder(), 0)
