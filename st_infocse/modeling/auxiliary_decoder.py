"""The auxiliary decoder of InfoCSE / CMLM-CSE: frozen lower layers, fusion layers, untied MLM head."""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoModel, PretrainedConfig

from st_infocse.files import check_choice
from st_infocse.modeling.encoder_parts import EncoderParts, UnsupportedModelError, family_for, find_encoder_parts
from st_infocse.modeling.heads import MLMHead, build_mlm_head, to_width
from st_infocse.modeling.vocab_cross_entropy import vocab_cross_entropy

logger = logging.getLogger(__name__)

CONFIG_NAME = "auxiliary_decoder_config.json"
WEIGHTS_NAME = "auxiliary_decoder.safetensors"
FusionInit = Literal["copy", "fresh"]
# How the MLM losses gather the masked positions for the head (see :func:`gather_room`).
MLMGather = Literal["auto", "exact", "bounded"]


def gather_room(mlm_gather: MLMGather, labels: torch.Tensor, mask_rate: float, per_row: bool = False) -> int | None:
    """Room for the masked positions of ``labels`` under a bounded gather; None for the exact gather.

    ``"exact"`` sizes the gather from the count (one host synchronisation per step on a GPU); ``"bounded"`` uses a
    static room and reads nothing (:func:`prediction_bound`, see :func:`mlm_loss`); ``"auto"`` is exact on the CPU,
    where reading the count costs nothing, and bounded on accelerators and under torch.compile (a data-dependent size
    would break the graph there). ``per_row``: each row masks at most ``max(1, round(mask_rate * width))`` positions
    (whole-word masking's budget), which is then the room.
    """
    if not (mlm_gather == "bounded" or (mlm_gather == "auto" and (labels.device.type != "cpu" or torch.compiler.is_compiling()))):
        return None
    if per_row:
        rows, width = labels.shape
        return rows * max(1, round(mask_rate * width))
    return prediction_bound(labels.numel(), mask_rate)


@dataclass
class AuxiliaryDecoderConfig:
    """Shape of an auxiliary decoder; saved next to its weights. ``detach``: a frozen, gradient-free lower copy.
    ``fusion_init`` records how :meth:`AuxiliaryDecoder.from_encoder` started the fusion layers (the constructor
    always builds them fresh; :meth:`~AuxiliaryDecoder.from_pretrained` loads the saved weights over them)."""

    k: int
    n: int
    embedding_dim: int
    encoder_config: dict
    layers_path: str
    detach: bool = True
    fusion_init: str = "fresh"


@dataclass
class MLMOutput:
    """Loss over the masked positions and how many of them were predicted correctly (device tensors, read only when
    metrics are logged). ``overflow``: a device flag, set when a bounded gather had more masked positions than room;
    the losses' step checks raise on it."""

    loss: torch.Tensor
    correct: torch.Tensor
    total: torch.Tensor
    overflow: torch.Tensor | None = None


