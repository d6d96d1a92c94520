"""Every loss documents itself as sentence-transformers' own losses do: on ``__init__``, with the same sections."""

import inspect

import pytest

from st_infocse import losses
from st_infocse.losses import OBJECTIVES

LOSSES = sorted(
    {entry.loss_class() for entry in OBJECTIVES.values() if entry.loss is not None} | {losses.ConditionalMLMLoss},
    key=lambda cls: cls.__name__,
)
SECTIONS = ("Args:", "References:", "Requirements:", "Inputs:", "Example:")


@pytest.mark.parametrize("loss_class", LOSSES, ids=lambda cls: cls.__name__)
def test_docstring_on_init_with_the_sections(loss_class):
    assert inspect.getdoc(loss_class.__dict__["__init__"]), f"{loss_class.__name__}.__init__ has no docstring"
    assert loss_class.__dict__.get("__doc__") is None, f"{loss_class.__name__} documents itself on the class"
    doc = loss_class.__init__.__doc__
    missing = [section for section in SECTIONS if section not in doc]
    assert not missing, f"{loss_class.__name__}.__init__ lacks {missing}"
