"""The user's own BEIR-layout folder as a training-time retrieval evaluator (st_infocse.evaluation.retrieval_folder)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from st_infocse.evaluation import (
    RetrievalEvaluator,
    RetrievalFolderInfo,
    check_retrieval_folder,
    retrieval_evaluator,
    retrieval_metric_keys,
)
from st_infocse.files import InputError

HEADER = "query-id\tcorpus-id\tscore"


def write_folder(
    folder: Path,
    corpus: list[dict] | dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, list[tuple[str, str, int]]],
) -> Path:
    """corpus.jsonl (rows, or id -> text), queries.jsonl and qrels/<split>.tsv for each split given."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"_id": k, "title": "", "text": v} for k, v in corpus.items()] if isinstance(corpus, dict) else corpus
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()), encoding="utf-8"
    )
    (folder / "qrels").mkdir(exist_ok=True)
    for split, lines in qrels.items():
        body = "".join(f"{q}\t{d}\t{s}\n" for q, d, s in lines)
        (folder / "qrels" / f"{split}.tsv").write_text(f"{HEADER}\n{body}", encoding="utf-8")
    return folder


CORPUS = {f"d{i}": f"document number {i}" for i in range(1, 7)}
QUERIES = {"q1": "first query", "q2": "second query", "q3": "third query"}
DEV = [("q1", "d1", 1), ("q1", "d2", 1), ("q2", "d3", 1), ("q2", "d4", 0), ("q3", "d5", 0)]


@pytest.fixture
def folder(tmp_path) -> Path:
    return write_folder(tmp_path / "mydata", CORPUS, QUERIES, {"dev": DEV, "test": [("q3", "d6", 1)]})


# --------------------------------------------------------------------------------------------------------------------
# checks


def test_check_counts_judged_queries_and_relevant_documents(folder):
    info = check_retrieval_folder(folder)
    # q3 has only a score-0 row on dev, and d4/d5 score 0: neither counts as judged relevant
    assert info == RetrievalFolderInfo(folder, "dev", n_corpus=6, n_queries=2, n_judged_docs=3)
    assert info.n_corpus_used == info.n_corpus == 6 and not info.sampled
    assert info.describe() == "mydata-dev: 2 queries, 6 documents (3 judged)"
    test = check_retrieval_folder(folder, "test")
    assert (test.split, test.n_queries, test.n_judged_docs) == ("test", 1, 1)
    assert test.describe() == "mydata-test: 1 query, 6 documents (1 judged)"


def test_split_none_means_dev_then_test(folder):
    assert check_retrieval_folder(folder).split == "dev"
    assert check_retrieval_folder(str(folder), "test").split == "test"
    (folder / "qrels" / "dev.tsv").unlink()
    assert check_retrieval_folder(folder).split == "test"


def _unlink(*names: str):
    def edit(folder: Path) -> None:
        for name in names:
            (folder / name).unlink()

    return edit


def _write(name: str, text: str):
    def edit(folder: Path) -> None:
        (folder / name).write_text(text, encoding="utf-8")

    return edit


def _remove_folder(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder)


BAD_FOLDERS = {
    # name: (edit, split, file named in the message ("": the folder), words of the message)
    "missing folder": (_remove_folder, None, "", "folder not found"),
    "missing corpus": (_unlink("corpus.jsonl"), None, "corpus.jsonl", "file not found"),
    "missing queries": (_unlink("queries.jsonl"), None, "queries.jsonl", "file not found"),
    "no dev or test split": (
        _unlink("qrels/dev.tsv", "qrels/test.tsv"),
        None,
        "",
        "neither qrels/dev.tsv nor qrels/test.tsv",
    ),
    "missing named split": (lambda folder: None, "train", "qrels/train.tsv", "file not found (qrels/ holds dev.tsv"),
    "empty split": (_write("qrels/dev.tsv", f"{HEADER}\nq1\td1\t0\nq2\td2\t0\n"), None, "qrels/dev.tsv", "no relevant"),
    "header only": (_write("qrels/dev.tsv", f"{HEADER}\n"), None, "qrels/dev.tsv", "no relevance judgements"),
    "unknown query id": (
        _write("qrels/dev.tsv", f"{HEADER}\nq1\td1\t1\nq9\td2\t1\n"),
        None,
        "qrels/dev.tsv",
        "line 3: query id 'q9' is not in queries.jsonl",
    ),
    "unknown document ids": (
        _write("qrels/dev.tsv", f"{HEADER}\nq1\td1\t1\nq1\tx7\t1\nq2\tx8\t0\nq2\tx9\t1\nq3\tx7\t1\nq3\tx10\t1\n"),
        None,
        "qrels/dev.tsv",
        "names 4 document ids not in corpus.jsonl (e.g. 'x7', 'x8', 'x9')",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FOLDERS))
