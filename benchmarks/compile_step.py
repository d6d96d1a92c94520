"""torch.compile on the CPU: each objective's training step eager, as the trainer compiles it, and compiled whole.

    HF_HUB_OFFLINE=1 python -m benchmarks.compile_step                       # 1 thread, batch 64, length 32
    HF_HUB_OFFLINE=1 python -m benchmarks.compile_step --objectives infocse --repeats 3

Three ways to run the same step (tokenisation, loss forward, backward, fused AdamW update, as
``benchmarks/step_time.py`` times it) on all-MiniLM-L6-v2 with CLS pooling:

- ``eager``: no compilation;
- ``model``: what ``SentenceTransformerTrainingArguments(torch_compile=True)`` does. The trainer (through
  accelerate) compiles the model with inductor and puts the compiled wrapper into the loss in place of every
  ``model`` attribute; the loss's own modules (projection head, auxiliary decoder) stay eager;
- ``loss``: ``loss.compile()``, the whole loss forward (model calls included) and its backward compiled.

The step checks are deferred as ``AuxiliaryStateCallback`` defers them in a training run and read after each step.
The three are timed round-robin after two warm-up steps (the first compiles; its time is reported, with whatever
inductor's on-disk cache already held). Graph breaks are read from dynamo's graph-break log while the loss forward
is traced, by where each arises; ``--breaks-only`` refreshes them in an existing report. Results:
``benchmarks/results/compile_step.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from sentence_transformers import SentenceTransformerTrainer
from torch import nn

from benchmarks.graph_breaks import graph_breaks  # noqa: E402
from benchmarks.harness import REPO, RESULTS, SHARED, commit, provenance, read_lines  # noqa: E402
from benchmarks.step_time import cpu_info, setup  # noqa: E402
from benchmarks.timing import TrainingStep  # noqa: E402
from st_infocse.losses import training_losses  # noqa: E402

MODES = ("eager", "model", "loss")


def defer_checks(loss: nn.Module) -> None:
    for module in training_losses(loss):
        module.defer_step_checks()


def put_model_into_loss(loss: nn.Module, compiled: nn.Module) -> None:
    """The trainer's own ``override_model_in_loss``: every ``model`` attribute in the loss now holds the compiled one."""
    trainer = SentenceTransformerTrainer.__new__(SentenceTransformerTrainer)  # the method reads nothing else from it
    trainer.override_model_in_loss(loss, compiled)


