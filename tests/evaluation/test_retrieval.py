"""Retrieval: hand-computed BEIR metrics, the one evaluator against pytrec_eval and sentence-transformers' own,
mteb's per-task settings, in-domain recall."""

from __future__ import annotations

import logging
import math

import pytest

from st_infocse.evaluation import (
    RetrievalData,
    beir_task_info,
    evaluate_beir,
    evaluate_in_domain_retrieval,
    evaluate_retrieval,
    per_query_metrics,
    search,
)
from st_infocse.evaluation.beir_tasks import _BEIR_TASKS
from st_infocse.evaluation.retrieval import RETRIEVAL_LOGGERS, quiet_logs

pytest.importorskip("beir")

ONE_OVER_LOG2_3 = 1 / math.log2(3)


def _toy(ev):
    """Documents at 0, 60, 120 degrees; query a at 10 degrees (relevant: d2), query b at 125 (d3: 1, d1: 2)."""
    angles = {"doc one": 0, "doc two": 60, "doc three": 120, "query a": 10, "query b": 125}
    stub = ev.StubEncoder({t: ev.unit(a) for t, a in angles.items()})
    data = RetrievalData(
        "toy",
        corpus={
            "d1": {"title": "", "text": "doc one"},
            "d2": {"title": "", "text": "doc two"},
            "d3": {"title": "doc", "text": "three"},
        },
        queries={"qa": "query a", "qb": "query b"},
        qrels={"qa": {"d2": 1}, "qb": {"d3": 1, "d1": 2}},
        source="hand-made",
    )
    return stub, data


def test_search_ranks_by_cosine_and_reads_title_plus_text(ev):
    stub, data = _toy(ev)
    results = search(stub, data, top_k=2)
    assert list(results["qa"]) == ["d1", "d2"] and list(results["qb"]) == ["d3", "d2"]
    assert results["qa"]["d1"] == pytest.approx(math.cos(math.radians(10)), abs=1e-6)
    assert any("doc three" in call for call in stub.calls)  # title + " " + text, as mteb reads documents


def test_metrics_by_hand(ev):
    stub, data = _toy(ev)
    result = evaluate_retrieval(stub, data, k_values=(1, 3, 10))
    # qa: relevant d2 at rank 2 -> nDCG 1/log2(3). qb (linear gains, as trec_eval): ranking d3(1), d2, d1(2):
    # DCG = 1 + 2/log2(4) = 2, ideal = 2 + 1/log2(3)
    ndcg_b = 2 / (2 + ONE_OVER_LOG2_3)
    assert result.metrics["ndcg@10"] == pytest.approx((ONE_OVER_LOG2_3 + ndcg_b) / 2, abs=1e-5)
    assert result.ndcg_at_10 == result.metrics["ndcg@10"]
    assert result.metrics["recall@1"] == pytest.approx((0 + 0.5) / 2)
    assert result.metrics["recall@3"] == pytest.approx(1.0)
    assert result.metrics["precision@1"] == pytest.approx(0.5)
    # MAP@3: qa 1/2; qb (1/1 + 2/3) / 2
    assert result.metrics["map@3"] == pytest.approx((0.5 + (1 + 2 / 3) / 2) / 2, abs=1e-5)
    assert (result.n_queries, result.n_documents) == (2, 3)


def test_identical_ids_follow_mteb(ev):
    stub = ev.StubEncoder({"q": ev.unit(0), "same": ev.unit(1), "answer": ev.unit(30)})
    data = RetrievalData(
        "toy",
        corpus={"x1": {"title": "", "text": "same"}, "d": {"title": "", "text": "answer"}},
        queries={"x1": "q"},
        qrels={"x1": {"d": 1}},
        source="hand-made",
    )
    ndcg = per_query_metrics(data.qrels, search(stub, data))["ndcg@10"]
    assert ndcg == {"x1": pytest.approx(ONE_OVER_LOG2_3, abs=1e-5)}
    assert evaluate_retrieval(stub, data, k_values=(10,)).ndcg_at_10 == pytest.approx(ONE_OVER_LOG2_3, abs=1e-5)
    assert evaluate_retrieval(stub, data, k_values=(10,), ignore_identical_ids=True).ndcg_at_10 == pytest.approx(1.0)
    data.name = "arguana"  # mteb ignores identical ids on ArguAna
    assert evaluate_retrieval(stub, data, k_values=(10,)).ndcg_at_10 == pytest.approx(1.0)


