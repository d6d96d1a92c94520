"""The graph breaks torch.compile meets in a call: tooling for benchmarks/compile_step.py (and
tests/losses/test_compile.py), not part of the package."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import torch

# Dynamo logs each graph break here, naming its place and reason; the gate is the logger's own level.
GRAPH_BREAK_LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"


def graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
    """``(where, reason)`` for every graph break torch.compile meets while tracing ``fn(*args, **kwargs)``.

    Read from dynamo's graph-break log, which names each break (``torch._dynamo.explain``'s break reasons leave
    some out); ``where`` is ``"path:line"`` of the innermost traced frame. The call is traced with the ``"eager"``
    backend (no code is generated) and dynamo's caches are reset before and after.

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from st_infocse import losses
            from benchmarks.graph_breaks import graph_breaks  # from the repository root

            model = SentenceTransformer("bert-base-uncased")
            loss = losses.InfoCSELoss(model)
            for where, reason in graph_breaks(loss, [dict(model.preprocess(["A sentence.", "Another one."]))]):
                print(where, reason)
    """
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger(GRAPH_BREAK_LOGGER)
    level, handler = logger.level, Keep(logging.DEBUG)
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        torch._dynamo.reset()
    found = []
    for message in messages:
        where = re.search(r"in user code at (\S+:\d+)", message)
        reason = re.search(r"Explanation: (.*)", message) or re.search(r"Graph Break Reason: (.*)", message)
        found.append((where.group(1) if where else "?", reason.group(1) if reason else message.splitlines()[0]))
    return found
