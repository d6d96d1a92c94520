"""Each objective's own flags: one dataclass per group of loss arguments and per other section an objective takes
(which it takes is its entry in :mod:`~st_infocse.cli.objectives`), so a flag of another objective is an unknown flag
by construction, refused by name.

The loss flags are read from the losses' own signatures and docstrings (:func:`loss_flags`): type and choices from the
annotation, help from the docstring's ``Args:`` entry, range from the registry's ``BOUNDS``; each defaults to None,
"the loss's own", so a default is written once, in :mod:`st_infocse.losses.registry` and the losses.
"""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations (the Literal choices).
import ast
import importlib.util
import re
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, Literal

from st_infocse.cli.arguments import AT_LEAST_1, POSITIVE, Checked, flag
from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import BOUNDS, STAGE1, objective_names
from st_infocse.losses.registry import OBJECTIVES as OBJECTIVE_REGISTRY
from st_infocse.training.lora import DEFAULT_TARGETS, LoRASettings

__all__ = [
    "OBJECTIVES",
    "AuxiliaryRateFlags",
    "ConditionalMLMFlags",
    "ContrastiveFlags",
    "DecoderFlags",
    "CMLMCSEFlags",
    "DecoderWarmupFlags",
    "DistillFlags",
    "ICTFlags",
    "IDCFlags",
    "InforMinFlags",
    "LoRAFlags",
    "MNRLFlags",
    "ObjectiveArguments",
    "Stage1Flags",
    "loss_options",
]

OBJECTIVES = objective_names()
ObjectiveName = Literal[OBJECTIVES]  # type: ignore[valid-type]  # the registry's names, as --objective's choices
_LOSS = "the loss (unset: the objective's own default)"


@dataclass
class ObjectiveArguments:
    _argument_group_name = "objective"

    objective: ObjectiveName = flag(  # type: ignore[valid-type]
        "infocse", "What to train; `--objective NAME --help` lists that objective's own flags.")


def _source(module: str) -> ast.Module:
    """The parsed source of ``module``, read without importing it (the losses import torch)."""
    return ast.parse(Path(importlib.util.find_spec(module).origin).read_text())


def _imported(tree: ast.Module, name: str, module: str) -> tuple[str, ast.Module] | None:
    """The module ``name`` is imported from in ``tree`` (``module``'s), parsed; None where it is not imported."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            origin = importlib.util.resolve_name("." * node.level + (node.module or ""), module.rpartition(".")[0]) \
                if node.level else node.module
            return origin, _source(origin)
    return None


def _choices(tree: ast.Module, module: str, name: str) -> tuple[str, ...] | None:
    """The values of ``name = Literal[...]`` where ``module`` defines or imports it."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            if isinstance(node.value, ast.Subscript) and getattr(node.value.value, "id", "") == "Literal":
                return tuple(ast.literal_eval(node.value.slice))
    found = _imported(tree, name, module)
    return _choices(found[1], found[0], name) if found else None


def _arguments(module: str, cls: str) -> dict[str, tuple[str, str, str, ast.Module, str]]:
    """Keyword argument -> (annotation, default, docstring Args text, the tree and module that declare it) of
    ``cls``'s ``__init__``, its bases' for what it passes on through ``**kwargs``."""
    tree = _source(module)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    docs = re.split(r"\n\s*\n(?=\s*\w+:\n)", (ast.get_docstring(init) or "").partition("Args:\n")[2])[0]
    helps = {m[1]: " ".join(m[2].split()) for m in re.finditer(r"^ {4}(\w+): (.*?)(?=^ {4}\w+: |\Z)", docs, re.M | re.S)}
    found: dict[str, tuple[str, str, str, ast.Module, str]] = {}
    if init.args.kwarg is not None:  # the base's arguments, passed on
        for base in node.bases:
            origin = _imported(tree, base.id, module)
            found.update(_arguments(origin[0] if origin else module, base.id))
    positional = init.args.args[1:]
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(init.args.defaults):], init.args.defaults, strict=False))
    defaults.update({a.arg: d for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True) if d is not None})
    for arg in positional + init.args.kwonlyargs:
        default = ast.unparse(defaults[arg.arg]) if arg.arg in defaults else ""
        found[arg.arg] = (ast.unparse(arg.annotation), default, helps.get(arg.arg, ""), tree, module)
    return found