def test_task_table_matches_mteb():
    mteb = pytest.importorskip("mteb")
    for info in _BEIR_TASKS.values():
        if info.mteb_name is None:
            continue
        task = mteb.get_task(info.mteb_name)
        assert task.ignore_identical_ids == info.ignore_identical_ids, info
        assert task.metadata.eval_splits == [info.split], info
    assert beir_task_info("QuoraRetrieval").name == "quora"
    assert beir_task_info("my-own").mteb_name is None


def test_evaluate_beir_folders_and_cqadupstack_average(ev, tmp_path):
    stub, data = _toy(ev)
    corpus = {d: (doc["title"] + " " + doc["text"]).strip() for d, doc in data.corpus.items()}
    qrels = [(q, d, s) for q, rel in data.qrels.items() for d, s in rel.items()]
    ev.write_beir(tmp_path / "toy", corpus, data.queries, qrels)
    ev.write_beir(tmp_path / "cqadupstack" / "android", corpus, {"qa": "query a"}, [("qa", "d2", 1)])
    ev.write_beir(tmp_path / "cqadupstack" / "gis", corpus, {"qa": "query a"}, [("qa", "d1", 1)])
    result = evaluate_beir(stub, ["toy", "cqadupstack"], source=tmp_path, k_values=(1, 10), model_label="stub")
    assert result.datasets["toy"].ndcg_at_10 == pytest.approx(evaluate_retrieval(stub, data, (1, 10)).ndcg_at_10)
    cqa = result.datasets["cqadupstack"]
    assert set(cqa.parts) == {"android", "gis"}
    assert cqa.parts["gis"].ndcg_at_10 == pytest.approx(1.0)
    assert cqa.ndcg_at_10 == pytest.approx((ONE_OVER_LOG2_3 + 1.0) / 2, abs=1e-5)
    assert result.average == pytest.approx((result.datasets["toy"].ndcg_at_10 + cqa.ndcg_at_10) / 2)
    lines = str(result).splitlines()
    assert lines[0] == "stub" and lines[1].split() == ["Dataset", "nDCG@10"]
    # printed x100 like the papers' tables; the values themselves stay in [0, 1]
    assert lines[-2].split() == ["average", f"{100 * result.average:.2f}"]
    assert lines[-1] == "  scores x100 (the JSON keeps beir's 0-1 values)"
    assert lines[3].split() == ["cqadupstack", f"{100 * cqa.ndcg_at_10:.2f}"]
    assert result.to_markdown().splitlines()[0] == "| Dataset | ndcg@10 | recall@100 |"
    assert result.to_dict()["scale"] == "0-1" and result.to_dict()["average_ndcg@10"] == result.average
    assert "parts" in result.to_dict()["datasets"]["cqadupstack"]
    # a single BEIR folder works as the source too
    alone = evaluate_beir(stub, "toy", source=tmp_path / "toy", k_values=(10,))
    assert alone.datasets["toy"].ndcg_at_10 == pytest.approx(result.datasets["toy"].ndcg_at_10)
    with pytest.raises(FileNotFoundError, match="no BEIR dataset 'nfcorpus'"):
        evaluate_beir(stub, "nfcorpus", source=tmp_path)
    # every dataset is found before the first is scored: no model is needed to be told of the missing one
    with pytest.raises(FileNotFoundError, match="^beir nfcorpus: .*no BEIR dataset 'nfcorpus'"):
        evaluate_beir(None, ["toy", "nfcorpus"], source=tmp_path)


def _metric_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(RETRIEVAL_LOGGERS) and r.levelno < logging.WARNING]


