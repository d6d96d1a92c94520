"""The loss of an objective, built from the registry (:mod:`st_infocse.losses.registry`) and the flags it takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import OBJECTIVES, LossArguments
from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import get_objective

__all__ = [
    "LOSS_FLAGS",
    "build_loss",
    "check_decoder_warmup",
    "check_flags_apply",
    "learning_rate_mapping",
    "loss_options",
    "warm_up_decoder",
]

_CONTRASTIVE = ("temperature", "projection", "gather_across_devices")
_DECODER = ("k", "n", "mask_rate", "decoder", "detach", "fusion_init")
_CONDITIONAL_MLM = ("lambda_", "aux_gradient", "informin_weight", *_CONTRASTIVE, *_DECODER)
#: Objective (and ``pretrain-aux``) -> the loss's keyword arguments the command line sets from the flags of the
#: same name; any other loss flag given is refused for it.
LOSS_FLAGS: dict[str, tuple[str, ...]] = {
    "simcse": _CONTRASTIVE,
    "infocse": _CONDITIONAL_MLM,
    "cmlm-cse": _CONDITIONAL_MLM,
    "informin": ("lambda_", *_CONTRASTIVE),
    "idc": (),  # its pair loss decides: --idc_loss infocse takes InfoCSE's flags
    "ict": (),  # sentence-transformers' MultipleNegativesRankingLoss with its own defaults
    "cmlm": _DECODER,
    "pretrain-aux": ("k", "n", "mask_rate", "fusion_init", "tie_head", "masking"),
}

# Loss flags whose unset value is None, so that a given one can be told from the default.
_OPTIONAL_FLAGS = ("lambda_", "temperature", "projection", "k", "n", "mask_rate", "fusion_init", "decoder", "detach",
                   "tie_head", "masking", "informin_weight", "gather_across_devices", "aux_gradient")


def loss_options(names: Sequence[str], args: LossArguments) -> dict[str, Any]:
    """The flags among ``names`` that were given (not None), as the loss's keyword arguments of the same names.

    A flag left unset is not passed, so the loss applies its own default; a given value, 0 included, reaches the
    loss as it is, which uses it or refuses it in one line.
    """
    options = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    # "none" turns the objective's own projection head off; only an explicit --projection overrides that head.
    if isinstance(options.get("projection"), str) and options["projection"].lower() == "none":
        options["projection"] = None
    return options


def check_flags_apply(options: Sequence[str], args: LossArguments, what: str) -> None:
    """Refuse, in one line, a given loss flag that ``what`` does not take (it would otherwise be dropped unused)."""
    given = [f"--{name}" for name in _OPTIONAL_FLAGS if name not in options and getattr(args, name) is not None]
    if given:
        takes = ", ".join(f"--{name}" for name in options) or "none of the loss flags"
        verb = "does" if len(given) == 1 else "do"
        raise CLIError(f"{' and '.join(given)} {verb} not apply to {what} (it takes {takes})")


def build_loss(model, args: LossArguments, objective: str | None = None):
    """The loss of ``objective`` (default ``args.objective``) from the registry, given the flags it takes."""
    objective = objective or args.objective
    if objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    entry = get_objective(objective)
    if objective == "ict":
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        return MultipleNegativesRankingLoss(model)
    if entry.loss is None:
        raise CLIError(f"--objective {objective} trains through its own rounds, not one loss")
    return entry.loss_class()(model, **loss_options(LOSS_FLAGS[objective], args))


def learning_rate_mapping(loss, args: LossArguments) -> dict[str, float]:
    if args.aux_learning_rate is None:
        return {}
    names = [name for name, _ in loss.named_parameters() if not name.startswith("model.")]
    if not names:
        raise CLIError("--aux_learning_rate given, but this objective has no auxiliary modules")
    return {r"^(?!model\.)": args.aux_learning_rate}


def check_decoder_warmup(options: Sequence[str], args: LossArguments, what: str) -> None:
    """``--decoder_warmup_steps`` needs an objective with a decoder, no ``--decoder`` of its own, and a step count."""
    steps = args.decoder_warmup_steps
    if steps is None:
        return
    if "decoder" not in options:
        raise CLIError(f"--decoder_warmup_steps does not apply to {what} (it has no auxiliary decoder)")
    if args.decoder is not None:
        raise CLIError("give --decoder (a trained decoder) or --decoder_warmup_steps (train one first), not both")
    if steps < 1:
        raise CLIError(f"--decoder_warmup_steps must be at least 1, got {steps}")
    if not args.decoder_warmup_learning_rate > 0:
        raise CLIError(f"--decoder_warmup_learning_rate must be positive, got {args.decoder_warmup_learning_rate:g}")


def warm_up_decoder(model, texts: Sequence[str], args: LossArguments, objective: str, batch_size: int, seed: int,
                    output_dir: str | Path) -> str:
    """Train ``objective``'s auxiliary decoder alone on the frozen ``model`` (as the probe decoder of
    :func:`~st_infocse.training.train_probe_decoder` is), save it under ``output_dir/decoder_warmup`` and return
    that folder, for the loss's ``decoder``. The decoder's ``k``, ``n``, mask rate and fusion start are the flags'
    where given, else the objective's preset for this encoder's depth."""
    from st_infocse.modeling import find_encoder_parts
    from st_infocse.training import train_probe_decoder

    settings = get_objective(objective).preset.decoder_settings(
        find_encoder_parts(model).depth, args.k, args.n, args.mask_rate, args.fusion_init
    )
    decoder, curve = train_probe_decoder(
        model,
        texts,
        k=settings.k,
        n=settings.n,
        mask_rate=settings.mask_rate,
        steps=args.decoder_warmup_steps,
        batch_size=batch_size,
        learning_rate=args.decoder_warmup_learning_rate,
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
