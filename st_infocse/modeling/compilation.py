"""torch.compile helpers: whether the code is being traced (for the paths that take another form there), and the
graph breaks of a call."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import torch


def compiling() -> bool:
    """True while dynamo traces the caller (``torch.compiler.is_compiling``; ``torch._dynamo`` on torch < 2.3)."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return torch._dynamo.is_compiling()


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
            from st_infocse.modeling.compilation import graph_breaks

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
