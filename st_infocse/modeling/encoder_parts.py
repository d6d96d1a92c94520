"""Find the Hugging Face encoder inside a SentenceTransformer, and describe its layer stack per encoder family.

The auxiliary decoder copies the encoder's lower layers and runs further layers on hidden states it builds itself
(``[h ; M_{>0}]``). Each family says where its layers live, which config attribute holds its depth, how to run a
slice of its layers on hidden states with a padding mask, and where its MLM head is.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask, create_bidirectional_sliding_window_mask

# ``run(host, layers, hidden_states, attention_mask)``: ``host`` is the Hugging Face model the layers were built
# with (it owns the config and shared modules); ``attention_mask`` is the ``(batch, seq)`` padding mask.
LayerRunner = Callable[[PreTrainedModel, Iterable[nn.Module], torch.Tensor, torch.Tensor], torch.Tensor]


class UnsupportedModelError(ValueError):
    """The model cannot host an auxiliary decoder; the message names what is missing."""


def _last_hidden(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def run_mask_only_layers(host: PreTrainedModel, layers: Iterable[nn.Module], hidden_states: torch.Tensor,
                         attention_mask: torch.Tensor, *extra: torch.Tensor) -> torch.Tensor:
    """BERT, RoBERTa, ELECTRA, DistilBERT: each layer is ``layer(hidden_states, mask, *extra)``, with the mask the
    model itself builds (its form depends on the attention implementation in the config)."""
    mask = create_bidirectional_mask(config=host.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
    for layer in layers:
        hidden_states = _last_hidden(layer(hidden_states, mask, *extra))
    return hidden_states


def run_mpnet_layers(host: PreTrainedModel, layers: Iterable[nn.Module], hidden_states: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
    """MPNet: every layer also takes the relative-position bias, which the host's encoder computes once."""
    position_bias = host.encoder.compute_position_bias(hidden_states)
    return run_mask_only_layers(host, layers, hidden_states, attention_mask, position_bias)


def run_modernbert_layers(host: PreTrainedModel, layers: Iterable[nn.Module], hidden_states: torch.Tensor,
                          attention_mask: torch.Tensor) -> torch.Tensor:
    """ModernBERT: each layer is global or local and takes the mask and rotary embeddings of its kind, built as
    ``ModernBertModel.forward`` builds them."""
    layers = list(layers)
    kinds = {layer.attention_type for layer in layers}
    mask_kwargs = {"config": host.config, "inputs_embeds": hidden_states, "attention_mask": attention_mask}
    makers = {
        "full_attention": create_bidirectional_mask,
        "sliding_attention": create_bidirectional_sliding_window_mask,
    }
    masks = {kind: makers[kind](**mask_kwargs) for kind in kinds}
    position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
    rotary = {kind: host.rotary_emb(hidden_states, position_ids, kind) for kind in kinds}
    for layer in layers:
        kind = layer.attention_type
        hidden_states = _last_hidden(layer(hidden_states, attention_mask=masks[kind], position_embeddings=rotary[kind]))
    return hidden_states


def _modernbert_layer_types(config: dict, depth: int) -> dict:
    # Layer i of a deeper copy has the kind of encoder layer i (the top one's above the encoder's depth), which is
    # the layer its weights are copied from.
    types = config.get("layer_types")
    if types:
        config["layer_types"] = [types[min(i, len(types) - 1)] for i in range(depth)]
    return config


@dataclass(frozen=True)
class MLMHeadLayout:
    """Where a ``*ForMaskedLM`` model keeps its head (``dense`` and ``norm`` module paths; the vocabulary projection
    is its ``get_output_embeddings()``), and ``options``: the config mapped to
    :class:`~st_infocse.modeling.heads.MLMHead` keyword arguments, so that the head computes what the checkpoint's
    does."""

    dense: str
    norm: str
    options: Callable[[PretrainedConfig], dict[str, Any]]


@dataclass(frozen=True)
class EncoderFamily:
    """How the auxiliary objectives handle one architecture family.

    ``output_norm_path`` is a norm the model applies after its last layer (pre-norm models): the decoder's lower copy
    leaves it out, so that it returns the k-th layer's raw output, and applies its own copy after the fusion layers.
    ``resize_config`` adjusts other per-layer config entries when the depth changes.
    """

    name: str
    model_types: tuple[str, ...]
    layers_path: str
    depth_attribute: str
    run: LayerRunner
    head: MLMHeadLayout
    output_norm_path: str | None = None
    resize_config: Callable[[dict, int], dict] | None = None

    def config_for_depth(self, config_dict: dict, depth: int) -> PretrainedConfig:
        """A config of this family with ``depth`` layers, from an encoder's ``config.to_dict()``."""
        from transformers import AutoConfig

        config_dict = copy.deepcopy(config_dict)
        if self.resize_config is not None:
            config_dict = self.resize_config(config_dict, depth)
        config_dict[self.depth_attribute] = depth
        return AutoConfig.for_model(config_dict.pop("model_type"), **config_dict)


def _gelu_head(config: PretrainedConfig) -> dict[str, Any]:
    # RobertaLMHead / MPNetLMHead (and ELECTRA's generator head) hard-code ``gelu`` whatever ``hidden_act`` says.
    return {"hidden_act": "gelu", "layer_norm_eps": config.layer_norm_eps}


