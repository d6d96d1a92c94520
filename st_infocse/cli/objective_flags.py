"""Each objective's own flags: one dataclass per group of loss arguments and per other section an objective takes
(which it takes is its entry in :mod:`~st_infocse.cli.objectives`), so a flag of another objective is an unknown flag
by construction, refused by name.

The flags are read from the library's own signatures and docstrings (:func:`~st_infocse.cli.arguments.derived`): the
loss flags from the losses' (each defaults to None, "the loss's own", so a default is written once, in
:mod:`st_infocse.losses.registry` and the losses; its range from the registry's ``BOUNDS``), the document objectives'
from the miners' and the distillation's.
"""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations (the Literal choices).
import importlib.util
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, Literal

from st_infocse.cli.arguments import AT_LEAST_1, DOCS_HELP, DOCUMENTS, POSITIVE, derived, flag
from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import BOUNDS, STAGE1, objective_names
from st_infocse.losses.registry import OBJECTIVES as OBJECTIVE_REGISTRY
from st_infocse.training.lora import DEFAULT_TARGETS

OBJECTIVES = objective_names()
ObjectiveName = Literal[OBJECTIVES]  # type: ignore[valid-type]  # the registry's names, as --objective's choices


@dataclass
class ObjectiveArguments:
    _argument_group_name = "objective"

    objective: ObjectiveName = flag(  # type: ignore[valid-type]
        "infocse", "What to train; `--objective NAME --help` lists that objective's own flags.")


def loss_flags(loss: str, names: Sequence[str]) -> type:
    """The dataclass of the loss's keyword arguments ``names`` (``loss``: ``"module:Class"``), each defaulting to
    None, so the loss applies its own default."""
    return derived("the loss (unset: the objective's own default)", dict.fromkeys(names, loss),
                   {name: (BOUNDS[name], "") for name in names if name in BOUNDS}, unset=True,
                   name=f"{loss.rpartition(':')[2]}Flags", owner=__name__)


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


#: IDC's pair loss with ``--idc_loss mnrl``: sentence-transformers' MultipleNegativesRankingLoss, SimCSE's term
#: without its head (scale 1 / temperature), so its flag is SimCSE's.
MNRLFlags = derived("the pair loss (--idc_loss mnrl)", {"temperature": OBJECTIVE_REGISTRY["simcse"].loss},
                    {"temperature": (BOUNDS["temperature"], "")}, unset=True, name="MNRLFlags", owner=__name__)

AuxiliaryRateFlags = derived("the loss's own modules", {
    "aux_learning_rate": "st_infocse.training.builder:learning_rate_mapping"},
    {"aux_learning_rate": (POSITIVE, "")}, name="AuxiliaryRateFlags", owner=__name__)

#: A decoder warmed up alone first (:func:`~st_infocse.training.train_probe_decoder`).
DecoderWarmupFlags = derived("the loss's own modules", {
    "decoder_warmup_steps": (int | None, flag(
        None, "First train the auxiliary decoder alone for this many steps on the frozen model's embeddings of the "
        "training texts (written to OUTPUT/decoder_warmup), then train from it; a decoder that already reads the "
        "sentence embedding (docs: 'Does the auxiliary objective help my model?').")),
    "decoder_warmup_learning_rate": "st_infocse.training.probe_decoder:train_probe_decoder.learning_rate",
}, {"decoder_warmup_steps": (AT_LEAST_1, ""), "decoder_warmup_learning_rate": (POSITIVE, "")},
    name="DecoderWarmupFlags", owner=__name__)


_ROUNDS, _MINE = "st_infocse.mining.rounds:train_idc_rounds", "st_infocse.mining.idc:mine_pairs"
_QUERIES, _TEACHER = "st_infocse.mining.distillation:pseudo_queries", "st_infocse.mining.distillation:hybrid_teacher_dataset"
_LOSS = "st_infocse.mining.distillation:distillation_loss"


#: Read first, with ``--objective``: which pair loss, and so which loss flags, IDC takes (the first of IDC's flags).
IDCPairLoss = derived("IDC's pair loss", {"idc_loss": (Literal["mnrl", "infocse"], flag(
    "mnrl", "Loss trained on the mined pairs; --idc_loss infocse takes InfoCSE's loss flags (`--objective idc "
    "--idc_loss infocse --help`)."))}, name="IDCPairLoss", owner=__name__)


