"""The GPU check's Python half: the step-time table, the MiniLM copy that travels, host synchronisations, the report.

``benchmarks/gpu_check.sh`` runs it; by hand:

    python -m benchmarks.gpu_check step-time --out step_time.json         # the table's rows (JSON)
    python -m benchmarks.gpu_check shrink-model SRC DST                   # all-MiniLM-L6-v2 in float16, to travel
    python -m benchmarks.gpu_check report --work WORK --out-dir OUT       # gpu_check.json and gpu_check.md

**Step time** at BERT-base's shape: ``BertConfig()``'s defaults (12 layers, hidden 768, 30,522 tokens) with random
weights and an MLM head, saved once to a temporary folder, with the tokenizer of all-MiniLM-L6-v2 (``--tokenizer``,
the same uncased WordPiece vocabulary as bert-base-uncased), CLS pooling, max length 32, the package's shipped
Wikipedia sentences. Objectives: SimCSE, InfoCSE, CMLM-CSE, InforMin-CL (their defaults) and stage 1
(``AuxiliaryPretrainingLoss``, whole-word masking as Condenser). A step is the loss's forward and backward and a
fused AdamW update of every trainable parameter, as the trainer runs it with ``AuxiliaryStateCallback`` (step checks
deferred, read once after the timed steps), without data loading. fp32 runs with PyTorch's default float32 matmul
precision (no TF32); bf16 runs the forward under ``torch.autocast(dtype=torch.bfloat16)`` with fp32 weights and
optimizer. Each (objective, precision) gets a fresh model; ``--warmup`` steps, then ``--repeats`` x ``--steps`` steps
timed between CUDA events, the median repeat reported.

FLOPs of a step are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one real step (matmuls and
attention, forward and backward, the MLM heads on the positions actually gathered); ``6 x N x T`` (N: the encoder's
non-embedding parameters, T: the tokens of both views) is kept beside it as the usual estimate. The share of the
matmul peak divides the achieved rate by a large square matmul timed in the same run in the same dtype (float32
without TF32 for fp32 rows, bfloat16 for bf16 rows). Peak memory: ``torch.cuda.max_memory_allocated`` from the
model's load to the end of its timed steps. Host synchronisations: one step under
``torch.cuda.set_sync_debug_mode("warn")``, each attributed to the innermost frame outside torch (the package's or a
library's). With ``--dry-run`` everything runs tiny on the CPU (2-layer hidden-64 BERT, batch 8, a 256 matmul) to
test the script, not to measure. Over 500 lines: three phases (tests, step-time table, a MiniLM run), each with
its report rows, in the one script a GPU run needs.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import shutil
import statistics
import tempfile
import time
import traceback
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.harness import log, machine  # noqa: E402

# name -> (loss class in st_infocse.losses, keyword arguments): each objective's defaults
OBJECTIVES: dict[str, tuple[str, dict[str, Any]]] = {
    "SimCSE": ("SimCSELoss", {}),
    "InfoCSE": ("InfoCSELoss", {}),
    "CMLM-CSE": ("CMLMCSELoss", {}),
    "InforMin-CL": ("InforMinReconstructionLoss", {}),
    "stage 1": ("AuxiliaryPretrainingLoss", {}),
}
PRECISIONS = ("fp32", "bf16")
TORCH_DIR = None  # set on first use: the installed torch package's folder


# ------------------------------------------------------------------------------------------ host synchronisations


def sync_origin(stack: list[traceback.FrameSummary]) -> str:
    """``"path:line"`` of the innermost frame outside torch: where a synchronising call was made. A synchronisation
    inside autograd's backward is reported by torch once ``backward()`` returns, so it points at that call."""
    global TORCH_DIR
    if TORCH_DIR is None:
        import torch

        TORCH_DIR = str(Path(torch.__file__).parent)
    for frame in reversed(stack):
        if not frame.filename.startswith(TORCH_DIR) and not frame.filename.endswith(f"{os.sep}warnings.py"):
            return f"{frame.filename}:{frame.lineno}"
    return "?"