def test_the_metric_log_is_held_back_by_default(ev, tmp_path, caplog):
    stub, data = _toy(ev)
    corpus = {d: (doc["title"] + " " + doc["text"]).strip() for d, doc in data.corpus.items()}
    ev.write_beir(tmp_path / "toy", corpus, data.queries, [("qa", "d2", 1), ("qb", "d3", 1)])
    caplog.set_level(logging.INFO)  # what the st-infocse command configures
    evaluate_beir(stub, "toy", source=tmp_path)
    assert _metric_records(caplog) == []
    assert all(logging.getLogger(name).level == logging.NOTSET for name in RETRIEVAL_LOGGERS)  # restored afterwards
    # the user's own level on the evaluator's logger wins: its metric lines come back
    caplog.set_level(logging.INFO, logger=RETRIEVAL_LOGGERS[-1])
    evaluate_beir(stub, "toy", source=tmp_path)
    assert any(r.getMessage().startswith("NDCG@10:") for r in _metric_records(caplog))


def test_quiet_logs_keeps_warnings(caplog):
    caplog.set_level(logging.INFO)
    with quiet_logs():
        logging.getLogger("beir.retrieval.evaluation").info("hidden")
        logging.getLogger("beir.retrieval.evaluation").warning("shown")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("beir")] == ["shown"]


def test_in_domain_retrieval_by_hand(ev, tmp_path):
    ev.write_stsb(tmp_path, "test", [("q0", "a0", 5.0), ("q1", "a1", 5.0), ("x", "y", 2.0), ("q0", "z", 1.0)])
    angles = {"q0": 0, "a0": 40, "q1": 100, "a1": 105, "x": 90, "y": 20, "z": 10}
    stub = ev.StubEncoder({t: ev.unit(a) for t, a in angles.items()})
    result = evaluate_in_domain_retrieval(stub, tmp_path, k_values=(1, 2, 3))
    # q0: its own slot and the other "q0" slot are not candidates; z (10 deg) and y (20) beat a0 (40): rank 3.
    # q1: a1 is 5 degrees away: rank 1.
    assert result.recall == {1: 50.0, 2: 50.0, 3: 100.0}
    assert (result.n_queries, result.n_corpus) == (2, 8)
    assert str(result).startswith("R@1 50.00")
    assert result.to_dict()["scale"] == "x100"
    with pytest.raises(ValueError, match="no pair has gold score 4.5"):
        evaluate_in_domain_retrieval(stub, tmp_path, gold_score=4.5)


def test_load_mteb_retrieval_from_a_task_object():
    mteb = pytest.importorskip("mteb")
    from datasets import Dataset

    from st_infocse.evaluation import load_mteb_retrieval

    task = mteb.get_task("SciFact")
    corpus = Dataset.from_list([{"id": "d1", "title": "T", "text": "x"}, {"id": "d2", "title": "", "text": "y"}])
    queries = Dataset.from_list([{"id": "q1", "text": "a"}, {"id": "q2", "text": "b"}, {"id": "q3", "text": "c"}])
    task.dataset = {
        "default": {
            "test": {
                "corpus": corpus,
                "queries": queries,
                "relevant_docs": {"q1": {"d2": 1}, "q2": {}},
                "top_ranked": None,
            }
        }
    }
    task.data_loaded = True
    data = load_mteb_retrieval(task)
    assert (data.name, data.source, data.split) == ("SciFact", "mteb:SciFact", "test")
    assert data.corpus == {"d1": {"title": "T", "text": "x"}, "d2": {"title": "", "text": "y"}}
    assert data.queries == {"q1": "a"} and data.qrels == {"q1": {"d2": 1}}  # queries without judgements dropped


def test_download_beir_uses_beirs_downloader(monkeypatch, tmp_path):
    util = pytest.importorskip("beir.util")
    from st_infocse.evaluation import download_beir

    calls = []

    def fake_download(url, out_dir):
        calls.append((url, out_dir))
        return str(tmp_path / "scifact")

    monkeypatch.setattr(util, "download_and_unzip", fake_download)
    assert download_beir("scifact", tmp_path) == tmp_path / "scifact"
    assert calls == [("https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip", str(tmp_path))]