def loss_flags(loss: str, names: Sequence[str]) -> type:
    """The dataclass of the loss's keyword arguments ``names`` (``loss``: ``"module:Class"``), each a flag read from
    the loss's own signature and docstring, without importing it: its type and choices from the annotation (a
    ``Literal`` alias is followed to where it is defined), its help from the ``Args:`` entry. Every flag defaults to
    None, "the loss's own", so the loss applies its default; ``lambda_`` is also ``--lambda``."""
    module, _, cls = loss.partition(":")
    arguments = _arguments(module, cls)
    specs, own_defaults = [], {}
    for name in names:
        annotation, default, help_text, tree, where = arguments[name]
        own_defaults[name] = default
        parts = [part.strip() for part in annotation.split("|")]
        choices = next((c for part in parts if (c := _choices(tree, where, part))), None)
        kind: Any = next((k for k in (float, int, bool) if k.__name__ in parts), str)
        if choices is not None:
            # None as a choice of its own where it is not the default (no projection head): the flag's "none"
            kind = Literal[(*choices, *(("none",) if "None" in parts and default != "None" else ()))]
        help_text = re.sub(r":\w+:`~?([\w.]+)`", lambda m: m[1].rsplit(".", 1)[-1], help_text).replace("``", "")
        metadata = {"help": help_text, **({"aliases": [f"--{name[:-1]}"]} if name.endswith("_") else {})}
        specs.append((name, kind | None, field(default=None, metadata=metadata)))
    flags = make_dataclass(f"{cls}Flags", specs, bases=(Checked,))
    flags._argument_group_name = _LOSS
    flags.bounds = {name: (BOUNDS[name], "") for name in names if name in BOUNDS}
    flags.__module__ = __name__  # make_dataclass would name the types module
    flags.loss_defaults = own_defaults  # the loss's own default of each, as written in its signature
    return flags


_CONTRASTIVE = ("temperature", "projection", "gather_across_devices")
_DECODER = ("k", "n", "fusion_init", "mask_rate", "detach", "decoder")
_CONDITIONAL_MLM = ("lambda_", "aux_gradient", "informin_weight", *_CONTRASTIVE, *_DECODER)

#: The loss flags of each loss, read from its signature: SimCSE's contrastive term (which every sentence objective
#: but CMLM trains), InfoCSE and CMLM-CSE (contrastive + lambda x the conditional MLM), InforMin-CL, the conditional
#: MLM alone, and stage 1 (the decoder pre-trained with the encoder, Condenser's masked language modelling).
ContrastiveFlags = loss_flags(OBJECTIVE_REGISTRY["simcse"].loss, _CONTRASTIVE)
ConditionalMLMFlags = loss_flags(OBJECTIVE_REGISTRY["infocse"].loss, _CONDITIONAL_MLM)
CMLMCSEFlags = loss_flags(OBJECTIVE_REGISTRY["cmlm-cse"].loss, _CONDITIONAL_MLM)
InforMinFlags = loss_flags(OBJECTIVE_REGISTRY["informin"].loss, ("lambda_", *_CONTRASTIVE))
DecoderFlags = loss_flags(OBJECTIVE_REGISTRY["cmlm"].loss, _DECODER)
Stage1Flags = loss_flags(STAGE1.loss, ("k", "n", "fusion_init", "mask_rate", "tie_head", "masking"))


@dataclass
class MNRLFlags(Checked):
    """IDC's pair loss with ``--idc_loss mnrl``: sentence-transformers' MultipleNegativesRankingLoss."""

    _argument_group_name = "the pair loss (--idc_loss mnrl)"
    bounds = {"temperature": (POSITIVE, "")}

    temperature: float | None = flag(None, "Its scale is 1 / temperature (default: the loss's scale 20, that is "
                                     "1 / 0.05).")


@dataclass
class AuxiliaryRateFlags(Checked):
    _argument_group_name = "the loss's own modules"
    bounds = {"aux_learning_rate": (POSITIVE, "")}

    aux_learning_rate: float | None = flag(None, "Own learning rate for the loss's modules (projection head, "
                                           "decoder).")


@dataclass
class DecoderWarmupFlags(Checked):
    _argument_group_name = "the loss's own modules"
    bounds = {"decoder_warmup_steps": (AT_LEAST_1, ""), "decoder_warmup_learning_rate": (POSITIVE, "")}

    decoder_warmup_steps: int | None = flag(
        None, "First train the auxiliary decoder alone for this many steps on the frozen model's embeddings of the "
        "training texts (written to OUTPUT/decoder_warmup), then train from it; a decoder that already reads the "
        "sentence embedding (docs: 'Does the auxiliary objective help my model?').")
    decoder_warmup_learning_rate: float = flag(5e-4, "Learning rate of --decoder_warmup_steps (AdamW, the decoder's "
                                               "own).")


_DOCS_HELP = "Documents, in any form that `st-infocse mine --docs` reads."


@dataclass
class IDCPairLoss:
    """Read first, with ``--objective``: which pair loss, and so which loss flags, IDC takes."""

    idc_loss: Literal["mnrl", "infocse"] = flag("mnrl", "Loss trained on the mined pairs; --idc_loss infocse takes "
                                                "InfoCSE's loss flags (`--objective idc --idc_loss infocse --help`).")


