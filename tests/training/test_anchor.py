"""The weight anchor: a share of the trained change kept, applied after the last step and before the last
evaluation, so that the scored, compared and saved model is the anchored one."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from st_infocse.training import StartEndCallback, WeightAnchorCallback, toward_start

from ..conftest import random_sentences


def _weights(model) -> dict[str, torch.Tensor]:
    return {key: value.detach().clone() for key, value in model.state_dict().items()}


def _pairs() -> Dataset:
    texts = random_sentences(32, seed=1)
    return Dataset.from_dict({"anchor": texts[:16], "positive": texts[16:]})


def _recording(score: float = 0.9):
    """An evaluator that keeps the weights it saw at each step; the start scores 0.5, every later step ``score``."""
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

    class Recording(SentenceEvaluator):
        def __init__(self) -> None:
            super().__init__()
            self.primary_metric = "recorded_score"
            self.seen: dict[int, dict[str, torch.Tensor]] = {}

        def __call__(self, model, output_path=None, epoch=-1, steps=-1):
            self.seen[steps] = _weights(model)
            return {"recorded_score": score if steps else 0.5}

    return Recording()


def test_toward_start_keeps_the_share_of_the_change_and_integer_buffers_as_trained():
    start = {"w": torch.zeros(3), "ids": torch.arange(3)}
    trained = {"w": torch.tensor([2.0, -4.0, 1.0]), "ids": torch.arange(3) + 1}
    merged = toward_start(start, trained, 0.5)
    assert torch.equal(merged["w"], torch.tensor([1.0, -2.0, 0.5])) and torch.equal(merged["ids"], trained["ids"])
    assert torch.equal(toward_start(start, trained, 1.0)["w"], trained["w"])
    with pytest.raises(ValueError, match="differ"):
        toward_start(start, {"w": trained["w"]}, 0.5)
    for share in (0.0, 1.5, -0.5):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            toward_start(start, trained, share)
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            WeightAnchorCallback(share)


def test_the_anchored_model_is_the_one_evaluated_at_the_end_and_left_in_memory(make_model, run_trainer):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    free = make_model()
    start = _weights(free)
    run_trainer(free, MultipleNegativesRankingLoss(free), _pairs(), learning_rate=1e-2)
    trained = _weights(free)
    assert not all(torch.equal(start[k], trained[k]) for k in start)  # the run moved the weights

    model = make_model()
    evaluator, anchor = _recording(), WeightAnchorCallback(0.5)
    ends = StartEndCallback(evaluator)
    run_trainer(model, MultipleNegativesRankingLoss(model), _pairs(), learning_rate=1e-2, callbacks=[anchor, ends])
    expected = toward_start(start, trained, 0.5)
    held = _weights(model)
    for key, value in expected.items():
        torch.testing.assert_close(held[key], value)
    torch.testing.assert_close(evaluator.seen[3], held)  # the end was scored on the anchored weights
    assert anchor.applied_at == 3 and anchor.start_weights.weights is None  # the copy of the start is dropped
    assert ends.result.kept == "end"


def test_an_anchor_of_one_leaves_the_trained_model(make_model, run_trainer):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    free = make_model()
    run_trainer(free, MultipleNegativesRankingLoss(free), _pairs(), learning_rate=1e-2)
    model = make_model()
    run_trainer(model, MultipleNegativesRankingLoss(model), _pairs(), learning_rate=1e-2,
                callbacks=[WeightAnchorCallback(1.0)])
    for key, value in _weights(free).items():
        assert torch.equal(_weights(model)[key], value)


@pytest.mark.parametrize("eval_steps", [1, 3])
def test_a_best_checkpoint_from_before_the_last_step_is_refused(make_model, tmp_path, eval_steps):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = make_model()
    evaluator, anchor = _recording(), WeightAnchorCallback(0.5)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"), max_steps=3, per_device_train_batch_size=8, learning_rate=1e-2,
        report_to="none", eval_strategy="steps", eval_steps=eval_steps, save_strategy="steps",
        save_steps=eval_steps, load_best_model_at_end=True, metric_for_best_model="recorded_score", use_cpu=True,
        disable_tqdm=True)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=_pairs(), evaluator=evaluator,
                                         loss=MultipleNegativesRankingLoss(model), callbacks=[anchor])
    if eval_steps < 3:
        with pytest.raises(ValueError, match="load_best_model_at_end could load an earlier checkpoint"):
            trainer.train()
        return
    trainer.train()  # one evaluation, at the last step: the best checkpoint is the anchored model
    assert anchor.applied_at == 3
    torch.testing.assert_close(evaluator.seen[3], _weights(model))


def test_evaluations_before_the_last_step_are_counted_as_the_trainer_schedules_them(tmp_path):
    from transformers import TrainingArguments

    from st_infocse.training import evaluates_before_last_step

    def args(**kwargs):
        return TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none", **kwargs)

    assert not evaluates_before_last_step(args(eval_strategy="no"), 100)
    assert not evaluates_before_last_step(args(eval_strategy="steps", eval_steps=100), 100)
    assert evaluates_before_last_step(args(eval_strategy="steps", eval_steps=50), 100)
    assert evaluates_before_last_step(args(eval_strategy="steps", eval_steps=0.5), 100)  # a fraction of the run
    assert evaluates_before_last_step(args(eval_strategy="steps", logging_steps=10), 100)  # eval_steps unset
    assert evaluates_before_last_step(args(eval_strategy="epoch", num_train_epochs=2), 100)
    assert not evaluates_before_last_step(args(eval_strategy="epoch", num_train_epochs=1), 100)



def test_the_anchor_and_the_start_end_callback_share_one_copy_of_the_start(make_model, tmp_path):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from st_infocse.training import StartEndCallback, StartingWeights

    model = make_model()
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    shared = StartingWeights()
    taken = []
    real_acquire = shared.acquire
    shared.acquire = lambda m, holder: (taken.append(shared.weights is None), real_acquire(m, holder))[1]

    class Score:
        primary_metric = "score"
        greater_is_better = True

        def __call__(self, model, *args, **kwargs):
            return {"score": 0.0}  # never better than the start: the start is not restored (equal scores)

    texts = [f"sentence number {i} about things" for i in range(32)]
    from datasets import Dataset

    args = SentenceTransformerTrainingArguments(str(tmp_path / "run"), max_steps=3, per_device_train_batch_size=8,
                                               learning_rate=1e-2, save_strategy="no", report_to="none",
                                               use_cpu=True, disable_tqdm=True, eval_strategy="no")
    ends = StartEndCallback(Score(), start_weights=shared)
    anchor = WeightAnchorCallback(0.25, start_weights=shared)
    trainer = SentenceTransformerTrainer(model=model, args=args, loss=MultipleNegativesRankingLoss(model),
                                         train_dataset=Dataset.from_dict({"a": texts[:16], "b": texts[16:]}),
                                         callbacks=[ends, anchor])
    trainer.train()
    assert taken == [True, False]  # one copy taken, by the first of the two
    assert shared.weights is None and not shared.holders  # and dropped when both are done
    assert ends.result.kept == "end" and anchor.applied_at == 3
    key = next(k for k in start if k.endswith("query.weight"))
    assert not torch.equal(trainer.model.state_dict()[key], start[key])  # trained, then anchored: not the start


def test_fit_to_anchor_turns_off_an_unanchored_best_checkpoint_or_refuses_it_when_asked(tmp_path):
    from st_infocse.training import PaperTrainingArguments, fit_to_anchor

    def args(**kwargs):
        return PaperTrainingArguments(output_dir=str(tmp_path), use_cpu=True, **kwargs)

    anchored = args(eval_steps=50, save_steps=50)
    assert fit_to_anchor(anchored, 1.0, 100) is None and anchored.load_best_model_at_end  # no anchor: left as it is
    assert fit_to_anchor(anchored, 0.25, 100) == ("0.25 of the trained change kept after step 100 (start + 0.25 x "
                                                   "(trained - start))")
    assert not anchored.load_best_model_at_end  # an evaluation at step 50 could have been the best checkpoint
    at_the_end = args(eval_steps=100, save_steps=100)
    assert fit_to_anchor(at_the_end, 0.5, 100, load_best_asked=True) and at_the_end.load_best_model_at_end
    with pytest.raises(ValueError, match=r"--load_best_model_at_end could hand back an earlier checkpoint, not "
                                         r"anchored: evaluate only at the end \(--eval_steps 100\)"):
        fit_to_anchor(args(eval_steps=50, save_steps=50), 0.5, 100, load_best_asked=True)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        fit_to_anchor(args(), 0.0, 100)
