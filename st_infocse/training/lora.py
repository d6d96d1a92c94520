"""Low-rank adapters (LoRA, Hu et al. 2022) on the user's encoder, through PEFT, merged into it when saved.

:func:`add_lora` puts PEFT's LoRA layers into the encoder of a ``SentenceTransformer`` and freezes every other weight
of the model, so that a run trains the adapter (and a loss's own heads) alone; the optimizer then holds state for
the adapter only, and the start -> end and weight-anchor callbacks copy the adapter only (their snapshot holds the
weights that train). :func:`merge_lora` folds the adapter into the weights it adapts and removes its layers: the saved
model is the user's model, its modules as given, with the adapted weights. The weight anchor keeps a share of the
adapter's change by scaling its ``lora_B`` (``training.anchor.toward_start``).

Why merged rather than saved as an adapter: sentence-transformers saves and loads adapters through transformers'
PEFT integration, which transformers 5.24 enables only with ``peft >= 0.22``; the package's ``lora`` extra takes any
PEFT from 0.17 and writes the one format every sentence-transformers installation loads.

Checkpoints: a checkpoint folder written during training holds the model at that step with the adapter merged in (what
``SentenceTransformer(checkpoint)`` loads) and the adapter's own weights in :data:`ADAPTER_FILE`, which resuming
reads back into the adapter (:func:`save_merged_checkpoint`, :func:`load_adapter_checkpoint`; the package's trainer
calls both).

Example:
    >>> from st_infocse.training.lora import LoRASettings, add_lora, merge_lora
    >>> added = add_lora(model, LoRASettings(r=8))  # doctest: +SKIP
    >>> # ... train with any loss of the package ...
    >>> merge_lora(model); model.save("out")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from st_infocse.files import check_at_least

if TYPE_CHECKING:
    from torch import nn

# Nothing heavy at import: the command line reads this module's defaults before torch is imported.

LORA_INSTALL_HINT = 'pip install "st-infocse[lora]"'
# Beside the merged model in a checkpoint folder: the adapter's weights (lora_A / lora_B), which a resumed run reads.
ADAPTER_FILE = "lora_adapter.safetensors"
# BERT-family names of the attention projections (BERT, RoBERTa, MiniLM, ELECTRA); MPNet calls them q, k, v.
DEFAULT_TARGETS = ("query", "key", "value")


@dataclass(frozen=True)
class LoRASettings:
    """The adapter's shape. The defaults suit BERT-family encoders: rank 8, alpha 16, the attention's query, key and
    value projections.

    Attributes:
        r: The adapter's rank. It trains alone on the encoder, every other weight of the model frozen
            (:func:`add_lora`), and is merged into the model before it is saved (:func:`merge_lora`).
        alpha: The adapter's scaling is ``alpha / r``.
        target_modules: Names of the linear layers to adapt (BERT family: query key value; MPNet: q k v).
        dropout: Dropout on the adapter's input.
    """

    r: int = 8
    alpha: float = 16.0
    target_modules: tuple[str, ...] = field(default=DEFAULT_TARGETS)
    dropout: float = 0.0

    def __post_init__(self) -> None:
        check_at_least("rank", self.r)
        if not self.target_modules:
            raise ValueError("the adapter needs at least one target module name")

    def describe(self, model: nn.Module) -> str:
        """This adapter on ``model``, for a run's summary (all-MiniLM-L6-v2: ``"rank 8, alpha 16 on 18 layers (query,
        key, value); 110,592 of 22,823,808 weights train"``).

        Args:
            model: the model :func:`add_lora` put this adapter on.
        """
        trained = sum(p.numel() for _, p in lora_parameters(model))
        return (f"rank {self.r}, alpha {self.alpha:g} on {len(_adapted_layers(model))} layers "
                f"({', '.join(self.target_modules)}); {trained:,} of {sum(p.numel() for p in model.parameters()):,} "
                "weights train")


def _encoder(model: nn.Module) -> nn.Module:
    from torch import nn

    first = model[0] if isinstance(model, nn.Sequential) and len(model) else None
    encoder = getattr(first, "auto_model", None) or getattr(first, "model", None)
    if not isinstance(encoder, nn.Module):
        raise ValueError(f"a LoRA adapter goes on the model's first module, a Transformer; got {type(first).__name__}")
    return encoder


def lora_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The adapter's parameters (PEFT names them ``lora_A`` / ``lora_B``)."""
    return [(name, p) for name, p in model.named_parameters() if ".lora_A." in name or ".lora_B." in name]


