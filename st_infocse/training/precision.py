"""Precision and device choices: whether bf16 pays off on this CPU (without native bf16 instructions it is many
times slower than fp32), which accelerator a trainer will use, and pinned memory only with one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger("st_infocse")

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str] | None:
    """The CPU feature flags from ``/proc/cpuinfo``, or ``None`` where that file does not exist (not Linux)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def cpu_has_native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool | None:
    """``True``/``False`` when the flags are readable (avx512_bf16 or AMX), ``None`` when unknown."""
    flags = cpu_flags(cpuinfo)
    return None if flags is None else any(flag in flags for flag in NATIVE_BF16_FLAGS)


def warn_if_slow_bf16(bf16: bool, on_cpu: bool, cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Log a warning when bf16 is asked for on a CPU without native bf16; returns whether it warned.

    Without avx512_bf16 or AMX every bf16 operation is emulated in fp32 with conversions around it, so autocast
    makes training and encoding several times slower instead of faster.
    """
    if not (bf16 and on_cpu) or cpu_has_native_bf16(cpuinfo) is not False:
        return False
    logger.warning(
        "bf16 requested on a CPU without native bf16 (no avx512_bf16 / AMX): expect it to be many times slower "
        "than fp32 (its matrix products are emulated); drop --bf16 to train in fp32."
    )
    return True


def accelerator_type() -> str:
    """Where a trainer puts the model unless told ``use_cpu``: the accelerator's type (``cuda``, ``mps``, ...), or
    ``cpu`` (the one home of this question for the command line and the training arguments)."""
    import torch

    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    if accelerator is not None:
        return accelerator.current_accelerator().type if accelerator.is_available() else "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def unpin_memory_without_accelerator(args: Any) -> None:
    """Pinned memory only speeds up copies to an accelerator; without one torch warns at every dataloader, so
    ``args.dataloader_pin_memory`` is turned off when the run stays on the CPU."""
    if args.dataloader_pin_memory and (args.use_cpu or accelerator_type() == "cpu"):
        args.dataloader_pin_memory = False
