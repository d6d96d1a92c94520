"""Training-step time of each objective on a GPU, in fp32, TF32 and bf16 autocast.

    HF_HUB_OFFLINE=1 python benchmarks/step_time_gpu.py [--model PATH] [--batch-sizes 64 256]

Writes benchmarks/results/step_time_gpu.{json,md}. Starts from all-MiniLM-L6-v2 with CLS pooling (the wheel's, or
``--model``), max length 32, one fixed batch of Wikipedia sentences. A step is the loss's forward, backward and a
fused AdamW update over the model's and the loss's own trainable parameters, as the trainer runs it (without its
data loading). Each objective gets a fresh model; ``--warmup`` steps are not timed, then ``--steps`` steps are timed
together between two CUDA events, and the whole is repeated ``--repeats`` times round-robin over the objectives;
the median is reported. fp32 runs with TF32 off; bf16 runs the forward under ``torch.autocast("cuda", bfloat16)``
with fp32 weights and optimizer. Host synchronisations of one step are counted with
``torch.cuda.set_sync_debug_mode("warn")`` (the losses' MLM gather is ``"auto"``, i.e. bounded on a GPU). Peak
memory is ``torch.cuda.max_memory_allocated`` over a fresh model's steps.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import minilm_path  # noqa: E402

from st_infocse import losses  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OBJECTIVES = ("simcse", "infocse", "infocse-full", "cmlm-cse", "informin")
MODES = ("fp32", "tf32", "bf16")


def build(objective: str, model_path: str, max_length: int) -> tuple[SentenceTransformer, torch.nn.Module]:
    transformer = Transformer(model_path, max_seq_length=max_length)
    model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls")],
                                device="cuda")
    if objective == "simcse":
        loss = losses.SimCSELoss(model)
    elif objective == "infocse":
        loss = losses.InfoCSELoss(model)
    elif objective == "infocse-full":
        loss = losses.InfoCSELoss(model, aux_gradient="full")
    elif objective == "cmlm-cse":
        loss = losses.CMLMCSELoss(model)
    else:
        loss = losses.InforMinReconstructionLoss(model)
    return model, loss.to("cuda")


class Runner:
    def __init__(self, objective: str, model_path: str, texts: list[str], max_length: int, mode: str) -> None:
        self.model, self.loss = build(objective, model_path, max_length)
        self.model.train()
        # As under AuxiliaryStateCallback: step checks stay on the device and are read once the step has ended.
        for module in losses.training_losses(self.loss):
            module.defer_step_checks()
        self.mode = mode
        self.features = {k: v.to("cuda") for k, v in self.model.preprocess(texts).items()
                         if isinstance(v, torch.Tensor)}
        params = {id(p): p for p in list(self.model.parameters()) + list(self.loss.parameters()) if p.requires_grad}
        self.optimizer = torch.optim.AdamW(list(params.values()), lr=3e-5, fused=True)

    def step(self) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.mode == "tf32"
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.mode == "bf16"):
            out = self.loss([self.features])
        total = sum(out.values()) if isinstance(out, dict) else out
        total.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def end_of_steps(self) -> None:
        for module in losses.training_losses(self.loss):  # reads the flags: outside the timed steps
            module.raise_step_checks()

    def timed(self, warmup: int, steps: int) -> float:
        for _ in range(warmup):
            self.step()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(steps):
            self.step()
        end.record()
        torch.cuda.synchronize()
        self.end_of_steps()
        return start.elapsed_time(end) / steps

    def host_syncs(self) -> int:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                self.step()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        self.end_of_steps()
        return sum("synchroniz" in str(w.message) for w in caught)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None)
    parser.add_argument("--sentences", type=Path,
                        default=REPO.parent / "shared/data/sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/step_time_gpu.json")
    ns = parser.parse_args()
    model_path = ns.model or minilm_path()
    with gzip.open(ns.sentences, "rt", encoding="utf-8") as handle:
        texts = [line.strip() for _, line in zip(range(max(ns.batch_sizes)), handle, strict=False)]
    results: list[dict[str, Any]] = []
    for batch in ns.batch_sizes:
        for mode in MODES:
            times: dict[str, list[float]] = {o: [] for o in OBJECTIVES}
            peaks: dict[str, float] = {}
            syncs: dict[str, int] = {}
            for objective in OBJECTIVES:  # memory and syncs of a fresh model, one objective at a time
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                runner = Runner(objective, model_path, texts[:batch], ns.max_length, mode)
                runner.timed(ns.warmup, 1)
                syncs[objective] = runner.host_syncs()
                peaks[objective] = torch.cuda.max_memory_allocated() / 2**20
                del runner
            runners = {o: Runner(o, model_path, texts[:batch], ns.max_length, mode) for o in OBJECTIVES}
            for _ in range(ns.repeats):
                for objective, runner in runners.items():
                    times[objective].append(runner.timed(ns.warmup, ns.steps))
            del runners
            for objective in OBJECTIVES:
                results.append({"batch": batch, "mode": mode, "objective": objective,
                                "ms_per_step": statistics.median(times[objective]), "repeats_ms": times[objective],
                                "peak_mb": round(peaks[objective], 1), "host_syncs_per_step": syncs[objective]})
                print(results[-1], flush=True)
    lines = [f"Command: `HF_HUB_OFFLINE=1 python benchmarks/step_time_gpu.py` — {torch.cuda.get_device_name(0)}, torch "
             f"{torch.__version__}; all-MiniLM-L6-v2 with CLS pooling, max length {ns.max_length}; median of "
             f"{ns.repeats} round-robin repeats of {ns.steps} steps after {ns.warmup} warm-up steps.", "",
             "| batch | mode | objective | ms/step | x SimCSE | peak MB | host syncs/step |", "|---|---|---|---|---|---|---|"]
    for row in results:
        base = next(r for r in results if r["batch"] == row["batch"] and r["mode"] == row["mode"]
                    and r["objective"] == "simcse")
        lines.append(f"| {row['batch']} | {row['mode']} | {row['objective']} | {row['ms_per_step']:.1f} | "
                     f"{row['ms_per_step'] / base['ms_per_step']:.2f} | {row['peak_mb']:.0f} | "
                     f"{row['host_syncs_per_step']} |")
    markdown = "\n".join(lines) + "\n"
    ns.output.parent.mkdir(parents=True, exist_ok=True)
    ns.output.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                     "results": results}, indent=1))
    ns.output.with_suffix(".md").write_text("# Training-step time on a GPU\n\n" + markdown)
    print(markdown)


if __name__ == "__main__":
    main()
