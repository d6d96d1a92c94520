"""Mine -> train -> re-mine rounds and InfoCSE++ on a tiny model (a handful of steps each)."""

from __future__ import annotations

import pytest
from datasets import Dataset
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from st_infocse.mining import mine_pairs, train_idc_rounds, train_infocse_plus_plus


def test_rounds_stop_when_the_score_drops_and_keep_the_best(
    make_model, topic_docs, small_training_args, scripted_evaluator, same_weights
):
    model = make_model()
    evaluator = scripted_evaluator([0.50, 0.60, 0.55, 0.99])  # initial, round 1, round 2, (never asked)
    result = train_idc_rounds(
        model,
        topic_docs,
        MultipleNegativesRankingLoss,
        rounds=3,
        evaluator=evaluator,
        training_args=small_training_args,
    )
    assert [r.round for r in result.rounds] == [1, 2]
    assert [r.score for r in result.rounds] == [0.60, 0.55]
    assert [r.improved for r in result.rounds] == [True, False]
    assert result.stopped_early and result.best_round == 1 and result.best_score == 0.60
    assert result.initial_score == 0.50
    # Training changed the weights each round, and the round-1 weights were put back.
    assert not same_weights(evaluator.seen[0], evaluator.seen[1])
    assert not same_weights(evaluator.seen[1], evaluator.seen[2])
    assert same_weights(model.state_dict(), evaluator.seen[1])
    for stats in result.rounds:
        assert stats.annotation == "idc"
        assert stats.pairs > 0 and stats.documents_used == len(topic_docs)
        assert stats.pairs == stats.mining["pairs"]
        assert stats.train_loss is not None and stats.train_loss > 0
    # Round 2 re-mined with the round-1 model: its pairs are what that model mines.
    model.load_state_dict(evaluator.seen[1])
    pairs, _ = mine_pairs(topic_docs, model, show_progress_bar=False)
    assert result.rounds[1].pairs == len(pairs)


def test_adjacent_first_round_and_a_real_evaluator(make_model, topic_docs, small_training_args):
    model = make_model()
    evaluator = EmbeddingSimilarityEvaluator(
        ["the cat sat", "the king won", "the river ran", "a dog ate"],
        ["a cat sat", "the queen lost", "the road moved", "the fish swam"],
        [1.0, 0.3, 0.2, 0.6],
        name="toy",
    )
    result = train_idc_rounds(
        model,
        topic_docs,
        MultipleNegativesRankingLoss,
        rounds=2,
        initial_annotation="adjacent",
        evaluator=evaluator,
        patience=2,
        training_args=small_training_args,
    )
    first, second = result.rounds  # patience 2: both rounds run whatever the scores
    assert not result.stopped_early
    assert first.annotation == "adjacent" and second.annotation == "idc"
    assert first.pairs == sum(len(doc) - 1 for doc in topic_docs)
    assert all(-1.0 <= r.score <= 1.0 for r in result.rounds)
    assert result.to_dict()["rounds"][0]["pairs"] == first.pairs


def test_an_annotator_mines_the_first_round_and_the_trained_model_the_next(make_model, topic_docs,
                                                                           small_training_args, tmp_path):
    import torch
    from datasets import load_from_disk

    def pair_set(pairs):
        return set(zip(pairs["anchor"], pairs["positive"], strict=True))

    class Annotator:  # a stand-in for another model: a fixed random vector per sentence
        def encode(self, texts, **kwargs):
            import zlib

            import numpy as np

            vectors = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=8) for t in texts]
            return np.stack([v / np.linalg.norm(v) for v in vectors])

    torch.manual_seed(1)
    annotator, model = Annotator(), make_model()
    by_annotator = pair_set(mine_pairs(topic_docs, annotator, show_progress_bar=False)[0])
    by_model = pair_set(mine_pairs(topic_docs, model, show_progress_bar=False)[0])
    assert by_annotator != by_model  # so the round-1 pairs tell which model mined them
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=2, annotator=annotator,
                              training_args=small_training_args, output_dir=tmp_path)
    first, second = result.rounds
    assert first.annotation == "idc (annotator)" and second.annotation == "idc"
    assert pair_set(load_from_disk(str(tmp_path / "round-1" / "pairs" / "shard-00000"))) == by_annotator
    with pytest.raises(ValueError, match="annotator mines round 1"):
        train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, initial_annotation="adjacent",
                         annotator=annotator)



