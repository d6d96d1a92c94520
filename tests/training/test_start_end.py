"""StartEndCallback: the model is scored before its first step and after its last, and a run that made the deciding
metric worse hands back the model it was given."""

from __future__ import annotations

import json
import re

import pytest
import torch
from datasets import Dataset

from st_infocse.training import StartEndCallback, StartEndResult, StartingWeights
from st_infocse.training.start_end import start_end_rows

from ..conftest import random_sentences

STEPS = 3


def _weights(model) -> dict[str, torch.Tensor]:
    return {key: value.detach().clone() for key, value in model.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def _scripted_evaluator(score: dict[int, float], alt: dict[int, float] | None = None):
    """An evaluator whose scores are set per training step; it keeps the weights it saw at each step."""
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

    class Scripted(SentenceEvaluator):
        def __init__(self):
            super().__init__()
            self.primary_metric = "scripted_score"
            self.seen: dict[int, dict[str, torch.Tensor]] = {}

        def __call__(self, model, output_path=None, epoch=-1, steps=-1):
            self.seen[steps] = _weights(model)
            other = (alt or {}).get(steps, 0.5)
            return {"scripted_score": score[steps], "scripted_alt": other, "scripted_loss": 1.0 - other}

    return Scripted()


def _train(model, evaluator, tmp_path, keep: bool = True, keep_trained_if: str = "better", confirm_share=None,
           **kwargs):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    texts = random_sentences(32, seed=1)
    dataset = Dataset.from_dict({"anchor": texts[:16], "positive": texts[16:]})
    settings = dict(
        output_dir=str(tmp_path / "run"),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
        disable_tqdm=True,
        use_cpu=True,
        dataloader_pin_memory=False,
    )
    settings.update(kwargs)
    callback = StartEndCallback(evaluator, keep_start_if_better=keep, keep_trained_if=keep_trained_if,
                                confirm_share=confirm_share)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=SentenceTransformerTrainingArguments(**settings),
        train_dataset=dataset,
        loss=MultipleNegativesRankingLoss(model),
        evaluator=evaluator,
        callbacks=[callback],
    )
    trainer.train()
    assert callback.snapshot is None  # no copy of the weights outlives training
    assert isinstance(callback.result, StartEndResult)
    return trainer, callback.result


def test_start_is_scored_before_any_step_and_end_after_the_last(make_model, tmp_path):
    model = make_model()
    initial = _weights(model)
    evaluator = _scripted_evaluator({0: 0.5, STEPS: 0.75})
    _, result = _train(model, evaluator, tmp_path)
    assert _same(evaluator.seen[0], initial)  # the start was scored on the weights given
    assert sorted(evaluator.seen) == [0, STEPS]  # eval_strategy="no": the callback scored the last step itself
    assert not _same(evaluator.seen[STEPS], initial)
    assert _same(evaluator.seen[STEPS], _weights(model))  # the trained model is kept: it scores better
    assert (result.metric, result.greater_is_better, result.kept) == ("eval_scripted_score", True, "end")
    assert result.start == {"eval_scripted_score": 0.5, "eval_scripted_alt": 0.5, "eval_scripted_loss": 0.5}
    assert (result.start_step, result.end_step, result.start_score, result.end_score) == (0, STEPS, 0.5, 0.75)
    assert (result.best_step, result.best_score, result.worse_at_end) == (STEPS, 0.75, [])
    # an evaluator without per-query scores: the change is printed, and said to be unjudged
    assert result.lines()[0] == ("eval_scripted_score 50.00 -> 75.00, +25.00 (no per-query scores: the change is not "
                                 "judged)")
    assert json.loads(json.dumps(result.to_dict()))["kept"] == "end"


@pytest.mark.parametrize("keep", [True, False])
def test_a_run_that_ends_worse_hands_back_the_starting_weights(make_model, tmp_path, keep, caplog):
    model = make_model()
    initial = _weights(model)
    evaluator = _scripted_evaluator({0: 0.6451, STEPS: 0.639})
    with caplog.at_level("WARNING", logger="st_infocse.training.start_end"):
        _, result = _train(model, evaluator, tmp_path, keep=keep)
    assert result.worse_at_end == ["eval_scripted_score"]
    warning = "warning: eval_scripted_score ended below its start (64.51 -> 63.90)"
    assert warning in result.lines() and warning in caplog.text
    if keep:
        assert result.kept == "start"
        assert _same(_weights(model), initial)
        assert ("saved: the starting model: no checkpoint beat the model you started with (eval_scripted_score 64.51 "
                "vs best 63.90 at step 3)") in result.lines()
    else:
        assert result.kept == "end"
        assert not _same(_weights(model), initial)
        assert _same(_weights(model), evaluator.seen[STEPS])
        assert not any(line.startswith("saved:") for line in result.lines())


