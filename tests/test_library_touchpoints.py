"""Where the package meets torch, transformers, accelerate and mteb, it goes through their public parts; the few
behaviours it relies on that are not a documented contract are pinned here, so that a new version that changes them
fails these tests loudly instead of changing training in silence.

Written against torch 2.13, transformers 5.24.0, accelerate 1.15.0 and mteb 2.26.24.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import torch

import st_infocse

PACKAGE = Path(st_infocse.__file__).parent
# The modules that meet the libraries: losses, modeling, the training callback, the conditional-MLM evaluation, the
# retrieval evaluation and its mteb loaders, IDC mining.
MODULES = sorted(
    {
        *PACKAGE.glob("losses/*.py"),
        *PACKAGE.glob("modeling/*.py"),
        *(PACKAGE / "training" / f"{name}.py" for name in ("callbacks", "probe_decoder", "start_end", "at_length")),
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
    "torch._dynamo": "torch < 2.3 only, where torch.compiler.is_compiling does not exist",
    "loss._lower_outputs": "the package's own stage-1 loss",
    "report._skip": "the package's own MiningReport",
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


# ------------------------------------------------------------------------------------ transformers: joint clipping


def _in_order(source: str, *snippets: str) -> None:
    positions = [source.find(snippet) for snippet in snippets]
    assert all(p >= 0 for p in positions), dict(zip(snippets, positions, strict=True))
    assert positions == sorted(positions), dict(zip(snippets, positions, strict=True))


def test_the_trainer_reads_max_grad_norm_between_step_begin_and_pre_optimizer_step():
    """AuxiliaryStateCallback turns the trainer's model-only clipping off by zeroing ``args.max_grad_norm`` in
    ``on_step_begin`` and restores it in ``on_pre_optimizer_step``; that works only while the trainer reads it in
    between, once per step (transformers 5.24.0: ``Trainer._run_epoch``, called by ``_inner_training_loop``)."""
    from transformers import Trainer

    assert "self._run_epoch(" in inspect.getsource(Trainer._inner_training_loop)
    loop = inspect.getsource(Trainer._run_epoch)
    _in_order(
        loop,
        "self.callback_handler.on_step_begin(",
        "if self.args.max_grad_norm > 0:",
        "grad_norm = self._clip_grad_norm(model)",
        "self.callback_handler.on_pre_optimizer_step(",
        "self.optimizer.step()",
    )
    assert loop.count("max_grad_norm") == 1
    clip = inspect.getsource(Trainer._clip_grad_norm)
    assert "model.parameters(), self.args.max_grad_norm" in clip  # the model's parameters alone


def test_the_trainer_unscales_fp16_gradients_before_the_callbacks_see_them():
    """Without clipping the trainer still computes the norm through ``Accelerator.clip_grad_norm_`` (which unscales),
    so the callback finds the gradients unscaled and must not unscale them again."""
    from transformers import Trainer

    norm = inspect.getsource(Trainer._get_grad_norm)
    assert 'self.accelerator.clip_grad_norm_(model.parameters(), float("inf"))' in norm


# ------------------------------------------------------------------------------------ torch and accelerate: fp16


def test_a_second_unscale_raises_the_documented_error_in_the_words_the_callback_reads():
    from st_infocse.training.callbacks import _ALREADY_UNSCALED

    assert "twice" in inspect.getdoc(torch.amp.GradScaler.unscale_) and "RuntimeError" in inspect.getdoc(
        torch.amp.GradScaler.unscale_
    )
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=1.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(param.sum()).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match=re.escape(_ALREADY_UNSCALED)):
        scaler.unscale_(optimizer)


def test_accelerates_optimizer_wrapper_keeps_its_optimizer_scaler_and_state():
    """The callback unwraps ``AcceleratedOptimizer.optimizer``, reads its ``scaler`` and, for DeepSpeed or FSDP, its
    ``accelerator_state.distributed_type`` (accelerate 1.15.0; building one needs an ``Accelerator``, which the
    trainer makes, so the constructor is read rather than run)."""
    from accelerate.optimizer import AcceleratedOptimizer
    from accelerate.utils import DistributedType

    init = inspect.getsource(AcceleratedOptimizer.__init__)
    for line in ("self.optimizer = optimizer", "self.scaler = scaler", "self.accelerator_state = AcceleratorState()"):
        assert line in init, line
    assert {"DEEPSPEED", "FSDP"} <= set(DistributedType.__members__)


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