def test_ctrl_c_in_a_round_names_the_rounds_begun_and_their_folder(make_model, topic_docs, small_training_args,
                                                                   tmp_path, monkeypatch):
    import st_infocse.mining.rounds as rounds

    trained = rounds.train_round
    calls = []

    def pressed_in_round_2(*args, **kwargs):  # Ctrl-C while round 2 trains, round 1 done
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return trained(*args, **kwargs)

    monkeypatch.setattr(rounds, "train_round", pressed_in_round_2)
    with pytest.raises(KeyboardInterrupt) as stopped:
        train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss, rounds=3,
                         training_args=small_training_args, output_dir=tmp_path)
    assert str(stopped.value) == (f"interrupted in IDC's round 2 of 3 (1 finished, their pairs and reports in "
                                  f"{tmp_path}); no round kept or saved")
    assert (tmp_path / "round-1" / "pairs").is_dir()
    calls.clear()
    with pytest.raises(KeyboardInterrupt) as stopped:  # no folder given: the temporary one is gone, so not named
        train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss, rounds=3,
                         training_args=small_training_args)
    assert str(stopped.value) == "interrupted in IDC's round 2 of 3 (1 finished); no round kept or saved"
    assert (tmp_path / "round-1" / "pairs").is_dir() and (tmp_path / "round-2" / "pairs").is_dir()

def test_an_annotator_given_by_folder_is_loaded_and_mines_the_first_round(make_model, topic_docs,
                                                                          small_training_args, tmp_path):
    import torch
    from datasets import load_from_disk

    from st_infocse.files import InputError
    from st_infocse.training.builder import load_model

    other = make_model()
    with torch.no_grad():  # weights of its own, so its pairs are not the trained model's
        for parameter in other.parameters():
            parameter.normal_(0, 0.5, generator=torch.Generator().manual_seed(parameter.numel()))
    other.save(str(tmp_path / "annotator"))
    by_annotator = mine_pairs(topic_docs, load_model(str(tmp_path / "annotator")).model, show_progress_bar=False)[0]
    model = make_model()
    assert by_annotator["positive"] != mine_pairs(topic_docs, model, show_progress_bar=False)[0]["positive"]
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=1,
                              annotator=str(tmp_path / "annotator"), training_args=small_training_args,
                              output_dir=tmp_path / "rounds")
    assert result.rounds[0].annotation == "idc (annotator)"
    mined = load_from_disk(str(tmp_path / "rounds" / "round-1" / "pairs" / "shard-00000"))
    assert mined["positive"] == by_annotator["positive"] and mined["anchor"] == by_annotator["anchor"]
    with pytest.raises(InputError, match="^annotator: cannot load model 'someorg/no-such-annotator'"):  # offline
        train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, annotator="someorg/no-such-annotator")
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(InputError, match="^annotator: Unrecognized model in .*not-a-model"):
        train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, annotator=str(tmp_path / "not-a-model"))


def test_round_training_args_are_the_defaults_the_seed_and_the_arguments_given(tmp_path):
    from sentence_transformers import SentenceTransformerTrainingArguments

    from st_infocse.mining import DEFAULT_TRAINING_ARGS, round_training_args

    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), seed=7, learning_rate=1e-3, max_steps=3)
    mapping = {r"^(?!model\.)": 1e-4}
    chosen = round_training_args(args, {"max_steps", "learning_rate", "output_dir", "docs"}, mapping)
    assert chosen == {**DEFAULT_TRAINING_ARGS, "seed": 7, "learning_rate": 1e-3, "max_steps": 3,
                      "learning_rate_mapping": mapping}
    assert list(chosen)[-2:] == ["max_steps", "learning_rate_mapping"]  # in the order the summary lists them
    assert round_training_args(args) == {**DEFAULT_TRAINING_ARGS, "seed": 7}
    own = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), learning_rate_mapping={"head": 0.1})
    assert round_training_args(own, {"learning_rate_mapping"}, mapping)["learning_rate_mapping"] == {"head": 0.1}


def test_rounds_refuse_the_trainer_arguments_they_decide_themselves(make_model, topic_docs):
    with pytest.raises(ValueError, match="load_best_model_at_end: the rounds evaluate"):
        train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss,
                         training_args={"load_best_model_at_end": True})


def test_rounds_refuse_a_one_shot_iterator(make_model):
    with pytest.raises(ValueError, match="one-shot iterator"):
        train_idc_rounds(make_model(), iter([["a b", "c d"]]), MultipleNegativesRankingLoss, rounds=2)


