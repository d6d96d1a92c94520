"""Two models on the same data: each score's change with its 95% interval over the queries (BEIR nDCG@10) or the
pairs (each STS task's Spearman), from the paired test of :mod:`st_infocse.evaluation.paired`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._format import markdown_table, text_table
from .paired import PairedChange, UnitScores, unit_change
from .retrieval import BEIRResult
from .sts import STSResult

__all__ = ["Comparison", "compare_results"]


@dataclass
class Comparison:
    """``after`` against ``before``, one row per task or dataset.

    Attributes:
        before, after: The two models' names.
        rows: (kind, name, before score x100, after score x100, the change with its interval; None where the
            result kept no per-query or per-pair scores, e.g. a dataset made of several parts).
    """

    before: str
    after: str
    rows: list[tuple[str, str, float, float, PairedChange | None]]

    def _cells(self) -> list[list[str]]:
        return [[f"{kind} {name}", f"{b:.2f}", f"{a:.2f}", change.describe() if change else f"{a - b:+.2f}"]
                for kind, name, b, a, change in self.rows]

    def __str__(self) -> str:
        header = ["", self.before, self.after, "change (95% CI over queries / pairs)"]
        return f"{self.after} against {self.before}\n" + text_table(header, self._cells())

    def to_markdown(self) -> str:
        return markdown_table(["", self.before, self.after, "change (95% CI over queries / pairs)"], self._cells())

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "scale": "x100",
                "rows": [{"kind": kind, "name": name, "before": b, "after": a,
                          "change": change.to_dict() if change else None} for kind, name, b, a, change in self.rows]}


def compare_results(before: dict[str, Any], after: dict[str, Any], seed: int = 0) -> Comparison:
    """Compare two models' results on the same data: each STS task's Spearman and each BEIR dataset's nDCG@10.

    Args:
        before, after: Title -> result, as :func:`~st_infocse.evaluation.save_report` takes them; an
            :class:`~st_infocse.evaluation.STSResult` and a :class:`~st_infocse.evaluation.BEIRResult` (scored with
            ``per_query=["ndcg@10"]``) are compared; other results are left out.
        seed: The paired test's seed.

    Returns:
        The comparison; ``print()`` shows one line per task or dataset.

    Example:
        >>> a = {"BEIR": evaluate_beir(model, "scifact", source, per_query=["ndcg@10"])}  # doctest: +SKIP
        >>> b = {"BEIR": evaluate_beir(other, "scifact", source, per_query=["ndcg@10"])}  # doctest: +SKIP
        >>> print(compare_results(a, b))  # doctest: +SKIP
    """
    rows: list[tuple[str, str, float, float, PairedChange | None]] = []
    names = ["", ""]
    for title, first in before.items():
        second = after.get(title)
        if isinstance(first, STSResult) and isinstance(second, STSResult):
            names = [first.model, second.model]
            for task, b in first.tasks.items():
                if (a := second.tasks.get(task)) is not None:
                    change = unit_change(UnitScores("pairs", gold=b.gold, similarities=b.similarities),
                                         UnitScores("pairs", gold=a.gold, similarities=a.similarities), seed=seed)
                    rows.append(("STS", task, b.spearman, a.spearman, change))
        elif isinstance(first, BEIRResult) and isinstance(second, BEIRResult):
            names = [first.model, second.model]
            for dataset, b in first.datasets.items():
                if (a := second.datasets.get(dataset)) is not None:
                    rows.append(("BEIR nDCG@10", dataset, 100 * b.ndcg_at_10, 100 * a.ndcg_at_10,
                                 unit_change(b.units(), a.units(), seed=seed)))
    return Comparison(names[0], names[1], rows)
