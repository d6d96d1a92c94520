"""Training-only heads: the contrastive projection head and the untied MLM head."""

from __future__ import annotations

import logging
from typing import Literal

import torch
from torch import nn
from transformers.activations import ACT2FN

logger = logging.getLogger(__name__)

ProjectionKind = Literal["mlp", "bn-mlp"]


class ProjectionHead(nn.Module):
    """Projection applied to sentence embeddings for the contrastive term during training only.

    ``"mlp"`` is SimCSE's ``mlp_only_train`` head (Linear + Tanh); ``"bn-mlp"`` is DiffCSE/InfoCSE's
    Linear-BN-ReLU-Linear-BN head.
    """

    def __init__(self, dim: int, kind: ProjectionKind = "mlp") -> None:
        super().__init__()
        self.kind = kind
        if kind == "mlp":
            self.net = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        elif kind == "bn-mlp":
            self.net = nn.Sequential(
                nn.Linear(dim, dim, bias=False),
                nn.BatchNorm1d(dim),
                nn.ReLU(inplace=True),
                nn.Linear(dim, dim, bias=False),
                nn.BatchNorm1d(dim, affine=False),
            )
        else:
            raise ValueError(f"Unknown projection {kind!r}; choose 'mlp' or 'bn-mlp'.")

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.net(embeddings)


class MLMHead(nn.Module):
    """BERT-shaped MLM head (dense, activation, LayerNorm, vocabulary projection with bias).

    Its vocabulary projection is its own parameter, never tied to the encoder's word embeddings: a tied head
    would carry MLM gradients into the encoder through the embedding matrix.
    """

    def __init__(self, hidden_size: int, vocab_size: int, hidden_act: str = "gelu", layer_norm_eps: float = 1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.act = ACT2FN[hidden_act] if isinstance(hidden_act, str) else hidden_act
        self.layer_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.layer_norm(self.act(self.dense(hidden_states))))


def _head_modules(mlm_model: nn.Module, hidden_size: int) -> tuple[nn.Linear, nn.LayerNorm, nn.Module] | None:
    """The transform dense, LayerNorm and output projection of a ``*ForMaskedLM`` model's head, if present."""
    prefix = getattr(mlm_model, "base_model_prefix", "")
    dense = norm = None
    for name, module in mlm_model.named_modules():
        if not name or name == prefix or name.startswith(prefix + "."):
            continue
        if dense is None and isinstance(module, nn.Linear) and module.weight.shape == (hidden_size, hidden_size):
            dense = module
        elif norm is None and isinstance(module, nn.LayerNorm) and module.normalized_shape == (hidden_size,):
            norm = module
    output = mlm_model.get_output_embeddings()
    if dense is None or norm is None or output is None:
        return None
    return dense, norm, output


def build_mlm_head(encoder_parts, source: str | None = None) -> MLMHead:
    """An MLM head for the encoder: the checkpoint's own head where it has one, else a new one.

    A new head gets a freshly initialised transform and an output projection copied (untied) from the input word
    embeddings, which is what a tied BERT head starts from.
    """
    config = encoder_parts.config
    head = MLMHead(
        config.hidden_size,
        encoder_parts.word_embeddings.num_embeddings,
        getattr(config, "hidden_act", "gelu"),
        getattr(config, "layer_norm_eps", 1e-12),
    )
    source = source if source is not None else encoder_parts.name_or_path
    loaded = _load_checkpoint_head(source, config.hidden_size) if source else None
    with torch.no_grad():
        if loaded is not None:
            dense, norm, output = loaded
            head.dense.load_state_dict(dense.state_dict())
            head.layer_norm.load_state_dict(norm.state_dict())
            head.decoder.weight.copy_(output.weight)
            bias = output.bias if getattr(output, "bias", None) is not None else None
            head.decoder.bias.copy_(bias if bias is not None else torch.zeros_like(head.decoder.bias))
            logger.info("MLM head loaded from the checkpoint %s (untied copy).", source)
        else:
            head.decoder.weight.copy_(encoder_parts.word_embeddings.weight)
            head.decoder.bias.zero_()
            logger.warning(
                "The checkpoint %r has no MLM head: using a new one (transform freshly initialised, output projection "
                "copied from the input word embeddings, untied). Stage-1 auxiliary pre-training or a higher learning "
                "rate for the auxiliary modules helps it learn.",
                source or "<in-memory model>",
            )
    return head


def _load_checkpoint_head(source: str, hidden_size: int):
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
    return _head_modules(mlm_model, hidden_size)