def test_infocse_plus_plus_keeps_the_best_fine_tuned_model(
    make_model, topic_docs, small_training_args, scripted_evaluator, same_weights
):
    model = make_model()
    labelled = Dataset.from_dict(
        {
            "anchor": ["the cat sat", "the king won", "the river ran", "the song played"] * 2,
            "positive": ["a cat sat", "a king won", "a river ran", "a song played"] * 2,
        }
    )
    # initial, cycle 1 (fine-tuned), cycle 2 (fine-tuned): the drop stops the loop after cycle 2.
    evaluator = scripted_evaluator([0.30, 0.50, 0.40, 0.90])
    result = train_infocse_plus_plus(
        model,
        topic_docs,
        labelled,
        evaluator,
        MultipleNegativesRankingLoss,
        cycles=3,
        idc_rounds=1,
        idc_evaluator=None,
        idc_training_args=small_training_args,
        supervised_training_args=small_training_args,
    )
    assert [c.score for c in result.cycles] == [0.50, 0.40]
    assert result.best_cycle == 1 and result.best_score == 0.50 and result.stopped_early
    assert same_weights(model.state_dict(), evaluator.seen[1])
    assert all(len(c.idc.rounds) == 1 and c.idc.rounds[0].pairs > 0 for c in result.cycles)
    assert all(c.finetune_loss is not None for c in result.cycles)
    assert result.to_dict()["cycles"][1]["score"] == 0.40


def test_rounds_with_infocse_loss(make_model, topic_docs, small_training_args):
    from st_infocse.losses import InfoCSELoss

    model = make_model()
    result = train_idc_rounds(
        model,
        topic_docs,
        lambda m: InfoCSELoss(m, lambda_=1e-5),
        rounds=2,
        training_args=small_training_args,
    )
    assert [r.annotation for r in result.rounds] == ["idc", "idc"]
    assert all(r.pairs > 0 and r.train_loss is not None and r.train_loss > 0 for r in result.rounds)
    assert result.best_round == 2 and not result.stopped_early


class _QueryScored:
    """Per-query scores from a script, one list per call; its primary metric is their mean."""

    greater_is_better = True
    primary_metric = "own_ndcg@10"

    def __init__(self, calls: list[dict[str, float]]) -> None:
        self.calls, self.seen, self.last = calls, [], {}

    def __call__(self, model) -> dict[str, float]:
        self.seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        self.last = self.calls[len(self.seen) - 1]
        return {self.primary_metric: sum(self.last.values()) / len(self.last)}

    def units(self):
        from st_infocse.evaluation import UnitScores

        return {self.primary_metric: UnitScores("queries", scores=dict(self.last))}


_START = {f"q{i}": 0.5 for i in range(100)}
_ONE_QUERY_UP = _START | {"q7": 0.9}  # +0.4 x100 on average: a higher mean, not a reliable gain
_ALL_UP = {q: 0.6 + 0.01 * (i % 4) for i, q in enumerate(_START)}


@pytest.mark.parametrize(("rule", "round_1", "kept_round"), [
    ("better", _ONE_QUERY_UP, 1), ("reliable", _ONE_QUERY_UP, 0), ("reliable", _ALL_UP, 1),
])
def test_rounds_keep_a_round_by_the_rule(make_model, topic_docs, small_training_args, same_weights, rule, round_1,
                                         kept_round):
    model = make_model()
    evaluator = _QueryScored([_START, round_1])
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=1, evaluator=evaluator,
                              training_args=small_training_args, keep_trained_if=rule)
    change = result.changes["own_ndcg@10"]
    assert change.n == 100 and change.delta > 0
    assert change.verdict == ("a gain" if round_1 is _ALL_UP else "within noise")
    assert result.best_round == kept_round and result.keep_trained_if == rule
    assert same_weights(model.state_dict(), evaluator.seen[kept_round])
    assert result.to_dict()["changes"]["own_ndcg@10"]["verdict"] == change.verdict


def test_rounds_refuse_reliable_without_unit_scores(make_model, topic_docs, small_training_args, scripted_evaluator):
    with pytest.raises(ValueError, match="needs per-query"):
        train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss, rounds=1,
                         evaluator=scripted_evaluator([0.5, 0.6]), training_args=small_training_args,
                         keep_trained_if="reliable")
    with pytest.raises(ValueError, match="needs an evaluator"):
        train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss, rounds=1,
                         training_args=small_training_args, keep_trained_if="reliable")


# +5 on 14 queries, -5 on 4: a gain on its own p (0.031), within noise once doubled for two rounds judged
_EDGE = {q: 0.5 + (0.05 if i < 14 else 0.0) - (0.05 if 14 <= i < 18 else 0.0) for i, q in enumerate(_START)}