def test_the_evaluator_agrees_with_pytrec_eval_and_sentence_transformers(ev):
    """On a random corpus (no ties, binary relevance): each query's nDCG@10 is pytrec_eval's on the full ranking, and
    the logged mean is sentence-transformers' InformationRetrievalEvaluator's and beir's."""
    import numpy as np
    import pytrec_eval
    from beir.retrieval.evaluation import EvaluateRetrieval
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from st_infocse.evaluation import RetrievalEvaluator

    rng = np.random.default_rng(0)
    corpus = {f"d{i}": f"document {i}" for i in range(40)}
    queries = {f"q{i}": f"query {i}" for i in range(12)}
    qrels = {q: {d: 1 for d in rng.choice(list(corpus), size=rng.integers(1, 4), replace=False)} for q in queries}
    vectors = rng.normal(size=(52, 8))
    stub = ev.StubEncoder(dict(zip([*corpus.values(), *queries.values()], vectors.tolist(), strict=True)))

    ours = RetrievalEvaluator(queries, corpus, qrels, name="x")
    logged = ours(stub)["x_cosine_ndcg@10"]
    theirs = InformationRetrievalEvaluator(queries, corpus, {q: set(rel) for q, rel in qrels.items()}, name="x")
    assert logged == pytest.approx(theirs(stub)["x_cosine_ndcg@10"], abs=1e-6)

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit[40:] @ unit[:40].T
    run = {q: {d: float(cosine[i, j]) for j, d in enumerate(corpus)} for i, q in enumerate(queries)}
    direct = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert ours.per_query == pytest.approx({q: s["ndcg_cut_10"] for q, s in direct.items()}, abs=1e-6)
    assert logged == pytest.approx(np.mean(list(ours.per_query.values())), abs=1e-12)
    assert logged == pytest.approx(EvaluateRetrieval.evaluate(qrels, run, [10], False)[0]["NDCG@10"], abs=1e-5)
    # the command line's path is the same evaluator
    data = RetrievalData("random", {d: {"title": "", "text": t} for d, t in corpus.items()}, queries, qrels, "test")
    result = evaluate_retrieval(stub, data, per_query=["ndcg@10"])
    assert result.per_query["ndcg@10"] == pytest.approx(ours.per_query, abs=1e-6)
    assert result.ndcg_at_10 == pytest.approx(logged, abs=1e-6)


def test_the_evaluators_units_cover_recall_at_100_so_its_change_gets_an_interval(ev):
    """Both metrics a training summary prints keep their per-query scores, from the same pytrec_eval evaluation, under
    the keys the evaluator returns; their means are the logged scores, and a change of each gets its interval."""
    import numpy as np

    from st_infocse.evaluation import RetrievalEvaluator, paired_changes

    rng = np.random.default_rng(1)
    corpus = {f"d{i}": f"document {i}" for i in range(150)}
    queries = {f"q{i}": f"query {i}" for i in range(20)}
    qrels = {q: {d: 1 for d in rng.choice(list(corpus), size=3, replace=False)} for q in queries}
    texts = [*corpus.values(), *queries.values()]
    evaluator = RetrievalEvaluator(queries, corpus, qrels, precision_recall_at_k=[10, 100], name="x")
    scored = []
    for seed in (0, 1):
        vectors = np.random.default_rng(seed).normal(size=(len(texts), 8))
        logged = evaluator(ev.StubEncoder(dict(zip(texts, vectors.tolist(), strict=True))))
        units = evaluator.units()
        assert set(units) == {"x_cosine_ndcg@10", "x_cosine_recall@100"}
        for key, unit in units.items():
            assert len(unit.scores) == 20
            assert logged[key] == pytest.approx(np.mean(list(unit.scores.values())), abs=1e-12)
        scored.append(units)
    changes = paired_changes(*scored)
    recall = changes["x_cosine_recall@100"]
    assert recall.n == 20 and recall.low <= recall.delta <= recall.high


def test_mrr_is_cut_in_trec_evals_order():
    from st_infocse.evaluation.retrieval import per_query_metrics

    # d2 and d1 tie for the top; trec_eval puts the larger id first, so the relevant d1 is second
    scores = per_query_metrics({"q": {"d1": 1}}, {"q": {"d1": 0.5, "d2": 0.5, "d0": 0.1}}, ["mrr@1", "mrr@2",
                                                                                           "accuracy@1"])
    assert scores == {"mrr@1": {"q": 0.0}, "mrr@2": {"q": 0.5}, "accuracy@1": {"q": 0.0}}
    with pytest.raises(ValueError, match="'dcg@10'"):
        per_query_metrics({"q": {"d1": 1}}, {"q": {"d1": 1.0}}, ["dcg@10"])
