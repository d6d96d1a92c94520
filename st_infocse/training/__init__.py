"""Trainer glue: checked training text, one trainer builder, loss-owned auxiliary state kept across checkpoints and
clipped with the model. Names are imported on first use, so training text is checked before torch is imported."""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    "AtLengthEvaluator": "at_length",
    "AUXILIARY_STATE_NAME": "callbacks",
    "STSB_DEV_METRIC": "arguments",
    "PaperTrainingArguments": "arguments",
    "AuxiliaryLossTrainer": "trainer",
    "AuxiliaryStateCallback": "callbacks",
    "StartEndCallback": "start_end",
    "StartEndResult": "start_end",
    "StartingWeights": "snapshot",
    "TextReport": "texts",
    "WeightAnchorCallback": "anchor",
    "auxiliary_state_dict": "callbacks",
    "build_trainer": "builder",
    "check_text_source": "texts",
    "check_training_dataset": "guards",
    "clean_texts": "texts",
    "clip_gradients_jointly": "trainer",
    "LoRASettings": "lora",
    "add_lora": "lora",
    "merge_lora": "lora",
    "load_auxiliary_state": "callbacks",
    "load_model": "builder",
    "load_texts": "texts",
    "evaluates_before_last_step": "anchor",
    "toward_start": "anchor",
    "train_probe_decoder": "probe_decoder",
    "own_max_length": "builder",
    "save_auxiliary_state": "callbacks",
    "save_model": "builder",
    "weights_snapshot": "snapshot",
}

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
