"""Plain-text and markdown table formatting shared by the result classes."""

from __future__ import annotations

from collections.abc import Sequence

#: The ``"scale"`` label of a JSON result whose scores are percentages (STS Spearman, accuracy, recall@k).
SCALE_X100 = "x100"
#: The ``"scale"`` label of BEIR metrics kept as beir and mteb return them; tables show them x100.
SCALE_UNIT = "0-1"


def x100(value: float | None) -> str:
    """A [0, 1] score as the papers print it: x100, two decimals ("-" when missing; NaN prints as nan).

    Example:
        >>> x100(0.4321)
        '43.21'
    """
    return "-" if value is None else f"{100 * value:.2f}"


def cell(value: object) -> str:
    """A value in a metric/value table: floats with four decimals, anything else as it prints."""
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to a common width: the first left-aligned, the others (numbers) right-aligned.

    Example:
        >>> print(text_table(["Model", "STS12"], [["m", "70.00"]]))
        Model  STS12
        m      70.00
    """
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    cells = [[(c.ljust if i == 0 else c.rjust)(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
             for r in [header, *rows]]
    return "\n".join("  ".join(row) for row in cells)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table with the first column left-aligned and the others right-aligned.

    Example:
        >>> print(markdown_table(["Model", "STS12"], [["m", "70.00"]]))
        | Model | STS12 |
        |---|---:|
        | m | 70.00 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
