"""The loss of an objective, built from the registry (:mod:`st_infocse.losses.registry`) and the flags it takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from st_infocse.cli.errors import CLIError
from st_infocse.cli.objective_flags import OBJECTIVES, loss_options
from st_infocse.losses.registry import get_objective

__all__ = ["build_loss", "learning_rate_mapping", "warm_up_decoder"]


def build_loss(model, objective: str, loss_flags: Any = None):
    """The loss of ``objective`` from the registry, given its loss flags (a dataclass of
    :mod:`~st_infocse.cli.objective_flags`; None: the loss's own defaults)."""
    if objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    entry = get_objective(objective)
    if objective == "ict":
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        return MultipleNegativesRankingLoss(model)
    if entry.loss is None:
        raise CLIError(f"--objective {objective} trains through its own rounds, not one loss")
    return entry.loss_class()(model, **loss_options(loss_flags))


def learning_rate_mapping(loss, aux_learning_rate: float | None) -> dict[str, float]:
    """The trainer's ``learning_rate_mapping`` that gives the loss's own modules ``--aux_learning_rate``."""
    if aux_learning_rate is None:
        return {}
    names = [name for name, _ in loss.named_parameters() if not name.startswith("model.")]
    if not names:
        raise CLIError("--aux_learning_rate given, but this objective has no auxiliary modules")
    return {r"^(?!model\.)": aux_learning_rate}


def warm_up_decoder(model, texts: Sequence[str], loss_flags: Any, warmup: Any, objective: str, batch_size: int,
                    seed: int, output_dir: str | Path) -> str:
    """Train ``objective``'s auxiliary decoder alone on the frozen ``model`` (as the probe decoder of
    :func:`~st_infocse.training.train_probe_decoder` is), save it under ``output_dir/decoder_warmup`` and return
    that folder, for the loss's ``decoder``. The decoder's ``k``, ``n``, mask rate and fusion start are the loss
    flags' where given, else the objective's preset for this encoder's depth; ``warmup``: the warm-up's flags."""
    from st_infocse.modeling import find_encoder_parts
    from st_infocse.training import train_probe_decoder

    settings = get_objective(objective).preset.decoder_settings(
        find_encoder_parts(model).depth, loss_flags.k, loss_flags.n, loss_flags.mask_rate, loss_flags.fusion_init
    )
    decoder, curve = train_probe_decoder(
        model,
        texts,
        k=settings.k,
        n=settings.n,
        mask_rate=settings.mask_rate,
        steps=warmup.decoder_warmup_steps,
        batch_size=batch_size,
        learning_rate=warmup.decoder_warmup_learning_rate,
        seed=seed,
        fusion_init=settings.fusion_init,
        description="Decoder warm-up",
    )
    folder = Path(output_dir) / "decoder_warmup"
    decoder.save_pretrained(folder)
    last = curve[-min(10, len(curve)):]
    accuracy = sum(point["accuracy"] for point in last) / len(last)
    print(f"Decoder warm-up: {len(curve)} steps, MLM accuracy {100 * accuracy:.1f}% over the last {len(last)}; "
          f"saved to {folder}", flush=True)
    return str(folder)
