"""The plots of ``aux_mechanism.py`` (kept apart so that the script stays one reading): the decoders' information
gain and STS-B dev during training, and stage 1's curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import FIGURE_DPI, FIGURE_STYLE, FIGURE_WIDTH


def plot(done: dict[str, dict[str, Any]], groups: dict[str, str], gain_png: Path, stage1_png: Path) -> None:
    """The decoders' h-shuffle gain and STS-B dev per setting (``groups``: each setting's group, in table order),
    and stage 1's accuracy and gain."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    # One colour per setting in all three panels, and one legend below them.
    present = [n for n in groups if any(d.get("setting") == n for d in done.values())]
    cmap = plt.get_cmap("tab10" if len(present) <= 10 else "tab20")
    colour = {name: cmap(index % cmap.N) for index, name in enumerate(present)}
    drawn: list[str] = []
    with plt.rc_context(FIGURE_STYLE):
        figure, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH, 5.6), sharex=True)
        panels = (("decoder", axes[0], "own decoder's gain (nats):\ndecoder settings, lambda 1e-5"),
                  ("weight", axes[1], "own decoder's gain (nats):\nlambda (decoder alone first)"))
        for group, axis, title in panels:
            extra = {"decoder": "infocse", "weight": "infocse-probe-full-auxlr1e-4"}[group]
            for name in (n for n, g in groups.items() if g == group or n == extra):
                for run in (d for d in done.values() if d.get("setting") == name):
                    points = [(p["step"], p["eval_live_information_gain"]) for p in run["curve"]
                              if "eval_live_information_gain" in p]
                    if points:
                        axis.plot(*zip(*points, strict=True), color=colour[name], marker="o", ms=3, alpha=0.8)
                        drawn += [name] if name not in drawn else []
            if "probe" in done:
                axis.axhline(done["probe"]["untrained_model"]["probe_information_gain"], color="k", ls=":")
            axis.set(title=title, xlabel="step")
        compared = [n for n, g in groups.items() if g in ("table", "weight") or n == "infocse-probe-full-auxlr1e-4"]
        for name in compared:
            for run in (d for d in done.values() if d.get("setting") == name):
                points = [(p["step"], 100 * p["eval_sts-dev_spearman_cosine"]) for p in run["curve"]
                          if "eval_sts-dev_spearman_cosine" in p]
                if points:
                    axes[2].plot(*zip(*points, strict=True), color=colour[name], alpha=0.7)
                    drawn += [name] if name not in drawn else []
        axes[2].set(title="STS-B dev during training\n(x100, length 32)", xlabel="step")
        for axis in axes:
            axis.grid(alpha=0.3)
            axis.xaxis.set_major_locator(MaxNLocator(4, steps=[1, 2, 2.5, 5, 10], integer=True))
        handles = [Line2D([], [], color=colour[name], marker="o", ms=4, label=name) for name in present
                   if name in drawn]
        if "probe" in done:
            handles.append(Line2D([], [], color="k", ls=":", label="probe decoder, untrained model"))
        if handles:
            figure.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
        figure.savefig(gain_png, dpi=FIGURE_DPI)
        plt.close(figure)

        if "stage1" in done:
            figure, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 4.2))
            curve = done["stage1"]["curve"]
            points = [(p["step"], 100 * p["eval_stage1_accuracy"]) for p in curve if "eval_stage1_accuracy" in p]
            axes[0].plot(*zip(*points, strict=True), marker="o", ms=3,
                         label="stage 1: held-out\nauxiliary MLM accuracy")
            if "probe" in done:
                probe = done["probe"]["curve"]
                axes[0].plot([p["step"] for p in probe], [100 * p["accuracy"] for p in probe], alpha=0.6,
                             label="probe decoder (trained\nalone): training accuracy")
            gains = [(p["step"], p["eval_stage1_information_gain"]) for p in curve
                     if "eval_stage1_information_gain" in p]
            axes[1].plot(*zip(*gains, strict=True), marker="o", ms=3, label="stage-1 decoder")
            axes[0].set(title="Auxiliary MLM accuracy (%)", xlabel="step")
            axes[1].set(title="stage-1 decoder: h-shuffle gain (nats)", xlabel="step")
            for axis in axes:
                axis.legend(loc="lower right")
                axis.grid(alpha=0.3)
            figure.savefig(stage1_png, dpi=FIGURE_DPI)
            plt.close(figure)
