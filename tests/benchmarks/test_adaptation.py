"""The adaptation benchmark on tiny random models and data made here: the test sets, the job plan, one worker's
rows end to end, and the report."""

from __future__ import annotations

import argparse
import importlib
import json
import random
from pathlib import Path

import pytest
import torch

from st_infocse.evaluation import RetrievalData

from ..conftest import random_sentences

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    adaptation = importlib.import_module("benchmarks.adaptation")
    return adaptation, importlib.import_module("benchmarks.adaptation_domains"), importlib.import_module("benchmarks.adaptation_report")


class TableModel:
    """A stand-in encoder: each text's vector is given."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def encode(self, texts, **kwargs):
        return torch.tensor([self.vectors[t] for t in texts], dtype=torch.float32)


def test_an_article_is_the_mean_of_its_sentences_and_duplicates_are_all_relevant(bench):
    _, domains, _ = bench
    ids = ["a", "b", "c", "d"]
    bodies = ["one two", "three", "one two", "four"]  # a and c share a body
    titles = ["H1", "H2", "H3", "H2"]  # b and d share a headline
    qrels, info = domains.judge_duplicates(ids, bodies, titles)
    assert qrels == {"a": {"a": 1, "c": 1}, "b": {"b": 1, "d": 1}, "c": {"a": 1, "c": 1}, "d": {"b": 1, "d": 1}}
    assert info["identical_body_articles"] == 2 and info["identical_headline_groups"] == 1
    assert info["articles_with_several_relevant"] == 4
    # Article "x": its first sentence alone points at headline Hy, the mean of both at its own headline Hx.
    vectors = {"s1": [1, 0, 0], "s2": [0, 1, 0], "Hx": [1, 1, 0], "Hy": [1, 0, 0.1], "t": [0, 0, 1], "Ht": [0, 0.1, 1]}
    task = domains.HeadlineTask(["x", "y", "t"], [["s1", "s2"], ["s1"], ["t"]], ["Hx", "Hy", "Ht"],
                                {"x": {"x": 1}, "y": {"y": 1}, "t": {"t": 1}})
    scores = task.evaluate(TableModel(vectors))
    assert scores["a2h_recall@1"] == pytest.approx(1.0)  # x -> Hx (cos 1), y -> Hy, t -> Ht
    assert scores["h2a_recall@1"] == pytest.approx(1.0)
    assert set(scores) >= {"a2h_recall@5", "a2h_recall@10", "a2h_recall@20", "a2h_ndcg@10", "h2a_ndcg@10"}


def test_curve_corpus_keeps_every_judged_document_and_a_seeded_sample(bench):
    _, domains, _ = bench
    corpus = {f"d{i}": {"title": "", "text": f"text {i}"} for i in range(50)}
    data = RetrievalData("x", corpus, {"q1": "a", "q2": "b"}, {"q1": {"d3": 1}, "q2": {"d40": 1, "d41": 1}}, "s")
    small = domains.sub_corpus(data, 10)
    assert {"d3", "d40", "d41"} <= set(small.corpus) and len(small.corpus) == 10
    assert domains.sub_corpus(data, 10).corpus.keys() == small.corpus.keys()  # seeded
    one = domains.sub_corpus(data, 5, queries=1)
    assert list(one.queries) == ["q1"] and "d40" not in one.qrels.get("q1", {})


def test_training_text_and_pairs(bench):
    adaptation, domains, _ = bench
    docs = domains.training_documents([("a", "Too short. This sentence has five words. And this one has six words."),
                                       ("b", "Nope.")], None)
    assert docs == [{"id": "a", "sentences": ["This sentence has five words.", "And this one has six words."]}]
    pairs = adaptation.ict_pairs([{"id": "a", "sentences": ["s1", "s2", "s3"]}, {"id": "b", "sentences": ["alone"]}])
    assert pairs["anchor"] == ["s1", "s2", "s3"] and pairs["positive"] == ["s2 s3", "s1 s3", "s1 s2"]
    chosen, record = adaptation.mining_subset([{"id": str(i), "sentences": []} for i in range(10)], 4)
    assert [d["id"] for d in chosen] == sorted((d["id"] for d in chosen), key=int) and record["of"] == 10
    assert adaptation.mining_subset([{"id": str(i), "sentences": []} for i in range(10)], 4)[1] == record
    damaged = adaptation.delete_words(" ".join(f"w{i}" for i in range(200)), random.Random(0)).split()
    assert 50 < len(damaged) < 110 and damaged == sorted(damaged, key=lambda w: int(w[1:]))


def _config(adaptation, tmp_path, **overrides):
    ns = adaptation.parser().parse_args(["run", "--work-dir", str(tmp_path / "work"), "--jobs-dir",
                                         str(tmp_path / "jobs")])
    ns.model = "unused"
    for key, value in overrides.items():
        setattr(ns, key, value)
    return adaptation.config_from(ns)


def test_jobs_put_prerequisites_first_and_round_two_last(bench, tmp_path):
    adaptation, _, _ = bench
    cfg = _config(adaptation, tmp_path, rows=["idc-mpnet-mnrl-r2", "simcse", "idc-mpnet-mnrl-r1", "shipped"],
                  domains=["scifact"], seeds=[0, 1])
    assert cfg.jobs() == ["scifact__mine-mpnet", "scifact__shipped", "scifact__references", "scifact__simcse__s0",
                          "scifact__simcse__s1",
                          "scifact__idc-mpnet-mnrl-r1__s0", "scifact__idc-mpnet-mnrl-r1__s1",
                          "scifact__idc-mpnet-mnrl-r2__s0", "scifact__idc-mpnet-mnrl-r2__s1"]
    cfg = _config(adaptation, tmp_path, rows=["infocse-df-1"], domains=["reuters"])
    assert cfg.jobs() == ["reuters__probe", "reuters__infocse-df-1__s0"]
    assert cfg.budget()["steps"] == 100 and cfg.test_key() == {"smoke": False}


class Dev:
    primary_metric = "sts-dev_spearman_cosine"

    def __call__(self, model, *args, **kwargs):
        return {self.primary_metric: 0.5}


def _domain(domains, name):
    rng = random.Random(1)
    documents = [{"id": f"doc{i}", "sentences": random_sentences(4, seed=i, min_words=5)} for i in range(12)]
    sentences = [s for d in documents for s in d["sentences"]]
    if name == "scifact":
        corpus = {d["id"]: {"title": "", "text": " ".join(d["sentences"])} for d in documents}
        queries = {f"q{i}": documents[i]["sentences"][0] for i in range(6)}
        test = domains.RetrievalTask(RetrievalData(name, corpus, queries, {f"q{i}": {f"doc{i}": 1} for i in range(6)},
                                                   "here"))
    else:
        test = domains.HeadlineTask([d["id"] for d in documents], [d["sentences"] for d in documents],
                                    [rng.choice(sentences) for _ in documents], {d["id"]: {d["id"]: 1}
                                                                                for d in documents})
    pseudo = domains._pseudo("p", [(d["id"], d["sentences"][0], " ".join(d["sentences"][1:])) for d in documents], 6,
                             "here")
    info = {"training_documents": 12, "training_sentences": 48, "test": test.describe(), "curve": test.describe(),
            "pseudo_dev": pseudo.describe()}
    return domains.Domain(name, documents, test, test, pseudo, info)


def test_worker_runs_rows_end_to_end_and_the_report_reads_them(bench, tmp_path, tiny_bert_dir, monkeypatch):
    adaptation, domains, report = bench
    rows = ["shipped", "simcse", "ict", "tsdae", "infocse-df-1", "idc-minilm-mnrl-r1", "idc-minilm-mnrl-r2",
            "simcse-lr5e-6", "simcse-merge0.5"]
    cfg = _config(adaptation, tmp_path, rows=rows, steps=3, batch_size=4, eval_steps=2, max_length=32, mine_docs=8,
                  probe_steps=2, smoke=True, model=str(tiny_bert_dir))
    worker = adaptation.Worker(cfg)
    worker._domains = {name: _domain(domains, name) for name in ("scifact", "reuters")}
    monkeypatch.setattr(importlib.import_module("benchmarks.harness"), "stsb_dev", lambda senteval: Dev())
    assert worker.run() == []
    done = worker.queue.done()
    simcse = done["scifact__simcse__s0"]
    assert [p["step"] for p in simcse["curve"]] == [2, 3]  # every eval_steps, and the last step
    assert simcse["budget"] == cfg.budget() and simcse["train_seconds"] > 0 and "sts_avg" not in simcse
    variant = done["scifact__simcse-lr5e-6__s0"]  # a row's own learning rate, the budget otherwise the same
    assert variant["learning_rate"] == 5e-6 and simcse["learning_rate"] == cfg.learning_rate
    assert max(e["learning_rate"] for e in variant["log_history"]) <= 5e-6 < cfg.learning_rate
    merged = done["scifact__simcse-merge0.5__s0"]  # scored from simcse's saved model, not trained again
    assert merged["merge_of"] == "scifact__simcse__s0" and merged["train_seconds"] >= simcse["train_seconds"]
    assert (cfg.work_dir / "models" / "scifact__simcse__s0").is_dir()
    second = done["reuters__idc-minilm-mnrl-r2__s0"]
    assert [p["step"] for p in second["curve"]] == [5, 6] and second["steps_total"] == 6  # continues round 1
    assert second["documents"]["selected"] == 8 and second["pairs"] > 0
    saved = adaptation.load_model(str(cfg.work_dir / "models" / "reuters__idc-minilm-mnrl-r1__s0"))
    assert saved.own_length == 64  # saved at the model's own length, not the training length (32)
    assert done["reuters__mine-minilm"]["documents"] == second["documents"]  # one subset for every round

    # The STS suite of finished rows, scored after the screen; the merge is made again from the saved model.
    seen = []

    def suite(model, *args, **kwargs):
        seen.append(model)
        return argparse.Namespace(scores={"STSBenchmark": 70.0}, average=70.0 + len(seen))

    monkeypatch.setattr("st_infocse.evaluation.evaluate_sts_suite", suite)
    sts_cfg = _config(adaptation, tmp_path, rows=["simcse", "simcse-merge0.5"], domains=["scifact"], steps=3,
                      batch_size=4, eval_steps=2, max_length=32, mine_docs=8, probe_steps=2, smoke=True,
                      model=str(tiny_bert_dir), sts_only=True)
    assert sts_cfg.jobs() == ["scifact__simcse__s0__sts", "scifact__simcse-merge0.5__s0__sts"]
    sts_worker = adaptation.Worker(sts_cfg)
    sts_worker._domains = worker._domains
    assert sts_worker.run() == [] and len(seen) == 2
    trained = adaptation.load_model(str(cfg.work_dir / "models" / "scifact__simcse__s0")).model.state_dict()
    start = adaptation.load_model(str(tiny_bert_dir)).model.state_dict()
    key = next(k for k in start if k.endswith("query.weight"))
    assert torch.allclose(seen[1].state_dict()[key], (start[key] + trained[key]) / 2, atol=1e-6)

    monkeypatch.setattr(report, "RESULTS", tmp_path / "results")
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- adaptation:start -->\nold\n<!-- adaptation:end -->\nb\n")
    monkeypatch.setattr(report, "README", readme)
    other = cfg.jobs_dir / "scifact__informin__s0.json"  # another budget: never mixed in
    other.write_text(json.dumps(simcse | {"row": "informin", "budget": {"steps": 1}}))
    defaults = adaptation.parser().parse_args(["run"])
    markdown = report.report(cfg, defaults, argparse.Namespace(part="report", work_dir=cfg.work_dir))
    shipped = done["scifact__shipped"]["test"]["ndcg@10"]
    line = next(line for line in markdown.splitlines() if line.startswith("| SimCSELoss"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[1] == "0" and float(cells[3]) == pytest.approx(simcse["test"]["ndcg@10"] - shipped, abs=0.011)
    assert "| InforMinReconstructionLoss (defaults) |" not in markdown  # not asked for in --rows
    assert "Jobs under another budget, not reported: 1." in markdown
    assert "Smoke run" in markdown and "--steps 3" in markdown
    assert (tmp_path / "results" / "adaptation_curves.png").stat().st_size > 0
    assert (tmp_path / "results" / "adaptation_delta.png").stat().st_size > 0
    assert (tmp_path / "results" / "adaptation_confirmation.png").stat().st_size > 0  # the per-query intervals
    assert "old" not in readme.read_text() and readme.read_text().endswith("<!-- adaptation:end -->\nb\n")
    payload = json.loads((tmp_path / "results" / "adaptation.json").read_text())
    assert set(payload["domains"]["reuters"]["rows"]) == set(rows) - {"shipped"}
    assert done["scifact__infocse-df-1__s0"]["probe_seconds"] == done["scifact__probe"]["train_seconds"]
    rows_out = payload["domains"]["scifact"]["rows"]
    assert rows_out["simcse"][0]["sts_avg"] == 71.0 and rows_out["simcse-merge0.5"][0]["sts_avg"] == 72.0
    assert "sts_avg" not in rows_out["ict"][0]


def test_report_tests_several_seeds_against_the_shipped_value_and_marks_rows_not_run(bench, tmp_path):
    adaptation, _, report = bench
    cfg = _config(adaptation, tmp_path, domains=["scifact"], rows=["shipped", "simcse", "tsdae", "informin"])
    base = {"budget": cfg.budget(), "domain": "scifact", "stsb_dev": 86.0, "pseudo_dev": {"ndcg@10": 90.0},
            "train_seconds": 60.0, "steps_total": 100, "machine": {"cores": 2, "processor": "x", "load_1min": 2.0}}
    shipped = base | {"row": "shipped", "seed": None, "test_key": cfg.test_key(), "test": {"ndcg@10": 64.0,
                                                                                           "recall@100": 90.0}}
    rows = [base | {"row": "simcse", "seed": s, "test": {"ndcg@10": v, "recall@100": 90.0}}
            for s, v in ((0, 62.0), (1, 63.0), (2, 61.0))]
    collected = report.collect({"scifact__shipped": shipped} | {f"scifact__simcse__s{r['seed']}": r for r in rows}, cfg)
    markdown = report.render(collected, cfg, "cmd")
    line = next(line for line in markdown.splitlines() if line.startswith("| SimCSELoss"))
    # mean 62, sd 1, n 3 against 64: t = -2 / (1 / sqrt 3) = -3.46, two-sided p = 0.074
    assert "| 0,1,2 | 62.00 ± 1.00 | -2.00 (p = 0.074) |" in line
    assert "| DenoisingAutoEncoderLoss (TSDAE, tied decoder) | not run yet |" in markdown
    cfg = _config(adaptation, tmp_path, domains=["scifact"], rows=["shipped", "simcse", "simcse-lr1e-5"])
    assert "lr 1e-5" not in report.render(collected, cfg, "cmd")  # a lever's variant not run is not listed
    assert report.follow_up("scifact", collected["domains"]["scifact"]) is None  # one trained row: nothing to rank


def test_the_recipe_benchmark_writes_the_users_documents_and_a_valid_own_query_folder(tmp_path):
    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    import gzip

    rows = [{"id": str(i), "lewissplit": "TRAIN" if i < 30 else "TEST", "title": f"Headline {i}",
             "text": f"Body {i} says one thing. It says another."} for i in range(40)]
    source = tmp_path / "reuters.jsonl.gz"
    with gzip.open(source, "wt") as out:
        out.writelines(json.dumps(r) + "\n" for r in rows)
    info = recipe.user_files(source, tmp_path / "user", documents=20, queries=5, corpus=12)
    assert info == {"documents": 20, "own_queries": 5, "own_corpus": 12}
    docs = [json.loads(line) for line in (tmp_path / "user" / "docs.jsonl").read_text().splitlines()]
    assert [d["id"] for d in docs] == [str(i) for i in range(20)]  # the first TRAIN articles, never TEST
    from st_infocse.evaluation import check_retrieval_folder

    check_retrieval_folder(tmp_path / "user" / "own-queries")  # the layout --eval_retrieval reads
    qrels = (tmp_path / "user" / "own-queries" / "qrels" / "dev.tsv").read_text().splitlines()[1:]
    assert [line.split("\t")[1] for line in qrels] == ["20", "21", "22", "23", "24"]  # held out from training


def test_the_recipe_benchmark_reads_both_kinds_of_run_summary_and_renders_one_column_per_recipe():
    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    change = {"delta": 2.0, "low": 0.5, "high": 3.5, "p": 0.01, "verdict": "a gain"}
    idc = {"rounds": {"initial_metrics": {"eval_own_ndcg@10": 0.70}, "final_metrics": {"eval_own_ndcg@10": 0.70},
                      "rounds": [{"score": 0.68}], "best_round": 0, "keep_trained_if": "reliable"}}
    informin = {"start_end": {"start": {"eval_own_ndcg@10": 0.70}, "end": {"eval_own_ndcg@10": 0.72}, "kept": "end",
                              "keep_trained_if": "reliable", "changes": {"eval_own_ndcg@10": change}}}
    assert recipe.own_queries(idc) == {"start": 70.0, "trained": 68.0, "saved": 70.0, "kept_start": True,
                                       "change": None, "rule": "reliable"}
    read = recipe.own_queries(informin)
    assert read.pop("change") == change and read.pop("rule") == "reliable"
    assert read == pytest.approx({"start": 70.0, "trained": 72.0, "saved": 72.0, "kept_start": False})
    test = {"shipped": {"a2h_ndcg@10": 58.09, "h2a_ndcg@10": 63.69},
            "saved": {"a2h_ndcg@10": 60.0, "h2a_ndcg@10": 64.0}}

    def result(summary: dict) -> dict:
        return {"machine": {"cores": 2, "load_1min": 0.1, "commit": "abcdef123"}, "folder": "/w",
                "data": {"documents": 5000, "own_queries": 300, "own_corpus": 1000}, "test": test,
                "run": {"command": "st-infocse train --docs /w/docs.jsonl", "wall_seconds": 300.0,
                        "peak_memory_gb": 3.0, "threads": 2, "run_summary": summary}}

    table = recipe.render({"adapt-informin": result(informin), "adapt-idc-mpnet": result(idc)})
    assert "| | `adapt-idc-mpnet` | `adapt-informin` |" in table  # the script's order, not the file's
    assert ("| saved | the model as given (--keep_trained_if reliable) | the trained model (--keep_trained_if reliable) |"
            in table)
    assert "| its change over the own queries | - | +2.00 (95% CI +0.50 to +3.50, p = 0.010): a gain |" in table
    assert "| own queries nDCG@10: the model as given -> trained | 70.00 -> 68.00 | 70.00 -> 72.00 |" in table
    assert "`st-infocse train --docs docs.jsonl`" in table
    assert "| torch threads, 1-minute load at the start, code | 2, 0.1, abcdef1 | 2, 0.1, abcdef1 |" in table


def test_a_screen_scores_the_curve_corpus_and_the_whole_test_comes_later(bench, tmp_path, tiny_bert_dir, monkeypatch):
    adaptation, domains, report = bench
    common = dict(domains=["scifact"], steps=2, batch_size=4, eval_steps=2, max_length=32, smoke=True,
                  model=str(tiny_bert_dir))
    cfg = _config(adaptation, tmp_path, rows=["shipped", "simcse", "tsdae"], test_set=False, **common)
    worker = adaptation.Worker(cfg)
    worker._domains = {"scifact": _domain(domains, "scifact")}
    monkeypatch.setattr(importlib.import_module("benchmarks.harness"), "stsb_dev", lambda senteval: Dev())
    assert worker.run() == []
    done = worker.queue.done()
    screened = done["scifact__simcse__s0"]
    assert "test" not in screened and "pseudo_dev" not in screened and screened["stsb_dev"] == 50.0
    assert "test" not in done["scifact__shipped"]  # --no-test-set applies to the shipped model too
    assert report.screen_value(screened, "ndcg@10") == screened["curve"][-1]["eval_curve_ndcg@10"]

    later = _config(adaptation, tmp_path, rows=["simcse"], test_only=True, **common)
    assert later.jobs() == ["scifact__simcse__s0__test"]
    later_worker = adaptation.Worker(later)
    later_worker._domains = worker._domains
    assert later_worker.run() == []
    scored = later_worker.queue.load("scifact__simcse__s0__test")
    assert scored["test_of"] == "scifact__simcse__s0" and set(scored) >= {"test", "pseudo_dev"}
    # The saved model scored later gives the whole test what it would have given at the end of training.
    again = worker.domain("scifact").test.evaluate(adaptation.load_model(
        str(cfg.work_dir / "models" / "scifact__simcse__s0")).model)
    assert scored["test"]["ndcg@10"] == pytest.approx(100 * again["ndcg@10"], abs=1e-3)

    # The shipped model with its whole test, so the main table has a reference; the screen ranks every row.
    shipped = dict(done["scifact__shipped"]) | {"test": {"ndcg@10": 50.0, "recall@100": 90.0},
                                                "pseudo_dev": {"ndcg@10": 40.0}}
    (cfg.jobs_dir / "scifact__shipped.json").write_text(json.dumps(shipped))
    collected = report.collect(worker.queue.done(), cfg)
    data = collected["domains"]["scifact"]
    assert data["rows"]["simcse"][0]["test"] == scored["test"]  # merged into its row
    assert "test" not in data["rows"]["tsdae"][0]
    markdown = report.render(collected, cfg, "cmd")
    assert "| DenoisingAutoEncoderLoss (TSDAE, tied decoder) | screened only |" in markdown
    start = report.screen_value(shipped, "ndcg@10")
    for row in ("simcse", "tsdae"):
        delta = report.screen_value(data["rows"][row][0], "ndcg@10") - start
        assert f"| {row} | {delta:+.2f} |" in markdown
    assert set(report.follow_up("scifact", data)[0]) == {"simcse", "tsdae"}
    assert "--rows tsdae --test-only --sts-only`" in markdown  # seed 0's whole test first, for a screened row only


def test_a_declared_confirmation_is_kept_out_of_the_protocols_rows_and_tested_on_its_own_seeds(bench, tmp_path,
                                                                                                 monkeypatch):
    adaptation, _, report = bench
    cfg = _config(adaptation, tmp_path, domains=["scifact"], rows=["shipped", "simcse"])
    monkeypatch.setattr(report, "CONFIRMATIONS", [{"domain": "scifact", "row": "simcse", "seeds": (3, 4, 5)}])
    base = {"budget": cfg.budget(), "domain": "scifact", "row": "simcse", "stsb_dev": 86.0, "steps_total": 100,
            "pseudo_dev": {"ndcg@10": 90.0}, "train_seconds": 60.0,
            "machine": {"cores": 2, "processor": "x", "load_1min": 2.0}}
    shipped = base | {"row": "shipped", "seed": None, "test_key": cfg.test_key(), "sts_avg": 78.0,
                      "test": {"ndcg@10": 64.0, "recall@100": 90.0}}
    runs = {f"scifact__simcse__s{s}": base | {"seed": s, "sts_avg": 77.8, "test": {"ndcg@10": v, "recall@100": 90.0}}
            for s, v in ((0, 62.0), (1, 63.0), (2, 61.0), (3, 65.0), (4, 66.0))}
    collected = report.collect({"scifact__shipped": shipped} | runs, cfg)
    data = collected["domains"]["scifact"]
    assert [d["seed"] for d in data["rows"]["simcse"]] == [0, 1, 2]
    assert [d["seed"] for d in data["confirmation"]["simcse"]] == [3, 4]
    markdown = report.render(collected, cfg, "cmd")
    assert "| 0,1,2 | 62.00 ± 1.00 | -2.00 (p = 0.074) |" in markdown  # the fresh seeds left out of the row
    assert "2 of 3 seeds scored; no test before all have run" in markdown
    runs["scifact__simcse__s5"] = base | {"seed": 5, "sts_avg": 77.8, "test": {"ndcg@10": 67.0, "recall@100": 90.0}}
    markdown = report.render(report.collect({"scifact__shipped": shipped} | runs, cfg), cfg, "cmd")
    # seeds 3-5 alone: mean 66, sd 1, n 3 against 64: t = 3.46, p = 0.074; STS avg 77.8 against 78.0
    assert ("Confirmation of simcse (seeds 3,4,5, declared before any of their results, tested alone): ndcg@10 66.00 ± 1.00, "
            "Δ +2.00 (p = 0.074); recall@100 90.00 ± 0.00, Δ +0.00") in markdown
    assert "STS avg 77.80 ± 0.00 (-0.20)." in markdown


def test_rows_scored_query_by_query_and_the_report_splits_the_queries(bench, tmp_path, tiny_bert_dir, monkeypatch):
    import shutil

    adaptation, domains, report = bench
    common = dict(domains=["scifact", "reuters"], steps=2, batch_size=4, eval_steps=2, max_length=32, smoke=True,
                  model=str(tiny_bert_dir), sts_suite=False)
    cfg = _config(adaptation, tmp_path, rows=["shipped", "simcse", "simcse-merge0.5"], **common)
    worker = adaptation.Worker(cfg)
    worker._domains = {name: _domain(domains, name) for name in ("scifact", "reuters")}
    monkeypatch.setattr(importlib.import_module("benchmarks.harness"), "stsb_dev", lambda senteval: Dev())
    assert worker.run() == []
    done = worker.queue.done()
    row = done["scifact__simcse__s0"]
    per_query = row["test_per_query"]["ndcg@10"]  # every row keeps each test query's score
    assert sorted(per_query) == [f"q{i}" for i in range(6)]
    assert sum(per_query.values()) / 6 == pytest.approx(row["test"]["ndcg@10"], abs=1e-3)
    assert set(done["reuters__simcse__s0"]["test_per_query"]) == {"a2h_ndcg@10", "h2a_ndcg@10"}

    # Rows scored before per-query scores were kept: their models are gone, so --queries-only trains them again
    # from the row's seed (the same model: the same whole-test metrics), and a merge row waits for its base.
    shutil.rmtree(cfg.work_dir / "models")
    for job, data in done.items():
        stripped = {k: v for k, v in data.items() if k != "test_per_query"}
        (cfg.jobs_dir / f"{job}.json").write_text(json.dumps(stripped))
    again = _config(adaptation, tmp_path, rows=["shipped", "simcse", "simcse-merge0.5"], queries_only=True, **common)
    assert again.jobs() == ["scifact__shipped__queries", "reuters__shipped__queries", "scifact__simcse__s0__queries",
                            "reuters__simcse__s0__queries", "scifact__simcse-merge0.5__s0__queries",
                            "reuters__simcse-merge0.5__s0__queries"]
    queries_worker = adaptation.Worker(again)
    queries_worker._domains = worker._domains
    assert queries_worker.run() == []
    scored = queries_worker.queue.load("scifact__simcse__s0__queries")
    assert scored["queries_of"] == "scifact__simcse__s0" and scored["retrain_seconds"] > 0
    assert scored["test_per_query"]["ndcg@10"] == per_query  # trained again, the same model
    assert queries_worker.queue.load("scifact__simcse-merge0.5__s0__queries")["retrain_seconds"] is None

    collected = report.collect(worker.queue.done(), cfg)
    data = collected["domains"]["scifact"]
    assert data["rows"]["simcse"][0]["queries_reproduced"] is True
    stats = report.query_statistics("scifact", data)
    selection, confirmation = stats["selection"], stats["confirmation"]
    assert len(selection) == len(confirmation) == 3 and sorted(selection + confirmation) == sorted(per_query)
    assert (selection, confirmation) == importlib.import_module("benchmarks.adaptation_queries").split_queries(list(per_query))  # fixed by the split seed
    shipped = data["shipped"]["test_per_query"]["ndcg@10"]
    change = stats["rows"]["simcse"]["ndcg@10"]["confirmation"]
    expected = sum(per_query[q] - shipped[q] for q in confirmation) / 3
    assert change["delta"] == pytest.approx(expected) and change["low"] <= change["delta"] <= change["high"]
    assert stats["chosen_on_selection"] in ("simcse", "simcse-merge0.5")
    collected["queries"] = {name: report.query_statistics(name, d) for name, d in collected["domains"].items()}
    markdown = report.render(collected, cfg, "cmd")
    scifact, reuters = markdown.split("**Reuters-21578**")
    assert "| simcse" in scifact and "confirmation Δ (3 queries)" in scifact  # SciFact: 6 queries
    assert "Over queries (a2h_ndcg@10" in reuters and "confirmation Δ (6 queries)" in reuters  # Reuters: 12 articles


def test_distillation_row_and_the_lexical_reference_lines(bench, tmp_path, tiny_bert_dir, monkeypatch):
    adaptation, domains, report = bench
    cfg = _config(adaptation, tmp_path, rows=["shipped", "distill", "distill-merge0.5"], domains=["scifact", "reuters"],
                  steps=2, batch_size=4, eval_steps=2, max_length=32, smoke=True, model=str(tiny_bert_dir),
                  sts_suite=False)
    worker = adaptation.Worker(cfg)
    worker._domains = {name: _domain(domains, name) for name in ("scifact", "reuters")}
    monkeypatch.setattr(importlib.import_module("benchmarks.harness"), "stsb_dev", lambda senteval: Dev())
    assert worker.run() == []
    done = worker.queue.done()
    for name, headline in (("scifact", "ndcg@10"), ("reuters", "a2h_ndcg@10")):
        references = done[f"{name}__references"]
        shipped = done[f"{name}__shipped"]["test_per_query"][headline]
        assert set(references["test_per_query"]) == {"BM25", "hybrid"} and "bm25s" in references["lexical"]
        for scores in references["test_per_query"].values():
            assert sorted(scores) == sorted(shipped) and all(0 <= v <= 100 for v in scores.values())
        row = done[f"{name}__distill__s0"]
        assert row["teacher"]["queries"] > 0 and row["teacher_seconds"] >= 0 and row["train_seconds"] > 0
    # Reuters: an article's own headline found by BM25 is an exact copy of the qrels' judgement of one article
    task = worker.domain("reuters").test
    article = " ".join(task.articles[0])
    task.headlines[0] = article  # the headline is the article's text itself: BM25 ranks it first
    again = task.lexical_references(adaptation.load_model(str(tiny_bert_dir)).model, adaptation.LexicalSettings())
    assert again["BM25"][task.ids[0]] == 1.0

    collected = report.collect(worker.queue.done(), cfg)
    stats = report.query_statistics("scifact", collected["domains"]["scifact"])
    assert set(stats["references"]) == {"BM25", "hybrid"} and stats["chosen_on_selection"] in ("distill",
                                                                                                "distill-merge0.5")
    base = done["scifact__shipped"]["test_per_query"]["ndcg@10"]
    bm25 = done["scifact__references"]["test_per_query"]["BM25"]
    confirmation = stats["confirmation"]
    expected = sum(bm25[q] - base[q] for q in confirmation) / len(confirmation)
    assert stats["references"]["BM25"]["confirmation"]["delta"] == pytest.approx(expected)
    collected["queries"] = {name: report.query_statistics(name, d) for name, d in collected["domains"].items()}
    markdown = report.render(collected, cfg, "cmd")
    assert markdown.count("| BM25 (reference: not trained) |") == 2 and markdown.count("| hybrid (reference") == 2


def test_a_lora_row_trains_the_adapter_and_saves_the_merged_model(bench, tmp_path, tiny_bert_dir, monkeypatch):
    pytest.importorskip("peft")
    adaptation, domains, _ = bench
    cfg = _config(adaptation, tmp_path, rows=["informin-lora"], domains=["scifact"], steps=2, batch_size=4,
                  eval_steps=2, max_length=32, smoke=True, model=str(tiny_bert_dir), sts_suite=False)
    worker = adaptation.Worker(cfg)
    worker._domains = {"scifact": _domain(domains, "scifact")}
    monkeypatch.setattr(importlib.import_module("benchmarks.harness"), "stsb_dev", lambda senteval: Dev())
    assert worker.run() == []
    row = worker.queue.done()["scifact__informin-lora__s0"]
    start = adaptation.load_model(str(tiny_bert_dir)).model.state_dict()
    assert 0 < row["trained_weights"] < sum(v.numel() for v in start.values()) / 5
    saved = adaptation.load_model(str(cfg.work_dir / "models" / "scifact__informin-lora__s0")).model.state_dict()
    assert set(saved) == set(start)  # merged: the model's own weights, no adapter layers
    # (the tiny checkpoint has no pooler weights, drawn afresh at each load and unused by the embedding)
    moved = [k for k in start if "pooler" not in k and not torch.equal(start[k], saved[k])]
    assert moved and all(k.split(".")[-2] in ("query", "key", "value") for k in moved)


def test_the_cost_table_sets_each_lora_row_beside_its_full_fine_tune_on_the_same_gpu(bench):
    _, _, report = bench
    lora = {"seed": 0, "peak_memory_mb": 900, "train_seconds": 12.0, "trained_weights": 221184}
    domains = {"reuters": {"rows": {"informin-lora": [lora], "informin": [{"seed": 0}]}}}
    full = {"reuters__informin__s0": {"peak_memory_mb": 2100, "train_seconds": 15.0, "machine": {"gpu": "H100"}}}
    lines = report.cost_lines(domains, full)
    assert "both on H100" in lines[0] and "| Reuters-21578 | informin | 2,100 / 900 | 15 / 12 | 221,184 |" in lines
    assert report.cost_lines(domains, {}) == []  # no full run on the GPU: no table


def test_the_confirmation_verdicts_are_holms_over_the_rows_and_the_chosen_row_is_the_claim():
    """Three rows judged on the confirmation half: one whose own p (about 0.04) would read "a gain" is within noise
    once adjusted for the three (Holm: 2 x 0.04), the clear gain stays a gain, and the table prints both p-values."""
    queries = importlib.import_module("benchmarks.adaptation_queries")
    from st_infocse.evaluation.paired import holm

    ids = [f"q{i:02d}" for i in range(40)]
    selection, confirmation = queries.split_queries(ids)
    moves = {"clear": {q: 5.0 for q in ids},  # every query gains: chosen on the selection half
             "edge": {q: 1.0 if i < 15 else -1.0 for i, q in enumerate(confirmation)} | {q: 0.0 for q in selection},
             "flat": {q: 0.0 for q in ids}}
    base = {q: 50.0 for q in ids}

    def run(scores: dict[str, float]) -> dict:
        mean = sum(scores.values()) / len(scores)
        return {"seed": 0, "test": {"ndcg@10": mean, "recall@100": mean},
                "test_per_query": {"ndcg@10": scores, "recall@100": scores}}

    data = {"shipped": run(base), "jobs": {},
            "rows": {row: [run({q: base[q] + move[q] for q in ids})] for row, move in moves.items()}}
    stats = queries.query_statistics("scifact", data)
    assert stats["multiple_rows"] == {"rule": "holm", "family": 3, "half": "confirmation"}
    judged = {row: stats["rows"][row]["ndcg@10"]["confirmation"] for row in moves}
    assert [c["p_holm"] for c in judged.values()] == pytest.approx(holm([c["p"] for c in judged.values()]))
    assert judged["edge"]["verdict"] == "a gain" and judged["edge"]["verdict_holm"] == "within noise"
    assert judged["clear"]["verdict_holm"] == "a gain" and judged["flat"]["verdict_holm"] == "within noise"
    assert stats["chosen_on_selection"] == "clear"
    table = "\n".join(queries.query_table("scifact", stats, data))
    assert "Holm p (3 rows)" in table and "Holm's step-down rule" in table
    edge_line = next(line for line in table.splitlines() if line.startswith("| edge |"))
    assert "p = 0.038" in edge_line and f"| p = {judged['edge']['p_holm']:.3f} | within noise |" in edge_line
    assert "| clear (chosen on the selection half: the claim) |" in table
    assert "The claim is clear, the row chosen on the selection half: a gain" in table


def test_the_recipe_benchmark_on_scifact_asks_the_train_claims_or_the_selection_half_never_a_confirmation_one(tmp_path):
    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    beir = tmp_path / "scifact"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"c{i}", "title": f"T{i}", "text": f"Abstract {i}."})
                                               + "\n" for i in range(30)))
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": str(i), "text": f"claim {i}"}) + "\n"
                                                for i in range(12)))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{i}\tc{i}\t1\n" for i in range(8, 12)))
    train = tmp_path / "train.tsv"  # claim 9 is a test claim: never the user's
    train.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{i}\tc{i + 10}\t1\n" for i in (0, 1, 2, 3, 9))
                     + "3\tc20\t1\n")
    # without train judgements: the selection half of the test claims, never one of the confirmation half
    info = recipe.scifact_files(beir, tmp_path / "missing.tsv", tmp_path / "halves", 20, None)
    selection, confirmation = importlib.import_module("benchmarks.adaptation_queries").split_queries(
        [str(i) for i in range(8, 12)])
    asked = [json.loads(line)["_id"] for line in (tmp_path / "halves" / "own-queries" / "queries.jsonl").open()]
    assert sorted(asked) == sorted(selection) and not set(asked) & set(confirmation)
    assert info["own_queries"] == len(selection) == 2
    info = recipe.scifact_files(beir, train, tmp_path / "user", documents=20, queries=None)
    assert info == {"documents": 20, "own_queries": 4, "own_corpus": 30}
    docs = [json.loads(line)["id"] for line in (tmp_path / "user" / "docs.jsonl").read_text().splitlines()]
    assert docs == [f"c{i}" for i in range(20)]
    own = tmp_path / "user" / "own-queries"
    from st_infocse.evaluation import check_retrieval_folder

    check_retrieval_folder(own)
    asked = [json.loads(line)["_id"] for line in (own / "queries.jsonl").read_text().splitlines()]
    assert asked == ["0", "1", "2", "3"]
    qrels = (own / "qrels" / "dev.tsv").read_text().splitlines()[1:]
    assert sorted(qrels) == sorted(["0\tc10\t1", "1\tc11\t1", "2\tc12\t1", "3\tc13\t1", "3\tc20\t1"])
    info = recipe.scifact_files(beir, train, tmp_path / "small", 20, 2, corpus_size=6)
    kept = [json.loads(line)["_id"] for line in (tmp_path / "small" / "own-queries" / "corpus.jsonl").open()]
    judged = {line.split("\t")[1] for line in (tmp_path / "small" / "own-queries" / "qrels" / "dev.tsv")
              .read_text().splitlines()[1:]}
    assert info["own_queries"] == 2 and len(kept) == 6 and judged <= set(kept)


def test_the_recipe_benchmark_says_where_the_time_went_and_renders_a_scifact_column():
    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    rounds = {"rounds": {"rounds": [{"mining_seconds": 300.4, "training_seconds": 120.2, "score": 0.72}],
                         "initial_metrics": {"eval_own_ndcg@10": 0.70}, "final_metrics": {"eval_own_ndcg@10": 0.72},
                         "trained_metrics": {"eval_own_ndcg@10": 0.72}, "best_round": 1,
                         "keep_trained_if": "reliable", "changes": {}}}
    assert recipe.where_time_went(rounds, 600.0) == {"mining_seconds": 300.4, "training_seconds": 120.2,
                                                     "other_seconds": 179.4}
    assert recipe.where_time_went({"start_end": {}}, 90.0) == {"other_seconds": 90.0}
    assert recipe.result_key("adapt-idc-mpnet-lora", "scifact") == "adapt-idc-mpnet-lora (scifact)"
    assert recipe.result_key("adapt-idc-mpnet", "reuters") == "adapt-idc-mpnet"
    confirmation = {"delta": 0.5, "low": 0.1, "high": 0.9, "p": 0.02, "n": 150, "verdict": "a gain"}
    result = {"machine": {"cores": 2, "load_1min": 0.1, "commit": "abcdef123"}, "folder": "/w",
              "data": {"documents": 5000, "own_queries": 809, "own_corpus": 5183},
              "test": {"given": {"ndcg@10": 64.51, "recall@100": 92.5}, "saved": {"ndcg@10": 65.0, "recall@100": 93.0},
                       "metric": "ndcg@10", "changes": {"confirmation": confirmation}},
              "run": {"command": "st-infocse train --docs /w/docs.jsonl", "wall_seconds": 600.0,
                      "peak_memory_gb": 3.0, "threads": 2, "run_summary": rounds,
                      "time": recipe.where_time_went(rounds, 600.0)}}
    table = recipe.render({"adapt-idc-mpnet-lora (scifact)": result})
    assert "| | `adapt-idc-mpnet-lora (scifact)` |" in table
    assert "| the user's data | 5,000 documents, 809 own queries over 5,183 |" in table
    assert ("| where the time went | mining 300 s, training 120 s, the rest (loading, evaluations, saving) 179 s |"
            in table)
    assert "| test split, headline metric: the model as given -> saved | ndcg@10 64.51 -> 65.00 |" in table
    assert ("| test split, confirmation half: the saved model's change | +0.50 (95% CI +0.10 to +0.90, p = 0.020): "
            "a gain, 150 queries |") in table


def test_the_recipe_benchmark_scores_the_model_as_given_once_when_the_keep_rule_saved_it(monkeypatch):
    """When the run handed back the model as given, "saved" is the given path: its test split is scored once and
    the change is zero, not a second pass over the corpus."""
    import types

    import st_infocse.training

    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    passes: list[str] = []
    scores = {"given": {"q1": 0.5, "q2": 0.7, "q3": 0.2, "q4": 0.9}, "other": {"q1": 0.6, "q2": 0.7, "q3": 0.4,
                                                                              "q4": 0.9}}

    class Test:
        def evaluate_queries(self, model):
            passes.append(model.name)
            per_query = scores[model.name]
            return {"ndcg@10": sum(per_query.values()) / 4, "recall@100": 1.0}, {"ndcg@10": per_query}

    monkeypatch.setattr(recipe, "load_scifact", lambda source, sizes: types.SimpleNamespace(test=Test()))
    monkeypatch.setattr(st_infocse.training, "load_model", lambda path: types.SimpleNamespace(
        model=types.SimpleNamespace(name=path, eval=lambda: None)))
    kept = recipe.score_test({"given": "given", "saved": "given"}, "scifact", Path("unused"))
    assert passes == ["given"] and kept["given"] == kept["saved"] and kept["changes"]["whole"]["delta"] == 0
    trained = recipe.score_test({"given": "given", "saved": "other"}, "scifact", Path("unused"))
    assert passes == ["given", "given", "other"] and trained["changes"]["whole"]["delta"] > 0


def test_a_recipe_run_with_more_user_flags_is_its_own_entry_beside_the_recipes():
    recipe = importlib.import_module("benchmarks.adaptation_recipe")
    assert recipe.result_key("adapt-idc-mpnet-lora", "scifact", "--idc_precision bf16") == (
        "adapt-idc-mpnet-lora (scifact) [--idc_precision bf16]")
    assert recipe.result_key("adapt-idc-mpnet-lora", "reuters", "") == "adapt-idc-mpnet-lora"
