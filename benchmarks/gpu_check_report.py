"""The GPU check's report: ``gpu_check.json`` and ``gpu_check.md`` from the work folder ``gpu_check.sh`` filled (the
phases' status, the GPU-marked tests' JUnit XML, the step-time rows, the MiniLM run's ``run_summary.json``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from benchmarks.harness import machine


def read_tests(path: Path) -> list[dict[str, Any]]:
    """Each test case of a pytest JUnit XML file: name, outcome, seconds, message, recorded properties."""
    if not path.exists():
        return []
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (found.get("message") or found.text or "").strip()[:800]
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        cases.append({"name": f"{case.get('classname', '')}::{case.get('name')}", "outcome": outcome,
                      "seconds": round(float(case.get("time") or 0), 2), "message": message,
                      "properties": properties})
    return cases


def read_minilm(work: Path) -> dict[str, Any]:
    """The MiniLM run: its run_summary.json and, from its ``start_end`` record, STS-B dev before and after."""
    summary_path = work / "minilm" / "run_summary.json"
    if not summary_path.exists():
        return {"error": "no run_summary.json (see the phase's status and the log)"}
    summary = json.loads(summary_path.read_text())
    start_end = summary.get("start_end") or {}
    keys = ("metric", "start_score", "end_score", "end_step", "best_score", "best_step", "kept")
    change = (start_end.get("changes") or {}).get(start_end.get("metric")) or {}
    return {"summary": summary, **{key: start_end.get(key) for key in keys}, "change": change}


def x100(value: Any) -> str:
    return "-" if not isinstance(value, int | float) or math.isnan(value) else f"{100 * value:.2f}"


def report(ns: argparse.Namespace) -> None:
    import torch

    work, out_dir = Path(ns.work), Path(ns.out_dir)
    phases = json.loads((work / "phases.json").read_text()) if (work / "phases.json").exists() else {}
    step = json.loads((work / "step_time.json").read_text()) if (work / "step_time.json").exists() else {}
    tests = read_tests(work / "gpu_tests.xml")
    minilm = read_minilm(work)
    versions = {}
    for name in ("torch", "transformers", "sentence_transformers", "datasets", "accelerate"):
        try:
            versions[name] = __import__(name).__version__
        except Exception as error:  # a missing library is part of the report
            versions[name] = f"missing ({type(error).__name__})"
    env = machine()
    env["commit"] = os.environ.get("GPU_CHECK_COMMIT") or env.get("commit")
    env.update({"python": platform.python_version(), "cuda": torch.version.cuda,
                "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device",
                "device_count": torch.cuda.device_count(), **versions})
    payload = {"dry_run": ns.dry_run, "wall_seconds": ns.wall_seconds, "environment": env, "phases": phases,
               "tests": tests, "step_time": step, "minilm": minilm}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gpu_check.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    (out_dir / "gpu_check.md").write_text(markdown(payload))
    print((out_dir / "gpu_check.md").read_text())


def markdown(p: dict[str, Any]) -> str:
    env, step = p["environment"], p["step_time"]
    lines = ["# GPU check" + (" (DRY RUN: tiny, on the CPU; no number here is a measurement)" if p["dry_run"] else ""),
             "",
             f"Command: `bash benchmarks/gpu_check.sh` at commit {env.get('commit') or 'unknown'} — {env['device']} "
             f"(x{env['device_count']}), CUDA {env['cuda']}, Python {env['python']}, torch {env['torch']}, "
             f"transformers {env['transformers']}, sentence-transformers {env['sentence_transformers']}, "
             f"datasets {env['datasets']}; {p['wall_seconds']} s in all.", "",
             "| phase | status | seconds |", "|---|---|---|"]
    for name, phase in p["phases"].items():
        lines.append(f"| {name} | {phase.get('status')} | {phase.get('seconds')} |")
    lines += ["", "## GPU-marked tests (`python -m pytest -m gpu tests/training/test_gpu.py "
              "tests/training/test_distributed.py`)", "",
              "| test | outcome | seconds | note |", "|---|---|---|---|"]
    for case in p["tests"]:
        note = "; ".join(f"{k}: {v}" for k, v in case["properties"].items()) or case["message"]
        lines.append(f"| {case['name'].split('::')[-1]} | {case['outcome']} | {case['seconds']} | "
                     f"{note.replace('|', '/').replace(chr(10), ' ')[:300]} |")
    if not p["tests"]:
        lines.append("| (no test report) | | | |")
    lines += ["", "## Training-step time at BERT-base's shape (random weights)", ""]
    if step.get("rows"):
        peak = step["matmul_peak_tflops"]
        lines += [f"Batch of Wikipedia sentences at max length 32, CLS pooling; forward + backward + fused AdamW; median"
                  f" of {step['repeats']} x {step['steps']} steps after {step['warmup']} warm-up steps. Matmul peak "
                  f"({step['matmul_size']}^3, this run): fp32 {peak['fp32']:.4g}, bf16 {peak['bf16']:.4g} TFLOP/s "
                  f"(float32 matmul precision '{step['float32_matmul_precision']}'). TFLOP/step counted by "
                  "FlopCounterMode (6NT: 6 x non-embedding parameters x tokens). Step: `eager` is the trainer's "
                  "default; `fast` is the `fast_step` switch (padded to 32, SDPA, model and decoders compiled with "
                  "mode='reduce-overhead'); its warm-up (s) holds the compilation.", "",
                  "| batch | precision | objective | step | ms/step | x eager | x SimCSE | TFLOP/step | 6NT | TFLOP/s | "
                  "share of matmul peak | peak GiB | host syncs/step (in st_infocse) | warm-up s |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

        def same(row: dict[str, Any], **changes: str) -> dict[str, Any] | None:
            keys = {"batch": row["batch"], "precision": row["precision"], "objective": row["objective"],
                    "mode": row.get("mode", "eager"), **changes}
            return next((r for r in step["rows"] if all(r.get(k, "eager" if k == "mode" else None) == v
                                                          for k, v in keys.items()) and "ms_per_step" in r), None)

        for row in step["rows"]:
            head = f"| {row['batch']} | {row['precision']} | {row['objective']} | {row.get('mode', 'eager')} "
            if "error" in row:
                lines.append(f"{head}| {row['error'][:200]} | | | | | | | | | |")
                continue
            base, eager = same(row, objective="SimCSE"), same(row, mode="eager")
            ratio = f"{row['ms_per_step'] / base['ms_per_step']:.2f}" if base else "-"
            speed = f"{row['ms_per_step'] / eager['ms_per_step']:.2f}" if eager else "-"
            syncs = f"{row['host_syncs']} ({row['host_syncs_in_package']})" if "host_syncs" in row else "-"
            lines.append(
                f"{head}| {row['ms_per_step']:.1f} | {speed} | {ratio} | "
                f"{row['tflop_per_step']:.3f} | {row['tflop_per_step_6nt']:.3f} | {row['achieved_tflops']:.1f} | "
                f"{100 * row['share_of_matmul_peak']:.1f}% | {row.get('peak_memory_gib', '-')} | {syncs} | "
                f"{row.get('warmup_s', '-')} |")
        origins = sorted({o for row in step["rows"] for o in row.get("host_sync_origins", [])})
        if origins:
            lines += ["", "Host synchronisations were called from: " + ", ".join(f"`{o}`" for o in origins) + "."]
    else:
        lines.append("No step-time rows (see the phase's status and the log).")
    m = p["minilm"]
    lines += ["", "## InfoCSE from all-MiniLM-L6-v2 (`st-infocse train --objective infocse --pooling cls`, bf16 on "
              "the GPU)", ""]
    if "summary" in m:
        lines.append(f"STS-B dev Spearman x100 (`{m['metric']}`): {x100(m['start_score'])} at the start -> "
                     f"{x100(m['end_score'])} at the last step ({m['end_step']}); best evaluation "
                     f"{x100(m['best_score'])} at step {m['best_step']}; the run handed back: {m['kept']}.")
        change = m.get("change") or {}
        if "delta" in change:
            lines.append(f"Change to the model handed back: {change['delta']:+.2f} (95% CI {change['low']:+.2f} to "
                         f"{change['high']:+.2f}, {change['n']} {change['unit']}): {change['verdict']}.")
        lines.append("The whole run_summary.json is in gpu_check.json under minilm.summary.")
    else:
        lines.append(m.get("error", "not run"))
    return "\n".join(lines) + "\n"
