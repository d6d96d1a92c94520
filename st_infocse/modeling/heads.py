"""Training-only heads: the contrastive projection head and the untied MLM head."""

from __future__ import annotations

import logging
from typing import Literal

import torch
from torch import nn
from transformers import PretrainedConfig
from transformers.activations import ACT2FN

from st_infocse.files import check_choice
from st_infocse.modeling.encoder_parts import MLMHeadLayout, family_for

logger = logging.getLogger(__name__)

ProjectionKind = Literal["mlp", "bn-mlp"]


class ProjectionHead(nn.Module):
    """The training-only projection of sentence embeddings for the contrastive term: ``"mlp"``, unsupervised
    SimCSE's ``--mlp_only_train`` head, Linear(d, d) + Tanh (``simcse/models.py`` ``MLPLayer``), or ``"bn-mlp"``,
    InfoCSE's ``--batchnorm`` head, Linear(d, 2d) - BatchNorm - ReLU - Linear(2d, d) - BatchNorm(affine=False)
    (caskcsg/sentemb ``models_cls_mlm.py`` ``ProjectionMLP``). Linear weights start from N(0, ``init_std``, the
    encoder's ``initializer_range``) with zero biases, as the authors' ``init_weights``. BatchNorm normalises over
    the rows it is given: pass all views of a batch stacked, as the authors do.
    """

    def __init__(self, dim: int, kind: ProjectionKind = "mlp", init_std: float = 0.02) -> None:
        super().__init__()
        check_choice("projection", kind, ProjectionKind)
        if kind == "mlp":
            self.net = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        else:
            self.net = nn.Sequential(
                nn.Linear(dim, 2 * dim, bias=False),
                nn.BatchNorm1d(2 * dim),
                nn.ReLU(inplace=True),
                nn.Linear(2 * dim, dim, bias=False),
                nn.BatchNorm1d(dim, affine=False),
            )
        for module in self.net:
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=init_std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.net(to_width(embeddings, self.net[0].in_features))


def to_width(embeddings: torch.Tensor, width: int) -> torch.Tensor:
    """Embeddings narrower than ``width`` zero-padded to it, so that a head built for the full width reads an
    embedding ``MatryoshkaLoss`` truncated through the weights of its first dimensions; others as they are."""
    missing = width - embeddings.shape[-1]
    return torch.nn.functional.pad(embeddings, (0, missing)) if missing > 0 else embeddings


def at_least_fp32(tensor: torch.Tensor) -> torch.Tensor:
    """Upcast half-precision values for a numerically sensitive step (softmax, normalisation); float64 stays."""
    return tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor


def initializer_range(model: nn.Module, default: float = 0.02) -> float:
    """The Hugging Face ``initializer_range`` of a SentenceTransformer's encoder (0.02 when it has none)."""
    first = next(iter(model.children()), None) if hasattr(model, "children") else None
    config = getattr(getattr(first, "auto_model", None), "config", None)
    value = getattr(config, "initializer_range", None)
    return float(default if value is None else value)


class MLMHead(nn.Module):
    """MLM head: dense, activation, LayerNorm, vocabulary projection; the options cover the supported families'
    heads (ModernBERT's dense and norm may have no bias; ELECTRA's generator head is ``width`` wide).

    The projection is its own parameter: in the conditional MLM a head tied to the word embeddings would carry MLM
    gradients into the encoder through them. Stage 1 (``AuxiliaryPretrainingLoss``) ties it, as Condenser does.
    """

    def __init__(self, hidden_size: int, vocab_size: int, hidden_act: str = "gelu", layer_norm_eps: float = 1e-12, *,
                 width: int | None = None, dense_bias: bool = True, norm_bias: bool = True,
                 decoder_bias: bool = True) -> None:
        super().__init__()
        width = hidden_size if width is None else width
        self.dense = nn.Linear(hidden_size, width, bias=dense_bias)
        self.act = ACT2FN[hidden_act] if isinstance(hidden_act, str) else hidden_act
        self.layer_norm = nn.LayerNorm(width, eps=layer_norm_eps, bias=norm_bias)
        self.decoder = nn.Linear(width, vocab_size, bias=decoder_bias)

    @classmethod
    def for_config(cls, config: PretrainedConfig, vocab_size: int | None = None) -> MLMHead:
        """A head shaped like the ``*ForMaskedLM`` head of ``config``'s family."""
        options = family_for(config.model_type).head.options(config)
        return cls(config.hidden_size, config.vocab_size if vocab_size is None else vocab_size, **options)

    def transform(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """The states the vocabulary projection reads: dense, activation, LayerNorm."""
        return self.layer_norm(self.act(self.dense(hidden_states)))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(hidden_states))


def build_mlm_head(encoder_parts, source: str | None = None) -> MLMHead:
    """An MLM head for the encoder: the checkpoint's own head where it has one, else a new one (a fresh transform,
    and a projection copied, untied, from the input word embeddings, which is what a tied head starts from)."""
    head = MLMHead.for_config(encoder_parts.config, encoder_parts.hf_model.get_input_embeddings().num_embeddings)
    source = source if source is not None else encoder_parts.hf_model.name_or_path
    loaded = _load_checkpoint_head(source, encoder_parts.family.head) if source else None
    with torch.no_grad():
        if loaded is not None:
            dense, norm, output = loaded
            head.dense.load_state_dict(dense.state_dict())
            head.layer_norm.load_state_dict(norm.state_dict())
            head.decoder.weight.copy_(output.weight)
            if head.decoder.bias is not None:
                bias = getattr(output, "bias", None)
                head.decoder.bias.copy_(bias if bias is not None else torch.zeros_like(head.decoder.bias))
            logger.info("MLM head loaded from the checkpoint %s (untied copy).", source)
        else:
            head.decoder.weight.copy_(encoder_parts.hf_model.get_input_embeddings().weight)
            if head.decoder.bias is not None:
                head.decoder.bias.zero_()
            logger.warning(
                "The checkpoint %r has no MLM head: using a new one (transform freshly initialised, output projection "
                "copied from the input word embeddings, untied). Stage-1 auxiliary pre-training or a higher learning "
                "rate for the auxiliary modules helps it learn.",
                source or "<in-memory model>",
            )
    return head


def _load_checkpoint_head(source: str, layout: MLMHeadLayout) -> tuple[nn.Linear, nn.LayerNorm, nn.Module] | None:
    """The transform dense, LayerNorm and output projection of the ``*ForMaskedLM`` head saved at ``source``."""
    from transformers import AutoModelForMaskedLM
    from transformers.utils import logging as hf_logging

    # Loading a checkpoint without a head prints a long missing-weights report; the outcome is logged below.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        mlm_model, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True)
    except (OSError, ValueError, KeyError) as exc:
        logger.info("No MLM head could be loaded from %r (%s).", source, exc)
        return None
    finally:
        hf_logging.set_verbosity(verbosity)
    prefix = getattr(mlm_model, "base_model_prefix", "")
    # A head whose weights were freshly initialised by from_pretrained is no checkpoint head.
    missing_head = [k for k in info.get("missing_keys", []) if not k.startswith(prefix + ".")]
    if missing_head:
        return None
    try:
        dense, norm = (mlm_model.get_submodule(path) for path in (layout.dense, layout.norm))
    except AttributeError:
        logger.info("%s has no MLM head at %r / %r.", type(mlm_model).__name__, layout.dense, layout.norm)
        return None
    return dense, norm, mlm_model.get_output_embeddings()
