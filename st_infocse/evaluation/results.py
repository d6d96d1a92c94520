"""The one interface every evaluation result offers, which the report and the command line loop over."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["EvaluationResult"]


@runtime_checkable
class EvaluationResult(Protocol):
    """What :func:`~st_infocse.evaluation.markdown_report` and :func:`~st_infocse.evaluation.write_json` need of a
    result: a JSON-able dict (scores x100, the scale named) and a markdown section. ``str(result)`` is the line the
    command line prints."""

    def to_dict(self) -> dict[str, Any]: ...

    def to_markdown(self) -> str: ...