def break_sites(loss: nn.Module, features: list[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Dynamo's graphs (``torch._dynamo.explain``) and every graph break, by place, from dynamo's graph-break log
    (which names each one; explain's break reasons leave some out)."""
    torch._dynamo.reset()
    graphs = torch._dynamo.explain(loss)(features).graph_count
    sites: dict[str, int] = {}
    for where, reason in graph_breaks(loss, features):
        key = f"{reason[:110]} at {where.split('site-packages/')[-1].replace(str(REPO) + '/', '')}"
        sites[key] = sites.get(key, 0) + 1
    return {"graphs": graphs, "breaks": sum(sites.values()), "sites": sites}


def explain_objective(name: str, sentences: list[str]) -> dict[str, Any]:
    model, loss, _ = setup(name, 32)
    defer_checks(loss)
    model.train()
    return break_sites(loss, [dict(model.preprocess(sentences[:8]))])


def prepare(name: str, mode: str) -> tuple[nn.Module, nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model, loss, optimizer = setup(name, 32)
    defer_checks(loss)
    if mode == "model":
        put_model_into_loss(loss, torch.compile(model))
    elif mode == "loss":
        loss.compile()
    return model, loss, optimizer


def timed_step(model: nn.Module, loss: nn.Module, optimizer: torch.optim.Optimizer, sentences: list[str]) -> float:
    """Seconds of one step, its deferred checks read after it."""
    return TrainingStep(model, loss, optimizer, deferred_checks=True).seconds(sentences)


def run_objective(name: str, sentences: list[str], repeats: int) -> dict[str, Any]:
    sites = explain_objective(name, sentences)
    runs = {mode: prepare(name, mode) for mode in MODES}
    result: dict[str, Any] = {"explain": sites, "first_step_s": {}, "second_step_s": {}, "steps_s": {m: [] for m in MODES}}
    for mode, (model, loss, optimizer) in runs.items():
        result["first_step_s"][mode] = round(timed_step(model, loss, optimizer, sentences), 2)
        result["second_step_s"][mode] = round(timed_step(model, loss, optimizer, sentences), 2)
        print(f"[{time.strftime('%H:%M:%S')}] {name} {mode}: first step {result['first_step_s'][mode]} s", flush=True)
    for _ in range(repeats):
        for mode, (model, loss, optimizer) in runs.items():
            result["steps_s"][mode].append(round(timed_step(model, loss, optimizer, sentences), 3))
    result["median_s"] = {mode: statistics.median(values) for mode, values in result["steps_s"].items()}
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {result['median_s']}", flush=True)
    torch._dynamo.reset()
    return result


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# torch.compile on the CPU",
        "",
        provenance(report),
        "",
        f"CPU: {report['cpu']}, {report['threads']} thread(s); torch {report['torch']} (inductor). Batch "
        f"{report['batch_size']}, max length 32, all-MiniLM-L6-v2 with CLS pooling, fused AdamW. Median of "
        f"{report['repeats']} steps per mode, taken round-robin after two warm-up steps. `model` is what "
        "`SentenceTransformerTrainingArguments(torch_compile=True)` compiles (the model; the loss's own modules stay "
        "eager); `loss` is `loss.compile()`.",
        "",
        "| objective | eager s/step | model compiled | speed-up | loss compiled | speed-up | first step: model / loss s "
        "| graphs (breaks) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["results"].items():
        m = r["median_s"]
        lines.append(
            f"| {name} | {m['eager']:.2f} | {m['model']:.2f} | {m['eager'] / m['model']:.2f}x | {m['loss']:.2f} "
            f"| {m['eager'] / m['loss']:.2f}x | {r['first_step_s']['model']:.0f} / {r['first_step_s']['loss']:.0f} "
            f"| {r['explain']['graphs']} ({r['explain']['breaks']}) |"
        )
    lines += ["", "Graph breaks in the loss forward, from dynamo's graph-break log, by where each arises (graphs from "
              "`torch._dynamo.explain`):", ""]
    for name, r in report["results"].items():
        sites = r["explain"]["sites"] or {"none": 0}
        lines.append(f"- {name}: " + "; ".join(f"{site} (x{count})" if count else site for site, count in sites.items()))
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objectives", nargs="+", default=["simcse", "infocse", "cmlm-cse", "informin"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sentences", type=Path, default=SHARED / "sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--output", type=Path, default=RESULTS / "compile_step")
    parser.add_argument("--breaks-only", action="store_true", help="only re-list the graph breaks of --output's report")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentences = read_lines(args.sentences, args.batch_size)
    report: dict[str, Any] = {
        "command": ("HF_HUB_OFFLINE=1 python -m benchmarks.compile_step " + " ".join(sys.argv[1:])).strip(),
        "commit": commit(),
        "cpu": cpu_info().get("model_name") or platform.processor(),
        "threads": args.threads,
        "torch": torch.__version__,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "results": {},
    }
    started = time.perf_counter()
    if args.breaks_only:
        # Refresh the graph breaks of an earlier run's report, keeping its timings.
        report = json.loads(args.output.with_suffix(".json").read_text())
        for name in report["results"]:
            report["results"][name]["explain"] = explain_objective(name, sentences)
    else:
        for name in args.objectives:
            report["results"][name] = run_objective(name, sentences, args.repeats)
        report["wall_time_s"] = round(time.perf_counter() - started, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report)
    args.output.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
