"""The report of ``benchmarks/long_budget.py``: the STS table over seeds, SimCSE against each InfoCSE row, the
h-shuffle diagnostic, the probe and stage 1, and the plots (``plot``: again from the committed JSON)."""

from __future__ import annotations

import json
import platform
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from benchmarks.harness import (
    FIGURE_DPI,
    FIGURE_STYLE,
    FIGURE_WIDTH,
    RESULTS,
    at,
    commits_line,
    mean_std,
    welch,
)
from benchmarks.long_budget import OBJECTIVES, Config
from benchmarks.runner import JobQueue


def report(cfg: Config, command: str) -> str:
    done = JobQueue(cfg.work_dir).done()
    rows = {name: data for name, data in done.items() if name not in ("probe", "stage1")}
    by_objective: dict[str, list[dict[str, Any]]] = {}
    for data in rows.values():
        by_objective.setdefault(data["objective"], []).append(data)
    tasks = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
    lines = [
        f"Command: `{command}` — {cfg.steps} steps x batch {cfg.batch_size}, max length {cfg.max_length}, lr "
        f"{cfg.learning_rate:g}, evaluated at max length {cfg.eval_max_length}; STS-B dev and the h-shuffle "
        f"diagnostic every {cfg.eval_steps} steps. Spearman x100 (SentEval 'all'); ± is the sample std over seeds.",
        "",
        commits_line(done),
        "",
        "| Objective | Seeds | " + " | ".join(tasks) + " | STS avg | STS-B dev | train s/step |",
        "|---|---|" + "---|" * (len(tasks) + 3),
    ]
    for objective in OBJECTIVES:
        group = sorted(by_objective.get(objective, []), key=lambda d: d["seed"])
        if not group:
            continue
        cells = [mean_std([d["sts"][t] for d in group]) for t in tasks]
        # Seconds per step include the evaluations during training; rows that borrowed a freed core are not timed.
        timed = [d["train_seconds"] / cfg.steps for d in group if d.get("threads_max", 1) == 1]
        per_step = f"{statistics.mean(timed):.1f}" if timed else "-"
        lines.append(
            f"| {OBJECTIVES[objective]} | {','.join(str(d['seed']) for d in group)} | " + " | ".join(cells)
            + f" | {mean_std([d['sts_avg'] for d in group])} | {mean_std([d['stsb_dev'] for d in group])}"
            + f" | {per_step} |"
        )
    lines += ["", "Train s/step: wall time of training over the steps, evaluations during training included, one torch "
              "thread, mean over the rows that kept one thread (a worker out of jobs lends its core to the others).",
              ""]
    for other in ("infocse", "infocse-stage1", "infocse-lambda0"):
        a = [d["sts_avg"] for d in by_objective.get(other, [])]
        b = [d["sts_avg"] for d in by_objective.get("simcse", [])]
        if a and b:
            diff = statistics.mean(a) - statistics.mean(b)
            tested = welch(a, b)
            test = f"Welch t = {tested[0]:.2f}, p = {tested[1]:.2f}" if tested else "one seed: no test"
            lines.append(f"- {OBJECTIVES[other]} minus SimCSE, STS avg: {diff:+.2f} ({test}; seeds {len(a)} vs "
                         f"{len(b)}).")
    lines += ["", "h-shuffle diagnostic (information gain = auxiliary MLM loss with another sentence's h minus "
              "with the true h, nats per masked token; accuracy gap in points), first and last evaluation:", "",
              "| Row | decoder | gain at step 0 | gain at the end | accuracy gap at step 0 | at the end | "
              "MLM accuracy at the end |", "|---|---|---|---|---|---|---|"]
    for name, data in sorted(rows.items()):
        for prefix, label in (("probe", "probe (frozen)"), ("live", "own (training)")):
            key = f"eval_{prefix}_information_gain"
            if at(data["curve"], key, 0) is None:
                continue
            gap = f"eval_{prefix}_accuracy_gap"
            lines.append(
                f"| {name} | {label} | {at(data['curve'], key, 0):.4f} | {at(data['curve'], key, -1):.4f} | "
                f"{100 * at(data['curve'], gap, 0):.2f} | {100 * at(data['curve'], gap, -1):.2f} | "
                f"{100 * at(data['curve'], f'eval_{prefix}_accuracy', -1):.2f} |"
            )
    if "probe" in done:
        probe = done["probe"]
        untrained = probe["untrained_model"]
        lines += ["", f"Probe decoder: {cfg.probe_steps} steps at lr {cfg.probe_lr:g} on the untrained model's "
                  f"frozen embeddings ({probe['train_seconds']:.0f} s); on the untrained model it scores gain "
                  f"{untrained['probe_information_gain']:.4f} nats, accuracy {100 * untrained['probe_accuracy']:.2f} "
                  f"vs {100 * untrained['probe_accuracy_shuffled']:.2f} shuffled."]
    if "stage1" in done:
        stage1 = done["stage1"]
        curve = stage1["curve"]
        history = stage1["log_history"]
        acc = [h["cmlm_accuracy"] for h in history if "cmlm_accuracy" in h]
        lines += ["", f"Stage 1: {cfg.stage1_steps} steps at lr {cfg.stage1_lr:g} ({stage1['train_seconds']:.0f} s); "
                  f"auxiliary MLM accuracy (training logs) {100 * acc[0]:.2f} → {100 * acc[-1]:.2f}; its decoder's "
                  f"gain on held-out sentences {at(curve, 'eval_stage1_information_gain', 0):.4f} → "
                  f"{at(curve, 'eval_stage1_information_gain', -1):.4f} nats."]
    markdown = "\n".join(lines) + "\n"
    payload = {"command": command, "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
               "machine": platform.processor() or platform.machine(), "torch": torch.__version__, "jobs": done}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "long_budget.json").write_text(json.dumps(payload, indent=1))
    (RESULTS / "long_budget.md").write_text("# SimCSE vs InfoCSE, longer budget\n\n" + markdown)
    plot(done)
    return markdown


