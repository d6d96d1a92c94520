"""The one place a model is loaded for training (:func:`load_model`), a trainer is built around a loss
(:func:`build_trainer`, used by the command line, the demo and the IDC rounds) and the trained model is saved with
its own maximum length (:func:`own_max_length`, :func:`save_model`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from st_infocse.files import InputError, check_choice, looks_local

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import nn
    from transformers import TrainingArguments

    from st_infocse.training.trainer import AuxiliaryLossTrainer

#: Above this, ``model_max_length`` is transformers' "no limit" sentinel (``VERY_LARGE_INTEGER``), not a length.
LENGTH_SENTINEL = 1_000_000
#: Poolings a loaded encoder may be given; ``model`` keeps a saved Sentence Transformer's own modules.
PoolingMode = Literal["cls", "mean", "max", "model"]
POOLINGS: tuple[str, ...] = get_args(PoolingMode)


def own_max_length(model: SentenceTransformer) -> int | None:
    """The model's own maximum length in tokens, or None when it states none."""
    length = model.max_seq_length
    return length if isinstance(length, int) and 0 < length <= LENGTH_SENTINEL else None


@dataclass(frozen=True)
class LoadedModel:
    """A model as :func:`load_model` built it: its own maximum length (what :func:`save_model` saves it with) and
    how it was built: its modules kept, re-pooled, or a plain encoder pooled (``how``, for a summary)."""

    model: SentenceTransformer
    own_length: int | None
    how: str

    def lengths(self) -> str:
        """The length the model trains at (its ``max_seq_length`` now) and the one it is saved with, for a summary."""
        training, own = self.model.max_seq_length, self.own_length
        note = "" if own is not None else " (the model states no length of its own)"
        return f"training max length {training}, saved model max length {training if own is None else own}{note}"


def describe_modules(model: SentenceTransformer) -> str:
    """The model's modules in order, with the pooling mode: ``"Transformer, Pooling(mean), Normalize"``."""
    modes = ((type(module).__name__, getattr(module, "pooling_mode", None)) for module in model)
    return ", ".join(f"{name}({mode})" if mode is not None else name for name, mode in modes)


def load_model(
    source: str, pooling: PoolingMode | None = None, max_seq_length: int | None = None, trust_remote_code: bool = False,
    seed: int | None = None,
) -> LoadedModel:
    """A SentenceTransformer from a hub id or a local folder, with ``max_seq_length`` applied; the user's model is
    theirs. The model's own length is its ``max_seq_length`` as loaded. A model that is missing or cannot be loaded,
    an unknown pooling or one without a single Pooling module to replace is an InputError.

    Args:
        source: A hub id or a local folder of a Hugging Face or Sentence Transformer model.
        pooling: None (default): a saved Sentence Transformer keeps its own modules (Pooling, Dense, Normalize, ...),
            prompts and similarity function; a plain Hugging Face encoder is pooled with cls (the papers' setting,
            SimCSE's cls_before_pooler). cls, mean or max replaces only the Pooling module of a saved Sentence
            Transformer (a plain encoder gets that pooling); 'model' keeps the modules sentence-transformers loads
            (for a plain encoder, mean pooling).
        max_seq_length: Maximum tokens per sentence (default: the model's own).
        trust_remote_code: Allow custom model code from the hub.
        seed: Seed every random generator first (transformers' ``set_seed``), so that what is initialised fresh (a
            pooling or MLM head, and a loss's modules built next) is the same at every run with the same seed: a
            trainer seeds only once the loss exists.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.util import is_sentence_transformer_model

    path = Path(source).expanduser()
    if looks_local(source) and not path.exists():
        raise InputError(f"model not found: {source}")
    location = str(path) if path.exists() else source
    check_choice("pooling", pooling, (None, *POOLINGS))
    if seed is not None:
        from transformers import set_seed

        set_seed(seed)
    try:  # a saved Sentence Transformer (its modules.json), asking the hub unless cached
        saved = pooling == "model" or is_sentence_transformer_model(location)
    except Exception as exc:  # noqa: BLE001 - huggingface_hub raises many kinds; all mean "cannot tell"
        raise InputError(f"cannot load model {source!r}: {exc}".splitlines()[0]) from exc
    try:
        if saved:
            model = SentenceTransformer(location, trust_remote_code=trust_remote_code)
        else:
            transformer = Transformer(location, model_kwargs={"trust_remote_code": trust_remote_code})
            mode = pooling or "cls"
            model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), mode)])
    except OSError as exc:
        raise InputError(f"cannot load model {source!r}: {exc}".splitlines()[0]) from exc
    own = own_max_length(model)
    if not saved:
        how = f"a plain encoder (no saved Sentence Transformer modules), pooled with {pooling or 'cls'}"
    elif pooling in (None, "model"):
        how = f"kept the model's modules: {describe_modules(model)}"
    else:
        how = _repool(model, pooling, source)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return LoadedModel(model, own, how)


def _repool(model: SentenceTransformer, pooling: str, source: str) -> str:
    """Replace the saved model's one Pooling module with ``pooling``, in place; every other module stays."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    found = [(name, module) for name, module in model.named_children() if isinstance(module, Pooling)]
    if len(found) != 1:
        raise InputError(
            f"cannot re-pool {source!r} with {pooling}: it has {len(found)} Pooling modules "
            f"({describe_modules(model)}); leave --pooling out to keep its own modules"
        )
    name, old = found[0]
    before = describe_modules(model)
    setattr(model, name, Pooling(old.embedding_dimension, pooling, include_prompt=old.include_prompt))
    others = [part for part in before.split(", ") if not part.startswith(("Pooling", "Transformer"))]
    kept = f"; kept: {', '.join(others)}" if others else ""
    return f"re-pooled with {pooling} (was Pooling({old.pooling_mode})){kept}"


