"""Hybrid-teacher distillation (issue 38) on a BEIR folder: the shipped model, BM25, the hybrid, and one trained row
per setting, each scored query by query, so rows are chosen on one half of the queries and judged on the other.

    HF_HUB_OFFLINE=1 python -m benchmarks.distillation --model MINILM_DIR --beir ../shared/data/beir/scifact \\
        --out benchmarks/results/distillation.json [--rows title-kl held_out-kl ...] [--tiny]

Each row: pseudo-queries drawn from the folder's documents (``--beir``'s corpus, title + text), the hybrid teacher
(BM25 fused with the model as shipped) scoring the candidates, sentence-transformers' ``DistillKLDivLoss`` or
``MarginMSELoss`` for ``--steps`` steps, then nDCG@10 of every test query (the package's retrieval evaluator over
the whole corpus) and STS-B dev (the 1,500 pairs shipped with the package). Written: one JSON with every row's
per-query scores, its settings, its training seconds and the machine. ``--report`` writes the markdown table from that JSON: the rows
chosen on the selection half of the queries, judged on the confirmation half.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# name -> (query kind, loss, candidates, learning rate, steps, fusion, BM25 weight)
ROWS = {
    "title-kl": ("title", "kl", 4, 1e-5, 150, "minmax", 0.5),
    "held_out-kl": ("held_out", "kl", 4, 1e-5, 150, "minmax", 0.5),
    "sentence-kl": ("sentence", "kl", 4, 1e-5, 150, "minmax", 0.5),
    "title-margin": ("title", "margin_mse", 2, 1e-5, 150, "minmax", 0.5),
    "title-kl-rrf": ("title", "kl", 4, 1e-5, 150, "rrf", 0.5),
    "title-kl-w0.3": ("title", "kl", 4, 1e-5, 150, "minmax", 0.3),
    "title-kl-lr2e-5-300": ("title", "kl", 4, 2e-5, 300, "minmax", 0.5),
    "held_out-kl-lr2e-5-300": ("held_out", "kl", 4, 2e-5, 300, "minmax", 0.5),
}
SPLIT_SEED = 0  # the selection / confirmation halves: sorted query ids shuffled by random.Random(0)


def documents_of(folder: Path) -> list[dict]:
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    return [{"id": row["_id"], "title": row.get("title", ""), "text": row["text"]} for row in rows]


def evaluate(model, folder: Path, batch_size: int) -> dict:
    from st_infocse.data import demo_stsb_dev_evaluator
    from st_infocse.evaluation import retrieval_evaluator

    retrieval, _ = retrieval_evaluator(folder, "test", max_corpus=None, batch_size=batch_size)
    scores = retrieval(model)
    dev = demo_stsb_dev_evaluator()
    sts = dev(model)
    return {"ndcg@10": scores[retrieval.primary_metric], "per_query": dict(retrieval.per_query),
            "stsb_dev": sts[dev.primary_metric], "evaluator": retrieval}


def run_row(name: str, args, documents: list[dict]) -> dict:
    import torch
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    from st_infocse.evaluation import LexicalSettings
    from st_infocse.mining import distillation_loss, hybrid_teacher_dataset

    kind, loss_name, candidates, lr, steps, fusion, weight = ROWS[name]
    steps = 2 if args.tiny else steps
    cuda = torch.cuda.is_available()
    torch.manual_seed(args.seed)
    model = SentenceTransformer(args.model, device="cuda" if cuda else "cpu")
    start = time.perf_counter()
    dataset, report = hybrid_teacher_dataset(model, documents, kind, loss_name, candidates,
                                             LexicalSettings(fusion=fusion, weight=weight), seed=args.seed,
                                             batch_size=args.batch_size)
    teacher_seconds = time.perf_counter() - start
    training = SentenceTransformerTrainingArguments(
        output_dir=str(Path(args.work) / name), max_steps=steps, per_device_train_batch_size=args.train_batch,
        learning_rate=lr, warmup_steps=0.1, lr_scheduler_type="linear", seed=args.seed, report_to="none",
        save_strategy="no", logging_steps=max(1, steps // 5), bf16=cuda, use_cpu=not cuda,
        dataloader_drop_last=True,
    )
    trainer = SentenceTransformerTrainer(model=model, args=training, train_dataset=dataset,
                                         loss=distillation_loss(model, loss_name))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    scored = evaluate(model, Path(args.beir), args.batch_size)
    return {"settings": dict(zip(("query_kind", "loss", "candidates", "learning_rate", "steps", "fusion",
                                  "bm25_weight"), (kind, loss_name, candidates, lr, steps, fusion, weight),
                                 strict=True)),
            "teacher": report.summary(), "teacher_seconds": teacher_seconds, "train_seconds": train_seconds,
            "ndcg@10": scored["ndcg@10"], "stsb_dev": scored["stsb_dev"], "per_query": scored["per_query"]}


def measure(args) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from st_infocse.evaluation import LexicalSettings

    documents = documents_of(Path(args.beir))
    out = Path(args.out)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "cpu"
    commit = os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                        text=True).stdout.strip()
    record = {"command": " ".join(sys.argv), "commit": commit, "device": device, "documents": len(documents),
              "split_seed": SPLIT_SEED, "rows": {}}
    shipped = SentenceTransformer(args.model, device="cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    scored = evaluate(shipped, Path(args.beir), args.batch_size)
    references = scored["evaluator"].lexical_references(LexicalSettings())
    record["rows"]["shipped"] = {"ndcg@10": scored["ndcg@10"], "stsb_dev": scored["stsb_dev"],
                                 "per_query": scored["per_query"], "seconds": time.perf_counter() - start}
    for name, per_query in references.items():
        record["rows"][name] = {"ndcg@10": sum(per_query.values()) / len(per_query), "per_query": per_query,
                                "reference": True}
    for name in args.rows:
        print(f"=== {name}", flush=True)
        record["rows"][name] = run_row(name, args, documents)
        print(f"=== {name}: nDCG@10 {100 * record['rows'][name]['ndcg@10']:.2f}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))
    out.write_text(json.dumps(record, indent=1))


def report(path: Path) -> str:
    """Rows chosen on the selection half, judged on the confirmation half (markdown)."""
    from st_infocse.evaluation import paired_change

    record = json.loads(path.read_text())
    rows = record["rows"]
    shipped = rows["shipped"]["per_query"]
    ids = sorted(shipped)
    random.Random(record["split_seed"]).shuffle(ids)
    halves = {"selection": set(ids[: len(ids) // 2]), "confirmation": set(ids[len(ids) // 2:])}
    lines = [f"Command: `{record['command']}` at commit {record['commit']}, on {record['device']}; "
             f"{record['documents']:,} documents; halves of the {len(ids)} test queries by random.Random("
             f"{record['split_seed']}). nDCG@10 x100; Δ against the shipped model with its 95% interval over the "
             "half's queries (paired bootstrap).", "",
             "| row | whole test | STS-B dev | selection Δ | confirmation Δ | teacher + training s |",
             "|---|---|---|---|---|---|"]
    for name, row in rows.items():
        sts = row.get("stsb_dev")
        cells = [name, f"{100 * row['ndcg@10']:.2f}", f"{100 * sts:.2f}" if sts == sts and sts is not None else "-"]
        for half in ("selection", "confirmation"):
            if name == "shipped":
                cells.append("-")
                continue
            before = {q: 100 * shipped[q] for q in halves[half]}
            after = {q: 100 * row["per_query"][q] for q in halves[half]}
            change = paired_change(before, after)
            cells.append(f"{change.delta:+.2f} ({change.low:+.2f} to {change.high:+.2f})")
        seconds = row.get("teacher_seconds", 0) + row.get("train_seconds", 0)
        cells.append(f"{seconds:.0f}" if seconds else "-")
        lines.append("| " + " | ".join(cells) + " |")
    chosen = max((n for n, r in rows.items() if n != "shipped" and not r.get("reference")),
                 key=lambda n: sum(rows[n]["per_query"][q] - shipped[q] for q in halves["selection"]), default=None)
    if chosen:
        lines += ["", f"Chosen on the selection half: {chosen}; its confirmation-half change is the claim."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=False)
    parser.add_argument("--beir", required=False, help="a BEIR folder (corpus, queries, qrels/test.tsv)")
    parser.add_argument("--out", default="benchmarks/results/distillation.json")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--train-batch", type=int, default=16)
    parser.add_argument("--work", default="/tmp/distillation")
    parser.add_argument("--tiny", action="store_true", help="2 steps a row: a check of the script")
    parser.add_argument("--report", action="store_true", help="write the markdown table of --out and stop")
    args = parser.parse_args()
    if args.report:
        table = report(Path(args.out))
        Path(args.out).with_suffix(".md").write_text("# Hybrid-teacher distillation\n\n" + table + "\n")
        print(table)
        return
    measure(args)


if __name__ == "__main__":
    main()