def _seeds(rows: list[dict[str, Any]]) -> str:
    seeds = sorted(d["seed"] for d in rows)
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(str(s) for s in seeds)}"


def plot(done: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    colours = {"simcse": "tab:blue", "infocse": "tab:orange", "infocse-stage1": "tab:green",
               "infocse-lambda0": "tab:purple"}
    labels = {"simcse": "SimCSE", "infocse": "InfoCSE, no stage 1", "infocse-stage1": "InfoCSE after stage 1",
              "infocse-lambda0": "InfoCSE, lambda 0"}
    rows = {name: data for name, data in done.items() if name not in ("probe", "stage1")}
    by_objective: dict[str, list[dict[str, Any]]] = {}
    with plt.rc_context(FIGURE_STYLE):
        # One row of three panels over the same steps; one legend below them for all three (the colour is the
        # objective, every seed drawn alike; in the middle panel the line style is the decoder).
        figure, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH, 4.8), sharex=True)
        for data in (rows[name] for name in sorted(rows)):
            colour = colours[data["objective"]]
            by_objective.setdefault(data["objective"], []).append(data)
            steps = [p["step"] for p in data["curve"] if "eval_sts-dev_spearman_cosine" in p]
            dev = [100 * p["eval_sts-dev_spearman_cosine"] for p in data["curve"]
                   if "eval_sts-dev_spearman_cosine" in p]
            axes[0].plot(steps, dev, color=colour, marker="o", ms=3)
            for prefix, style in (("probe", "-"), ("live", "--")):
                key = f"eval_{prefix}_information_gain"
                points = [(p["step"], p[key]) for p in data["curve"] if key in p]
                if points:
                    axes[1].plot(*zip(*points, strict=True), color=colour, ls=style, marker="o", ms=3)
            losses_ = [(h["step"], h["loss"]) for h in data["log_history"]]
            if losses_:
                axes[2].plot(*zip(*losses_, strict=True), color=colour, alpha=0.6, lw=1)
        axes[0].set(title="STS-B dev\n(Spearman x100, length 32)", xlabel="step")
        axes[1].set(title="h-shuffle information gain\n(nats / masked token)", xlabel="step")
        axes[2].set(title="training loss\n(log scale)", xlabel="step", yscale="log")
        for axis in axes:
            axis.grid(alpha=0.3)
            axis.xaxis.set_major_locator(MaxNLocator(4, steps=[1, 2, 2.5, 5, 10], integer=True))
        handles = [Line2D([], [], color=colours[o], marker="o", ms=4, label=f"{labels[o]} ({_seeds(by_objective[o])})")
                   for o in colours if o in by_objective]
        handles += [Line2D([], [], color="0.35", ls="-", label="middle: probe decoder (frozen)"),
                    Line2D([], [], color="0.35", ls="--", label="middle: own decoder (training)")]
        figure.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False)
        figure.savefig(RESULTS / "long_budget_curves.png", dpi=FIGURE_DPI)
        plt.close(figure)

        figure, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 4.2))
        if "stage1" in done:
            history = done["stage1"]["log_history"]
            points = [(h["step"], 100 * h["cmlm_accuracy"]) for h in history if "cmlm_accuracy" in h]
            axes[0].plot(*zip(*points, strict=True), label="stage 1: auxiliary MLM\naccuracy (train)")
            gains = [(p["step"], p["eval_stage1_information_gain"]) for p in done["stage1"]["curve"]
                     if "eval_stage1_information_gain" in p]
            axes[1].plot(*zip(*gains, strict=True), marker="o", label="stage-1 decoder")
        if "probe" in done:
            curve = done["probe"]["curve"]
            axes[0].plot([p["step"] for p in curve], [100 * p["accuracy"] for p in curve], alpha=0.7,
                         label="probe decoder: MLM\naccuracy (train)")
        axes[0].set(title="Auxiliary MLM accuracy (%)", xlabel="step")
        axes[1].set(title="stage-1 decoder: h-shuffle gain (nats)", xlabel="step")
        for axis in axes:
            if axis.get_legend_handles_labels()[0]:
                axis.legend(loc="lower right")
            axis.grid(alpha=0.3)
        figure.savefig(RESULTS / "long_budget_stage1.png", dpi=FIGURE_DPI)
        plt.close(figure)