def test_each_bad_folder_is_one_input_error_naming_the_file(folder, case, caplog):
    edit, split, named, words = BAD_FOLDERS[case]
    edit(folder)
    for build in (check_retrieval_folder, retrieval_evaluator):
        with pytest.raises(InputError) as raised:
            build(folder, split)
        message = str(raised.value)
        assert "\n" not in message
        assert str(folder / named) in message, message
        assert words in message
    # the loader's warning about unknown documents is not said a second time
    assert not [r for r in caplog.records if "not in corpus.jsonl" in r.getMessage()]


def test_one_unknown_document_is_named_without_e_g(folder):
    _write("qrels/dev.tsv", f"{HEADER}\nq1\td1\t1\nq1\tnope\t1\n")(folder)
    with pytest.raises(InputError, match=r"dev\.tsv: names 1 document id not in corpus\.jsonl \('nope'\)$"):
        check_retrieval_folder(folder)


# --------------------------------------------------------------------------------------------------------------------
# sub-sampling


@pytest.fixture
def big_folder(tmp_path) -> Path:
    corpus = {f"d{i:03d}": f"document {i}" for i in range(60)}
    qrels = [("q1", "d005", 1), ("q1", "d017", 1), ("q2", "d042", 1), ("q3", "d059", 2), ("q3", "d001", 0)]
    return write_folder(tmp_path / "big", corpus, QUERIES, {"dev": qrels})


def test_sampling_keeps_every_judged_document_and_max_corpus_in_all(big_folder):
    judged = {"d005", "d017", "d042", "d059"}
    evaluator, info = retrieval_evaluator(big_folder, max_corpus=10, seed=0)
    assert len(evaluator.corpus_ids) == 10 and judged <= set(evaluator.corpus_ids)
    assert len(set(evaluator.corpus_ids)) == 10
    assert evaluator.corpus_ids == sorted(evaluator.corpus_ids)  # file order kept
    assert info.sampled and (info.n_corpus, info.n_corpus_used, info.n_judged_docs) == (60, 10, 4)
    assert info.describe() == "big-dev: 3 queries, 10 of 60 documents (all 4 judged + a seed-0 sample)"

    again, _ = retrieval_evaluator(big_folder, max_corpus=10, seed=0)
    other, other_info = retrieval_evaluator(big_folder, max_corpus=10, seed=1)
    assert again.corpus_ids == evaluator.corpus_ids
    assert judged <= set(other.corpus_ids) and len(other.corpus_ids) == 10
    assert other.corpus_ids != evaluator.corpus_ids
    assert other_info.describe().endswith("(all 4 judged + a seed-1 sample)")


def test_no_sampling_when_the_corpus_fits_or_max_corpus_is_none(big_folder):
    for max_corpus in (None, 60, 1000):
        evaluator, info = retrieval_evaluator(big_folder, max_corpus=max_corpus, seed=3)
        assert len(evaluator.corpus_ids) == 60 and not info.sampled and info.seed is None
        assert info.describe() == "big-dev: 3 queries, 60 documents (4 judged)"


def test_judged_documents_are_all_kept_beyond_max_corpus(big_folder):
    evaluator, info = retrieval_evaluator(big_folder, max_corpus=2)
    assert set(evaluator.corpus_ids) == {"d005", "d017", "d042", "d059"}
    assert info.sampled and info.n_corpus_used == 4
    assert info.describe() == "big-dev: 3 queries, 4 of 60 documents (all 4 judged and no sample: max_corpus=2)"


@pytest.mark.parametrize("max_corpus", [0, -5, 2.5, True])
def test_max_corpus_must_be_a_positive_whole_number(big_folder, max_corpus):
    with pytest.raises(InputError, match="max_corpus"):
        retrieval_evaluator(big_folder, max_corpus=max_corpus)


# --------------------------------------------------------------------------------------------------------------------
# the evaluator


def test_the_evaluator_is_sentence_transformers_own(folder):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    evaluator, _ = retrieval_evaluator(folder, name="mine", batch_size=7)
    # sentence-transformers' own, scored by pytrec_eval (RetrievalEvaluator) and nothing else
    assert isinstance(evaluator, InformationRetrievalEvaluator)
    assert type(evaluator).__mro__[1] is InformationRetrievalEvaluator and type(evaluator) is RetrievalEvaluator
    assert (evaluator.name, evaluator.batch_size, evaluator.write_csv) == ("mine", 7, False)
    assert evaluator.ndcg_at_k == [10] and evaluator.precision_recall_at_k == [10, 100]
    assert evaluator.mrr_at_k == [10] and evaluator.map_at_k == [100] and evaluator.accuracy_at_k == [1, 10]
    assert evaluator.queries_ids == ["q1", "q2"]
    # the judged queries with their graded qrels, score-0 rows kept (pytrec_eval reads them as not relevant)
    assert evaluator.relevant_docs == {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1, "d4": 0}}


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_the_named_keys_are_the_ones_the_evaluator_returns(make_model, folder, similarity):
    model = make_model()
    model.similarity_fn_name = similarity
    evaluator, _ = retrieval_evaluator(folder)
    metrics = evaluator(model)
    own = retrieval_metric_keys(evaluator, similarity, prefix="")
    assert set(own.values()) == set(metrics)
    assert own["ndcg@10"] == f"retrieval_{similarity}_ndcg@10" == evaluator.primary_metric
    assert own["recall@100"] == f"retrieval_{similarity}_recall@100"
    assert retrieval_metric_keys("retrieval", similarity) == {k: f"eval_{v}" for k, v in own.items()}
    assert all(0.0 <= value <= 1.0 for value in metrics.values())