def test_metric_for_best_model_decides(make_model, tmp_path):
    # The evaluator's primary metric got worse, the named metric better: the trained model stays.
    model = make_model()
    initial = _weights(model)
    evaluator = _scripted_evaluator({0: 0.8, STEPS: 0.5}, alt={0: 0.1, STEPS: 0.4})
    _, result = _train(model, evaluator, tmp_path, metric_for_best_model="scripted_alt")
    assert (result.metric, result.greater_is_better, result.kept) == ("eval_scripted_alt", True, "end")
    assert (result.start_score, result.end_score) == (0.1, 0.4)
    assert not _same(_weights(model), initial)
    # scripted_loss fell from 0.9 to 0.6: lower is better for a loss, so only the primary metric got worse
    assert result.worse_at_end == ["eval_scripted_score"]

    model = make_model()
    _, result = _train(model, evaluator, tmp_path, metric_for_best_model="eval_scripted_loss")
    assert (result.metric, result.greater_is_better, result.kept) == ("eval_scripted_loss", False, "end")
    # greater_is_better given explicitly turns the direction: the start's 0.9 now beats the end's 0.6
    model = make_model()
    _, result = _train(model, evaluator, tmp_path, metric_for_best_model="scripted_loss", greater_is_better=True)
    assert (result.greater_is_better, result.kept) == (True, "start")
    assert _same(_weights(model), initial)


BEST_AT_2 = {0: 0.5, 1: 0.6, 2: 0.9, 3: 0.4}  # the end is below the start, the best checkpoint above it
START_BEST = {0: 0.8, 1: 0.6, 2: 0.7, 3: 0.5}  # nothing beats the start


@pytest.mark.parametrize("scores", [BEST_AT_2, START_BEST], ids=["best-checkpoint", "start"])
def test_step_evaluations_and_load_best_model_at_end(make_model, tmp_path, scores):
    model = make_model()
    initial = _weights(model)
    evaluator = _scripted_evaluator(scores)
    trainer, result = _train(
        model,
        evaluator,
        tmp_path,
        eval_strategy="steps",
        eval_steps=1,
        save_strategy="steps",
        save_steps=1,
        load_best_model_at_end=True,
        metric_for_best_model="scripted_score",
    )
    evaluated = [entry["step"] for entry in trainer.state.log_history if "eval_scripted_score" in entry]
    assert evaluated == [1, 2, STEPS]  # the trainer itself evaluated the last step, once, and logged it
    assert sorted(evaluator.seen) == [0, 1, 2, STEPS]
    assert result.end == {key: value for key, value in trainer.state.log_history[-2].items() if key in result.start}
    assert (result.best_step, result.best_score) == (2, trainer.state.best_metric)
    if scores is BEST_AT_2:
        # The trainer loaded the step-2 checkpoint, which beats the start although the end does not.
        assert trainer.state.best_model_checkpoint.endswith("checkpoint-2")
        assert result.kept == "best checkpoint" and result.worse_at_end == ["eval_scripted_score"]
        assert _same(_weights(model), evaluator.seen[2])
    else:
        assert result.kept == "start"
        assert _same(_weights(model), initial)
        assert "no checkpoint beat the model you started with (eval_scripted_score 80.00 vs best 70.00 at step 2)" in str(
            result)


def test_without_load_best_model_at_end_the_last_step_is_what_the_start_is_compared_with(make_model, tmp_path):
    model = make_model()
    initial = _weights(model)
    _, result = _train(model, _scripted_evaluator(BEST_AT_2), tmp_path, eval_strategy="steps", eval_steps=1)
    assert (result.kept, result.best_step, result.best_score, result.end_score) == ("start", 2, 0.9, 0.4)
    assert _same(_weights(model), initial)
    assert ("saved: the starting model: the last step did not beat it (eval_scripted_score 50.00 vs 40.00; step 2 "
            "scored 90.00: load_best_model_at_end keeps such a checkpoint)") in result.lines()