def test_each_round_is_judged_against_the_start_with_holms_p_over_the_rounds(make_model, topic_docs,
                                                                            small_training_args):
    """Two rounds judged on the same queries: each round's p is Holm-adjusted for the two, its verdict read off
    the adjusted p, and the candidate's printed change (what the keep rule reads) carries that adjusted p."""
    from st_infocse.evaluation.paired import holm, paired_change

    evaluator = _QueryScored([_START, _EDGE, _ONE_QUERY_UP])
    result = train_idc_rounds(make_model(), topic_docs, MultipleNegativesRankingLoss, rounds=2, evaluator=evaluator,
                              training_args=small_training_args, patience=2)
    raw = [paired_change({q: 100 * v for q, v in _START.items()}, {q: 100 * v for q, v in after.items()})
           for after in (_EDGE, _ONE_QUERY_UP)]
    assert [r.change.p for r in result.rounds] == pytest.approx([c.p for c in raw])
    assert [r.p_holm for r in result.rounds] == pytest.approx(holm([c.p for c in raw]))
    assert raw[0].p < 0.05 <= result.rounds[0].p_holm and raw[0].verdict == "a gain"
    assert [r.verdict for r in result.rounds] == ["within noise", "within noise"]
    assert result.rounds_judged == 2 and result.best_round == 1
    assert result.changes["own_ndcg@10"].p == pytest.approx(result.rounds[0].p_holm)
    record = result.to_dict()
    assert record["multiple_rounds"] == {"rule": "holm", "family": 2}
    assert [r["verdict"] for r in record["rounds"]] == ["within noise", "within noise"]


def test_reliable_reads_the_holm_adjusted_p_of_the_round_it_would_keep(make_model, topic_docs, small_training_args,
                                                                       same_weights):
    """Round 1 a gain on its own p, not once adjusted for the two rounds judged: the rule keeps the start."""
    model = make_model()
    evaluator = _QueryScored([_START, _EDGE, _START])
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=2, evaluator=evaluator,
                              training_args=small_training_args, keep_trained_if="reliable", patience=2)
    assert result.rounds[0].change.verdict == "a gain" and result.rounds[0].verdict == "within noise"
    assert result.best_round == 0 and same_weights(model.state_dict(), evaluator.seen[0])


def test_keep_start_if_better_false_keeps_the_last_round(make_model, topic_docs, small_training_args,
                                                         scripted_evaluator, same_weights):
    model = make_model()
    evaluator = scripted_evaluator([0.50, 0.40])
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=1, evaluator=evaluator,
                              training_args=small_training_args, keep_start_if_better=False)
    assert result.best_round == 1 and result.best_score == 0.40
    assert same_weights(model.state_dict(), evaluator.seen[1]) and not same_weights(evaluator.seen[0],
                                                                                    evaluator.seen[1])
    with pytest.raises(ValueError, match="keep_start_if_better=False turns off"):
        train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=1, evaluator=evaluator,
                         keep_trained_if="reliable", keep_start_if_better=False)


def test_a_weight_anchor_keeps_its_share_of_each_rounds_change(make_model, topic_docs, small_training_args):
    """The same round trained twice from the same start, once anchored at 0.25: the anchored weights are
    start + 0.25 x (trained - start)."""
    import torch

    start = make_model()
    before = {k: v.clone() for k, v in start.state_dict().items()}
    train_idc_rounds(start, topic_docs, MultipleNegativesRankingLoss, rounds=1, training_args=small_training_args)
    anchored = make_model()
    train_idc_rounds(anchored, topic_docs, MultipleNegativesRankingLoss, rounds=1, training_args=small_training_args,
                     weight_anchor=0.25)
    trained, got = start.state_dict(), anchored.state_dict()
    moved = [k for k in before if before[k].is_floating_point() and not torch.equal(before[k], trained[k])]
    assert moved
    for key in moved:
        torch.testing.assert_close(got[key], before[key] + 0.25 * (trained[key] - before[key]), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="weight_anchor"):
        train_idc_rounds(anchored, topic_docs, MultipleNegativesRankingLoss, rounds=1, weight_anchor=0)


