"""The caller's global random streams kept across third-party code that reseeds them (mteb)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

__all__ = ["global_random_state_kept"]


@contextmanager
def global_random_state_kept() -> Iterator[None]:
    """Python's, NumPy's and torch's global random states put back as they were on leaving the block.

    mteb seeds all three (``random.seed``, ``np.random.seed``, ``torch.manual_seed``) each time it builds a task or
    an evaluator; an evaluation through it must not change the caller's random streams (a training run evaluating
    between steps, for one).
    """
    python_state, numpy_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
