"""The one interface every evaluation result offers, which the report and the command line loop over."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ._format import SCALE_X100, markdown_table, text_table


@runtime_checkable
class EvaluationResult(Protocol):
    """What the report and the JSON need of a result: a JSON-able dict (the scale named) and a markdown section;
    ``str(result)`` is what the command line prints."""

    def to_dict(self) -> dict[str, Any]: ...

    def to_markdown(self) -> str: ...


@dataclass
class TaskTableResult:
    """One model's row over several tasks (scores x100) with the papers' plain average, for the STS and transfer
    results; ``score_field`` names the field of a task result that is its score."""

    model: str
    tasks: dict[str, Any]
    seconds: float = 0.0
    score_field: ClassVar[str] = "score"

    @property
    def average(self) -> float:
        """Plain mean of the tasks' scores (the papers' "Avg.")."""
        return float(np.mean([getattr(t, self.score_field) for t in self.tasks.values()]))

    @property
    def scores(self) -> dict[str, float]:
        """Task -> score x100, plus ``"Avg."``."""
        return {**{name: getattr(t, self.score_field) for name, t in self.tasks.items()}, "Avg.": self.average}

    def row(self) -> list[str]:
        """Model name, each task, the average (2 decimals; "collapsed" where no correlation exists: constant
        similarities)."""
        return [self.model] + ["collapsed" if math.isnan(v) else f"{v:.2f}" for v in self.scores.values()]

    def to_markdown(self) -> str:
        return markdown_table(["Model", *self.scores], [self.row()])

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "scale": SCALE_X100, "average": self.average,
                "tasks": {name: t.to_dict() for name, t in self.tasks.items()}, "seconds": self.seconds}

    def __str__(self) -> str:
        return text_table(["Model", *self.scores], [self.row()])
