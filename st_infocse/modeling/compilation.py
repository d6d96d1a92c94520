"""torch.compile helper: whether the code is being traced (for the paths that take another form there)."""

from __future__ import annotations

import torch


def compiling() -> bool:
    """True while dynamo traces the caller (``torch.compiler.is_compiling``; ``torch._dynamo`` on torch < 2.3)."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return torch._dynamo.is_compiling()
