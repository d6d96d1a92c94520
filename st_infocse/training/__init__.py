"""Trainer glue: checked training text, one trainer builder, loss-owned auxiliary state kept across checkpoints and
clipped with the model. Names are imported on first use, so training text is checked before torch is imported."""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_MODULES = {  # submodule -> the names it exports
    "anchor": ("WeightAnchorCallback", "evaluates_before_last_step", "fit_to_anchor", "toward_start"),
    "arguments": ("PaperTrainingArguments", "STSB_DEV_METRIC"),
    "builder": ("build_trainer", "learning_rate_mapping", "load_model", "own_max_length", "save_model"),
    "callbacks": ("AUXILIARY_STATE_NAME", "AuxiliaryStateCallback", "auxiliary_state_dict", "load_auxiliary_state",
        "save_auxiliary_state"),
    "guards": ("check_training_dataset",),
    "interrupt": ("InterruptCallback", "Interrupted", "interruptible"),
    "lora": ("LoRASettings", "add_lora", "merge_lora"),
    "probe_decoder": ("train_probe_decoder", "warm_up_decoder"),
    "snapshot": ("StartingWeights", "weights_snapshot"),
    "start_end": ("StartEndCallback", "StartEndResult", "check_keep_rule", "ended_below_start"),
    "texts": ("TextReport", "check_text_source", "clean_texts", "load_texts", "split_sentences"),
    "trainer": ("AuxiliaryLossTrainer", "clip_gradients_jointly"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE)  # every lazily exported name, listed once above


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
