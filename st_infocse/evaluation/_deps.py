"""Lazy imports of the optional ``eval`` extra (mteb, beir, scikit-learn, matplotlib)."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from st_infocse.modeling.random_state import global_random_state_kept

# import name -> distribution name, for the error message
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "pytrec_eval": "pytrec-eval-terrier"}


def require(module: str, feature: str, extra: str = "eval") -> ModuleType:
    """Import ``module`` or raise an ImportError that says how to install it (the package's ``extra``), naming the
    ``feature`` that needs it; the caller's global random states are kept (mteb seeds Python's, NumPy's and torch's
    on import).

    Example:
        >>> require("json", "tests").__name__
        'json'
    """
    try:
        with global_random_state_kept():
            return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is not None:
            raise  # installed but broken or too old: the original error says more
        dist = _DISTRIBUTIONS.get(top, top)
        raise ImportError(
            f"{feature} needs the optional package '{dist}', which is not installed: pip install \"st-infocse[{extra}]\""
        ) from exc
