"""Lazy exports for a package ``__init__`` (PEP 562): names are imported from their module on first use, so the
command line checks its input (files, documents, flags) before torch or datasets are imported.

Example:
    >>> import types
    >>> package = types.ModuleType("example")
    >>> package.__getattr__, package.__dir__ = lazy_exports("os", {"join": "path"}, ["join"], vars(package))
    >>> package.__getattr__("join").__name__
    'join'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any


def lazy_exports(
    package: str, where: Mapping[str, str], exported: Sequence[str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``), which exports ``exported`` (its
    ``__all__``), each name from the submodule ``where[name]``; a name, once imported, is stored in ``namespace``
    (its ``globals()``). Any other name is tried as a submodule; one that is neither raises ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = f"{package}.{where.get(name, name)}"
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if name in where or error.name != module:
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value = getattr(imported, name) if name in where else imported
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return __getattr__, __dir__
