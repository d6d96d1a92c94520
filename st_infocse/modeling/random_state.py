"""The global random streams kept across code that draws from or reseeds them: one home for forking them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


@contextmanager
def global_random_state_kept(seed: int | None = None, device: torch.device | str | None = None) -> Iterator[None]:
    """Python's, NumPy's and torch's global random states put back as they were on leaving the block, whatever
    happens inside; with ``seed``, torch's generators of the CPU and of ``device``'s kind (default: CUDA) are seeded
    with it inside. So an evaluation through mteb (which seeds all three streams) leaves a training run's streams as
    they were, and draws from torch's global generators (initialisation, dropout) become reproducible from ``seed``.
    Only the accelerator generators already in use are forked and seeded (forking would start an accelerator).

    Example:
        >>> with global_random_state_kept(seed=0):
        ...     inside = torch.rand(1)
        >>> with global_random_state_kept(seed=0):
        ...     bool(torch.rand(1) == inside)
        True
    """
    kind = torch.device(device).type if device is not None else "cuda"
    kind = "cuda" if kind in ("cpu", "meta") else kind
    accelerator = getattr(torch, kind, None)
    in_use = accelerator is not None and getattr(accelerator, "is_initialized", lambda: False)()
    devices = list(range(accelerator.device_count())) if in_use else []
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=devices, device_type=kind):
            if seed is not None:
                torch.default_generator.manual_seed(seed)
                if devices:
                    getattr(accelerator, "manual_seed_all", accelerator.manual_seed)(seed)
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