def test_sequential_evaluator_and_a_real_evaluator_use_the_trainers_metric_names(make_model, tmp_path):
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
        SequentialEvaluator,
    )

    texts = random_sentences(16, seed=2)
    similarity = EmbeddingSimilarityEvaluator(texts[:8], texts[8:], [i / 7 for i in range(8)], name="sts")
    evaluator = SequentialEvaluator([similarity, _scripted_evaluator({0: 0.3, 1: 0.35, 2: 0.4, 3: 0.45})])
    trainer, result = _train(make_model(), evaluator, tmp_path, eval_strategy="steps", eval_steps=1)
    assert result.metric == "eval_sequential_score"  # the last evaluator's primary score
    assert "eval_sts_spearman_cosine" in result.start
    logged = next(entry for entry in reversed(trainer.state.log_history) if "eval_sequential_score" in entry)
    assert logged["step"] == STEPS and set(result.start) <= set(logged)
    assert result.end == {key: logged[key] for key in result.start}
    assert (result.kept, result.best_step, result.end_score) == ("end", STEPS, 0.45)
    assert result.lines()[0] == ("eval_sequential_score 30.00 -> 45.00, +15.00 (no per-query scores: the change is "
                                 "not judged)")


def test_the_last_step_is_evaluated_by_the_trainer_whatever_its_eval_steps(tmp_path):
    from transformers import TrainerControl, TrainerState, TrainingArguments

    callback = StartEndCallback(evaluator=None)
    for strategy, step, expected in [("steps", 3, True), ("steps", 2, False), ("epoch", 3, False), ("no", 3, False)]:
        args = TrainingArguments(output_dir=str(tmp_path), eval_strategy=strategy, eval_steps=10, use_cpu=True)
        control = TrainerControl()
        callback.on_step_end(args, TrainerState(global_step=step, max_steps=3), control)
        assert control.should_evaluate is expected, (strategy, step)


def _query_scored_evaluator(per_step: dict[int, dict[str, float]]):
    """An evaluator whose per-query scores are set per step; its primary metric is their mean, as a retrieval
    evaluator's nDCG@10 is."""
    from sentence_transformers.base.evaluation import BaseEvaluator

    from st_infocse.evaluation import UnitScores

    class QueryScored(BaseEvaluator):
        def __init__(self):
            super().__init__()
            self.primary_metric = "dev_ndcg@10"
            self.last: dict[str, float] = {}

        def __call__(self, model, output_path=None, epoch=-1, steps=-1):
            self.last = per_step[max(steps, 0)]
            return {"dev_ndcg@10": sum(self.last.values()) / len(self.last)}

        def units(self):
            return {"dev_ndcg@10": UnitScores("queries", scores=dict(self.last))}

    return QueryScored()


QUERIES = [f"q{i}" for i in range(200)]
START = {q: 0.5 for q in QUERIES}
SMALL_GAIN = {q: 0.5 + (0.3 if i in (3, 77) else 0.0) for i, q in enumerate(QUERIES)}  # +0.3 x100 on average
BROAD_GAIN = {q: 0.5 + 0.02 * (1 + i % 3) for i, q in enumerate(QUERIES)}  # +2, +4 or +6 x100 on every query


@pytest.mark.parametrize("rule", ["better", "reliable"])
def test_a_gain_within_noise_is_kept_by_better_and_refused_by_reliable(make_model, tmp_path, rule):
    model = make_model()
    start = _weights(model)
    evaluator = _query_scored_evaluator({0: START, STEPS: SMALL_GAIN})
    _, result = _train(model, evaluator, tmp_path, keep_trained_if=rule)
    change = result.changes["eval_dev_ndcg@10"]
    assert change.delta == pytest.approx(0.3) and change.low <= 0 < change.high and change.verdict == "within noise"
    assert change.n == 200 and change.unit == "queries"
    assert result.keep_trained_if == rule
    if rule == "better":
        assert result.kept == "end" and not _same(start, _weights(model))
    else:
        assert result.kept == "start" and _same(start, _weights(model))
        assert "not a reliable gain" in result.reason
        assert any("within noise" in line for line in result.lines())
        assert "saved: the starting model" in result.lines()[-1]
    as_json = json.loads(json.dumps(result.to_dict()))
    assert as_json["changes"]["eval_dev_ndcg@10"]["verdict"] == "within noise"


def test_a_reliable_gain_is_kept_by_reliable(make_model, tmp_path):
    model = make_model()
    start = _weights(model)
    _, result = _train(model, _query_scored_evaluator({0: START, STEPS: BROAD_GAIN}), tmp_path,
                       keep_trained_if="reliable")
    change = result.changes["eval_dev_ndcg@10"]
    assert change.verdict == "a gain" and change.low > 0 and change.delta == pytest.approx(3.99)
    assert result.kept == "end" and not _same(start, _weights(model))
    assert ", +3.99 (95% CI" in result.lines()[0]


