"""Transfer tasks: SentEval protocols with hand-checkable features."""

from __future__ import annotations

import numpy as np
import pytest

from st_infocse.evaluation import TransferData, classify, evaluate_transfer

pytest.importorskip("sklearn")


def test_cross_validation_on_separable_and_constant_features():
    labels = [1] * 6 + [0] * 4
    data = TransferData("toy", [f"s{i}" for i in range(10)], labels, ("neg", "pos"), "hand-made")
    separable = np.array([[2.0 * y - 1.0] for y in labels])
    result = classify(data, separable, kfold=2, inner_kfold=2)
    assert result.accuracy == pytest.approx(100.0)
    assert result.protocol == "2-fold CV" and len(result.chosen_c) == 2
    assert classify(data, 1e-3 * separable, kfold=2, inner_kfold=2, standardize=True).accuracy == pytest.approx(100.0)
    # constant features: each fold predicts its training majority (3 positives vs 2 negatives), so the
    # stratified test fold (3 positives, 2 negatives) scores 3/5
    constant = np.zeros((10, 3))
    assert classify(data, constant, kfold=2, inner_kfold=2).accuracy == pytest.approx(60.0)


def _senteval(ev, root):
    good, bad = (
        ["good film", "nice film", "great plot", "fine acting"],
        ["bad film", "dull plot", "poor acting", "awful"],
    )
    ev.write_lines(root / "MR" / "rt-polarity.pos", good)
    ev.write_lines(root / "MR" / "rt-polarity.neg", bad)
    ev.write_lines(root / "SST" / "binary" / "sentiment-train", [f"{s}\t1" for s in good] + [f"{s}\t0" for s in bad])
    ev.write_lines(root / "SST" / "binary" / "sentiment-dev", ["lovely\t1", "boring\t0"])
    ev.write_lines(root / "SST" / "binary" / "sentiment-test", ["superb\t1", "weak\t0", "meh\t1"])
    ev.write_lines(
        root / "TREC" / "train_5500.label",
        ["HUM:ind Who won ?", "HUM:ind Who lost ?", "NUM:date When did it end ?", "NUM:count How many came ?"] * 2,
    )
    ev.write_lines(root / "TREC" / "TREC_10.label", ["HUM:ind Who came ?", "NUM:date When was it ?"])
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    train = [f"1\t{i}\t{i}\tsame {i}\tsame {i}" for i in range(4)] + [
        f"0\t{i}\t{i}\tleft {i}\tright {i}" for i in range(4)
    ]
    ev.write_lines(root / "MRPC" / "msr_paraphrase_train.txt", [header, *train])
    ev.write_lines(
        root / "MRPC" / "msr_paraphrase_test.txt", [header, "1\t9\t9\tsame 9\tsame 9", "0\t8\t8\tleft 8\tright 8"]
    )


def _features(text):
    """Positive words -> +1, negative -> -1, questions by their first word, paraphrase pairs by their words."""
    positive = {"good", "nice", "great", "fine", "lovely", "superb", "meh"}
    first = text.split()[0]
    return [
        1.0 if first in positive else -1.0,
        1.0 if first == "Who" else 0.0,
        1.0 if first in ("When", "How") else 0.0,
        1.0 if first == "left" else (-1.0 if first == "right" else 0.5),
    ]


def test_evaluate_transfer_protocols(ev, tmp_path):
    _senteval(ev, tmp_path)

    class Encoder(ev.StubEncoder):
        def encode(self, sentences, **kwargs):
            self.table.update({s: _features(s) for s in sentences})
            return super().encode(sentences, **kwargs)

    result = evaluate_transfer(
        Encoder(), tmp_path, tasks=["MR", "SST-2", "TREC", "MRPC"], kfold=2, inner_kfold=2, model_label="stub"
    )
    assert list(result.scores) == ["MR", "SST2", "TREC", "MRPC", "Avg."]
    # every task is separable by construction
    assert result.scores == pytest.approx({"MR": 100.0, "SST2": 100.0, "TREC": 100.0, "MRPC": 100.0, "Avg.": 100.0})
    assert result.tasks["MR"].protocol == "2-fold CV"
    assert result.tasks["SST2"].protocol == "C chosen on dev" and result.tasks["SST2"].n_test == 3
    assert result.tasks["TREC"].protocol == "C chosen by 2-fold CV on train"
    assert result.tasks["MRPC"].f1 == pytest.approx(100.0)
    row = str(result).splitlines()[1].split()
    assert row == ["stub", "100.00", "100.00", "100.00", "100.00", "100.00"]
    assert result.to_dict()["tasks"]["TREC"]["n_train"] == 8
    assert result.to_dict()["scale"] == "x100"


def test_mrpc_features_are_abs_difference_and_product(ev, tmp_path):
    _senteval(ev, tmp_path)
    from st_infocse.evaluation import load_senteval_transfer
    from st_infocse.evaluation.transfer import _features as pair_features

    stub = ev.StubEncoder({"same 0": [1.0, 2.0], "left 0": [3.0, -1.0], "right 0": [1.0, 1.0]})
    data = load_senteval_transfer(tmp_path, "MRPC")
    x = pair_features(stub, [("same 0", "same 0"), ("left 0", "right 0")], 8, False)
    np.testing.assert_allclose(x, [[0.0, 0.0, 1.0, 4.0], [2.0, 2.0, 3.0, -1.0]])
    assert all(isinstance(pair, tuple) for pair in data.train)  # what _features reads as a pair task
