"""Where a training step's time goes: SimCSE against InfoCSE on all-MiniLM-L6-v2, profiled with torch.profiler.

    HF_HUB_OFFLINE=1 python -m benchmarks.profile_step                  # 1 and 2 threads, batch 64, length 32
    HF_HUB_OFFLINE=1 python -m benchmarks.profile_step --threads 1 --batch-size 8   # a quick look
    # the blockwise vocabulary cross-entropy against its plain form, side by side in the same rounds:
    HF_HUB_OFFLINE=1 python -m benchmarks.profile_step --threads 1 --objectives simcse infocse infocse-plain-ce

Steps (tokenisation, loss forward, backward, AdamW update, as ``benchmarks/step_time.py`` times it) run under
``torch.profiler`` after warm-up steps, each profiled separately (``--profiled-steps``; the per-component medians
are reported). Every operator's self CPU time is attributed to a component:

- forward operators to the innermost labelled module they ran in: the encoder, the projection head, the frozen
  lower copy, the fusion layers, the MLM head (its transform, and the vocabulary projection with its
  cross-entropy, which run as one function); the masker's call is "masking"; the rest of the loss's forward
  (similarities, contrastive cross-entropy, BatchNorm statistics) is "loss";
- backward operators (autograd's ``evaluate_function`` scopes) to the component of the forward operator that
  created them, through the autograd sequence number the profiler records for both;
- ``optimizer.step`` / ``zero_grad`` to "optimizer", ``model.preprocess`` to "tokenisation".

Next to the profile, the same step is timed without the profiler (median of ``--repeats`` rounds, objectives side by
side in one process, with each round's ratio), against the counted-FLOP ideal of ``step_time.py`` and the best
2048 x 2048 matmul of the same thread count. Results: ``benchmarks/results/profile_step.{json,md}``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from benchmarks.harness import RESULTS, SHARED, commit, provenance, read_lines  # noqa: E402
from benchmarks.step_time import batch_flops, cpu_info, setup, time_matmul  # noqa: E402
from benchmarks.timing import TrainingStep  # noqa: E402
from st_infocse.modeling import auxiliary_decoder  # noqa: E402

SCOPE = "component::"
COMPONENTS = (
    "tokenisation", "encoder", "encoder backward", "projection head", "projection head backward", "frozen copy",
    "fusion layers", "fusion layers backward", "MLM head", "MLM head backward", "masking", "loss", "loss backward",
    "optimizer", "other",
)


def labelled_modules(loss: nn.Module) -> dict[str, nn.Module]:
    """The components of a loss that have modules of their own."""
    contrastive = getattr(loss, "contrastive", loss)
    parts: dict[str, nn.Module] = {"encoder": loss.model}
    projection = getattr(contrastive, "projection", None)
    if isinstance(projection, nn.Module):
        parts["projection head"] = projection
    cmlm = getattr(loss, "cmlm", None)
    if cmlm is not None:
        parts["frozen copy"] = cmlm.decoder.lower
        parts["fusion layers"] = cmlm.decoder.fusion
        head = cmlm.decoder.head
        # The transform's modules (the head's own forward is not called when the vocabulary cross-entropy is fused).
        parts["MLM head"] = nn.ModuleList([module for module in (head.dense, head.layer_norm) if module is not None])
    return parts


@contextmanager
def labelled(loss: nn.Module) -> Iterator[None]:
    """Open a profiler scope around each component's forward (and the masker's call) while inside."""
    handles = []
    open_scopes: dict[int, list[Any]] = defaultdict(list)

    def enter(name: str) -> Callable:
        def hook(module: nn.Module, args: Any) -> None:
            open_scopes[id(module)].append(torch.ops.profiler._record_function_enter_new(SCOPE + name, None))

        return hook

    def leave(module: nn.Module, args: Any, output: Any) -> None:
        torch.ops.profiler._record_function_exit._RecordFunction(open_scopes[id(module)].pop())

    for name, module in labelled_modules(loss).items():
        targets = list(module) if isinstance(module, nn.ModuleList) else [module]
        for target in targets:
            handles.append(target.register_forward_pre_hook(enter(name)))
            handles.append(target.register_forward_hook(leave))
    cmlm = getattr(loss, "cmlm", None)
    masker = cmlm.masker if cmlm is not None else None
    original = masker.__class__.__call__ if masker is not None else None
    if masker is not None:

        def masked_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with record_function(SCOPE + "masking"):
                return original(self, *args, **kwargs)

        masker.__class__.__call__ = masked_call
    # The vocabulary projection and its cross-entropy run as one function; older code ran the head's decoder
    # module, then F.cross_entropy (counted under "loss").
    fused = getattr(auxiliary_decoder, "vocab_cross_entropy", None)
    if cmlm is not None and fused is not None:

        def labelled_fused(*args: Any, **kwargs: Any) -> Any:
            with record_function(SCOPE + "MLM head"):
                return fused(*args, **kwargs)

        auxiliary_decoder.vocab_cross_entropy = labelled_fused
    elif cmlm is not None:
        handles.append(cmlm.decoder.head.decoder.register_forward_pre_hook(enter("MLM head")))
        handles.append(cmlm.decoder.head.decoder.register_forward_hook(leave))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        if masker is not None:
            masker.__class__.__call__ = original
        if fused is not None:
            auxiliary_decoder.vocab_cross_entropy = fused


# The same loss with the vocabulary cross-entropy in its plain form (F.linear, then F.cross_entropy), as the code
# computed it before the blockwise form: an A/B of that change inside one process and one set of rounds.
PLAIN = "-plain-ce"


@contextmanager
def vocabulary_form(name: str) -> Iterator[None]:
    if not name.endswith(PLAIN):
        yield
        return
    blockwise = auxiliary_decoder.vocab_cross_entropy
    auxiliary_decoder.vocab_cross_entropy = functools.partial(blockwise, blockwise=False)
    try:
        yield
    finally:
        auxiliary_decoder.vocab_cross_entropy = blockwise


def setup_objective(name: str) -> tuple[nn.Module, nn.Module, torch.optim.Optimizer]:
    return setup(name.removesuffix(PLAIN), 32)


def run_step(model: nn.Module, loss: nn.Module, optimizer: torch.optim.Optimizer, sentences: list[str]) -> None:
    """One step, its tokenisation, loss and optimizer update each in a profiler scope of its own."""
    TrainingStep(model, loss, optimizer, scope=lambda name: record_function(SCOPE + name))(sentences)


def attribute(events: list[Any]) -> dict[str, float]:
    """Self CPU time (ms) per component, from the profiler's event tree."""

    def scope_of(event: Any) -> str | None:
        node = event
        while node is not None:
            if node.name.startswith(SCOPE):
                return node.name[len(SCOPE):]
            node = node.cpu_parent
        return None

    def backward_root(event: Any) -> Any | None:
        node = event
        while node is not None:
            if node.name.startswith("autograd::engine::evaluate_function"):
                return node
            node = node.cpu_parent
        return None

    by_sequence: dict[int, str] = {}
    for event in events:
        if event.sequence_nr >= 0 and backward_root(event) is None:
            label = scope_of(event)
            if label is not None:
                by_sequence.setdefault(event.sequence_nr, label)
    totals: dict[str, float] = defaultdict(float)
    for event in events:
        if event.name.startswith(SCOPE):
            continue
        root = backward_root(event)
        if root is not None:
            forward = by_sequence.get(root.sequence_nr)
            label = f"{forward} backward" if forward else "loss backward"
            # The frozen copy has no backward; a tensor it produced can only be touched by the loss.
            label = "loss backward" if label == "frozen copy backward" else label
        else:
            label = scope_of(event) or "other"
        if label in ("masking backward", "tokenisation backward", "optimizer backward"):
            label = "loss backward"
        totals[label] += event.self_cpu_time_total / 1000.0
    return dict(totals)