def test_reliable_needs_an_evaluator_with_unit_scores(make_model, tmp_path):
    evaluator = _scripted_evaluator({0: 0.5, STEPS: 0.6})
    with pytest.raises(ValueError, match="keep_trained_if='reliable' needs per-query"):
        _train(make_model(), evaluator, tmp_path, keep_trained_if="reliable")
    with pytest.raises(ValueError, match="keep_trained_if must be one of better, reliable"):
        StartEndCallback(evaluator, keep_trained_if="maybe")


def test_reliable_is_refused_where_the_start_is_never_handed_back():
    # the rule hands back the start when the gain is not reliable: without the start it would only measure
    with pytest.raises(ValueError, match="keep_start_if_better=False turns off keep_trained_if='reliable'"):
        StartEndCallback(_scripted_evaluator({0: 0.5}), keep_start_if_better=False, keep_trained_if="reliable")


def test_real_retrieval_and_sts_evaluators_give_intervals(make_model, tmp_path):
    from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

    from st_infocse.evaluation import STSPairs, retrieval_evaluator, stsb_dev_evaluator

    folder = tmp_path / "own"
    (folder / "qrels").mkdir(parents=True)
    texts = random_sentences(40, seed=3)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                                                 for i, t in enumerate(texts[:30])))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n"
                                                  for i, t in enumerate(texts[30:])))
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                              "".join(f"q{i}\td{i}\t1\n" for i in range(10)))
    retrieval, _ = retrieval_evaluator(folder)
    pairs = STSPairs("STS-B", texts[:20], texts[20:40], [float(i % 5) for i in range(20)], "test", "dev")
    evaluator = SequentialEvaluator([stsb_dev_evaluator(pairs), retrieval])
    _, result = _train(make_model(), evaluator, tmp_path)
    assert set(result.changes) == {"eval_retrieval_cosine_ndcg@10", "eval_retrieval_cosine_recall@100",
                                   "eval_sts-dev_spearman_cosine"}
    ndcg = result.changes["eval_retrieval_cosine_ndcg@10"]
    expected = 100 * (result.end["eval_retrieval_cosine_ndcg@10"] - result.start["eval_retrieval_cosine_ndcg@10"])
    assert ndcg.n == 10 and ndcg.delta == pytest.approx(expected, abs=1e-6)
    sts = result.changes["eval_sts-dev_spearman_cosine"]
    expected = 100 * (result.end["eval_sts-dev_spearman_cosine"] - result.start["eval_sts-dev_spearman_cosine"])
    assert sts.n == 20 and sts.unit == "pairs" and sts.delta == pytest.approx(expected, abs=1e-6)
    assert sts.low <= sts.delta <= sts.high
    recall = result.changes["eval_retrieval_cosine_recall@100"]
    expected = 100 * (result.end["eval_retrieval_cosine_recall@100"] - result.start["eval_retrieval_cosine_recall@100"])
    assert recall.n == 10 and recall.delta == pytest.approx(expected, abs=1e-6)
    # every line the summary prints carries its interval and verdict, approximate on 10 queries and 20 pairs
    labels = {"eval_retrieval_cosine_ndcg@10": "retrieval nDCG@10", "eval_retrieval_cosine_recall@100":
              "retrieval Recall@100", "eval_sts-dev_spearman_cosine": "STS-B dev"}
    rows = start_end_rows(labels, result.start, result.end, result.changes, decides=result.metric)
    for label, unit in (("retrieval nDCG@10", "10 queries"), ("retrieval Recall@100", "10 queries"),
                        ("STS-B dev", "20 pairs")):
        line = (rf"^-?\d+\.\d\d -> -?\d+\.\d\d, [+-]\d+\.\d\d \(95% CI .*, {unit}\): (a gain|within noise|a loss) "
                rf"\({unit}: intervals are approximate; docs: How far the verdict can be trusted\)")
        assert re.search(line, rows[label]), rows
    assert sum(row.endswith("; decides: the checkpoint metric") for row in rows.values()) == (result.metric in labels)