def host_syncs(fn: Callable[[], Any]) -> list[str]:
    """Run ``fn`` under ``torch.cuda.set_sync_debug_mode("warn")``; returns where each host synchronisation it made
    was called from (see :func:`sync_origin`), in order."""
    import torch

    found: list[str] = []

    def keep(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001 (showwarning's signature)
        if "synchroniz" in str(message):
            found.append(sync_origin(traceback.extract_stack()[:-1]))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = keep
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return found


def in_package(origin: str) -> bool:
    """Whether a :func:`sync_origin` lies in the package's own code."""
    import st_infocse

    return origin.startswith(str(Path(st_infocse.__file__).parent) + os.sep)


# ------------------------------------------------------------------------------------------------- the step time


def bert_base_folder(folder: Path, tokenizer_dir: str, dry_run: bool) -> Path:
    """A random BERT-base (``BertConfig()``; tiny under ``dry_run``) with its MLM head and the given tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(vocab_size=len(tokenizer))
    if dry_run:
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128)
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def matmul_tflops(device: str, dtype: Any, n: int, repeats: int = 10) -> float:
    """TFLOP/s of an ``n`` x ``n`` x ``n`` matmul in ``dtype`` (the median of ``repeats`` after a warm-up)."""
    import torch

    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    times = []
    for i in range(repeats + 2):
        start = time.perf_counter()
        if device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            a @ b
            end.record()
            end.synchronize()
            seconds = begin.elapsed_time(end) / 1e3
        else:
            a @ b
            seconds = time.perf_counter() - start
        if i >= 2:
            times.append(seconds)
    return 2 * n**3 / statistics.median(times) / 1e12


class Step:
    """One objective's model, loss and optimizer at one precision; :meth:`__call__` runs one training step."""

    def __init__(self, objective: str, folder: Path, texts: list[str], precision: str, device: str) -> None:
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling

        from st_infocse import losses

        torch.manual_seed(0)
        transformer = Transformer(str(folder), max_seq_length=32)
        self.model = SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls")], device=device
        )
        name, kwargs = OBJECTIVES[objective]
        self.loss = getattr(losses, name)(self.model, **kwargs).to(device)
        self.model.train()
        self.loss.train()
        self.checks = list(losses.training_losses(self.loss))
        for module in self.checks:  # as AuxiliaryStateCallback: checks stay on the device until read
            module.defer_step_checks()
        features = self.model.preprocess(texts)
        self.features = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        params = {id(p): p for p in self.loss.parameters() if p.requires_grad}
        self.optimizer = torch.optim.AdamW(list(params.values()), lr=3e-5, fused=device == "cuda")
        self.device, self.precision = device, precision
        self.tokens = 2 * int(self.features["input_ids"].numel())  # both views (stage 1: one masked view, see below)
        if objective == "stage 1":
            self.tokens //= 2
        embeddings = transformer.auto_model.get_input_embeddings()
        position = getattr(getattr(transformer.auto_model, "embeddings", None), "position_embeddings", None)
        skip = {id(p) for m in (embeddings, position) if m is not None for p in m.parameters()}
        self.encoder_params = sum(p.numel() for p in self.model.parameters() if id(p) not in skip)

    def __call__(self) -> None:
        import torch

        autocast = torch.autocast(self.device, dtype=torch.bfloat16) if self.precision == "bf16" else nullcontext()
        with autocast:
            out = self.loss([self.features])
        total = sum(out.values()) if isinstance(out, dict) else out
        total.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def read_checks(self) -> None:
        for module in self.checks:  # one host synchronisation, outside the timed steps
            module.raise_step_checks()

    def timed(self, steps: int) -> float:
        """Milliseconds per step over ``steps`` steps."""
        import torch

        if self.device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(steps):
                self()
            end.record()
            end.synchronize()
            milliseconds = begin.elapsed_time(end)
        else:
            start = time.perf_counter()
            for _ in range(steps):
                self()
            milliseconds = (time.perf_counter() - start) * 1e3
        self.read_checks()
        return milliseconds / steps

    def counted_flops(self) -> int:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            self()
        self.read_checks()
        return int(counter.get_total_flops())


def step_time(ns: argparse.Namespace) -> None:
    import torch

    from st_infocse.data import demo_sentences

    device = "cpu" if ns.dry_run else "cuda"
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check_bert_"))
    try:
        folder = bert_base_folder(tmp / "bert", ns.tokenizer, ns.dry_run)
        texts = demo_sentences(max(ns.batch_sizes))
        matmul_n = 256 if ns.dry_run else ns.matmul_size
        peaks = {"fp32": matmul_tflops(device, torch.float32, matmul_n),
                 "bf16": matmul_tflops(device, torch.bfloat16, matmul_n)}
        log(f"matmul {matmul_n}^3: fp32 {peaks['fp32']:.1f} TFLOP/s, bf16 {peaks['bf16']:.1f} TFLOP/s")
        rows: list[dict[str, Any]] = []
        for batch in ns.batch_sizes:
            for precision in PRECISIONS:
                for objective in OBJECTIVES:
                    row: dict[str, Any] = {"batch": batch, "precision": precision, "objective": objective}
                    rows.append(row)
                    if time.monotonic() - started > ns.budget_s:
                        row["error"] = f"skipped: past the step-time budget of {ns.budget_s:.0f} s"
                        continue
                    try:
                        row.update(time_one(objective, folder, texts[:batch], precision, device, ns, peaks))
                    except Exception as error:  # one row's failure is reported, the others still run
                        row["error"] = f"{type(error).__name__}: {error}"[:500]
                        traceback.print_exc()
                    log(json.dumps(row))
                    gc.collect()  # the loss and its model refer to each other: free them before the next row
                    if device == "cuda":
                        torch.cuda.empty_cache()
        payload = {"device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu",
                   "dry_run": ns.dry_run, "matmul_size": matmul_n, "matmul_peak_tflops": peaks,
                   "float32_matmul_precision": torch.get_float32_matmul_precision(),
                   "warmup": ns.warmup, "steps": ns.steps, "repeats": ns.repeats, "max_length": 32,
                   "seconds": round(time.monotonic() - started, 1), "rows": rows}
        Path(ns.out).write_text(json.dumps(payload, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def time_one(objective: str, folder: Path, texts: list[str], precision: str, device: str,
             ns: argparse.Namespace, peaks: dict[str, float]) -> dict[str, Any]:
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    step = Step(objective, folder, texts, precision, device)
    for _ in range(ns.warmup):
        step()
    step.read_checks()
    repeats = [step.timed(ns.steps) for _ in range(ns.repeats)]
    row: dict[str, Any] = {"ms_per_step": round(statistics.median(repeats), 3),
                           "repeats_ms": [round(r, 3) for r in repeats]}
    if device == "cuda":
        row["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
        origins = host_syncs(step)
        step.read_checks()
        row["host_syncs"] = len(origins)
        row["host_syncs_in_package"] = sum(in_package(o) for o in origins)
        row["host_sync_origins"] = sorted(set(origins))
    flops = step.counted_flops()
    seconds = row["ms_per_step"] / 1e3
    row.update({
        "tokens": step.tokens,
        "tflop_per_step": round(flops / 1e12, 4),
        "tflop_per_step_6nt": round(6 * step.encoder_params * step.tokens / 1e12, 4),
        "achieved_tflops": round(flops / seconds / 1e12, 2),
        "share_of_matmul_peak": round(flops / seconds / 1e12 / peaks[precision], 4),
    })
    del step
    return row


# ---------------------------------------------------------------------------------------- the model that travels


def shrink_model(ns: argparse.Namespace) -> None:
    """Copy a Sentence Transformer folder with its weights in float16 (half the bytes) and ``dtype: float32`` in its
    config, so that transformers loads it back in float32: all-MiniLM-L6-v2 is 91 MB in float32, too much to travel
    beside the repository (64 MiB in all), and 45 MB in float16."""
    import torch
    from safetensors.torch import load_file, save_file

    src, dst = Path(ns.src), Path(ns.dst)
    if dst.exists():
        shutil.rmtree(dst)
    skip = {"README.md", "data_config.json", ".gitattributes", "model.safetensors"}
    shutil.copytree(src, dst, ignore=lambda _, names: [n for n in names if n in skip or n.startswith("onnx")])
    tensors = load_file(src / "model.safetensors")
    save_file({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in tensors.items()},
              dst / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((dst / "config.json").read_text())
    config.pop("torch_dtype", None)
    config["dtype"] = "float32"
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    size = sum(p.stat().st_size for p in dst.rglob("*") if p.is_file())
    print(f"{dst}: {size / 2**20:.1f} MiB")


# ------------------------------------------------------------------------------------------------------ the report


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
                  "FlopCounterMode (6NT: 6 x non-embedding parameters x tokens).", "",
                  "| batch | precision | objective | ms/step | x SimCSE | TFLOP/step | 6NT | TFLOP/s | share of matmul "
                  "peak | peak GiB | host syncs/step (in st_infocse) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in step["rows"]:
            if "error" in row:
                lines.append(f"| {row['batch']} | {row['precision']} | {row['objective']} | {row['error'][:200]} "
                             "| | | | | | | |")
                continue
            base = next((r for r in step["rows"] if r["batch"] == row["batch"] and r["precision"] == row["precision"]
                         and r["objective"] == "SimCSE" and "ms_per_step" in r), None)
            ratio = f"{row['ms_per_step'] / base['ms_per_step']:.2f}" if base else "-"
            syncs = f"{row['host_syncs']} ({row['host_syncs_in_package']})" if "host_syncs" in row else "-"
            lines.append(
                f"| {row['batch']} | {row['precision']} | {row['objective']} | {row['ms_per_step']:.1f} | {ratio} | "
                f"{row['tflop_per_step']:.3f} | {row['tflop_per_step_6nt']:.3f} | {row['achieved_tflops']:.1f} | "
                f"{100 * row['share_of_matmul_peak']:.1f}% | {row.get('peak_memory_gib', '-')} | {syncs} |")
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


# ------------------------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("step-time", help="the step-time table's rows, as JSON")
    st.add_argument("--out", required=True)
    st.add_argument("--tokenizer", required=True, help="a folder with a BERT uncased tokenizer (all-MiniLM-L6-v2's)")
    st.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    st.add_argument("--warmup", type=int, default=3)
    st.add_argument("--steps", type=int, default=8)
    st.add_argument("--repeats", type=int, default=3)
    st.add_argument("--matmul-size", type=int, default=8192)
    st.add_argument("--budget-s", type=float, default=150.0, help="rows not started by then are reported as skipped")
    st.add_argument("--dry-run", action="store_true")
    sm = sub.add_parser("shrink-model", help="copy a Sentence Transformer folder with float16 weights")
    sm.add_argument("src")
    sm.add_argument("dst")
    rp = sub.add_parser("report", help="gpu_check.json and gpu_check.md from a work folder")
    rp.add_argument("--work", required=True)
    rp.add_argument("--out-dir", required=True)
    rp.add_argument("--wall-seconds", type=float, default=None)
    rp.add_argument("--dry-run", action="store_true")
    ns = parser.parse_args()
    {"step-time": step_time, "shrink-model": shrink_model, "report": report}[ns.command](ns)


if __name__ == "__main__":
    main()
