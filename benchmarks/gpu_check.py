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

**Eager and fast, side by side**: each (batch, precision, objective) is timed as the trainer's default step
(``eager``) and as the ``fast_step`` training switch's (``fast``: batches padded to max length 32, SDPA attention,
the model and the auxiliary decoders compiled in place with ``torch.compile(mode="reduce-overhead")``, CUDA graphs;
``torch._dynamo.reset()`` before each, and ``warmup_s``, the warm-up steps' seconds, holds its compilation). Rows
run in order of interest (batch 64 bf16 first, the papers' setting), each written to the JSON as it ends, so a row
cut by the time limit leaves the others.

FLOPs of a step are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one real step (matmuls and
attention, forward and backward, the MLM heads on the positions actually gathered); ``6 x N x T`` (N: the encoder's
non-embedding parameters, T: the tokens of both views) is kept beside it as the usual estimate. The share of the
matmul peak divides the achieved rate by a large square matmul timed in the same run in the same dtype (float32
without TF32 for fp32 rows, bfloat16 for bf16 rows). Peak memory: ``torch.cuda.max_memory_allocated`` from the
model's load to the end of its timed steps. Host synchronisations: one step under
``torch.cuda.set_sync_debug_mode("warn")``, each attributed to the innermost frame outside torch (the package's or a
library's). With ``--dry-run`` everything runs tiny on the CPU (2-layer hidden-64 BERT, batch 8, a 256 matmul) to
test the script, not to measure. A step is ``timing.py``'s step timer; the report is ``gpu_check_report.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.runner import log  # noqa: E402
from benchmarks.timing import TrainingStep  # noqa: E402

# name -> (loss class in st_infocse.losses, keyword arguments): each objective's defaults
OBJECTIVES: dict[str, tuple[str, dict[str, Any]]] = {
    "SimCSE": ("SimCSELoss", {}),
    "InfoCSE": ("InfoCSELoss", {}),
    "CMLM-CSE": ("CMLMCSELoss", {}),
    "InforMin-CL": ("InforMinReconstructionLoss", {}),
    "stage 1": ("AuxiliaryPretrainingLoss", {}),
}
PRECISIONS = ("bf16", "fp32")  # in order of interest
MODES = ("eager", "fast")
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


class Step(TrainingStep):
    """One objective's model, loss and fused AdamW at one precision, on features tokenised once; calling it runs one
    training step, with the step checks deferred as ``AuxiliaryStateCallback`` defers them."""

    def __init__(self, objective: str, folder: Path, texts: list[str], precision: str, device: str,
                 mode: str = "eager", dry_run: bool = False) -> None:
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling

        from st_infocse import losses

        torch.manual_seed(0)
        transformer = Transformer(str(folder), max_seq_length=32)
        model = SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls")], device=device
        )
        name, kwargs = OBJECTIVES[objective]
        loss = getattr(losses, name)(model, **kwargs).to(device)
        model.train()
        loss.train()
        params = {id(p): p for p in loss.parameters() if p.requires_grad}
        optimizer = torch.optim.AdamW(list(params.values()), lr=3e-5, fused=device == "cuda")
        # the dry run traces with dynamo alone: inductor's code generation on the CPU would take minutes a row
        backend = "eager" if dry_run else "inductor"
        super().__init__(model, loss, optimizer, device=device, bf16=precision == "bf16", texts=texts,
                         deferred_checks=True, fast_step=mode == "fast", compile_backend=backend)
        self.precision = precision
        self.tokens = 2 * int(self.features["input_ids"].numel())  # both views (stage 1: one masked view, see below)
        if objective == "stage 1":
            self.tokens //= 2
        embeddings = transformer.auto_model.get_input_embeddings()
        position = getattr(getattr(transformer.auto_model, "embeddings", None), "position_embeddings", None)
        skip = {id(p) for m in (embeddings, position) if m is not None for p in m.parameters()}
        self.encoder_params = sum(p.numel() for p in model.parameters() if id(p) not in skip)


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
        payload = {"device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu",
                   "dry_run": ns.dry_run, "matmul_size": matmul_n, "matmul_peak_tflops": peaks,
                   "float32_matmul_precision": torch.get_float32_matmul_precision(),
                   "warmup": ns.warmup, "steps": ns.steps, "repeats": ns.repeats, "max_length": 32,
                   "modes": ns.modes, "rows": rows}
        for batch in ns.batch_sizes:
            for precision in PRECISIONS:
                for objective in OBJECTIVES:
                    for mode in ns.modes:
                        row: dict[str, Any] = {"batch": batch, "precision": precision, "objective": objective,
                                               "mode": mode}
                        rows.append(row)
                        if time.monotonic() - started > ns.budget_s:
                            row["error"] = f"skipped: past the step-time budget of {ns.budget_s:.0f} s"
                            continue
                        try:
                            row.update(time_one(objective, folder, texts[:batch], precision, device, ns, peaks, mode))
                        except Exception as error:  # one row's failure is reported, the others still run
                            row["error"] = f"{type(error).__name__}: {error}"[:500]
                            traceback.print_exc()
                        log(json.dumps(row))
                        payload["seconds"] = round(time.monotonic() - started, 1)
                        Path(ns.out).write_text(json.dumps(payload, indent=1))
                        gc.collect()  # the loss and its model refer to each other: free them before the next row
                        if device == "cuda":
                            torch.cuda.empty_cache()
        payload["seconds"] = round(time.monotonic() - started, 1)
        Path(ns.out).write_text(json.dumps(payload, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def time_one(objective: str, folder: Path, texts: list[str], precision: str, device: str,
             ns: argparse.Namespace, peaks: dict[str, float], mode: str = "eager") -> dict[str, Any]:
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    step = Step(objective, folder, texts, precision, device, mode, ns.dry_run)
    begin = time.monotonic()
    for _ in range(ns.warmup):
        step()
    step.read_checks()
    warmup_s = time.monotonic() - begin
    repeats = [step.timed(ns.steps) for _ in range(ns.repeats)]
    row: dict[str, Any] = {"ms_per_step": round(statistics.median(repeats), 3),
                           "repeats_ms": [round(r, 3) for r in repeats], "warmup_s": round(warmup_s, 1),
                           "width": int(step.features["input_ids"].shape[1]), "attention": step.attention
                           or step.model[0].auto_model.config._attn_implementation}
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
    st.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="eager, the fast step, or both")
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
    if ns.command == "report":
        from benchmarks.gpu_check_report import report

        report(ns)
        return
    {"step-time": step_time, "shrink-model": shrink_model}[ns.command](ns)


if __name__ == "__main__":
    main()