def profile_objective(name: str, sentences: list[str], warmup: int, steps: int) -> tuple[dict[str, float], float]:
    """Each component's median self time over ``steps`` separately profiled steps, and the median step time."""
    model, loss, optimizer = setup_objective(name)
    torch.manual_seed(0)
    for _ in range(warmup):
        with vocabulary_form(name):
            run_step(model, loss, optimizer, sentences)
    profiles, seconds = [], []
    for _ in range(steps):
        with vocabulary_form(name), labelled(loss), profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            run_step(model, loss, optimizer, sentences)
            seconds.append(time.perf_counter() - start)
        profiles.append(attribute(list(prof.events())))
    components = {component for found in profiles for component in found}
    medians = {component: statistics.median(found.get(component, 0.0) for found in profiles) for component in components}
    return medians, statistics.median(seconds)


def time_objectives(names: list[str], sentences: list[str], repeats: int) -> dict[str, list[float]]:
    """Step times of each objective over ``repeats`` rounds, interleaved so that load changes hit all alike."""
    setups = {name: setup_objective(name) for name in names}
    for name, (model, loss, optimizer) in setups.items():
        with vocabulary_form(name):
            run_step(model, loss, optimizer, sentences)
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeats):
        for name, (model, loss, optimizer) in setups.items():
            with vocabulary_form(name):
                start = time.perf_counter()
                run_step(model, loss, optimizer, sentences)
                times[name].append(time.perf_counter() - start)
    return times


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Where a training step's time goes",
        "",
        provenance(report),
        "",
        f"CPU: {report['cpu']}; torch {report['torch']}. Batch {report['batch_size']}, max length 32 "
        f"({report['shape']['rows']} x {report['shape']['seq']} tokens), all-MiniLM-L6-v2 with CLS pooling, AdamW "
        f"(fused). Self CPU time per component (ms), the median over {report.get('profiled_steps', 1)} separately "
        "profiled steps after warm-up. \"MLM head\" is the transform and the vocabulary projection with its "
        "cross-entropy (run as one function); \"loss\" is the rest of the loss's own work.",
        "",
    ]
    for threads, block in report["threads"].items():
        objectives = list(block["profile"])
        lines += [f"## {threads} thread(s)", "", "| component | " + " | ".join(objectives) + " |",
                  "|---|" + "---|" * len(objectives)]
        for component in COMPONENTS:
            values = [block["profile"][o].get(component, 0.0) for o in objectives]
            if any(values):
                lines.append(f"| {component} | " + " | ".join(f"{v:,.0f}" for v in values) + " |")
        lines.append("| **total (profiled)** | " + " | ".join(
            f"**{sum(block['profile'][o].values()):,.0f}**" for o in objectives) + " |")
        lines += ["", "| | " + " | ".join(objectives) + " |", "|---|" + "---|" * len(objectives)]
        timed = block["timed_s"]
        base = timed[objectives[0]]
        flops = report["flops"]
        lines.append("| step s (median, no profiler) | " + " | ".join(f"{timed[o]:.2f}" for o in objectives) + " |")
        lines.append("| ratio to " + objectives[0] + " | " + " | ".join(f"{timed[o] / base:.2f}" for o in objectives)
                     + " |")
        rounds = block.get("round_ratios")
        if rounds:
            lines.append(f"| ratio in each of the {len(rounds[objectives[0]])} rounds (min-max) | " + " | ".join(
                f"{min(rounds[o]):.2f}-{max(rounds[o]):.2f}" for o in objectives) + " |")
        lines.append("| counted-FLOP ideal ratio | " + " | ".join(
            f"{flops[o] / flops[objectives[0]]:.2f}" for o in objectives) + " |")
        peak = block["matmul_peak_gflops"]
        lines.append(f"| % of fp32 matmul peak ({peak:.1f} GFLOP/s) | " + " | ".join(
            f"{100 * flops[o] / timed[o] / 1e9 / peak:.0f}%" for o in objectives) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objectives", nargs="+", default=["simcse", "infocse"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds (one step of each objective per round)")
    parser.add_argument("--profiled-steps", type=int, default=3, help="profiled steps per objective (medians taken)")
    parser.add_argument("--sentences", type=Path, default=SHARED / "sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--output", type=Path, default=RESULTS / "profile_step")
    args = parser.parse_args()
    sentences = read_lines(args.sentences, args.batch_size)
    command = "HF_HUB_OFFLINE=1 python -m benchmarks.profile_step " + " ".join(sys.argv[1:])
    if args.objectives[0] != "simcse":
        parser.error("the first objective must be simcse: ratios and counted FLOPs are relative to it")
    setups = {name: setup_objective(name) for name in args.objectives}
    counted = batch_flops(setups, sentences)
    del setups
    report: dict[str, Any] = {
        "command": command.strip(),
        "commit": commit(),
        "cpu": cpu_info().get("model_name") or platform.processor(),
        "torch": torch.__version__,
        "batch_size": args.batch_size,
        "profiled_steps": args.profiled_steps,
        "shape": {"rows": counted["rows"], "seq": counted["seq"]},
        "flops": counted["flops"],
        "threads": {},
    }
    for threads in args.threads:
        torch.set_num_threads(threads)
        peak = max(time_matmul(2048, torch.float32, layout, warmup=2, repeats=7)["best_gflops"] for layout in ("a@b", "linear"))
        block: dict[str, Any] = {"matmul_peak_gflops": peak, "profile": {}, "profiled_step_s": {}}
        for name in args.objectives:
            block["profile"][name], block["profiled_step_s"][name] = profile_objective(
                name, sentences, args.warmup, args.profiled_steps
            )
            print(f"[{time.strftime('%H:%M:%S')}] {threads} thread(s) {name}: profiled", flush=True)
        block["steps_s"] = time_objectives(args.objectives, sentences, args.repeats)
        block["timed_s"] = {name: statistics.median(values) for name, values in block["steps_s"].items()}
        first = block["steps_s"][args.objectives[0]]
        # Each round's ratio, from steps taken seconds apart: its spread shows how far load moved the median ratio.
        block["round_ratios"] = {
            name: [round(t / base, 3) for t, base in zip(values, first, strict=True)]
            for name, values in block["steps_s"].items()
        }
        report["threads"][str(threads)] = block
        print(f"[{time.strftime('%H:%M:%S')}] {threads} thread(s): {block['timed_s']}", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(report, indent=1))
    text = markdown(report)
    args.output.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