@dataclass
class IDCFlags(IDCPairLoss, Checked):
    _argument_group_name = "IDC's documents and rounds"
    bounds = {"idc_max_docs": (AT_LEAST_1, "")}

    docs: str | None = flag(None, f"{_DOCS_HELP} Required.")
    rounds: int = flag(3, "Maximum mine -> train rounds.")
    idc_k: int = flag(1, "Top-K neighbours per sentence.")
    idc_similarity: Literal["cosine", "dot"] = flag("cosine", "Sentence score for mining, cosine or dot (inner "
                                                    "product, paper 002 eq. 2).")
    initial_annotation: Literal["model", "adjacent"] = flag("model", "First-round pairs from the 'model' or "
                                                            "'adjacent' sentences.")
    idc_annotator: str | None = flag(
        None, "Another Sentence Transformer (folder or hub id) whose mining gives the first round's pairs, e.g. "
        "sentence-transformers/all-mpnet-base-v2 (paper 002 Table 3 (5)); later rounds mine with the model being "
        "trained.")
    idc_max_docs: int | None = flag(None, "Mine and train on a --seed sample of this many documents (in their order).")

    def __post_init__(self) -> None:
        if self.idc_annotator is not None and self.initial_annotation != "model":
            raise CLIError(f"--idc_annotator mines the first round, which --initial_annotation "
                           f"{self.initial_annotation} does not mine")
        super().__post_init__()


@dataclass
class ICTFlags:
    _argument_group_name = "ICT's documents"

    docs: str | None = flag(None, f"{_DOCS_HELP} Required: each sentence and the rest of its document are a pair.")


@dataclass
class DistillFlags(Checked):
    _argument_group_name = "hybrid-teacher distillation (the teacher: --hybrid_fusion and --bm25_* below)"
    bounds = {"distill_candidates": ((2, None, True, False), "(the query's document and one other)"),
              "student_temperature": (POSITIVE, ""), "teacher_temperature": (POSITIVE, ""),
              "distill_max_queries": (AT_LEAST_1, "")}

    docs: str | None = flag(None, f"{_DOCS_HELP} Required: the pseudo-queries are drawn from them, and they are the "
                            "corpus.")
    distill_queries: Literal["held_out", "title", "sentence"] = flag(
        "held_out", "Pseudo-queries: one sentence held out of each document (its rest the document), the document's "
        "title (a 'title' field), or one sentence left in its document.")
    distill_loss: Literal["kl", "margin_mse"] = flag(
        "kl", "kl: DistillKLDivLoss over the query's document and the teacher's next candidates; margin_mse: "
        "MarginMSELoss on the teacher's margin to its first other document (GPL).")
    distill_candidates: int = flag(4, "Documents per query for kl, its own included.")
    student_temperature: float = flag(0.05, "kl: the student's temperature.")
    teacher_temperature: float = flag(0.1, "kl: the teacher's temperature (its fused scores lie in [0, 1]).")
    distill_max_queries: int | None = flag(None, "Train on a --seed sample of this many pseudo-queries (all by "
                                           "default).")


@dataclass
class LoRAFlags(Checked):
    _argument_group_name = "a LoRA adapter (st_infocse.training.lora; needs the lora extra: peft)"
    bounds = {"lora_dropout": ((0, 1, True, False), "")}

    lora_r: int = flag(0, "Train a LoRA adapter of this rank on the encoder, every other weight of the model frozen "
                       "(0: no adapter, all weights train). The adapter is merged into the model when it is saved.")
    lora_alpha: float = flag(LoRASettings.alpha, "The adapter's scaling is lora_alpha / lora_r.")
    lora_target_modules: list[str] = flag(list(DEFAULT_TARGETS), "Names of the linear layers to adapt (BERT family: "
                                          "query key value; MPNet: q k v).")
    lora_dropout: float = flag(LoRASettings.dropout, "Dropout on the adapter's input.")

    def __post_init__(self) -> None:
        """The adapter's flags, and PEFT's presence, before the model loads."""
        from st_infocse.training.lora import LORA_INSTALL_HINT

        if self.lora_r < 0:
            raise CLIError(f"--lora_r must be 0 (no adapter) or a rank of 1 or more, got {self.lora_r}")
        if not self.lora_r:
            given = [f"--{item.name}" for item in fields(self) if item.name != "lora_r" and getattr(self, item.name)
                     != (item.default_factory() if item.default is MISSING else item.default)]
            if given:
                raise CLIError(f"{', '.join(given)}: the adapter's settings apply with --lora_r R (a rank of 1 or more)")
            return
        if not self.lora_target_modules:
            raise CLIError("--lora_target_modules: name at least one linear layer to adapt")
        super().__post_init__()
        if importlib.util.find_spec("peft") is None:
            raise CLIError(f"--lora_r needs PEFT: {LORA_INSTALL_HINT}")


def loss_options(flags: Any) -> dict[str, Any]:
    """The loss flags given (not None) as the loss's keyword arguments of the same names.

    A flag left unset is not passed, so the loss applies its own default; a given value, 0 included, reaches the
    loss as it is, which uses it or refuses it in one line.
    """
    if flags is None:
        return {}
    options = {item.name: getattr(flags, item.name) for item in fields(flags) if getattr(flags, item.name) is not None}
    if options.get("projection") == "none":  # "none" turns the objective's own projection head off
        options["projection"] = None
    return options
