"""The plots of ``adaptation_report.py``: the curves, each row's change against the shipped model, and the
per-query intervals on the confirmation halves."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.adaptation_config import HEADLINE, QUERY_METRICS, TITLES
from benchmarks.adaptation_rows import ROWS
from benchmarks.harness import FIGURE_DPI, FIGURE_STYLE, FIGURE_WIDTH


def _mean_curve(group: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    by_step: dict[int, list[float]] = {}
    for data in group:
        for point in data["curve"]:
            if key in point:
                by_step.setdefault(point["step"], []).append(point[key])
    return [(step, statistics.mean(values)) for step, values in sorted(by_step.items())]


def plot(domains: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = [r for r in ROWS if r != "shipped"]
    # Dark colours only (tab20's even entries, then four hues none of those has): pale lines vanish at column width.
    # An IDC row's rounds share a colour; the line style tells them apart.
    plain = [r for r in names if ROWS[r].round == 0]
    colour: dict[str, Any] = {row: plt.get_cmap("tab20")(2 * i % 20) for i, row in enumerate(plain)}
    pairs = sorted({r.rsplit("-r", 1)[0] for r in names if ROWS[r].round})
    idc = ["#17becf", "#393b79", "#637939", "#005f5f"]
    colour |= {r: idc[pairs.index(r.rsplit("-r", 1)[0]) % len(idc)] for r in names if ROWS[r].round}
    drawn: list[str] = []
    with plt.rc_context(FIGURE_STYLE):
        figure, axes = plt.subplots(1, max(1, len(domains)), figsize=(FIGURE_WIDTH, 7.0), squeeze=False)
        for axis, (name, data) in zip(axes[0], domains.items(), strict=False):
            key = f"eval_curve_{HEADLINE[name]}"
            start = _mean_curve([data["shipped"]], key) if data.get("shipped") else []
            for row in names:
                group = data["rows"].get(row, [])
                points = _mean_curve(group, key)
                if not points:
                    continue
                first = ROWS[row].round == 2 and _mean_curve(data["rows"].get(row.replace("-r2", "-r1"), []), key)
                points = (first[-1:] if first else start) + points  # every line starts where its model started
                style = {0: "-", 1: "--", 2: ":"}[ROWS[row].round]
                axis.plot(*zip(*points, strict=True), color=colour[row], ls=style, marker="o", ms=3, lw=1.6)
                drawn += [row] if row not in drawn else []
            if start:
                axis.axhline(start[0][1], color="k", ls="-.", lw=1.2)
            label = "nDCG@10" if name == "scifact" else "article → headline nDCG@10"
            axis.set(title=f"{TITLES[name]}: {label}\n(sub-sampled test, plot only)", xlabel="step")
            axis.grid(alpha=0.3)
        handles = [Line2D([], [], color=colour[r], ls={0: "-", 1: "--", 2: ":"}[ROWS[r].round], marker="o", ms=4,
                          label=r) for r in names if r in drawn]
        handles.append(Line2D([], [], color="k", ls="-.", label="shipped (no training)"))
        if not drawn:
            plt.close(figure)
            print(f"no curves to draw: {path} not written")
            return
        figure.legend(handles=handles, loc="outside lower center", ncol=4, frameon=False)
        figure.savefig(path, dpi=FIGURE_DPI)
        plt.close(figure)


def plot_deltas(domains: dict[str, Any], path: Path) -> None:
    """The headline: each row's change on the whole test against the shipped model, one dot per seed, the bar at
    their mean, per domain; the rows in the order of ``ROWS``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in ROWS if any("test" in d for data in domains.values() for d in data["rows"].get(r, []))]
    if not measured or not all(data.get("shipped") for data in domains.values()):
        print(f"nothing to compare with the shipped model: {path} not written")
        return
    with plt.rc_context(FIGURE_STYLE):
        figure, axes = plt.subplots(1, len(domains), figsize=(FIGURE_WIDTH, 1.6 + 0.55 * len(measured)),
                                    squeeze=False, sharey=True)
        for axis, (name, data) in zip(axes[0], domains.items(), strict=True):
            reference = data["shipped"]["test"][HEADLINE[name]]
            for y, row in enumerate(measured):
                values = [d["test"][HEADLINE[name]] - reference for d in data["rows"].get(row, []) if "test" in d]
                if not values:
                    label = "screened only" if data["rows"].get(row) else "not run"
                    axis.text(0, y, label, va="center", ha="center", fontsize=10, color="0.4")
                    continue
                mean = statistics.mean(values)
                axis.barh(y, mean, color="#2b7bba" if mean > 0 else "#c0392b", alpha=0.45, height=0.6)
                axis.plot(values, [y] * len(values), "o", color="k", ms=4)
            axis.axvline(0, color="k", lw=1)
            label = "nDCG@10" if name == "scifact" else "article → headline\nnDCG@10"
            # short, two-line titles: a long one runs past its panel and is cut at the figure's edge
            axis.set(title=f"{TITLES[name]} {label}\nΔ from shipped ({reference:.2f})",
                     xlabel="points (dots: seeds; bar: mean)")
            axis.grid(axis="x", alpha=0.3)
        axes[0][0].set_yticks(range(len(measured)), measured)
        axes[0][0].invert_yaxis()
        figure.savefig(path, dpi=FIGURE_DPI)
        plt.close(figure)


def plot_confirmation(queries: dict[str, Any], path: Path) -> None:
    """Each row's change against the shipped model on the confirmation half of the test queries (no choice used
    them), with its 95% interval over those queries, per domain."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    domains = {name: stats for name, stats in queries.items() if stats}
    if not domains:
        print(f"no per-query scores: {path} not written")
        return
    rows = [r for r in ROWS if any(r in stats["rows"] for stats in domains.values())]
    with plt.rc_context(FIGURE_STYLE):
        figure, axes = plt.subplots(1, len(domains), figsize=(FIGURE_WIDTH, 1.8 + 0.6 * len(rows)), squeeze=False,
                                    sharey=True)
        for axis, (name, stats) in zip(axes[0], domains.items(), strict=True):
            key = QUERY_METRICS[name][0]
            for y, row in enumerate(rows):
                if row not in stats["rows"]:
                    continue
                change = stats["rows"][row][key]["confirmation"]
                verdict = change.get("verdict_holm", change["verdict"])  # the table's verdict, over the rows judged
                colour = {"a gain": "#2b7bba", "a loss": "#c0392b"}.get(verdict, "0.45")
                axis.errorbar(change["delta"], y, xerr=[[change["delta"] - change["low"]],
                                                        [change["high"] - change["delta"]]],
                              fmt="o", color=colour, capsize=4, ms=6)
            axis.axvline(0, color="k", lw=1)
            label = "nDCG@10" if name == "scifact" else "article → headline\nnDCG@10"
            axis.set(title=f"{TITLES[name]} {label}\n{len(stats['confirmation'])} confirmation queries",
                     xlabel="Δ from shipped, 95% CI over queries\n(colour: verdict after Holm over the rows)")
            axis.grid(axis="x", alpha=0.3)
        axes[0][0].set_yticks(range(len(rows)), rows)
        axes[0][0].invert_yaxis()
        figure.savefig(path, dpi=FIGURE_DPI)
        plt.close(figure)