class AuxiliaryDecoder(nn.Module):
    """Auxiliary network for conditional masked language modelling (paper 000 §3.2, paper 003).

    The masked sentence runs through a copy of the encoder's embeddings and lower ``k`` layers. The sentence
    embedding ``h`` of the *unmasked* sentence replaces the [CLS] state, ``[h ; M_{>0}]`` runs through ``n``
    trainable fusion layers, and an untied MLM head predicts the masked tokens. With ``detach=True`` (the paper's
    setting) the lower copy is frozen: it runs in eval mode under ``torch.no_grad``, so ``M_{>0}`` carries no
    gradient and the only path from the MLM loss into the encoder is ``h``.

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from sentence_transformers.base.modules import Transformer
            from sentence_transformers.sentence_transformer.modules import Pooling
            from st_infocse.modeling import AuxiliaryDecoder

            encoder = Transformer("bert-base-uncased", max_seq_length=32)
            model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
            decoder = AuxiliaryDecoder.from_encoder(model, k=6, n=2)
            decoder.save_pretrained("aux-decoder")
            decoder = AuxiliaryDecoder.from_pretrained("aux-decoder")
    """

    def __init__(self, config: AuxiliaryDecoderConfig) -> None:
        super().__init__()
        self.config = config
        self.family = family_for(config.encoder_config["model_type"])
        encoder_config = self.family.config_for_depth(config.encoder_config, config.k + config.n)
        # One model of depth k + n gives both the lower stack (first k layers) and the fusion layers (the rest);
        # the lower model also hosts what the fusion layers share with it (MPNet's relative position bias,
        # ModernBERT's rotary embedding).
        base = AutoModel.from_config(encoder_config)
        layers = base.get_submodule(self.family.layers_path)
        self.fusion = nn.ModuleList(list(layers)[config.k :])
        base.set_submodule(self.family.layers_path, nn.ModuleList(list(layers)[: config.k]))
        base.config.num_hidden_layers = config.k
        if getattr(base, "pooler", None) is not None:
            base.pooler = None
        # A pre-norm model's final norm moves behind the fusion layers (trainable), so that the lower copy returns
        # the k-th layer's raw output, as the fusion layers expect.
        self.output_norm: nn.Module | None = None
        if self.family.output_norm_path:
            self.output_norm = base.get_submodule(self.family.output_norm_path)
            base.set_submodule(self.family.output_norm_path, nn.Identity())
        self.lower = base
        self._takes_token_types = "token_type_ids" in inspect.signature(base.forward).parameters
        self.head = MLMHead.for_config(encoder_config)
        hidden = encoder_config.hidden_size
        # A Dense module can change the sentence embedding size; project h back to the hidden size.
        self.h_proj = nn.Linear(config.embedding_dim, hidden) if config.embedding_dim != hidden else None
        self.lower.requires_grad_(not config.detach)

    @classmethod
    def from_encoder(cls, model: nn.Module, k: int, n: int, fusion_init: FusionInit = "fresh", detach: bool = True,
                     mlm_head_source: str | None = None) -> AuxiliaryDecoder:
        """A decoder initialised from a ``SentenceTransformer``'s own weights: its lower ``k`` layers copied (frozen
        when ``detach``, the paper's default; ``False`` is paper 000's Table 6 ablation), ``n`` fusion layers
        ``"fresh"`` (random with the encoder's ``initializer_range``, as the authors' ``BertForCL`` builds its
        ``c_head``) or ``"copy"`` (encoder layers ``k .. k+n-1``, the top one again where the encoder has fewer), and
        the MLM head of ``mlm_head_source`` (default: the model's own path)."""
        parts = find_encoder_parts(model)
        if not isinstance(k, int) or not 1 <= k < parts.depth:
            raise ValueError(
                f"k (frozen lower layers) must be between 1 and {parts.depth - 1} for this {parts.depth}-layer "
                f"encoder, got {k!r}: the sentence embedding must come from layers above the auxiliary copy."
            )
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n (fusion layers) must be a positive integer, got {n!r}")
        check_choice("fusion_init", fusion_init, FusionInit)
        config = AuxiliaryDecoderConfig(
            k=k,
            n=n,
            embedding_dim=model.get_embedding_dimension(),
            encoder_config=parts.config.to_dict(),
            layers_path=parts.family.layers_path,
            detach=detach,
            fusion_init=fusion_init,
        )
        decoder = cls(config)
        decoder.use_attention_of(parts.config)
        decoder.copy_lower_from(parts)
        if fusion_init == "copy":
            for i, layer in enumerate(decoder.fusion):
                layer.load_state_dict(parts.layers[min(k + i, parts.depth - 1)].state_dict())
            if k + n > parts.depth:
                logger.info("Fusion layers %d..%d start as copies of the top encoder layer (%d layers above k=%d).",
                            parts.depth - k, n - 1, parts.depth - k, k)
        if decoder.output_norm is not None:
            # The MLM head was trained behind this norm.
            decoder.output_norm.load_state_dict(parts.output_norm.state_dict())
        decoder.head = build_mlm_head(parts, mlm_head_source)
        return decoder.to(parts.hf_model.device)

    def use_attention_of(self, config: PretrainedConfig) -> None:
        """Run the lower copy and the fusion layers with the encoder's attention implementation (eager, sdpa, ...):
        a config rebuilt from a dict gets the library's default instead. The results agree up to rounding either way;
        speed and memory follow the implementation. transformers exposes the one in use only as the config's
        ``_attn_implementation`` and sets it through ``set_attn_implementation``."""
        wanted = getattr(config, "_attn_implementation", None)
        if wanted and wanted != self.lower.config._attn_implementation:
            # The fusion layers were built from the same config object, so they switch too.
            self.lower.set_attn_implementation(wanted)

    def copy_lower_from(self, parts: EncoderParts) -> None:
        """Copy the encoder's embeddings and lower ``k`` layers into the lower stack; a layer wrapped by an adapter
        (PEFT's LoRA keeps the original as ``base_layer``) gives its base weights, without the adapter's change."""
        state = {key.replace(".base_layer.", "."): value for key, value in parts.hf_model.state_dict().items()}
        own = self.lower.state_dict()
        missing = [key for key in own if key not in state]
        if missing:
            raise UnsupportedModelError(f"Encoder weights missing for the auxiliary copy: {missing[:5]}")
        self.lower.load_state_dict({key: state[key] for key in own})

    def lower_hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                            token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states after the lower ``k`` layers (frozen and gradient-free when ``detach``)."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self._takes_token_types:
            kwargs["token_type_ids"] = token_type_ids
        if self.config.detach:
            # The trainer only toggles the model's mode; keep the frozen copy dropout-free regardless.
            self.lower.eval()
            with torch.no_grad():
                return self.lower(**kwargs).last_hidden_state.detach()
        self.lower.train(self.training)
        return self.lower(**kwargs).last_hidden_state

    def forward(self, sentence_embedding: torch.Tensor, masked_input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                lower_hidden: torch.Tensor | None = None, max_predictions: int | None = None) -> MLMOutput:
        """Conditional MLM loss on the masked positions of ``masked_input_ids`` (``labels``: the original ids there,
        -100 elsewhere), conditioned on ``sentence_embedding``, the embedding of the unmasked sentences, which carries
        the gradient. ``lower_hidden``: precomputed lower-stack states (stage 1 passes the shared encoder's), beside
        which ``token_type_ids`` (segment ids for the lower stack) are refused. ``max_predictions``: see
        :func:`mlm_loss`."""
        if lower_hidden is not None and token_type_ids is not None:
            raise ValueError("token_type_ids feed the lower stack, which does not run when lower_hidden is given.")
        if lower_hidden is None:
            lower_hidden = self.lower_hidden_states(masked_input_ids, attention_mask, token_type_ids)
        # A Matryoshka-truncated embedding conditions the decoder through its first dimensions (heads.to_width).
        width = lower_hidden.shape[-1] if self.h_proj is None else self.h_proj.in_features
        sentence_embedding = to_width(sentence_embedding, width)
        h = sentence_embedding if self.h_proj is None else self.h_proj(sentence_embedding)
        hidden = torch.cat([h.unsqueeze(1).to(lower_hidden.dtype), lower_hidden[:, 1:]], dim=1)
        hidden = self.family.run(self.lower, self.fusion, hidden, attention_mask)
        if self.output_norm is not None:
            hidden = self.output_norm(hidden)
        return mlm_loss(self.head, hidden, labels, max_predictions)

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """Write the decoder's config (JSON) and weights (safetensors) to ``path``."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / CONFIG_NAME).write_text(json.dumps(asdict(self.config), indent=2, default=str))
        state = {key: value.detach().contiguous().cpu() for key, value in self.state_dict().items()}
        save_file(state, str(path / WEIGHTS_NAME))

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str | torch.device | None = None) -> AuxiliaryDecoder:
        """Load a decoder written by :meth:`save_pretrained` (safetensors only, no pickle)."""
        path = Path(path)
        if not (path / CONFIG_NAME).is_file() or not (path / WEIGHTS_NAME).is_file():
            raise FileNotFoundError(f"No auxiliary decoder in {path}: expected {CONFIG_NAME} and {WEIGHTS_NAME}.")
        config = AuxiliaryDecoderConfig(**json.loads((path / CONFIG_NAME).read_text()))
        decoder = cls(config)
        decoder.load_state_dict(load_file(str(path / WEIGHTS_NAME)))
        return decoder.to(device) if device is not None else decoder

    def check_compatible(self, model: nn.Module) -> None:
        """Raise a clear error when this decoder cannot serve ``model`` (vocabulary, width, embedding size)."""
        parts = find_encoder_parts(model)
        mine, theirs = self.lower.config, parts.config
        for attr in ("model_type", "hidden_size", "vocab_size"):
            if getattr(mine, attr, None) != getattr(theirs, attr, None):
                raise ValueError(
                    f"The auxiliary decoder was built for {attr}={getattr(mine, attr, None)!r} but the model has "
                    f"{attr}={getattr(theirs, attr, None)!r}."
                )
        if self.config.embedding_dim != model.get_embedding_dimension():
            raise ValueError(
                f"The auxiliary decoder expects {self.config.embedding_dim}-dim sentence embeddings, the model "
                f"produces {model.get_embedding_dimension()}."
            )


def prediction_bound(positions: int, mask_rate: float, sigmas: float = 8.0) -> int:
    """A static room for the masked positions among ``positions`` tokens each chosen with ``mask_rate``: the
    binomial mean plus ``sigmas`` standard deviations (plus a floor for tiny batches), capped at ``positions``. The
    count exceeds it with a probability of roughly 1e-15 per batch, and is then never cut silently (:func:`mlm_loss`).
    """
    mean = positions * mask_rate
    spread = sigmas * math.sqrt(positions * mask_rate * (1.0 - mask_rate))
    return min(positions, math.ceil(mean + spread) + 16)


def mlm_loss(head: MLMHead, hidden: torch.Tensor, labels: torch.Tensor,
             max_predictions: int | None = None) -> MLMOutput:
    """Cross-entropy over the masked positions, through the head on those positions alone (its vocabulary
    projection is the expensive part).

    ``max_predictions=None`` gathers exactly the masked positions, which reads their count (one host synchronisation
    on a GPU). With ``max_predictions=M`` the first ``M`` positions, masked ones first, go through the head: no
    synchronisation, the same loss while at most ``M`` are masked, and ``overflow`` set (the step check stops
    training) when more are.
    """
    width = hidden.shape[-1]
    flat_hidden = hidden.reshape(-1, width)
    flat_labels = labels.reshape(-1)
    selected = flat_labels != -100
    total = selected.sum()
    overflow = None
    if max_predictions is None:
        # Boolean indexing sizes its output from the count: the one synchronisation of this path.
        rows, targets = flat_hidden[selected], flat_labels[selected]
    else:
        room = min(max_predictions, flat_labels.numel())
        order = torch.argsort(selected.to(torch.int8), descending=True, stable=True)[:room]
        rows, targets = flat_hidden[order], flat_labels[order]
        overflow = total > room
    projection = head.decoder
    loss_sum, correct = vocab_cross_entropy(head.transform(rows), projection.weight, projection.bias, targets)
    # Sum over the count, not mean: an empty selection gives 0 (not NaN) without a host-side branch.
    loss = loss_sum / total.clamp(min=1)
    return MLMOutput(loss=loss, correct=correct, total=total, overflow=overflow)
