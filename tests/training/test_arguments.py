"""PaperTrainingArguments: the steps a run takes, counted before anything loads as the trainer counts them, where its
checkpoints go, and the command line's strings for resume_from_checkpoint."""

from __future__ import annotations

import re

import pytest
import torch

from st_infocse.training import PaperTrainingArguments


def _args(tmp_path, **values) -> PaperTrainingArguments:
    return PaperTrainingArguments(output_dir=str(tmp_path / "run"), use_cpu=True, report_to="none",
                                  **{"eval_strategy": "no", "load_best_model_at_end": False, **values})


@pytest.mark.parametrize(("examples", "values"), [
    (10, {"per_device_train_batch_size": 4}),
    (10, {"per_device_train_batch_size": 4, "num_train_epochs": 2.5}),
    (10, {"per_device_train_batch_size": 4, "dataloader_drop_last": True}),
    (10, {"per_device_train_batch_size": 4, "num_train_epochs": 3, "gradient_accumulation_steps": 2}),
    (33, {"per_device_train_batch_size": 2, "num_train_epochs": 0.5, "gradient_accumulation_steps": 4}),
    (3, {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 4}),
    (10, {"per_device_train_batch_size": 4, "max_steps": 7}),
])
def test_planned_steps_are_the_trainers_own_count(tmp_path, examples, values):
    from torch.utils.data import DataLoader
    from transformers import Trainer

    args = _args(tmp_path, **values)
    trainer = Trainer(model=torch.nn.Linear(1, 1), args=args)
    loader = DataLoader(list(range(examples)), batch_size=args.per_device_train_batch_size,
                        drop_last=args.dataloader_drop_last)
    assert args.planned_steps(examples) == trainer.set_initial_training_values(args, loader)[-1]


def test_a_run_of_no_optimizer_step_is_refused(tmp_path):
    args = _args(tmp_path, per_device_train_batch_size=64, dataloader_drop_last=True)
    with pytest.raises(ValueError, match=re.escape("no optimizer step: 40 texts, batch size 64 with "
                                                   "--dataloader_drop_last")):
        args.planned_steps(40)
    assert _args(tmp_path, per_device_train_batch_size=64).planned_steps(40) == 1  # the last, short batch trains


def test_the_checkpoint_plan_says_where_and_when(tmp_path):
    folder = tmp_path / "run"
    assert _args(tmp_path, save_strategy="no").checkpoint_plan(500) == "none (final model only)"
    assert _args(tmp_path, save_steps=100).checkpoint_plan(2) == (
        f"{folder / 'checkpoint-2'} at the last step only (the run is 2 steps, shorter than --save_steps 100; "
        "--save_strategy no writes none)")
    assert _args(tmp_path, save_steps=100, save_total_limit=3).checkpoint_plan(500) == (
        f"{folder / 'checkpoint-N'} every 100 steps and at the last step, last 3 kept")
    assert _args(tmp_path, save_strategy="epoch", save_total_limit=None).checkpoint_plan(
        500) == f"{folder / 'checkpoint-N'} every epoch and at the last step"


@pytest.mark.parametrize(("given", "expected"), [("true", True), ("Last", True), ("false", None), ("none", None),
                                                 ("", None), (None, None), (True, True)])
def test_resume_from_checkpoint_takes_the_command_lines_words(tmp_path, given, expected):
    assert _args(tmp_path, resume_from_checkpoint=given).resume_from_checkpoint is expected


def test_resume_from_checkpoint_takes_a_folder_that_exists_and_refuses_one_that_does_not(tmp_path):
    (tmp_path / "checkpoint-2").mkdir()
    assert _args(tmp_path, resume_from_checkpoint=str(tmp_path / "checkpoint-2")).resume_from_checkpoint == str(
        tmp_path / "checkpoint-2")
    with pytest.raises(ValueError, match="--resume_from_checkpoint: no checkpoint folder at .*checkpoint-9"):
        _args(tmp_path, resume_from_checkpoint=str(tmp_path / "checkpoint-9"))