def save_model(model: SentenceTransformer, path: str | os.PathLike, own_length: int | None) -> None:
    """Save with the model's own maximum length: the training length is a training setting, not the model's."""
    training_length = model.max_seq_length
    if own_length is not None:
        model.max_seq_length = own_length
    model.save(str(path))
    model.max_seq_length = training_length


def learning_rate_mapping(loss: nn.Module, aux_learning_rate: float | None) -> dict[str, float]:
    """The trainer's ``learning_rate_mapping`` (a ``TrainingArguments`` field) that trains the loss's own modules
    (a projection head, a decoder: every parameter outside ``loss.model``) at ``aux_learning_rate``.

    Args:
        loss: the training loss, holding the model as ``model``.
        aux_learning_rate: Own learning rate for the loss's modules (projection head, decoder); None: every
            parameter at the trainer's rate (an empty mapping). Refused for a loss without modules of its own.
    """
    if aux_learning_rate is None:
        return {}
    if all(name.startswith("model.") for name, _ in loss.named_parameters()):
        raise ValueError("aux_learning_rate given, but this objective has no auxiliary modules")
    return {r"^(?!model\.)": aux_learning_rate}


def build_trainer(
    model: SentenceTransformer, loss: nn.Module, train_dataset: Any, args: TrainingArguments, evaluator: Any = None,
    clip_jointly: bool = True, callbacks: tuple | list = (),
) -> AuxiliaryLossTrainer:
    """An :class:`~st_infocse.training.AuxiliaryLossTrainer` for ``loss`` (any loss; one of this package's has
    modules to save and clip), memory pinned only off the CPU, a warning for bf16 on a CPU without it, and the fast
    step (:mod:`st_infocse.training.fast_step`) when ``args.fast_step`` is set; ``callbacks`` run after the
    auxiliary-state callback, as the trainer's ``callbacks`` argument."""
    from st_infocse.training.precision import unpin_memory_without_accelerator, warn_if_slow_bf16
    from st_infocse.training.trainer import AuxiliaryLossTrainer

    unpin_memory_without_accelerator(args)
    warn_if_slow_bf16(bool(args.bf16), args.device.type == "cpu")
    trainer = AuxiliaryLossTrainer(
        model=model, args=args, train_dataset=train_dataset, loss=loss, evaluator=evaluator, clip_jointly=clip_jointly,
        callbacks=list(callbacks),
    )
    if getattr(args, "fast_step", False):  # PaperTrainingArguments' switch; other arguments have none
        from st_infocse.training.fast_step import apply_fast_step

        apply_fast_step(trainer, model, loss, args.device.type)
    return trainer
