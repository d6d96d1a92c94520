"""Precision and device choices: whether bf16 pays off on this CPU (emulated, it is many times slower than fp32),
which accelerator a trainer will use, and pinned memory only with one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger("st_infocse")

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str] | None:
    """The CPU feature flags from ``/proc/cpuinfo``, or ``None`` where that file does not exist (not Linux)."""
    try:
        lines = Path(cpuinfo).read_text().splitlines()
    except OSError:
        return None
    return next((set(line.split(":", 1)[1].split()) for line in lines if line.startswith("flags")), None)


def cpu_has_native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool | None:
    """``True``/``False`` when the flags are readable (avx512_bf16 or AMX), ``None`` when unknown."""
    flags = cpu_flags(cpuinfo)
    return None if flags is None else any(flag in flags for flag in NATIVE_BF16_FLAGS)


def warn_if_slow_bf16(bf16: bool, on_cpu: bool, cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Warn when bf16 is asked for on a CPU without avx512_bf16 or AMX, where it is emulated; returns whether it
    warned."""
    if not (bf16 and on_cpu) or cpu_has_native_bf16(cpuinfo) is not False:
        return False
    logger.warning(
        "bf16 requested on a CPU without native bf16 (no avx512_bf16 / AMX): expect it to be many times slower "
        "than fp32 (its matrix products are emulated); drop --bf16 to train in fp32."
    )
    return True


def accelerator_type() -> str:
    """Where a trainer puts the model unless told ``use_cpu``: the accelerator's type (``cuda``, ``mps``, ...) or
    ``cpu``."""
    import torch

    return torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"


def unpin_memory_without_accelerator(args: Any) -> None:
    """Turn ``args.dataloader_pin_memory`` off for a run on the CPU: it only speeds up copies to an accelerator,
    and torch warns about it at every dataloader."""
    if args.dataloader_pin_memory and (args.use_cpu or accelerator_type() == "cpu"):
        args.dataloader_pin_memory = False


def choose_precision(wanted: str | None, device: str, native_bf16: bool | None) -> tuple[dict[str, bool], str]:
    """Trainer flags to set, and what was chosen, for a recipe's precision ``wanted`` (fp16, bf16 or None) on
    ``device``; ``native_bf16``: whether the CPU has native bf16 (None: unknown). The scripts' fp16 is a GPU setting:
    kept on an accelerator; on a CPU, bf16 where it is native, else fp32 (emulated bf16 is much slower)."""
    if wanted is None:
        return {}, "fp32 (the recipe's)"
    if device != "cpu":
        return {}, f"{wanted} on {device} (the recipe's)"
    if native_bf16:
        # transformers refuses bf16 without a GPU unless told to use the CPU
        return {"fp16": False, "bf16": True, "use_cpu": True}, (
            f"bf16 on cpu (the recipe's {wanted} is a GPU setting; this CPU has native bf16)")
    reason = "has no native bf16" if native_bf16 is False else "may lack native bf16 (its flags are unreadable)"
    return {"fp16": False, "bf16": False}, (f"fp32 on cpu (the recipe's {wanted} is a GPU setting; this CPU {reason}, "
                                            "where bf16 is much slower than fp32: pass --bf16 true to insist)")


def settle_precision(wanted: str | None, trainer_values: dict[str, Any], typed: frozenset[str]) -> tuple[dict, str]:
    """The trainer flags that settle a recipe's precision ``wanted`` on this machine, and the line that says what it
    is (:func:`choose_precision`); ``trainer_values``: the trainer flags given (the recipe's, then the user's),
    ``typed``: the user's flags, whose fp16 / bf16 win."""
    device = "cpu" if trainer_values.get("use_cpu") else accelerator_type()
    if {"fp16", "bf16"} & typed:
        fp16, bf16 = bool(trainer_values.get("fp16")), bool(trainer_values.get("bf16"))
        # --bf16 true alone replaces the recipe's fp16 rather than clashing with it
        extra: dict[str, bool] = {"fp16": False} if bf16 and "fp16" not in typed else {}
        fp16 = fp16 and not extra
        if bf16 and device == "cpu":
            extra["use_cpu"] = True  # transformers refuses bf16 without a GPU unless told to use the CPU
        return extra, f"{'fp16' if fp16 else 'bf16' if bf16 else 'fp32'} (as you set it)"
    return choose_precision(wanted, device, cpu_has_native_bf16() if device == "cpu" else None)
