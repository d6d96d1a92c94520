"""Find the Hugging Face encoder inside a SentenceTransformer, and its embedding and layer stack."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

# Families whose layers are called as ``layer(hidden_states, attention_mask)`` with the mask built by
# ``transformers.masking_utils.create_bidirectional_mask`` and whose depth is ``config.num_hidden_layers``.
SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "camembert", "electra")
_LAYER_PATHS = ("encoder.layer",)


class UnsupportedModelError(ValueError):
    """The model cannot host an auxiliary decoder; the message names what is missing."""


@dataclass
class EncoderParts:
    """The pieces of a Hugging Face encoder that the auxiliary objectives reuse."""

    hf_model: PreTrainedModel
    tokenizer: object
    layers_path: str

    @property
    def config(self) -> PretrainedConfig:
        return self.hf_model.config

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def layers(self) -> nn.ModuleList:
        return get_submodule(self.hf_model, self.layers_path)

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.hf_model.get_input_embeddings()

    @property
    def name_or_path(self) -> str:
        return getattr(self.hf_model, "name_or_path", "") or getattr(self.config, "_name_or_path", "")


def get_submodule(module: nn.Module, path: str) -> nn.Module:
    for name in path.split("."):
        module = getattr(module, name)
    return module


def find_encoder_parts(model: nn.Module) -> EncoderParts:
    """Return the Hugging Face encoder, tokenizer and layer stack of a ``SentenceTransformer``.

    Raises:
        UnsupportedModelError: if the first module is not a Hugging Face transformer, the tokenizer is missing,
            or the architecture's layer stack is unknown.
    """
    first = model[0] if isinstance(model, nn.Sequential) and len(model) else None
    hf_model = getattr(first, "auto_model", None)
    if not isinstance(hf_model, PreTrainedModel):
        raise UnsupportedModelError(
            "The first module of the SentenceTransformer must be a Hugging Face transformer "
            f"(sentence_transformers Transformer module), got {type(first).__name__}. "
            "Auxiliary objectives need token-level hidden states and the encoder's layers."
        )
    tokenizer = getattr(first, "tokenizer", None)
    if tokenizer is None:
        raise UnsupportedModelError(f"The transformer module {type(first).__name__} has no text tokenizer.")
    model_type = getattr(hf_model.config, "model_type", "?")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModelError(
            f"Model type {model_type!r} is not supported by the auxiliary decoder yet; supported types: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}. The contrastive losses (SimCSELoss, InforMinReconstructionLoss "
            "without its MLM term) work with any model."
        )
    for path in _LAYER_PATHS:
        try:
            layers = get_submodule(hf_model, path)
        except AttributeError:
            continue
        if isinstance(layers, nn.ModuleList) and len(layers):
            return EncoderParts(hf_model=hf_model, tokenizer=tokenizer, layers_path=path)
    raise UnsupportedModelError(
        f"Could not find the layer stack of {type(hf_model).__name__} (looked for {_LAYER_PATHS})."
    )


def bidirectional_mask(config: PretrainedConfig, hidden_states: torch.Tensor, attention_mask: torch.Tensor):
    """The attention mask in the form the model's own layers expect (depends on the attention implementation)."""
    from transformers.masking_utils import create_bidirectional_mask

    return create_bidirectional_mask(config=config, inputs_embeds=hidden_states, attention_mask=attention_mask)


def run_layers(layers: nn.ModuleList, hidden_states: torch.Tensor, mask) -> torch.Tensor:
    for layer in layers:
        out = layer(hidden_states, mask)
        hidden_states = out[0] if isinstance(out, tuple) else out
    return hidden_states