def test_the_trainer_logs_and_selects_by_the_named_keys(make_model, folder, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = make_model()
    evaluator, _ = retrieval_evaluator(folder)
    keys = retrieval_metric_keys(evaluator, model.similarity_fn_name)
    assert keys["ndcg@10"] == "eval_retrieval_cosine_ndcg@10"
    texts = ["the cat sat", "a dog ran", "the man sang", "a bird flew"] * 2
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=4,
        eval_strategy="steps",
        eval_steps=2,
        save_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model=keys["ndcg@10"],  # a wrong key makes the trainer raise when it saves
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"anchor": texts, "positive": texts}),
        loss=MultipleNegativesRankingLoss(model),
        evaluator=evaluator,
    )
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if keys["ndcg@10"] in entry]
    assert len(logged) == 1 and keys["recall@100"] in logged[0]
    assert trainer.state.best_metric == pytest.approx(logged[0][keys["ndcg@10"]])


def test_ndcg_mrr_and_recall_match_a_hand_computed_case(tmp_path, ev):
    # 2-d unit vectors: documents at 10, 20, 30, 40 degrees; q1 at 0 degrees ranks d1 d2 d3 d4, q2 at 90 degrees
    # ranks d4 d3 d2 d1. Titles are joined as mteb/beir join them, so a wrong join is a KeyError in the stub.
    corpus = [
        {"_id": "d1", "title": "Alpha", "text": "one"},
        {"_id": "d2", "text": "two"},
        {"_id": "d3", "title": "", "text": " three "},
        {"_id": "d4", "title": "Delta", "text": "four"},
    ]
    queries = {"q1": "query one", "q2": "query two", "q3": "query three"}
    qrels = [("q1", "d2", 1), ("q1", "d4", 1), ("q2", "d3", 1), ("q2", "d4", 0), ("q3", "d1", 0)]
    folder = write_folder(tmp_path / "hand", corpus, queries, {"test": qrels})
    table = {
        "Alpha one": ev.unit(10),
        "two": ev.unit(20),
        "three": ev.unit(30),
        "Delta four": ev.unit(40),
        "query one": ev.unit(0),
        "query two": ev.unit(90),
    }

    class Stub(ev.StubEncoder):
        model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *args, **kwargs: None)

        def encode_query(self, sentences, **kwargs):
            return self.encode(sentences, **kwargs)

        encode_document = encode_query

    evaluator, info = retrieval_evaluator(folder, name="hand")
    assert info.split == "test" and info.n_queries == 2  # q3 has no relevant document
    metrics = evaluator(Stub(table))
    keys = retrieval_metric_keys(evaluator, "cosine", prefix="")
    # q1: relevant at ranks 2 and 4; q2: relevant at rank 2 (d4 on top scores 0, so it is not relevant)
    q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    q2 = (1 / math.log2(3)) / 1
    assert metrics[keys["ndcg@10"]] == pytest.approx((q1 + q2) / 2)
    assert metrics[keys["mrr@10"]] == pytest.approx(0.5)
    assert metrics[keys["recall@100"]] == pytest.approx(1.0)
    assert metrics[keys["accuracy@1"]] == pytest.approx(0.0)
    assert metrics[keys["precision@10"]] == pytest.approx((2 / 10 + 1 / 10) / 2)


def test_the_queries_scores_average_to_the_logged_ndcg(folder, make_model):
    import numpy as np

    from st_infocse.evaluation import unit_scores

    evaluator, _ = retrieval_evaluator(folder, name="mine")
    metrics = evaluator(make_model())
    per_query = evaluator.per_query
    assert sorted(per_query) == ["q1", "q2"] and all(0 <= v <= 1 for v in per_query.values())
    assert np.mean(list(per_query.values())) == pytest.approx(metrics[evaluator.primary_metric], abs=1e-9)
    units = unit_scores(evaluator)[evaluator.primary_metric]
    assert units.kind == "queries" and units.scores == per_query
    assert unit_scores(None) == {}  # a run without an evaluator: nothing to compare unit by unit
