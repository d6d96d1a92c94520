"""Each objective's own flags: one dataclass per group of loss arguments and per other section an objective takes
(which it takes is its entry in :mod:`~st_infocse.cli.objectives`). The command line reads only an objective's
sections, so a flag of another objective is an unknown flag by construction, refused by name
(``st-infocse train --objective NAME --help`` lists an objective's flags).

A loss flag defaults to None, "the loss's own": the defaults are written once, in
:mod:`st_infocse.losses.registry` and the losses, and the help text here is generated from the registry.
"""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations (the Literal choices).
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import OBJECTIVES as OBJECTIVE_REGISTRY
from st_infocse.losses.registry import PRESETS, STAGE1, flag_value, objective_names, out_of_bounds
from st_infocse.training.lora import DEFAULT_TARGETS, LoRASettings

__all__ = [
    "OBJECTIVES",
    "AuxiliaryRateFlags",
    "ConditionalMLMFlags",
    "ContrastiveFlags",
    "DecoderFlags",
    "DecoderShapeFlags",
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

    objective: ObjectiveName = field(  # type: ignore[valid-type]
        default="infocse",
        metadata={"help": "What to train; `--objective NAME --help` lists that objective's own flags."},
    )


class LossFlags:
    """Loss flags: each value given is checked against the loss argument's range (:data:`~st_infocse.losses.registry.BOUNDS`)
    and refused under its flag's name before anything loads."""

    def __post_init__(self) -> None:
        for item in fields(self):
            why = out_of_bounds(item.name, getattr(self, item.name))
            if why:
                raise CLIError(f"{flag_name(item)} {why}, got {getattr(self, item.name):g}")


def flag_name(item: Any) -> str:
    """The flag a field is given by: its alias where it has one (``lambda_`` is ``--lambda``)."""
    return (item.metadata.get("aliases") or [f"--{item.name}"])[0]


def _lambda(help_text: str) -> Any:
    return field(default=None, metadata={"aliases": ["--lambda"], "help": help_text})


def _lambda_help(*names: str) -> str:
    defaults = ", ".join(f"{OBJECTIVE_REGISTRY[name].title} {flag_value(OBJECTIVE_REGISTRY[name].lambda_)}"
                         for name in names)
    return f"Weight of the auxiliary term (default: {defaults})."


def _mask_rate_help(*names: str) -> str:
    rates = "; ".join(f"{name} {PRESETS[name].describe_mask_rate()}" for name in names)
    return f"Masking rate of the auxiliary MLM (default: {rates})."


@dataclass
class ContrastiveFlags(LossFlags):
    """SimCSE's contrastive term, which every sentence objective but CMLM trains."""

    _argument_group_name = _LOSS

    temperature: float | None = field(default=None, metadata={"help": "Contrastive temperature (default 0.05)."})
    projection: Literal["mlp", "bn-mlp", "none"] | None = field(
        default=None,
        metadata={"help": "Training-only projection head (default: bn-mlp for infocse, mlp for simcse, cmlm-cse and "
                  "informin)."},
    )
    gather_across_devices: bool | None = field(
        default=None, metadata={"help": "Contrast against the embeddings of all processes (multi-GPU; default false)."}
    )


@dataclass
class DecoderShapeFlags(LossFlags):
    """The auxiliary decoder's shape (paper 000 section 3.1): frozen lower layers, then fusion layers."""

    _argument_group_name = _LOSS

    k: int | None = field(default=None, metadata={"help": "Frozen lower layers of the decoder (default: the preset's)."})
    n: int | None = field(default=None, metadata={"help": "Fusion layers of the decoder (default: the preset's)."})
    fusion_init: Literal["fresh", "copy"] | None = field(
        default=None,
        metadata={"help": "fresh (default, as the authors' code) or copy (the encoder layers above k) fusion layers."},
    )


@dataclass
class DecoderFlags(DecoderShapeFlags):
    """The conditional MLM through the auxiliary decoder."""

    mask_rate: float | None = field(default=None, metadata={"help": _mask_rate_help(*PRESETS)})
    detach: bool | None = field(
        default=None,
        metadata={"help": "Freeze the decoder's lower copy (default true, as in paper 000; false is the 'w/o detach' "
                  "ablation). Give a value: --detach false."},
    )
    decoder: str | None = field(default=None, metadata={"help": "Stage-1 decoder folder (from pretrain-aux)."})


@dataclass
class ConditionalMLMFlags(ContrastiveFlags, DecoderFlags):
    """InfoCSE and CMLM-CSE: contrastive + lambda x the conditional MLM."""

    lambda_: float | None = _lambda(_lambda_help("infocse", "cmlm-cse"))
    aux_gradient: Literal["weighted", "full"] | None = field(
        default=None,
        metadata={"help": "What the decoder learns from: weighted (default, the released script: lambda times the MLM "
                  "gradient, like the encoder) or full (the unweighted MLM gradient; the encoder still gets lambda "
                  "times it)."},
    )
    informin_weight: float | None = field(
        default=None, metadata={"help": "Add InforMin-CL's reconstruction term with this weight (default 0: off)."}
    )


@dataclass
class InforMinFlags(ContrastiveFlags):
    lambda_: float | None = _lambda(_lambda_help("informin"))


@dataclass
class Stage1Flags(DecoderShapeFlags):
    """Stage 1: the decoder pre-trained with the encoder (Condenser's masked language modelling)."""

    mask_rate: float | None = field(
        default=None, metadata={"help": f"Masking rate of the MLM (default {STAGE1.mask_rate:.2f})."}
    )
    tie_head: bool | None = field(
        default=None,
        metadata={"help": "Tie the MLM head's output projection to the word embeddings (Condenser; default true)."},
    )
    masking: Literal["whole_word", "token"] | None = field(
        default=None, metadata={"help": "whole_word (Condenser, default) or token masking."}
    )


@dataclass
class MNRLFlags(LossFlags):
    """IDC's pair loss with ``--idc_loss mnrl``: sentence-transformers' MultipleNegativesRankingLoss."""

    _argument_group_name = "the pair loss (--idc_loss mnrl)"

    temperature: float | None = field(
        default=None,
        metadata={"help": "Its scale is 1 / temperature (default: the loss's scale 20, that is 1 / 0.05)."},
    )


@dataclass
class AuxiliaryRateFlags:
    _argument_group_name = "the loss's own modules"

    aux_learning_rate: float | None = field(
        default=None, metadata={"help": "Own learning rate for the loss's modules (projection head, decoder)."}
    )

    def __post_init__(self) -> None:
        if self.aux_learning_rate is not None and not self.aux_learning_rate > 0:
            raise CLIError(f"--aux_learning_rate must be positive, got {self.aux_learning_rate:g}")


@dataclass
class DecoderWarmupFlags:
    _argument_group_name = "the loss's own modules"

    decoder_warmup_steps: int | None = field(
        default=None,
        metadata={
            "help": "First train the auxiliary decoder alone for this many steps on the frozen model's embeddings of "
            "the training texts (written to OUTPUT/decoder_warmup), then train from it; a decoder that already reads "
            "the sentence embedding (docs: 'Does the auxiliary objective help my model?')."
        },
    )
    decoder_warmup_learning_rate: float = field(
        default=5e-4, metadata={"help": "Learning rate of --decoder_warmup_steps (AdamW, the decoder's own)."}
    )

    def __post_init__(self) -> None:
        if self.decoder_warmup_steps is not None and self.decoder_warmup_steps < 1:
            raise CLIError(f"--decoder_warmup_steps must be at least 1, got {self.decoder_warmup_steps}")
        if not self.decoder_warmup_learning_rate > 0:
            raise CLIError(f"--decoder_warmup_learning_rate must be positive, got {self.decoder_warmup_learning_rate:g}")


_DOCS_HELP = "Documents, in any form that `st-infocse mine --docs` reads."


@dataclass
class IDCPairLoss:
    """Read first, with ``--objective``: which pair loss, and so which loss flags, IDC takes."""

    idc_loss: Literal["mnrl", "infocse"] = field(
        default="mnrl",
        metadata={"help": "Loss trained on the mined pairs; --idc_loss infocse takes InfoCSE's loss flags "
                  "(`--objective idc --idc_loss infocse --help`)."},
    )


@dataclass
class IDCFlags(IDCPairLoss):
    _argument_group_name = "IDC's documents and rounds"

    docs: str | None = field(default=None, metadata={"help": f"{_DOCS_HELP} Required."})
    rounds: int = field(default=3, metadata={"help": "Maximum mine -> train rounds."})
    idc_k: int = field(default=1, metadata={"help": "Top-K neighbours per sentence."})
    idc_similarity: Literal["cosine", "dot"] = field(
        default="cosine", metadata={"help": "Sentence score for mining, cosine or dot (inner product, paper 002 eq. 2)."}
    )
    initial_annotation: Literal["model", "adjacent"] = field(
        default="model", metadata={"help": "First-round pairs from the 'model' or 'adjacent' sentences."}
    )
    idc_annotator: str | None = field(
        default=None,
        metadata={
            "help": "Another Sentence Transformer (folder or hub id) whose mining gives the first round's pairs, "
            "e.g. sentence-transformers/all-mpnet-base-v2 (paper 002 Table 3 (5)); later rounds mine with the "
            "model being trained."
        },
    )
    idc_max_docs: int | None = field(
        default=None, metadata={"help": "Mine and train on a --seed sample of this many documents (in their order)."}
    )

    def __post_init__(self) -> None:
        if self.idc_annotator is not None and self.initial_annotation != "model":
            raise CLIError(f"--idc_annotator mines the first round, which --initial_annotation "
                           f"{self.initial_annotation} does not mine")
        if self.idc_max_docs is not None and self.idc_max_docs < 1:
            raise CLIError(f"--idc_max_docs must be at least 1, got {self.idc_max_docs}")


@dataclass
class ICTFlags:
    _argument_group_name = "ICT's documents"

    docs: str | None = field(
        default=None,
        metadata={"help": f"{_DOCS_HELP} Required: each sentence and the rest of its document are a pair."},
    )


@dataclass
class DistillFlags:
    _argument_group_name = "hybrid-teacher distillation (the teacher: --hybrid_fusion and --bm25_* below)"

    docs: str | None = field(
        default=None,
        metadata={"help": f"{_DOCS_HELP} Required: the pseudo-queries are drawn from them, and they are the corpus."},
    )
    distill_queries: Literal["held_out", "title", "sentence"] = field(
        default="held_out",
        metadata={"help": "Pseudo-queries: one sentence held out of each document (its rest the document), the "
                  "document's title (a 'title' field), or one sentence left in its document."},
    )
    distill_loss: Literal["kl", "margin_mse"] = field(
        default="kl",
        metadata={"help": "kl: DistillKLDivLoss over the query's document and the teacher's next candidates; "
                  "margin_mse: MarginMSELoss on the teacher's margin to its first other document (GPL)."},
    )
    distill_candidates: int = field(default=4, metadata={"help": "Documents per query for kl, its own included."})
    student_temperature: float = field(default=0.05, metadata={"help": "kl: the student's temperature."})
    teacher_temperature: float = field(
        default=0.1, metadata={"help": "kl: the teacher's temperature (its fused scores lie in [0, 1])."}
    )
    distill_max_queries: int | None = field(
        default=None, metadata={"help": "Train on a --seed sample of this many pseudo-queries (all by default)."}
    )

    def __post_init__(self) -> None:
        if self.distill_candidates < 2:
            raise CLIError(f"--distill_candidates must be at least 2 (the query's document and one other), got "
                           f"{self.distill_candidates}")
        for flag in ("student_temperature", "teacher_temperature"):
            if not getattr(self, flag) > 0:
                raise CLIError(f"--{flag} must be positive, got {getattr(self, flag):g}")
        if self.distill_max_queries is not None and self.distill_max_queries < 1:
            raise CLIError(f"--distill_max_queries must be at least 1, got {self.distill_max_queries}")


@dataclass
class LoRAFlags:
    _argument_group_name = "a LoRA adapter (st_infocse.training.lora; needs the lora extra: peft)"

    lora_r: int = field(
        default=0,
        metadata={"help": "Train a LoRA adapter of this rank on the encoder, every other weight of the model frozen "
                  "(0: no adapter, all weights train). The adapter is merged into the model when it is saved."},
    )
    lora_alpha: float = field(default=LoRASettings.alpha,
                              metadata={"help": "The adapter's scaling is lora_alpha / lora_r."})
    lora_target_modules: list[str] = field(
        default_factory=lambda: list(DEFAULT_TARGETS),
        metadata={"help": "Names of the linear layers to adapt (BERT family: query key value; MPNet: q k v)."},
    )
    lora_dropout: float = field(default=LoRASettings.dropout, metadata={"help": "Dropout on the adapter's input."})

    def __post_init__(self) -> None:
        """The adapter's flags, and PEFT's presence, before the model loads."""
        import importlib.util

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
        if not 0 <= self.lora_dropout < 1:
            raise CLIError(f"--lora_dropout must lie in [0, 1), got {self.lora_dropout}")
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
