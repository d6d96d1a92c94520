"""Lazy exports for a package ``__init__``: names are imported from their module on first use.

The command line checks its input (files, documents, flags) before torch or datasets are imported, so the packages
it reaches for those checks export their torch-heavy names lazily (PEP 562).

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
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: the package's name (``__name__``).
        where: exported name -> the submodule (relative to ``package``) that defines it.
        exported: the package's ``__all__``.
        namespace: the package's ``globals()``; a name, once imported, is stored there so the next use is direct.

    Any other name is tried as a submodule (``losses.infocse`` after ``from st_infocse import losses``); a name that
    is neither raises ``AttributeError`` as a module's attribute lookup does.
    """

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return __getattr__, __dir__
