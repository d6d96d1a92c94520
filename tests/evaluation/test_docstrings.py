"""The runnable docstring examples of the evaluation package run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["_deps", "encoding", "_format", "loaders.common", "loaders.sts", "loaders.transfer", "geometry", "lexical", "paired",
           "report", "retrieval", "retrieval_folder", "sts", "transfer"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"st_infocse.evaluation.{name}")
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.attempted > 0 and result.failed == 0