def has_lora(model: nn.Module) -> bool:
    return bool(lora_parameters(model))


def add_lora(model: nn.Module, settings: LoRASettings | None = None) -> list[str]:
    """Put a LoRA adapter into the encoder of ``model`` and freeze every other weight of the model.

    Returns the names of the adapted layers. Refused when no layer matches ``settings.target_modules`` (a message
    that starts with that argument's name) or the model already carries an adapter.
    """
    from torch import nn

    from st_infocse.evaluation import require

    settings = settings or LoRASettings()
    peft = require("peft", "LoRA adapters", extra="lora")
    if has_lora(model):
        raise ValueError("the model already carries a LoRA adapter")
    encoder = _encoder(model)
    leaves = {name.rsplit(".", 1)[-1] for name, module in encoder.named_modules() if isinstance(module, nn.Linear)}
    if not set(settings.target_modules) & leaves:
        raise ValueError(f"target_modules: no linear layer of the encoder is named "
                         f"{', '.join(settings.target_modules)}; its linear layers are named "
                         f"{', '.join(sorted(leaves))} (set the target modules)")
    config = peft.LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                             target_modules=list(settings.target_modules))
    model._trainable_before_lora = {name: p.requires_grad for name, p in model.named_parameters()}
    peft.inject_adapter_in_model(config, encoder)
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(".lora_A." in name or ".lora_B." in name)
    return sorted({name.rsplit(".lora_", 1)[0] for name, _ in lora_parameters(model)})


def _adapted_layers(model: nn.Module) -> list[tuple[nn.Module, str, nn.Module]]:
    from peft.tuners.lora import LoraLayer

    found = []
    for parent in model.modules():
        for child_name, child in parent.named_children():
            if isinstance(child, LoraLayer):
                found.append((parent, child_name, child))
    return found


def merge_lora(model: nn.Module) -> int:
    """Fold the adapter into the weights it adapts and put the original layers back; the model's weights are again
    trainable as they were before :func:`add_lora` froze them. Returns the number of layers merged."""
    import torch

    layers = _adapted_layers(model)
    with torch.no_grad():
        for parent, child_name, layer in layers:
            layer.merge()
            setattr(parent, child_name, layer.get_base_layer())
    before = model.__dict__.pop("_trainable_before_lora", {})
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(before.get(name, True))
    return len(layers)


def save_merged_checkpoint(model: nn.Module, folder: str | Path) -> None:
    """Write ``model`` with its adapter merged into ``folder`` (the files ``SentenceTransformer(folder)`` loads, over
    the adapter-carrying ones a trainer saved there) and the adapter's own weights into ``folder/ADAPTER_FILE``.

    The merge happens on a copy: folding the adapter in and out of the training model would round its frozen weights,
    and a resumed run would then start from other weights than the interrupted one held.
    """
    import copy

    from safetensors.torch import save_file

    folder = Path(folder)
    save_file({name: p.detach().contiguous().cpu() for name, p in lora_parameters(model)}, str(folder / ADAPTER_FILE))
    merged = copy.deepcopy(model)
    merge_lora(merged)
    merged.save(str(folder))


def load_adapter_checkpoint(model: nn.Module, folder: str | Path) -> None:
    """Read the adapter's weights that :func:`save_merged_checkpoint` wrote in ``folder`` into ``model``'s adapter
    (the frozen weights stay those of the model the run started from). Refused, naming the folder, when the folder
    holds no adapter or another adapter's shape."""
    from safetensors.torch import load_file

    path = Path(folder) / ADAPTER_FILE
    if not path.is_file():
        raise ValueError(f"{folder} holds no LoRA adapter ({ADAPTER_FILE}): resume a LoRA run from a checkpoint that "
                         f"LoRA run wrote, or train without --lora_r")
    saved, own = load_file(str(path)), dict(lora_parameters(model))
    if set(saved) != set(own) or any(saved[k].shape != own[k].shape for k in own):
        raise ValueError(f"the LoRA adapter in {path} does not match the model's adapter (its rank or its layers "
                         f"differ): resume with the settings of the run that wrote it")
    model.load_state_dict(saved, strict=False)
