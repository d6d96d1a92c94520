"""Where the package meets torch, transformers, accelerate and mteb, it goes through their public parts; the few
behaviours it relies on that are not a documented contract are pinned here, so that a new version that changes them
fails these tests loudly instead of changing training in silence.

Written against torch 2.13, transformers 5.24.0, accelerate 1.15.0 and mteb 2.26.24.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import st_infocse

PACKAGE = Path(st_infocse.__file__).parent
# The modules that meet the libraries: losses, modeling, the training callback, the conditional-MLM evaluation, the
# retrieval evaluation and its mteb loaders, IDC mining.
MODULES = sorted(
    {
        *PACKAGE.glob("losses/*.py"),
        *PACKAGE.glob("modeling/*.py"),
        *(PACKAGE / "training" / f"{name}.py" for name in ("callbacks", "trainer", "probe_decoder", "start_end")),
        PACKAGE / "evaluation" / "at_length.py",
        PACKAGE / "evaluation" / "h_shuffle.py",
        PACKAGE / "evaluation" / "retrieval_folder.py",
        PACKAGE / "evaluation" / "retrieval.py",
        PACKAGE / "evaluation" / "loaders" / "retrieval.py",
        *(PACKAGE / "mining" / f"{name}.py" for name in ("idc", "graph", "sampler", "sentences")),
    }
)
# Underscored names read on something other than ``self``, each with its reason.
ALLOWED = {
    "self.lower.config._attn_implementation": "transformers' only view of the implementation in use; pinned below",
    "getattr(_attn_implementation)": "the same, on the encoder's config",
    "super()._clip_grad_norm": "the trainer's clipping step, which AuxiliaryLossTrainer overrides; pinned below",
    "super()._save": "the trainer's model save into a checkpoint, extended with a LoRA run's merged copy; pinned below",
    "super()._load_from_checkpoint": "the trainer's model load when resuming, which reads a LoRA adapter back; "
    "pinned below",
    "getattr(_orig_mod)": "the module torch.compile's wrapper holds (the trainer's torch_compile): the adapter is there",
}


def _underscored_reads(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = ast.unparse(node.value)
            if owner not in ("self", "cls"):
                found.add(f"{owner}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and node.args[1].value.startswith("_")
            and not node.args[1].value.startswith("__")
        ):
            found.add(f"getattr({node.args[1].value})")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_part_of_a_library_is_read(path):
    unexpected = sorted(_underscored_reads(path) - set(ALLOWED))
    assert not unexpected, f"{path.relative_to(PACKAGE)} reaches into private parts: {unexpected}"


def test_every_allowed_private_read_is_still_made():
    """An entry no module needs any more goes, so that the list says what the package relies on today."""
    made = set().union(*(_underscored_reads(path) for path in MODULES))
    assert not set(ALLOWED) - made, f"allowed but no longer read: {sorted(set(ALLOWED) - made)}"


# ------------------------------------------------------------------------------------ transformers: joint clipping


def _in_order(source: str, *snippets: str) -> None:
    positions = [source.find(snippet) for snippet in snippets]
    assert all(p >= 0 for p in positions), dict(zip(snippets, positions, strict=True))
    assert positions == sorted(positions), dict(zip(snippets, positions, strict=True))


def test_the_trainer_clips_in_its_clipping_step_and_logs_what_it_returns():
    """AuxiliaryLossTrainer overrides ``Trainer._clip_grad_norm(model)``, the trainer's clipping step: the trainer
    calls it only when ``args.max_grad_norm > 0``, before ``on_pre_optimizer_step`` and ``optimizer.step()``, and
    logs what it returns as ``grad_norm`` (transformers 5.24.0: ``Trainer._run_epoch``, called by
    ``_inner_training_loop``)."""
    from transformers import Trainer

    assert "self._run_epoch(" in inspect.getsource(Trainer._inner_training_loop)
    loop = inspect.getsource(Trainer._run_epoch)
    _in_order(
        loop,
        "if self.args.max_grad_norm > 0:",
        "grad_norm = self._clip_grad_norm(model)",
        "grad_norm = self._get_grad_norm(model, grad_norm=grad_norm)",
        "self.callback_handler.on_pre_optimizer_step(",
        "self.optimizer.step()",
        "self._maybe_log_save_evaluate(",
    )
    assert loop.count("_clip_grad_norm(") == 1
    assert list(inspect.signature(Trainer._clip_grad_norm).parameters) == ["self", "model"]
    norm = inspect.getsource(Trainer._get_grad_norm)
    assert "if grad_norm is None:" in norm  # a norm given is kept, not recomputed over the model alone


def test_the_trainer_saves_and_resumes_a_checkpoints_model_through_the_hooks_lora_extends():
    """AuxiliaryLossTrainer extends ``_save`` (a checkpoint's model files) and ``_load_from_checkpoint`` (the model's
    weights on resume) for LoRA runs: the trainer saves a checkpoint's model through ``save_model`` -> ``_save`` and
    resumes through ``_load_from_checkpoint(resume_from_checkpoint)`` (transformers 5.24.0, sentence-transformers
    6.2.0)."""
    from sentence_transformers import SentenceTransformerTrainer
    from transformers import Trainer

    assert list(inspect.signature(SentenceTransformerTrainer._save).parameters) == ["self", "output_dir", "state_dict"]
    assert list(inspect.signature(SentenceTransformerTrainer._load_from_checkpoint).parameters)[:2] == [
        "self", "checkpoint_path"]
    assert "self.save_model(output_dir, _internal_call=True)" in inspect.getsource(Trainer._save_checkpoint)
    assert "self._save(" in inspect.getsource(Trainer.save_model)
    assert "self._load_from_checkpoint(resume_from_checkpoint)" in inspect.getsource(Trainer.train)


def test_the_accelerator_unscales_fp16_gradients_through_its_scaler():
    """AuxiliaryLossTrainer unscales with the public ``Accelerator.unscale_gradients`` before clipping, as
    ``Accelerator.clip_grad_norm_`` does (accelerate 1.15.0)."""
    from accelerate import Accelerator

    unscale = inspect.getsource(Accelerator.unscale_gradients)
    assert "self.scaler.unscale_(" in unscale
    assert "self.unscale_gradients()" in inspect.getsource(Accelerator.clip_grad_norm_)


# ------------------------------------------------------------------------------------ transformers: attention


def test_the_attention_implementation_is_read_and_set_as_the_decoder_does():
    from transformers import BertConfig, BertModel, PretrainedConfig, PreTrainedModel

    assert isinstance(inspect.getattr_static(PretrainedConfig, "_attn_implementation"), property)
    assert callable(PreTrainedModel.set_attn_implementation)
    model = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))
    model.set_attn_implementation("eager")
    assert model.config._attn_implementation == "eager"


# ------------------------------------------------------------------------------------ mteb


def _evaluation_reference():
    """``benchmarks/evaluation_reference.py``, whose mteb cross-check builds the task."""
    import importlib

    return importlib.import_module("benchmarks.evaluation_reference")


def test_mteb_derives_the_search_depth_from_k_values_when_a_task_is_built():
    """The mteb cross-check sets the documented ``k_values`` on a task subclass; mteb derives the depth it searches
    to from it when the task is built (mteb 2.26.24: ``AbsTaskRetrieval.__init__``)."""
    mteb = pytest.importorskip("mteb")
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    from st_infocse.evaluation.loaders import RetrievalData

    mteb_local_task = _evaluation_reference().mteb_local_task
    assert "k_values" in (AbsTaskRetrieval.__doc__ or "")
    data = RetrievalData("scifact", {"d1": {"title": "", "text": "x"}}, {"q1": "a"}, {"q1": {"d1": 1}}, "s", "test")
    task = mteb_local_task(data, ignore_identical_ids=False, k_values=(3, 7))
    assert isinstance(task, type(mteb.get_task("SciFact"))) and task.metadata.name == "SciFact"
    assert tuple(task.k_values) == (1, 3, 7, 10) and task._top_k == 10  # the depth mteb's evaluator searches to


def test_mtebs_v1_to_v2_conversion_keeps_its_signature():
    """``load_mteb_retrieval`` calls this transitional (public, but marked TODO by mteb) method as mteb's own
    ``evaluate`` does; it must exist with this signature and leave a task already in the new format alone."""
    pytest.importorskip("mteb")
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    parameters = list(inspect.signature(AbsTaskRetrieval.convert_v1_dataset_format_to_v2).parameters)
    assert parameters == ["self", "num_proc"]
