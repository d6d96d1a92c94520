"""The report of ``benchmarks/aux_mechanism.py`` (every objective against SimCSE, whether InfoCSE's own decoder reads
``h``, the probe and stage 1) and ``restore``, which seeds a new checkout's queue with the committed rows."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from benchmarks.aux_mechanism import GROUPS, SETTINGS, TASKS, Config, Row
from benchmarks.aux_mechanism_plot import plot
from benchmarks.harness import RESULTS, at, commits_line, mean_std, welch
from benchmarks.runner import JobQueue


def _gain(curve: list[dict[str, Any]], prefix: str, which: int) -> float | None:
    return at(curve, f"eval_{prefix}_information_gain", which)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(cfg: Config, command: str, stem: str) -> str:
    done = JobQueue(cfg.work_dir).done()
    rows = {k: v for k, v in done.items() if k not in ("probe", "stage1")}
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for data in rows.values():
        by_setting.setdefault(data["setting"], []).append(data)
    devices = sorted({d.get("device_name", "?") for d in done.values()})
    lines = [f"Command: `{command}` — device: {', '.join(devices)}; {cfg.steps} steps x batch {cfg.batch_size} "
             f"(5x steps where a row says so), max length {cfg.max_length}, lr {cfg.learning_rate:g}, evaluated at max "
             f"length {cfg.eval_max_length}. Spearman x100 (SentEval 'all'); ± is the sample std over seeds; p is "
             "Welch's t-test against SimCSE on STS avg.", "", commits_line(done), ""]
    simcse = [d["sts_avg"] for d in by_setting.get("simcse", []) if d["sts_avg"] is not None]
    simcse_dev = [d["stsb_dev"] for d in by_setting.get("simcse", [])]

    def versus(group: list[dict[str, Any]], key: str, base: list[float]) -> str:
        values = [d[key] for d in group if d[key] is not None]
        if not values or not base:
            return "-"
        diff = statistics.mean(values) - statistics.mean(base)
        tested = welch(values, base)
        return f"{diff:+.2f}" + (f" (p = {tested[1]:.3f})" if tested else "")

    lines += ["**Every objective (current defaults)**", "",
              "| Objective | Seeds | " + " | ".join(TASKS) + " | STS avg | vs SimCSE | STS-B dev | vs SimCSE |",
              "|---|---|" + "---|" * (len(TASKS) + 4)]
    for name, setting in SETTINGS.items():
        group = sorted(by_setting.get(name, []), key=lambda d: d["seed"])
        if setting.group != "table" or not group or group[0]["sts_avg"] is None:
            continue
        cells = [mean_std([d["sts"][t] for d in group]) for t in TASKS]
        lines.append(f"| {setting.description} | {','.join(str(d['seed']) for d in group)} | " + " | ".join(cells)
                     + f" | {mean_std([d['sts_avg'] for d in group])} | "
                     + ("-" if name == "simcse" else versus(group, "sts_avg", simcse))
                     + f" | {mean_std([d['stsb_dev'] for d in group])} | "
                     + ("-" if name == "simcse" else versus(group, "stsb_dev", simcse_dev)) + " |")

    lines += ["", "**Does InfoCSE's own decoder read h?**", "",
              "Information gain of the row's own decoder (auxiliary MLM loss with another sentence's h minus with "
              "the true h, nats per masked token, 512 held-out sentences) at step 0, halfway and at the end; the "
              "frozen probe decoder reads "
              + (f"{done['probe']['untrained_model']['probe_information_gain']:.4f}" if "probe" in done else "-")
              + " nats from the untrained model. Accuracy gap: masked-token accuracy with the true h minus with the shuffled "
              "one, in points. Gradient ratio: norm of the weighted MLM term's gradient over the contrastive term's, at "
              "the encoder, at step 0 and after training (mean over 4 batches).", "",
              "| Setting | Seeds | own gain: start | middle | end | own MLM acc. end | acc. gap end | probe gain end | "
              "grad ratio start | end | STS avg | vs SimCSE | STS-B dev | vs SimCSE |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, setting in SETTINGS.items():
        group = sorted(by_setting.get(name, []), key=lambda d: d["seed"])
        if setting.objective != "infocse" or not group:
            continue

        def mean_of(values: list[float | None]) -> float | None:
            present = [v for v in values if v is not None]
            return statistics.mean(present) if present else None

        middle = [at([p for p in d["curve"] if "eval_live_information_gain" in p],
                      "eval_live_information_gain", len([p for p in d["curve"]
                                                          if "eval_live_information_gain" in p]) // 2)
                  for d in group]
        ratio_start = mean_of([d["gradient_ratio"].get("start", {}).get("ratio") for d in group])
        ratio_end = mean_of([d["gradient_ratio"].get("end", {}).get("ratio") for d in group])
        acc = mean_of([at(d["curve"], "eval_live_accuracy", -1) for d in group])
        gap = mean_of([at(d["curve"], "eval_live_accuracy_gap", -1) for d in group])
        sts = [d["sts_avg"] for d in group if d["sts_avg"] is not None]
        lines.append(
            f"| {setting.description} | {','.join(str(d['seed']) for d in group)} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'live', 0) for d in group]))} | {_fmt(mean_of(middle))} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'live', -1) for d in group]))} | "
            f"{'-' if acc is None else f'{100 * acc:.1f}%'} | {'-' if gap is None else f'{100 * gap:+.2f}'} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'probe', -1) for d in group]))} | "
            f"{'-' if ratio_start is None else f'{ratio_start:.2e}'} | "
            f"{'-' if ratio_end is None else f'{ratio_end:.2e}'} | "
            f"{mean_std(sts) if sts else '-'} | {versus(group, 'sts_avg', simcse)} | "
            f"{mean_std([d['stsb_dev'] for d in group])} | {versus(group, 'stsb_dev', simcse_dev)} |")
    released = by_setting.get("infocse", [])
    released_sts = [d["sts_avg"] for d in released if d["sts_avg"] is not None]
    released_dev = [d["stsb_dev"] for d in released]
    compared = [(name, setting) for name, setting in SETTINGS.items()
                if name != "infocse" and setting.objective == "infocse" and len(by_setting.get(name, [])) >= 2]
    if released and compared:
        lines.append("")
        for name, setting in compared:
            group = by_setting[name]
            lines.append(f"- {setting.description} minus InfoCSE (defaults), seeds {len(group)} vs {len(released)}: "
                         f"STS avg {versus(group, 'sts_avg', released_sts)}, "
                         f"STS-B dev {versus(group, 'stsb_dev', released_dev)}.")
    for job in ("probe", "stage1"):
        if job not in done:
            continue
        data = done[job]
        if job == "stage1":
            curve = data["curve"]
            accs = [(p["step"], p["eval_stage1_accuracy"]) for p in curve if "eval_stage1_accuracy" in p]
            final = accs[-1][1]
            plateau = next(step for step, acc in accs if acc >= final - 0.005)
            lines += ["", f"Stage 1: {cfg.stage1_steps} steps at a constant lr {cfg.stage1_lr:g} "
                      f"({data['train_seconds']:.0f} s); held-out auxiliary MLM accuracy "
                      + ", ".join(f"{100 * a:.1f}% at {s}" for s, a in accs[:: max(1, len(accs) // 8)])
                      + f", {100 * final:.1f}% at {accs[-1][0]}; within 0.5 points of the last value from step "
                      f"{plateau}; its decoder's gain {_fmt(_gain(curve, 'stage1', 0))} → "
                      f"{_fmt(_gain(curve, 'stage1', -1))} nats."]
        else:
            scores = data["untrained_model"]
            steps = cfg.probe_steps
            lines += ["", f"Probe decoder (also the decoder trained alone first): {steps} steps at lr "
                      f"{cfg.probe_lr:g} on the untrained model's frozen embeddings ({data['train_seconds']:.0f} s); on "
                      f"the untrained model: gain {scores[f'{job}_information_gain']:.4f} nats, accuracy "
                      f"{100 * scores[f'{job}_accuracy']:.2f}% vs {100 * scores[f'{job}_accuracy_shuffled']:.2f}% "
                      "with shuffled h."]
    markdown = "\n".join(lines) + "\n"
    payload = {"command": command, "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
               "settings": {k: asdict(v) for k, v in SETTINGS.items()}, "torch": torch.__version__, "jobs": done}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(payload, indent=1))
    (RESULTS / f"{stem}.md").write_text("# When does the auxiliary MLM matter?\n\n" + markdown)
    plot(done, GROUPS, RESULTS / f"{stem}_gain.png", RESULTS / f"{stem}_stage1.png")
    return markdown


def restore(cfg: Config, stem: str) -> int:
    """Seed the queue's cache with committed rows, so a new checkout resumes instead of re-running them.

    Rows of this benchmark come from ``results/<stem>.json``; SimCSE's and InfoCSE's (defaults) from
    ``results/long_budget.json``, whose rows were trained and scored exactly as these are. Decoders are not kept, so
    the probe (and stage 1) are trained again when a row needs them. Returns the number of rows written.
    """
    done = cfg.work_dir / "done"
    done.mkdir(parents=True, exist_ok=True)
    written = 0
    own = RESULTS / f"{stem}.json"
    if own.exists():
        for job, data in json.loads(own.read_text())["jobs"].items():
            if job not in ("probe", "stage1") and not (done / f"{job}.json").exists():
                (done / f"{job}.json").write_text(json.dumps(data, indent=1))
                written += 1
    long_budget = RESULTS / "long_budget.json"
    if long_budget.exists():
        payload = json.loads(long_budget.read_text())
        for job, data in payload["jobs"].items():
            if data.get("objective") not in ("simcse", "infocse") or (done / f"{job}.json").exists():
                continue
            row = Row(job, data["objective"], data["seed"], SETTINGS[data["objective"]].description,
                      payload["config"]["steps"], data["train_seconds"], data["curve"], data["log_history"], {},
                      data["sts"], data["sts_avg"], data["stsb_dev"], data["eval_seconds"])
            record = {"job": job, "device": "cpu", "device_name": payload.get("machine", "cpu"),
                      "source": "long_budget.json"} | asdict(row)
            (done / f"{job}.json").write_text(json.dumps(record, indent=1))
            written += 1
    return written