def test_start_end_rows_come_from_the_result_with_each_interval():
    """The command line prints these rows as they are: the scores x100, and the interval where the metric has one."""
    from st_infocse.evaluation import PairedChange

    result = StartEndResult(
        metric="eval_ndcg", greater_is_better=True, start={"eval_ndcg": 0.5, "eval_sts": 0.8},
        end={"eval_ndcg": 0.52, "eval_sts": 0.79}, start_step=0, end_step=10, start_score=0.5, end_score=0.52,
        best_step=10, best_score=0.52, kept="end", changes={"eval_ndcg": PairedChange(2.0, 0.5, 3.5, 0.01, 300)},
    )
    labels = {"eval_ndcg": "retrieval nDCG@10", "eval_sts": "STS-B dev", "eval_other": "absent"}
    rows = start_end_rows(labels, result.start, result.end, result.changes, decides=result.metric)
    assert rows == {
        "retrieval nDCG@10": "50.00 -> 52.00, +2.00 (95% CI +0.50 to +3.50, p = 0.010, 300 queries): a gain; "
                             "decides: the checkpoint metric",
        "STS-B dev": "80.00 -> 79.00, -1.00 (no per-query scores: the change is not judged)",
    }
    # one row: nothing to tell apart
    one = start_end_rows({"eval_ndcg": "nDCG"}, result.start, result.end, result.changes, decides=result.metric)
    assert one["nDCG"].endswith("300 queries): a gain")


def test_a_change_measured_on_30_queries_says_its_interval_is_approximate():
    """Below RELIABLE_FROM units the calibration found the verdict approximate: the line says so; from it, not."""
    from st_infocse.evaluation import PairedChange
    from st_infocse.evaluation.paired import RELIABLE_FROM

    assert RELIABLE_FROM == 100
    start, end = {"eval_r": 0.80}, {"eval_r": 0.82}
    few = start_end_rows({"eval_r": "retrieval Recall@100"}, start, end,
                         {"eval_r": PairedChange(2.0, -1.0, 5.0, 0.2, 30)})
    assert few["retrieval Recall@100"] == ("80.00 -> 82.00, +2.00 (95% CI -1.00 to +5.00, p = 0.200, 30 queries): "
                                           "within noise (30 queries: intervals are approximate; docs: How far the "
                                           "verdict can be trusted)")
    enough = start_end_rows({"eval_r": "R"}, start, end, {"eval_r": PairedChange(2.0, -1.0, 5.0, 0.2, RELIABLE_FROM)})
    assert "approximate" not in enough["R"]


def test_a_run_on_30_queries_prints_its_verdict_as_approximate(make_model, tmp_path):
    queries = QUERIES[:30]
    evaluator = _query_scored_evaluator({0: {q: START[q] for q in queries}, STEPS: {q: BROAD_GAIN[q] for q in queries}})
    _, result = _train(make_model(), evaluator, tmp_path)
    assert result.changes["eval_dev_ndcg@10"].n == 30
    assert result.lines()[0].endswith("a gain (30 queries: intervals are approximate; docs: How far the verdict "
                                      "can be trusted)")


def test_a_run_on_a_lora_adapter_hands_back_the_start_from_a_copy_of_the_adapter_alone(make_model, tmp_path):
    pytest.importorskip("peft")
    from st_infocse.training.lora import add_lora, lora_parameters

    model = make_model()
    add_lora(model)
    initial = _weights(model)
    copies = []
    original_acquire = StartingWeights.acquire

    def acquire(self, m, holder=None):  # the copy the callback takes: what it holds
        original_acquire(self, m, holder)
        copies.append(set(self.weights))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StartingWeights, "acquire", acquire)
        _, result = _train(model, _scripted_evaluator({0: 0.6, STEPS: 0.5}), tmp_path)
    assert copies == [{name for name, _ in lora_parameters(model)}]  # no full-weight copy
    assert result.kept == "start" and _same(_weights(model), initial)


def _result(kept: str, rule: str | None = "better", **values) -> StartEndResult:
    return StartEndResult(**{
        "metric": "eval_dev_ndcg@10", "greater_is_better": True, "start": {}, "end": {}, "start_step": 0,
        "end_step": 40, "start_score": 0.6123, "end_score": 0.6, "best_step": 20, "best_score": 0.6001, "kept": kept,
        "keep_trained_if": rule, "reason": "the start scored better on eval_dev_ndcg@10", **values})


