"""torch.compile helper: whether the code is being traced (for the paths that take another form there)."""

import torch


def compiling() -> bool:
    """True while dynamo traces the caller (``torch._dynamo`` on torch < 2.3, which has no ``is_compiling``)."""
    return getattr(torch.compiler, "is_compiling", lambda: torch._dynamo.is_compiling())()
