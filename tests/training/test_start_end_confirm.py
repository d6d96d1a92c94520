"""``confirm_share``: the keep rule decides on one part of the queries and the deciding metric's change is reported
on the rest, which the decision never saw; without it, the reason says that the gain printed is the one that
decided."""

from __future__ import annotations

import json

import pytest

from st_infocse.evaluation import UnitScores
from st_infocse.evaluation.paired import split_units
from st_infocse.training import StartEndCallback

from .test_start_end import BROAD_GAIN, QUERIES, START, STEPS, _query_scored_evaluator, _same, _train, _weights


def _train_with_share(model, evaluator, tmp_path, share):
    return _train(model, evaluator, tmp_path, keep_trained_if="reliable", confirm_share=share)


def test_the_rule_decides_on_the_rest_and_the_held_out_change_is_what_is_reported(make_model, tmp_path):
    rest, held = split_units(UnitScores("queries", dict(START)), 0.4, seed=0)  # the split the run draws (seed 0)
    end = {q: BROAD_GAIN[q] if q in rest.scores else START[q] for q in QUERIES}  # a gain only where it decides
    model = make_model()
    start = _weights(model)
    _, result = _train_with_share(model, _query_scored_evaluator({0: START, STEPS: end}), tmp_path, 0.4)
    decided, reported = result.decided_on, result.changes["eval_dev_ndcg@10"]
    assert (decided.n, decided.unit, decided.verdict) == (120, "queries", "a gain")
    assert (reported.n, reported.unit, reported.verdict) == (80, "held-out queries", "within noise")
    assert reported.delta == 0 and result.kept == "end" and not _same(start, _weights(model))
    assert "on the 120 queries the rule read; the change printed for it is on the others" in result.reason and result.confirm_share == 0.4
    lines = result.lines()
    assert "80 held-out queries): within noise" in lines[0]
    assert any(line.startswith("eval_dev_ndcg@10 on the units the keep rule read: +") for line in lines)
    recorded = json.loads(json.dumps(result.to_dict()))
    assert recorded["decided_on"]["n"] == 120 and recorded["changes"]["eval_dev_ndcg@10"]["n"] == 80
    assert recorded["confirm_share"] == 0.4


def test_a_gain_on_the_held_out_part_alone_does_not_keep_the_trained_model(make_model, tmp_path):
    rest, held = split_units(UnitScores("queries", dict(START)), 0.5, seed=0)
    end = {q: BROAD_GAIN[q] if q in held.scores else START[q] for q in QUERIES}
    model = make_model()
    start = _weights(model)
    _, result = _train_with_share(model, _query_scored_evaluator({0: START, STEPS: end}), tmp_path, 0.5)
    assert result.kept == "start" and _same(start, _weights(model))
    assert result.decided_on.verdict == "within noise" and result.changes["eval_dev_ndcg@10"].verdict == "a gain"


def test_without_a_share_the_reason_says_the_printed_gain_decided(make_model, tmp_path):
    _, result = _train(make_model(), _query_scored_evaluator({0: START, STEPS: BROAD_GAIN}), tmp_path,
                       keep_trained_if="reliable")
    assert result.kept == "end" and result.decided_on is None and result.confirm_share is None
    assert "on the queries it is printed for: the printed gain is the one that decided" in result.reason


def test_the_share_is_refused_without_the_reliable_rule_or_outside_zero_to_one(make_model, tmp_path):
    evaluator = _query_scored_evaluator({0: START, STEPS: START})
    for rule, share in (("better", 0.5), ("reliable", 0.0), ("reliable", 1.0)):
        with pytest.raises(ValueError, match="confirm_share"):
            StartEndCallback(evaluator, keep_trained_if=rule, confirm_share=share)
    few = _query_scored_evaluator({0: {"q0": 0.5, "q1": 0.5}, STEPS: {"q0": 0.6, "q1": 0.6}})
    with pytest.raises(ValueError, match="leaves none on one side"):
        _train_with_share(make_model(), few, tmp_path, 0.1)


# ------------------------------------------------------------------------------ the command line

from ..test_cli_own_model import _one_line_error, _summary, data, user_model  # noqa: E402, F401 - fixtures
from ..test_cli_own_model import _train as _cli_train  # noqa: E402


def test_the_command_line_prints_and_records_the_held_out_change(user_model, data, tmp_path, capsys):  # noqa: F811
    from st_infocse.cli import main

    out = tmp_path / "run"
    flags = ("--eval_retrieval", str(data["beir"]), "--stsb_dev", "none", "--keep_trained_if", "reliable",
             "--confirm_share", "0.5", "--eval_strategy", "no", "--save_strategy", "no",
             "--load_best_model_at_end", "false")
    assert main(_cli_train(user_model, data, out, *flags)) == 0
    done = _summary(capsys.readouterr().out)
    record = json.loads((out / "run_summary.json").read_text())
    assert record["settings"]["confirm_share"] == 0.5 and record["start_end"]["confirm_share"] == 0.5
    reported = record["start_end"]["changes"]["eval_retrieval_dot_ndcg@10"]
    decided = record["start_end"]["decided_on"]
    assert reported["unit"] == "held-out queries" and decided["unit"] == "queries"
    assert reported["n"] + decided["n"] == 10 and reported["n"] == 5  # the 10 queries of the test folder
    assert "5 held-out queries)" in done


@pytest.mark.parametrize(("flags", "message"), [
    (("--keep_trained_if", "better", "--confirm_share", "0.5"),
     "--confirm_share holds queries out of the decision of keep_trained_if='reliable', got keep_trained_if='better'"),
    (("--keep_trained_if", "reliable", "--confirm_share", "1"), "--confirm_share must lie in (0, 1)"),
    (("--keep_trained_if", "reliable", "--confirm_share", "0.5", "--stsb_dev", "none"),
     "--keep_trained_if reliable judges the gain on your queries: give --eval_retrieval"),  # nothing to split
])
def test_a_share_that_cannot_apply_is_refused(user_model, data, tmp_path, capsys, flags, message):  # noqa: F811
    from st_infocse.cli import main

    retrieval = () if "none" in flags else ("--eval_retrieval", str(data["beir"]))  # "none": nothing measures it
    assert main(_cli_train(user_model, data, tmp_path / "run", *retrieval, *flags)) == 2
    assert message in _one_line_error(capsys)


def test_idc_refuses_a_share(user_model, data, tmp_path, capsys):  # noqa: F811
    from st_infocse.cli import main

    from ..test_cli_own_model import _docs, _idc

    argv = _idc(user_model, _docs(tmp_path), tmp_path / "run", "--eval_retrieval", str(data["beir"]),
                "--keep_trained_if", "reliable", "--confirm_share", "0.5")
    assert main(argv) == 2
    assert "--confirm_share does not apply to --objective idc: its rounds" in _one_line_error(capsys)