FAMILIES: tuple[EncoderFamily, ...] = (
    EncoderFamily("bert", ("bert",), "encoder.layer", "num_hidden_layers", run_mask_only_layers, MLMHeadLayout(
        "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
        lambda c: {"hidden_act": c.hidden_act, "layer_norm_eps": c.layer_norm_eps})),
    EncoderFamily("roberta", ("roberta", "xlm-roberta", "camembert"), "encoder.layer", "num_hidden_layers",
                  run_mask_only_layers, MLMHeadLayout("lm_head.dense", "lm_head.layer_norm", _gelu_head)),
    # The generator head projects to embedding_size, which may be narrower than the hidden size.
    EncoderFamily("electra", ("electra",), "encoder.layer", "num_hidden_layers", run_mask_only_layers, MLMHeadLayout(
        "generator_predictions.dense", "generator_predictions.LayerNorm",
        lambda c: {**_gelu_head(c), "width": c.embedding_size})),
    EncoderFamily("distilbert", ("distilbert",), "transformer.layer", "n_layers", run_mask_only_layers, MLMHeadLayout(
        "vocab_transform", "vocab_layer_norm", lambda c: {"hidden_act": c.activation, "layer_norm_eps": 1e-12})),
    EncoderFamily("mpnet", ("mpnet",), "encoder.layer", "num_hidden_layers", run_mpnet_layers,
                  MLMHeadLayout("lm_head.dense", "lm_head.layer_norm", _gelu_head)),
    EncoderFamily("modernbert", ("modernbert",), "layers", "num_hidden_layers", run_modernbert_layers, MLMHeadLayout(
        "head.dense", "head.norm", lambda c: {
            "hidden_act": c.classifier_activation, "layer_norm_eps": c.norm_eps, "dense_bias": c.classifier_bias,
            "norm_bias": c.norm_bias, "decoder_bias": c.decoder_bias}),
        output_norm_path="final_norm", resize_config=_modernbert_layer_types),
)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(t for family in FAMILIES for t in family.model_types)

_T5 = ("encoder has no mask token for masked language modelling, and its blocks (encoder.block) take a relative "
       "position bias computed inside the first block")
# Why some well-known encoders are refused, beyond "no description for this family".
_KNOWN_UNSUPPORTED = {
    "albert": "ALBERT shares one set of layer weights across its depth (encoder.albert_layer_groups), so there are "
    "no separate lower k layers to copy and no per-layer stack to run",
    "t5": f"a T5 {_T5}",
    "mt5": f"an mT5 {_T5}",
    "xlnet": "XLNet is a permutation language model: its layers run two-stream relative attention with memory, not a "
    "masked-LM encoder stack driven by a padding mask",
}


def family_for(model_type: str) -> EncoderFamily:
    """The family description for a config's ``model_type``; an :class:`UnsupportedModelError` naming the model
    type and what is missing for it otherwise."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    reason = _KNOWN_UNSUPPORTED.get(
        model_type,
        "st_infocse has no description of its layer stack (path, depth attribute, how to run a slice of layers on "
        "hidden states with a padding mask) or of its MLM head",
    )
    raise UnsupportedModelError(
        f"Model type {model_type!r} is not supported by the auxiliary decoder: {reason}. Supported types: "
        f"{', '.join(SUPPORTED_MODEL_TYPES)}. The contrastive losses (SimCSELoss, InforMinReconstructionLoss "
        "without its MLM term) work with any model."
    )


@dataclass
class EncoderParts:
    """The pieces of a Hugging Face encoder that the auxiliary objectives reuse."""

    hf_model: PreTrainedModel
    tokenizer: object
    family: EncoderFamily

    @property
    def config(self) -> PretrainedConfig:
        return self.hf_model.config

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def layers(self) -> nn.ModuleList:
        return self.hf_model.get_submodule(self.family.layers_path)

    @property
    def output_norm(self) -> nn.Module | None:
        """The norm applied after the last layer, for families that have one (ModernBERT's ``final_norm``)."""
        path = self.family.output_norm_path
        return self.hf_model.get_submodule(path) if path else None


def find_encoder_parts(model: nn.Module) -> EncoderParts:
    """The Hugging Face encoder, tokenizer and family of a ``SentenceTransformer``; an
    :class:`UnsupportedModelError` when its first module is no Hugging Face transformer with a tokenizer and a
    layer stack of a described family."""
    first = model[0] if isinstance(model, nn.Sequential) and len(model) else None
    hf_model = getattr(first, "auto_model", None)
    if not isinstance(hf_model, PreTrainedModel):
        raise UnsupportedModelError("The first module of the SentenceTransformer must be a Hugging Face transformer "
                                    f"(sentence_transformers Transformer module), got {type(first).__name__}. "
                                    "Auxiliary objectives need token-level hidden states and the encoder's layers.")
    tokenizer = getattr(first, "tokenizer", None)
    if tokenizer is None:
        raise UnsupportedModelError(f"The transformer module {type(first).__name__} has no text tokenizer.")
    family = family_for(getattr(hf_model.config, "model_type", "?"))
    try:
        layers = hf_model.get_submodule(family.layers_path)
    except AttributeError:
        layers = None
    if not isinstance(layers, nn.ModuleList) or not len(layers):
        raise UnsupportedModelError(
            f"{type(hf_model).__name__} has no layer stack at {family.layers_path!r}, where {family.name} models "
            "keep theirs; the auxiliary decoder needs the base model (AutoModel), not a task model."
        )
    return EncoderParts(hf_model=hf_model, tokenizer=tokenizer, family=family)
