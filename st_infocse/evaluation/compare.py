"""Two models on the same data: each score's change with its 95% interval over the queries (BEIR nDCG@10) or the
pairs (each STS task's Spearman), from the paired test of :mod:`st_infocse.evaluation.paired`.

A comparison judges every row at once, so when it holds several the verdicts are read off p-values adjusted with
Holm's rule over the rows judged (:func:`~st_infocse.evaluation.paired.holm`): reading each raw p at 5% would call one
row in twenty a gain or a loss by chance, and a reader scanning the table for the row that moved would find it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._format import SCALE_X100, markdown_table, text_table
from .loaders import PathLike
from .paired import PairedChange, holm, unit_change
from .report import write_json
from .retrieval import BEIRResult
from .sts import STSResult


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
    #: With several comparisons judged at once (:func:`judge_together`): how many rows they judge in all, and this
    #: comparison's rows' p adjusted over all of them (None where a row has no test).
    family: int | None = None
    holm_p: list[float | None] | None = None

    @property
    def judged(self) -> int:
        """How many rows carry a paired test: the family Holm's rule adjusts over."""
        return self.family if self.family is not None else sum(change is not None for *_, change in self.rows)

    def adjusted(self) -> list[PairedChange | None]:
        """Each row's change with its p adjusted by Holm's rule over the rows judged (its verdict read off that p;
        its interval the row's own 95% one), or as it is when one row is judged; None where a row has no test."""
        changes = [change for *_, change in self.rows]
        if self.judged < 2:
            return changes
        ps = self.holm_p if self.holm_p is not None else _holm_rows([self])[0]  # these rows alone
        return [replace(change, p=p) if change is not None else None for change, p in zip(changes, ps, strict=True)]

    @property
    def note(self) -> str:
        """What the verdicts are read off, in words ("" with one row judged)."""
        if self.judged < 2:
            return ""
        across = " across every model compared" if self.family is not None else ""
        return (f"verdicts: each row's p adjusted by Holm's rule over the {self.judged} rows judged{across}, so that "
                "they hold together at 5% (intervals: each row's own 95%)")

    def _header(self) -> list[str]:
        extra = [f"p (Holm, {self.judged} rows)", "verdict"] if self.judged > 1 else []
        return ["", self.before, self.after, "change (95% CI over queries / pairs)", *extra]

    def _cells(self) -> list[list[str]]:
        several = self.judged > 1
        cells = []
        for (kind, name, b, a, change), adjusted in zip(self.rows, self.adjusted(), strict=True):
            row = [f"{kind} {name}", f"{b:.2f}", f"{a:.2f}",
                   change.describe(verdict=not several) if change else f"{a - b:+.2f}"]
            if several:
                row += [adjusted.p_text, adjusted.verdict] if adjusted is not None else ["", "not judged"]
            cells.append(row)
        return cells

    def __str__(self) -> str:
        note = f"\n{self.note}" if self.note else ""
        return f"{self.after} against {self.before}\n" + text_table(self._header(), self._cells()) + note

    def to_markdown(self) -> str:
        note = f"\n\n{self.note[0].upper()}{self.note[1:]}." if self.note else ""
        return markdown_table(self._header(), self._cells()) + note

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for (kind, name, b, a, change), adjusted in zip(self.rows, self.adjusted(), strict=True):
            row = {"kind": kind, "name": name, "before": b, "after": a,
                   "change": change.to_dict() if change else None}
            if change is not None and self.judged > 1:
                row |= {"p_holm": adjusted.p, "verdict_holm": adjusted.verdict}
            rows.append(row)
        multiple = {"rule": "holm", "family": self.judged} if self.judged > 1 else None
        return {"before": self.before, "after": self.after, "scale": SCALE_X100, "multiple_rows": multiple,
                "rows": rows}


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
            kind, parts, score = "STS", (first.tasks, second.tasks), lambda task: task.spearman
        elif isinstance(first, BEIRResult) and isinstance(second, BEIRResult):
            kind, parts, score = "BEIR nDCG@10", (first.datasets, second.datasets), lambda set_: 100 * set_.ndcg_at_10
        else:
            continue
        names = [first.model, second.model]
        rows += [(kind, name, score(b), score(a), unit_change(b.units(), a.units(), seed=seed))
                 for name, b in parts[0].items() if (a := parts[1].get(name)) is not None]
    return Comparison(names[0], names[1], rows)


def judge_together(comparisons: list[Comparison]) -> list[Comparison]:
    """Several comparisons read at once (several models against one): every row's p adjusted by Holm's rule over the
    rows of all of them, so that the verdicts of the whole set hold together at 5%; one comparison is returned as
    it is (its own rows are its family)."""
    if len(comparisons) < 2:
        return comparisons
    family = sum(change is not None for comparison in comparisons for *_, change in comparison.rows)
    return [replace(comparison, family=family, holm_p=ps)
            for comparison, ps in zip(comparisons, _holm_rows(comparisons), strict=True)]


def _holm_rows(comparisons: Sequence[Comparison]) -> list[list[float | None]]:
    """Each row's p adjusted by Holm's rule over the rows of all ``comparisons`` that carry a test (None elsewhere)."""
    adjusted = iter(holm([change.p for c in comparisons for *_, change in c.rows if change is not None]))
    return [[next(adjusted) if change is not None else None for *_, change in c.rows] for c in comparisons]


def save_comparisons(comparisons: Sequence[Comparison], out_dir: PathLike) -> Path:
    """Write ``comparison.json`` and ``comparison.md`` into ``out_dir``; returns the JSON's path.

    Args:
        comparisons: One comparison (written as ``{"comparison": ...}``), or several judged together
            (:func:`judge_together`; written as ``{"comparisons": [...]}``, each markdown table headed by its two
            models).
        out_dir: The folder, created if missing (``st-infocse evaluate --output_dir``).
    """
    out = Path(out_dir)
    record = ({"comparison": comparisons[0].to_dict()} if len(comparisons) == 1
              else {"comparisons": [comparison.to_dict() for comparison in comparisons]})
    written = write_json(record, out / "comparison.json")
    (out / "comparison.md").write_text("\n\n".join(
        (f"{c.after} against {c.before}\n\n" if len(comparisons) > 1 else "") + c.to_markdown()
        for c in comparisons) + "\n", encoding="utf-8")
    return written