def _annotator_mines(idc: Any) -> None:
    if idc.idc_annotator is not None and idc.initial_annotation != "model":
        raise CLIError(f"--idc_annotator mines the first round, which --initial_annotation {idc.initial_annotation} "
                       "does not mine")


#: IDC's rounds (:func:`~st_infocse.mining.train_idc_rounds`) and their mining (:func:`~st_infocse.mining.mine_pairs`).
IDCFlags = derived("IDC's documents and rounds", {
    "docs": (f"{DOCUMENTS}.source", {"help": f"{DOCS_HELP} Required."}),
    "rounds": _ROUNDS, "idc_k": f"{_MINE}.k", "idc_similarity": f"{_MINE}.similarity", "initial_annotation": _ROUNDS,
    "idc_precision": f"{_MINE}.precision",
    "idc_annotator": f"{_ROUNDS}.annotator",
    "idc_max_docs": (int | None, flag(None, "Mine and train on a --seed sample of this many documents (in their "
                                            "order).")),
}, {"idc_max_docs": (AT_LEAST_1, "")}, _annotator_mines, name="IDCFlags", owner=__name__, base=IDCPairLoss)

ICTFlags = derived("ICT's documents", {"docs": (f"{DOCUMENTS}.source", {"help": f"{DOCS_HELP} Required: each sentence "
                   "and the rest of its document are a pair."})}, name="ICTFlags", owner=__name__)

#: Distillation's pseudo-queries (:func:`~st_infocse.mining.pseudo_queries`), teacher and loss.
DistillFlags = derived("hybrid-teacher distillation (the teacher: --hybrid_fusion and --bm25_* below)", {
    "docs": (f"{DOCUMENTS}.source", {"help": f"{DOCS_HELP} Required: the pseudo-queries are drawn from them, and "
                                               "they are the corpus."}),
    "distill_queries": f"{_QUERIES}.query_kind", "distill_loss": f"{_LOSS}.loss",
    "distill_candidates": f"{_TEACHER}.candidates",
    **dict.fromkeys(("student_temperature", "teacher_temperature"), _LOSS),
    "distill_max_queries": f"{_QUERIES}.max_queries",
}, {"distill_candidates": ((2, None, True, False), "(the query's document and one other)"),
    "student_temperature": (POSITIVE, ""), "teacher_temperature": (POSITIVE, ""),
    "distill_max_queries": (AT_LEAST_1, "")}, name="DistillFlags", owner=__name__)


def _check_lora(lora: Any) -> None:
    """The adapter's flags, and PEFT's presence, before the model loads."""
    from st_infocse.training.lora import LORA_INSTALL_HINT

    given = [f"--{item.name}" for item in fields(lora) if item.name != "lora_r" and getattr(lora, item.name)
             != (item.default_factory() if item.default is MISSING else item.default)]
    if not lora.lora_r and given:
        raise CLIError(f"{', '.join(given)}: the adapter's settings apply with --lora_r R (a rank of 1 or more)")
    if lora.lora_r and importlib.util.find_spec("peft") is None:
        raise CLIError(f"--lora_r needs PEFT: {LORA_INSTALL_HINT}")


_LORA = "st_infocse.training.lora:LoRASettings"
LoRAFlags = derived("a LoRA adapter (--lora_r 0: none; needs the lora extra: peft)", {
    "lora_r": (f"{_LORA}.r", {"default": 0}),
    **{f"lora_{name}": f"{_LORA}.{name}" for name in ("alpha", "dropout")},
    "lora_target_modules": (f"{_LORA}.target_modules", {"default": DEFAULT_TARGETS}),  # a field(), not a literal
}, {"lora_r": ((0, None, True, False), "(0: no adapter)"), "lora_dropout": ((0, 1, True, False), "")}, _check_lora,
    name="LoRAFlags", owner=__name__)


def loss_options(flags: Any) -> dict[str, Any]:
    """The loss flags given (not None) as the loss's keyword arguments of the same names: a flag left unset is not
    passed, so the loss applies its own default; a given value, 0 included, reaches the loss as it is."""
    if flags is None:
        return {}
    options = {item.name: getattr(flags, item.name) for item in fields(flags) if getattr(flags, item.name) is not None}
    if options.get("projection") == "none":  # "none" turns the objective's own projection head off
        options["projection"] = None
    return options