def test_the_saved_line_says_which_model_was_handed_back_and_why():
    assert _result("start").saved_line() == ("the starting model: no checkpoint beat the model you started with "
                                             "(eval_dev_ndcg@10 61.23 vs best 60.01 at step 20)")
    assert _result("best checkpoint").saved_line() == "the best checkpoint, step 20 (eval_dev_ndcg@10 60.01)"
    assert _result("end", None).saved_line() == "the model at the last step, 40"
    reliable = _result("end", "reliable", reason="it gained", confirm_share=0.25).saved_line()
    assert reliable == ("the model at the last step, 40: it gained (--keep_trained_if reliable, --confirm_share "
                        "0.25: the trained model only when the interval lies above zero)")
    assert _result("start", "reliable", reason="not reliable").saved_line().startswith(
        "the starting model: not reliable (--keep_trained_if reliable: ")


def test_metrics_that_ended_below_their_start_are_warned_about_or_noted_when_the_start_was_saved():
    from st_infocse.training import ended_below_start

    labels = {"eval_a": "STS-B dev", "eval_b": "retrieval nDCG@10", "eval_c": "collapsed", "eval_d": "missing"}
    start = {"eval_a": 0.8, "eval_b": 0.5, "eval_c": 0.4, "eval_d": 0.3}
    end = {"eval_a": 0.7, "eval_b": 0.5, "eval_c": float("nan")}
    assert ended_below_start(labels, start, end) == ["warning: STS-B dev ended below its start (80.00 -> 70.00)",
                                                     "warning: collapsed ended below its start (40.00 -> nan)"]
    assert ended_below_start({"eval_a": "STS-B dev"}, start, end, start_saved=True) == [
        "note: the trained model's STS-B dev ended below its start (80.00 -> 70.00); the starting model was saved"]
    # where lower is better (a loss), rising is what is warned about: the result's own lines follow the same rule
    assert ended_below_start({"eval_loss": "loss"}, {"eval_loss": 0.2}, {"eval_loss": 0.3}, greater=lambda key: False) == [
        "warning: loss ended above its start (20.00 -> 30.00)"]
    both = _result("end", greater_is_better=False, metric="eval_loss", start={"eval_loss": 0.2, "eval_a": 0.8},
                   end={"eval_loss": 0.3, "eval_a": 0.7})
    assert both.worse_at_end == ["eval_loss", "eval_a"] and both.lines()[-2:] == [
        "warning: eval_loss ended above its start (20.00 -> 30.00)", "warning: eval_a ended below its start (80.00 -> 70.00)"]


def test_one_rule_says_whether_a_score_beats_another():
    """The rounds, InfoCSE++ and the start -> end callback read it: ``min_delta`` must be exceeded, a lower score wins
    when greater is not better, a missing score neither wins nor loses, and a NaN (a collapsed model) never wins."""
    from st_infocse.training.start_end import is_better

    assert is_better(0.52, 0.5) and not is_better(0.52, 0.5, min_delta=0.05) and is_better(0.56, 0.5, min_delta=0.05)
    assert is_better(0.4, 0.5, greater=False) and not is_better(0.48, 0.5, greater=False, min_delta=0.05)
    assert not is_better(None, 0.5) and not is_better(0.5, None)
    assert not is_better(float("nan"), 0.5) and is_better(0.1, float("nan"))


def test_the_summary_gives_a_runs_rows_its_warnings_and_whether_the_start_was_handed_back():
    labels = {"eval_dev_ndcg@10": "retrieval nDCG@10", "eval_sts": "STS-B dev"}
    result = _result("start", start={"eval_dev_ndcg@10": 0.6123, "eval_sts": 0.8},
                     end={"eval_dev_ndcg@10": 0.6, "eval_sts": 0.81})
    rows, warnings, start_kept = result.summary(labels)
    assert list(rows) == ["retrieval nDCG@10", "STS-B dev", "saved"] and start_kept
    assert rows["retrieval nDCG@10"].startswith("61.23 -> 60.00") and rows["retrieval nDCG@10"].endswith(
        "; decides: the checkpoint metric") and rows["saved"] == result.saved_line()
    assert warnings == ["note: the trained model's retrieval nDCG@10 ended below its start (61.23 -> 60.00); the "
                        "starting model was saved"]
    assert not _result("end", start={"eval_sts": 0.8}, end={"eval_sts": 0.7}).summary({"eval_sts": "STS-B dev"})[2]
    lower = _result("end", metric="eval_loss", greater_is_better=False, start={"eval_loss": 0.5}, end={"eval_loss": 0.4})
    assert lower.summary({"eval_loss": "loss"})[1] == []  # lower is better there: a fall is no warning
    assert lower.summary({"eval_loss": "loss"})[1] == lower.lines()[1:]  # as the printed lines say
