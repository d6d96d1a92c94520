"""STS scoring: hand-computed Spearman values, the SentEval "all" setting, the suite, the training-time evaluator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from st_infocse.evaluation import (
    STSB_DEV_METRIC,
    STSPairs,
    evaluate_sts,
    evaluate_sts_suite,
    stsb_dev_evaluator,
)


def _pairs_with_cosines(ev, name, cosines, gold):
    """Pairs whose cosine similarities are exactly ``cosines`` (2-d unit vectors at chosen angles)."""
    table, s1, s2 = {}, [], []
    for i, c in enumerate(cosines):
        a, b = f"{name} first {i}", f"{name} second {i}"
        table[a] = ev.unit(0.0)
        table[b] = ev.unit(math.degrees(math.acos(c)))
        s1.append(a)
        s2.append(b)
    return STSPairs(name, s1, s2, list(gold), source="hand-made"), table


def test_spearman_by_hand(ev):
    # cosine ranks 4,3,2,1 vs gold ranks 4,2,3,1: sum d^2 = 2, rho = 1 - 6*2/(4*15) = 0.8
    pairs, table = _pairs_with_cosines(ev, "toy", [0.9, 0.5, 0.1, -0.3], [5.0, 2.0, 3.0, 0.0])
    result = evaluate_sts(ev.StubEncoder(table), pairs, model_label="stub")
    task = result.tasks["toy"]
    assert task.spearman == pytest.approx(80.0)
    # Pearson of (0.9, 0.5, 0.1, -0.3) and (5, 2, 3, 0): sum of products of deviations 2.8 / sqrt(0.8 * 13)
    assert task.pearson == pytest.approx(100 * 2.8 / math.sqrt(0.8 * 13.0))
    assert task.n_pairs == 4 and result.average == pytest.approx(80.0)


def test_a_collapsed_model_is_reported_as_collapsed_not_as_zero(make_model):
    """Constant similarities have no correlation: NaN as sentence-transformers gives it, printed "collapsed"."""
    import torch

    model = make_model()
    for parameter in model.parameters():
        torch.nn.init.zeros_(parameter)  # every sentence the same embedding
    pairs = STSPairs("toy", ["a cat", "a dog", "a car"], ["a cat sat", "a dog ran", "the sea"], [5.0, 4.0, 0.0],
                     source="hand-made")
    result = evaluate_sts(model, pairs, model_label="zeros")
    assert math.isnan(result.tasks["toy"].spearman) and math.isnan(result.average)
    assert result.row() == ["zeros", "collapsed", "collapsed"]


def test_senteval_all_setting_differs_from_subset_mean(ev, tmp_path):
    # each subset is perfectly ranked (100), but concatenated the cosines 0.9 0.8 0.95 0.85 against gold 5 4 2 1
    # rank as 3 1 4 2 vs 4 3 2 1: sum d^2 = 10, rho = 1 - 60/60 = 0
    names = ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]
    rows = {names[0]: [("p0", "q0", "5"), ("p1", "q1", "4")], names[1]: [("p2", "q2", "2"), ("p3", "q3", "1")]}
    rows.update({n: [] for n in names[2:]})
    ev.write_sts_year(tmp_path, "STS12", rows)
    cosines = [0.9, 0.8, 0.95, 0.85]
    table = {f"p{i}": ev.unit(0.0) for i in range(4)}
    table.update({f"q{i}": ev.unit(math.degrees(math.acos(c))) for i, c in enumerate(cosines)})
    result = evaluate_sts_suite(ev.StubEncoder(table), tmp_path, tasks=["STS12"])
    task = result.tasks["STS12"]
    assert task.spearman == pytest.approx(0.0, abs=1e-9)
    assert task.subset_spearman["MSRpar"] == pytest.approx(100.0)
    assert task.subset_spearman["MSRvid"] == pytest.approx(100.0)
    assert task.note == "subsets concatenated (SentEval 'all')"


def test_each_task_is_encoded_once_by_sentence_transformers_evaluator(ev):
    """One ``EmbeddingSimilarityEvaluator`` per task, one ``encode`` per task over its distinct sentences."""
    a = STSPairs("A", ["x", "y"], ["y", "z"], [1.0, 2.0], "hand-made")
    b = STSPairs("B", ["x", "w"], ["z", "x"], [0.0, 5.0], "hand-made")
    stub = ev.StubEncoder({t: ev.unit(d) for t, d in zip("xyzw", (0, 30, 60, 90), strict=True)})
    result = evaluate_sts(stub, [a, b])
    assert stub.calls == [["x", "y", "z"], ["x", "w", "z"]]
    assert result.tasks["A"].similarities == pytest.approx([math.cos(math.radians(30))] * 2)
    assert result.n_sentences == 4
    with pytest.raises(ValueError, match="duplicate task names"):
        evaluate_sts(stub, [a, a])


def test_matches_sentence_transformers_evaluator(make_model, senteval_tree):
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from st_infocse.evaluation import load_senteval_sts

    model = make_model()
    pairs = load_senteval_sts(senteval_tree, "STS-B")
    ours = evaluate_sts(model, pairs).tasks["STS-B"].spearman
    theirs = EmbeddingSimilarityEvaluator(pairs.sentences1, pairs.sentences2, pairs.scores, main_similarity="cosine")(
        model
    )["spearman_cosine"]
    assert ours == pytest.approx(100 * theirs, abs=1e-4)


def test_suite_table_row(make_model, senteval_tree):
    result = evaluate_sts_suite(make_model(), senteval_tree, model_label="tiny")
    assert list(result.scores) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Avg."]
    values = [t.spearman for t in result.tasks.values()]
    assert all(-100 <= v <= 100 for v in values)
    assert result.scores["Avg."] == pytest.approx(np.mean(values))
    assert result.tasks["STS12"].n_pairs == 20 and result.tasks["SICK-R"].n_pairs == 10
    text = str(result)
    header, row = text.splitlines()[:2]
    assert header.split() == ["Model", *result.scores]
    assert row.split() == ["tiny", *(f"{v:.2f}" for v in result.scores.values())]
    assert text.splitlines()[2:] == [
        "  STS12, STS13, STS14, STS15, STS16: subsets concatenated (SentEval 'all')",
        "  SICK-R: SentEval SICK test split (10 pairs)",
        f"  data: SentEval folder {senteval_tree}",
    ]
    markdown = result.to_markdown().splitlines()
    assert markdown[0] == "| Model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | Avg. |"
    assert markdown[2].startswith("| tiny | ")
    as_dict = result.to_dict()
    assert as_dict["tasks"]["STS-B"]["n_pairs"] == 12 and as_dict["average"] == pytest.approx(result.average)
    assert as_dict["scale"] == "x100"


def test_suite_from_local_files(ev, tmp_path):
    cosines = {"STS-B": [0.9, 0.1, 0.5], "SICK-R": [0.2, 0.4, 0.6]}
    gold = {"STS-B": [5.0, 1.0, 3.0], "SICK-R": [3.0, 2.0, 1.0]}
    table, sources = {}, {}
    for name in cosines:
        pairs, t = _pairs_with_cosines(ev, name, cosines[name], gold[name])
        table.update(t)
        rows = [
            {"sentence1": a, "sentence2": b, "score": s}
            for a, b, s in zip(pairs.sentences1, pairs.sentences2, pairs.scores, strict=True)
        ]
        sources[name] = ev.write_jsonl(tmp_path / f"{name}.jsonl", rows)
    result = evaluate_sts_suite(ev.StubEncoder(table), sources, tasks=["stsb", "SICK-R"])
    assert result.scores == pytest.approx({"STS-B": 100.0, "SICK-R": -100.0, "Avg.": 0.0})
    with pytest.raises(KeyError, match="no source given for task 'STS12'"):
        evaluate_sts_suite(ev.StubEncoder(table), sources, tasks=["STS12"])


def test_stsb_dev_evaluator_reads_the_dev_split(make_model, senteval_tree):
    evaluator = stsb_dev_evaluator(senteval_tree)
    assert evaluator.name == "sts-dev" and evaluator.primary_metric == "sts-dev_spearman_cosine"
    assert len(evaluator.sentences1) == 12
    metrics = evaluator(make_model())
    assert set(metrics) >= {"sts-dev_spearman_cosine", "sts-dev_pearson_cosine"}
    assert "eval_" + evaluator.primary_metric == STSB_DEV_METRIC


def test_trainer_keeps_the_best_checkpoint(make_model, senteval_tree, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    rng = np.random.default_rng(0)
    words = "the a cat dog man woman child city house river car book".split()
    texts = [" ".join(rng.choice(words, 6)) for _ in range(32)]
    model = make_model()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        eval_strategy="steps",
        eval_steps=2,
        save_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model=STSB_DEV_METRIC,
        report_to=[],
        use_cpu=True,
        logging_steps=2,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"anchor": texts, "positive": texts}),
        loss=MultipleNegativesRankingLoss(model),
        evaluator=stsb_dev_evaluator(senteval_tree),
    )
    trainer.train()
    logged = [(e["step"], e[STSB_DEV_METRIC]) for e in trainer.state.log_history if STSB_DEV_METRIC in e]
    assert [step for step, _ in logged][:3] == [2, 4, 6]
    best_step, best_value = max(logged, key=lambda x: x[1])
    assert trainer.state.best_metric == pytest.approx(best_value)
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{best_step}")
    # the model in memory is the best checkpoint's
    final = stsb_dev_evaluator(senteval_tree)(trainer.model)["sts-dev_spearman_cosine"]
    assert final == pytest.approx(best_value, abs=1e-5)