def test_rounds_on_a_lora_adapter_train_and_keep_the_adapter_alone(make_model, topic_docs, small_training_args):
    """Every round trains the adapter only; round 2 (worse) is undone by putting round 1's adapter back, and the
    reliable rule, finding no gain, puts the start's adapter back: merged, the model is then the start exactly."""
    import torch

    from st_infocse.training.lora import LoRASettings, add_lora, lora_parameters, merge_lora

    pytest.importorskip("peft")
    texts = ["the cat sat on the road", "a king wrote a song"]
    model = make_model()
    start_embeddings = model.encode(texts, convert_to_tensor=True)
    add_lora(model, LoRASettings(r=2))
    frozen = {k: v.clone() for k, v in model.state_dict().items() if ".lora_" not in k}
    adapters: list[dict[str, torch.Tensor]] = []

    class Scored(_QueryScored):
        def __call__(self, scored):
            adapters.append({name: p.detach().clone() for name, p in lora_parameters(scored)})
            return super().__call__(scored)

    evaluator = Scored([_START, _ONE_QUERY_UP, _START])
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=2, evaluator=evaluator,
                              training_args={**small_training_args, "learning_rate": 1e-2}, patience=2)
    assert result.best_round == 1 and len(result.rounds) == 2
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in frozen.items())  # only the adapter trained
    assert not all(torch.equal(adapters[1][k], adapters[2][k]) for k in adapters[1])
    assert all(torch.equal(p, adapters[1][name]) for name, p in lora_parameters(model))  # round 1's adapter back

    model = make_model()
    add_lora(model, LoRASettings(r=2))
    evaluator = Scored([_START, _ONE_QUERY_UP])
    result = train_idc_rounds(model, topic_docs, MultipleNegativesRankingLoss, rounds=1, evaluator=evaluator,
                              training_args={**small_training_args, "learning_rate": 1e-2}, keep_trained_if="reliable")
    assert result.best_round == 0
    merge_lora(model)
    torch.testing.assert_close(model.encode(texts, convert_to_tensor=True), start_embeddings)


def test_the_round_lines_give_holms_p_when_several_rounds_were_judged():
    from st_infocse.evaluation.paired import PairedChange
    from st_infocse.mining.round_results import RoundsResult, RoundStats

    def stat(number, p, p_holm):
        return RoundStats(number, "idc", 100, 2.0, 50, {}, 1.0, 0.5, True, 3.2, 40.6, {},
                          PairedChange(1.5, 0.2, 2.8, p, 150), p_holm)

    result = RoundsResult(None, [stat(1, 0.03, 0.06), stat(2, 0.004, 0.008)], 0.4, 2, 0.5, False, rounds_judged=2)
    rows = result.round_rows()
    assert rows["round 1"] == ("idc: 100 pairs (2.00/document); mining 3 s, training 41 s; from the start +1.50 (95% "
                               "CI +0.20 to +2.80, p = 0.030, Holm p = 0.060 over 2 rounds, 150 queries): within noise")
    assert rows["round 2"].endswith("p = 0.004, Holm p = 0.008 over 2 rounds, 150 queries): a gain (kept)")
    assert rows["rounds judged"] == ("2 against the start on the same units: each round's p is Holm-adjusted for the "
                                     "2 (its interval its own), and the verdicts and the keep rule read the adjusted p")
    unjudged = RoundsResult(None, [RoundStats(1, "adjacent", 7, 0.5, 14, {}, None, 0.4321, True, 0.0, 1.0, {})],
                            0.4, 1, 0.4321, False)
    assert unjudged.round_rows() == {"round 1": "adjacent: 7 pairs (0.50/document); mining 0 s, training 1 s; "
                                                "score 43.21 (kept)"}


def test_the_rounds_saved_line_says_the_reliable_gain_decided():
    """Under ``keep_trained_if="reliable"`` the printed gain chose the round, so the line says it reads high."""
    from st_infocse.mining.round_results import RoundsResult

    def saved(best_round, rule):
        return RoundsResult(None, [], 0.4, best_round, 0.5, False, keep_trained_if=rule).saved_line()

    kept = saved(2, "reliable")
    assert kept.startswith("the weights of round 2") and "that gain decided, so it reads high there" in kept
    assert saved(2, "better") == "the weights of round 2"
    assert saved(0, "reliable").startswith("the starting model: no round's gain was reliable")
    assert saved(0, "better") == "the starting model: no round beat it"


def test_the_rounds_summary_compares_the_trained_candidate_with_the_start_under_the_trainers_names():
    from st_infocse.mining.round_results import RoundsResult

    result = RoundsResult(None, [], 0.8, 0, 0.8, False, initial_metrics={"sts": 0.8}, trained_metrics={"sts": 0.7})
    rows, warnings, start_kept = result.summary({"eval_sts": "STS-B dev"})
    assert rows == {"STS-B dev": "80.00 -> 70.00, -10.00 (no per-query scores: the change is not judged)",
                    "saved": "the starting model: no round beat it"} and start_kept
    assert warnings == ["note: the trained model's STS-B dev ended below its start (80.00 -> 70.00); the starting "
                        "model was saved"]
    assert RoundsResult(None, [], None, 1, None, False).summary({"eval_sts": "STS-B dev"}) == ({}, [], False)
