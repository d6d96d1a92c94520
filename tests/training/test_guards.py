"""Bad training text gives one clear error that points at clean_texts, through SentenceTransformerTrainer."""

import logging
import traceback

import pytest
from datasets import Dataset, DatasetDict, IterableDataset

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback, check_training_dataset, clean_texts

from ..conftest import random_sentences

HINT = "st_infocse.training.clean_texts(dataset, column='text')"


def _assert_raised_before_the_trainer(error: pytest.ExceptionInfo) -> None:
    # The check runs on the user's line, so nothing from torch, datasets or sentence-transformers is in between.
    frames = traceback.extract_tb(error.tb)
    assert frames[-1].filename.endswith("guards.py")
    assert not any("site-packages" in frame.filename for frame in frames)


def _with_none(n: int, at: list[int]) -> Dataset:
    texts: list[str | None] = list(random_sentences(n))
    for index in at:
        texts[index] = None
    return Dataset.from_dict({"text": texts})


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        (Dataset.from_dict({"text": []}), "Training dataset cannot train: it has no rows."),
        (Dataset.from_dict({"text": random_sentences(4)}).select([]), "it has no rows"),
        # Row 150 is past the rows the model card reads, so without the check it would fail mid-training.
        (_with_none(200, [3, 150]), "column 'text' has 2 None rows of 200 (at 3, 150)."),
        (Dataset.from_dict({"text": [None, None]}), "column 'text' has no text at all (2 None rows)"),
        (Dataset.from_dict({"text": ["", " ", "\t"]}), "column 'text' has only blank texts (all 3 empty or whitespace)"),
    ],
    ids=["empty", "empty-after-select", "none-rows", "all-none", "all-blank"],
)
def test_bad_dataset_gives_one_clear_error_through_the_trainer(make_model, run_trainer, dataset, message):
    model = make_model()
    loss = losses.SimCSELoss(model)
    with pytest.raises(ValueError, match="Training dataset cannot train") as error:
        run_trainer(model, loss, check_training_dataset(dataset), steps=2, batch_size=4)
    assert message in str(error.value)
    assert str(error.value).endswith(f"{HINT} keeps only those and reports what it dropped.")
    _assert_raised_before_the_trainer(error)


def test_all_blank_dataset_stops_in_the_loss_without_the_check(make_model, run_trainer):
    # The loss sees only batches; an all-blank one no longer trains silently.
    model = make_model()
    loss = losses.InfoCSELoss(model, lambda_=0.1)
    with pytest.raises(losses.EmptyBatchError, match=r"InfoCSELoss: every text in the batch at training step 1 is "):
        run_trainer(
            model, loss, Dataset.from_dict({"text": [""] * 8}), steps=2, batch_size=4, callbacks=[AuxiliaryStateCallback(loss)]
        )


def test_cleaned_dataset_trains(make_model, run_trainer, caplog):
    texts = [*random_sentences(12), None, "", "  "]
    cleaned, report = clean_texts(Dataset.from_dict({"text": texts}))
    assert report.kept == 12
    model = make_model()
    trainer = run_trainer(model, losses.SimCSELoss(model), check_training_dataset(cleaned), steps=2, batch_size=4)
    assert trainer.state.global_step == 2


def test_some_blank_rows_train_with_a_warning(make_model, run_trainer, caplog):
    dataset = Dataset.from_dict({"text": ["", *random_sentences(7)]})
    with caplog.at_level(logging.WARNING, logger="st_infocse.training.guards"):
        checked = check_training_dataset(dataset)
    assert checked is dataset
    assert "1 of 8 texts are blank (at 0)" in caplog.text
    model = make_model()
    trainer = run_trainer(model, losses.SimCSELoss(model), checked, steps=2, batch_size=4)
    assert trainer.state.global_step == 2


def test_every_text_column_is_checked_and_labels_are_not():
    pairs = Dataset.from_dict({"anchor": ["a cat", None], "positive": ["", ""], "label": [None, None]})
    with pytest.raises(ValueError) as error:
        check_training_dataset(pairs)
    message = str(error.value)
    assert "column 'anchor' has 1 None row of 2 (at 1); column 'positive' has only blank texts" in message
    assert "label" not in message and "clean_texts(dataset, column=...)" in message
    # One named column is checked alone.
    with pytest.raises(ValueError, match="column 'positive' has only blank"):
        check_training_dataset(pairs, column="positive")


def test_indices_follow_select_and_long_lists_are_cut():
    dataset = _with_none(20, [2, 4, 6, 8, 10, 12, 14]).select(range(2, 20))
    with pytest.raises(ValueError, match=r"7 None rows of 18 \(at 0, 2, 4, 6, 8, \.\.\.\)"):
        check_training_dataset(dataset)


def test_other_types_and_columns():
    with pytest.raises(ValueError, match="column 'text' holds int64 values, not text"):
        check_training_dataset(Dataset.from_dict({"text": [1, 2]}))
    with pytest.raises(ValueError, match=r"no column 'sentence' \(columns: \['text'\]\)"):
        check_training_dataset(Dataset.from_dict({"text": ["a"]}), column="sentence")
    with pytest.raises(ValueError, match="no text column"):
        check_training_dataset(Dataset.from_dict({"label": [1]}))
    with pytest.raises(TypeError, match="expected a datasets.Dataset"):
        check_training_dataset(["a cat"])  # type: ignore[arg-type]


def test_dataset_dicts_name_the_bad_dataset():
    good = Dataset.from_dict({"text": ["a cat"]})
    datasets = DatasetDict({"nli": good, "wiki": Dataset.from_dict({"text": []})})
    with pytest.raises(ValueError, match="Training dataset 'wiki' cannot train: it has no rows"):
        check_training_dataset(datasets)
    assert check_training_dataset({"nli": good}) == {"nli": good}


def test_iterable_dataset_is_returned_unread():
    stream = IterableDataset.from_generator(lambda: iter([{"text": None}]))
    assert check_training_dataset(stream) is stream
