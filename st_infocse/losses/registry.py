"""Every objective of the package in one table: its name, its loss class, its defaults and the paper to cite.

The command line (``--objective``, its help, the loss it builds, the range of each loss flag: :data:`BOUNDS`), the
recipes, the evaluators and the losses read their defaults here, so a default is written once. Adding an objective
touches its loss (one file in ``st_infocse/losses/``, deriving from :class:`~st_infocse.losses.TrainingLoss`) and
one :class:`Objective` entry in :data:`OBJECTIVES`.

This module imports neither torch nor the losses (:meth:`Objective.loss_class` imports one when called), so the
command line can check ``--objective`` and print its help before anything heavy is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from st_infocse.files import Bounds, check_choice, check_range
from st_infocse.losses.citations import (
    CMLM_CSE_CITATION,
    GPL_CITATION,
    ICT_CITATION,
    IDC_CITATION,
    INFOCSE_CITATION,
    INFORMIN_CITATION,
    SIMCSE_CITATION,
)

if TYPE_CHECKING:
    from torch import nn

    from st_infocse.modeling.auxiliary_decoder import FusionInit
    from st_infocse.modeling.heads import ProjectionKind

__all__ = [
    "BOUNDS", "INFOCSE_MASK_RATE", "INFORMIN_LAMBDA", "MLM_MASK_RATE",
    "OBJECTIVES", "PRESETS", "STAGE1", "ConditionalMLMPreset", "Objective", "Preset", "check_bounds", "flag_value",
    "get_objective", "objective_names",
]

#: InfoCSE's mask rate on 12 layers: mlm_rate=0.4 in Infocse-bert-base.sh.
INFOCSE_MASK_RATE = 0.40
#: InforMin-CL's weight of the reconstruction term for BERT-base (paper 001 Table 3), with the authors' scaling.
INFORMIN_LAMBDA = 0.4
#: BERT's and Condenser's masking rate: stage-1 pre-training and InforMin-CL's optional MLM term.
MLM_MASK_RATE = 0.15

Preset = Literal["infocse", "cmlm-cse"]


def _infocse_k(depth: int) -> int:
    # Both released scripts (Infocse-bert-base.sh, InfoCSE-bert-large.sh) pass --skip_from 6, on 12 and on 24
    # layers; shallower encoders keep the paper's proportion (half the depth).
    return 6 if depth >= 12 else max(1, depth // 2)


def _cmlm_cse_k(depth: int) -> int:
    # Paper 003 section 3.2 / Table 6: the first eight of BERT-base's twelve layers; two thirds elsewhere.
    return max(1, round(depth * 2 / 3))


@dataclass(frozen=True)
class DecoderSettings:
    """An auxiliary decoder's settings as applied: frozen lower layers ``k``, fusion layers ``n``, the MLM's mask
    rate, how the fusion layers start and whether the lower copy is frozen."""

    k: int
    n: int
    mask_rate: float
    fusion_init: FusionInit
    detach: bool


@dataclass(frozen=True)
class ConditionalMLMPreset:
    """The defaults of one paper's released or reported configuration of the conditional MLM.

    ``k`` maps the encoder's depth to the frozen lower layers; the mask rate depends on the depth too where
    :attr:`mask_rates` has more than one step. ``projection`` is the training-only contrastive head, ``fusion_init``
    how the fusion layers start and ``detach`` whether the decoder's lower copy is frozen.
    """

    n: int
    lambda_: float
    projection: ProjectionKind | None
    fusion_init: FusionInit
    k: Callable[[int], int]
    #: ``(from_depth, rate)`` steps in increasing depth, the first from depth 0.
    mask_rates: tuple[tuple[int, float], ...]
    #: Paper 000 §3.2: the lower copy is detached (frozen); "w/o detach" is an ablation (Table 6).
    detach: bool = True

    def decoder_settings(self, depth: int, k: int | None = None, n: int | None = None, mask_rate: float | None = None,
                         fusion_init: FusionInit | None = None, detach: bool | None = None) -> DecoderSettings:
        """The decoder's settings for an encoder of ``depth`` layers: each given value, else this preset's. The one
        place the preset's defaults are filled in, for the losses, the command line's decoder warm-up and the probe.

        Example:
            >>> PRESETS["infocse"].decoder_settings(12, n=3)
            DecoderSettings(k=6, n=3, mask_rate=0.4, fusion_init='fresh', detach=True)
        """
        return DecoderSettings(
            k=self.k(depth) if k is None else k,
            n=self.n if n is None else n,
            mask_rate=self.mask_rate(depth) if mask_rate is None else mask_rate,
            fusion_init=self.fusion_init if fusion_init is None else fusion_init,
            detach=self.detach if detach is None else detach,
        )

    def mask_rate(self, depth: int) -> float:
        return [rate for start, rate in self.mask_rates if depth >= start][-1]


PRESETS: Mapping[str, ConditionalMLMPreset] = MappingProxyType(
    {
        # caskcsg/sentemb Infocse-bert-base.sh / InfoCSE-bert-large.sh: --skip_from 6 --n_head_layers 2
        # --mlm_probability 0.4 (0.3 large) --mlm_weight 1e-5 --batchnorm; c_head layers freshly initialised
        # (models_cls_mlm.py: BertForCL.__init__ applies _init_weights; the Condenser head weights are read only
        # from a local folder, train_cls_mlm.py:418-421). The weight 1e-5 is also paper 000 Table 8's best.
        "infocse": ConditionalMLMPreset(
            n=2,
            lambda_=1e-5,
            projection="bn-mlp",
            fusion_init="fresh",
            k=_infocse_k,
            mask_rates=((0, INFOCSE_MASK_RATE), (24, 0.30)),
        ),
        # Paper 003: k=8, n=3 (Table 6), lambda 0.005 (Table 5), 15% masking (Table 3), and "the same settings as
        # the unsupervised SimCSE" (section 4.1): SimCSE's MLP head at training time. No code was released; the
        # fusion layers start fresh as in InfoCSE's code, which the auxiliary network follows. The headline row 8-3
        # (Tables 3-6) masks 15% ("we still used random word masking of 15%"); Table 4's 40% is an ablation's best.
        "cmlm-cse": ConditionalMLMPreset(
            n=3,
            lambda_=0.005,
            projection="mlp",
            fusion_init="fresh",
            k=_cmlm_cse_k,
            mask_rates=((0, 0.15),),
        ),
    }
)


@dataclass(frozen=True)
class Objective:
    """One objective: what the command line, the recipes and the evaluators know about it."""

    #: The ``--objective`` value.
    name: str
    #: ``"module:Class"`` of its loss, imported by :meth:`loss_class`; None where it trains pairs with a pair loss
    #: (IDC's --idc_loss; ICT's MultipleNegativesRankingLoss).
    loss: str | None
    #: BibTeX of its paper.
    citation: str
    #: Its conditional-MLM preset, for the objectives built on :class:`~st_infocse.losses.ConditionalMLMLoss`.
    preset: ConditionalMLMPreset | None = None

    def loss_class(self) -> type[nn.Module]:
        """The loss class (imports it, and torch with it)."""
        from sentence_transformers.util import import_from_string

        if self.loss is None:
            raise ValueError(f"objective {self.name!r} has no loss of its own")
        return import_from_string(self.loss.replace(":", "."))


def _conditional_mlm_objective(name: str, loss: str, citation: str, preset: str | None = None) -> Objective:
    """An objective built on the conditional MLM, its defaults from its preset (its own, or ``preset``'s)."""
    return Objective(name, f"st_infocse.losses.{loss}", citation, PRESETS[preset or name])


#: The objectives of ``st-infocse train --objective``, in the order its help lists them.
OBJECTIVES: Mapping[str, Objective] = MappingProxyType({objective.name: objective for objective in (
    Objective("simcse", "st_infocse.losses.simcse:SimCSELoss", SIMCSE_CITATION),
    _conditional_mlm_objective("infocse", "infocse:InfoCSELoss", INFOCSE_CITATION),
    _conditional_mlm_objective("cmlm-cse", "cmlm_cse:CMLMCSELoss", CMLM_CSE_CITATION),
    Objective("informin", "st_infocse.losses.informin:InforMinReconstructionLoss", INFORMIN_CITATION),
    # Mine pairs from documents with the model, train on them, repeat; --idc_loss picks the pair loss.
    Objective("idc", None, IDC_CITATION),
    # A sentence and the rest of its document (the inverse cloze task, paper 002's strongest context baseline),
    # trained with sentence-transformers' MultipleNegativesRankingLoss.
    Objective("ict", None, ICT_CITATION),
    # Pseudo-queries from documents, scored by BM25 fused with the model as given (the hybrid teacher), distilled
    # with sentence-transformers' DistillKLDivLoss or MarginMSELoss.
    Objective("distill", None, GPL_CITATION),
    # The conditional MLM alone (paper 000 Table 5, "w/o contrastive loss"), with InfoCSE's preset.
    _conditional_mlm_objective("cmlm", "conditional_mlm:ConditionalMLMLoss", INFOCSE_CITATION, preset="infocse"),
)})

#: Stage 1 of InfoCSE, ``st-infocse pretrain-aux`` (not a ``train`` objective): Condenser's pre-training (paper 000
#: §3.1), by default at Condenser's mask rate (:data:`MLM_MASK_RATE`).
STAGE1 = Objective(
    "pretrain-aux",
    "st_infocse.losses.auxiliary_pretraining:AuxiliaryPretrainingLoss",
    INFOCSE_CITATION,
)


#: The range each loss argument must lie in, as ``(low, high, low included, high included)`` (None: unbounded). The
#: command line checks a flag against it before anything loads; a loss's own check of the same argument holds it.
BOUNDS: Mapping[str, Bounds] = MappingProxyType({
    "lambda_": (0, None, True, False),
    "informin_weight": (0, None, True, False),
    "temperature": (0, None, False, False),
    "mask_rate": (0, 1, False, False),
    "k": (0, None, True, False),
    "n": (0, None, True, False),
})


def check_bounds(**values: float | None) -> None:
    """The losses' own check of their arguments against :data:`BOUNDS`: a ``ValueError`` naming the first outside
    its range."""
    for name, value in values.items():
        check_range(name, value, BOUNDS[name])


def objective_names() -> tuple[str, ...]:
    """The ``--objective`` values, e.g. ``('simcse', 'infocse', ...)``."""
    return tuple(OBJECTIVES)


def get_objective(name: str) -> Objective:
    """The objective called ``name``; a ``ValueError`` naming the known ones otherwise."""
    check_choice("objective", name, OBJECTIVES)
    return OBJECTIVES[name]


def flag_value(value: float) -> str:
    """A default as a command-line value is written: ``1e-5`` rather than ``1e-05``, ``0.4``, ``0.005``."""
    return re.sub(r"e([+-])0*(\d)", lambda m: f"e{'' if m[1] == '+' else '-'}{m[2]}", f"{value:g}")
