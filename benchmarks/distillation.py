"""Hybrid-teacher distillation (issue 38) on a BEIR folder: the shipped model, BM25, the hybrid, and one trained row
per setting, each scored query by query, so rows are chosen on one half of the queries and judged on the other.

    HF_HUB_OFFLINE=1 python -m benchmarks.distillation --model MINILM_DIR --beir ../shared/data/beir/scifact \\
        --out benchmarks/results/distillation.json [--rows title-kl held_out-kl ...] [--tiny]

Each row: pseudo-queries drawn from the folder's documents (``--beir``'s corpus, title + text), the hybrid teacher
(BM25 fused with the model as shipped) scoring the candidates, sentence-transformers' ``DistillKLDivLoss`` or
``MarginMSELoss`` for ``--steps`` steps, then nDCG@10 of every test query (the package's retrieval evaluator over
the whole corpus) and STS-B dev (the 1,500 pairs shipped with the package). The jobs (the shipped model with the
reference lines, then each row) run on ``runner.py``'s queue under ``--work``, so a repeated command resumes.
Written: one JSON with every row's per-query scores, its settings, its training seconds and the machine. ``--report`` writes the markdown table from that JSON: the rows
chosen on the selection half of the queries, judged on the confirmation half.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from benchmarks.harness import commit  # noqa: E402
from benchmarks.runner import Worker, train  # noqa: E402

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
    from sentence_transformers import SentenceTransformer

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
    train_seconds, _ = train(model, distillation_loss(model, loss_name), dataset, steps=steps,
                             batch_size=args.train_batch, learning_rate=lr, seed=args.seed, warmup=0.1,
                             logging_steps=max(1, steps // 5), bf16=cuda, use_cpu=not cuda,
                             output_dir=Path(args.work) / name, quiet=False)
    scored = evaluate(model, Path(args.beir), args.batch_size)
    return {"settings": dict(zip(("query_kind", "loss", "candidates", "learning_rate", "steps", "fusion",
                                  "bm25_weight"), (kind, loss_name, candidates, lr, steps, fusion, weight),
                                 strict=True)),
            "teacher": report.summary(), "teacher_seconds": teacher_seconds, "train_seconds": train_seconds,
            "ndcg@10": scored["ndcg@10"], "stsb_dev": scored["stsb_dev"], "per_query": scored["per_query"]}


def shipped_scores(args, documents: list[dict]) -> dict:
    """The model as shipped on every test query, and BM25 and the hybrid (reference lines: never trained)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from st_infocse.evaluation import LexicalSettings

    shipped = SentenceTransformer(args.model, device="cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    scored = evaluate(shipped, Path(args.beir), args.batch_size)
    references = scored["evaluator"].lexical_references(LexicalSettings())
    return {"shipped": {"ndcg@10": scored["ndcg@10"], "stsb_dev": scored["stsb_dev"], "per_query": scored["per_query"],
                        "seconds": time.perf_counter() - start},
            "references": {name: {"ndcg@10": sum(per_query.values()) / len(per_query), "per_query": per_query,
                                  "reference": True} for name, per_query in references.items()}}


class Bench(Worker):
    """The queue: the shipped model with the reference lines, then one row per setting; each finished job is kept
    under ``--work`` (for these settings of the model, folder, seed and batches), so a repeated command resumes,
    and ``--out`` is written again after each."""

    keep_going = False

    def __init__(self, args, documents: list[dict]) -> None:
        key = json.dumps([args.model, args.beir, args.seed, args.batch_size, args.train_batch, args.tiny])
        super().__init__(Path(args.work), Path(args.work) / "jobs" / hashlib.sha1(key.encode()).hexdigest()[:10])
        self.args, self.documents = args, documents

    def jobs(self) -> list[str]:
        return ["shipped", *self.args.rows]

    def run_job(self, job: str) -> None:
        if job == "shipped":
            self.store(job, shipped_scores(self.args, self.documents))
            return
        print(f"=== {job}", flush=True)
        self.store(job, run_row(job, self.args, self.documents))
        print(f"=== {job}: nDCG@10 {100 * self.queue.load(job)['ndcg@10']:.2f}", flush=True)

    def store(self, job: str, payload: dict) -> None:
        super().store(job, payload)
        self.write()

    def write(self) -> None:
        """``--out``: the run's record and its rows so far (the shipped model, the reference lines, each setting)."""
        import torch

        done = self.queue.done()
        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "cpu"
        record = {"command": " ".join(sys.argv), "commit": commit(), "device": device,
                  "documents": len(self.documents), "split_seed": SPLIT_SEED, "rows": {}}
        if "shipped" in done:
            record["rows"] = {"shipped": done["shipped"]["shipped"]} | done["shipped"]["references"]
        for name in self.args.rows:
            if name in done:
                record["rows"][name] = {k: v for k, v in done[name].items() if k != "job"}
        out = Path(self.args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))


def measure(args) -> None:
    bench = Bench(args, documents_of(Path(args.beir)))
    bench.run()
    bench.write()


def report(path: Path) -> str:
    """Rows chosen on the selection half, judged on the confirmation half (markdown): the package's paired test over
    each half's queries, the confirmation half's p adjusted over the trained rows judged there (Holm)."""
    from st_infocse.evaluation import paired_change
    from st_infocse.evaluation.paired import holm

    record = json.loads(path.read_text())
    rows = record["rows"]
    shipped = rows["shipped"]["per_query"]
    ids = sorted(shipped)
    random.Random(record["split_seed"]).shuffle(ids)
    halves = {"selection": set(ids[: len(ids) // 2]), "confirmation": set(ids[len(ids) // 2:])}
    changes = {name: {half: paired_change({q: 100 * shipped[q] for q in halves[half]},
                                          {q: 100 * row["per_query"][q] for q in halves[half]}) for half in halves}
               for name, row in rows.items() if name != "shipped"}
    trained = [n for n in changes if not rows[n].get("reference")]
    adjusted = dict(zip(trained, holm([changes[n]["confirmation"].p for n in trained]), strict=True))
    chosen = max(trained, key=lambda n: sum(rows[n]["per_query"][q] - shipped[q] for q in halves["selection"]),
                 default=None)
    lines = [f"Command: `{record['command']}` at commit {record['commit']}, on {record['device']}; "
             f"{record['documents']:,} documents; halves of the {len(ids)} test queries by random.Random("
             f"{record['split_seed']}). nDCG@10 x100; Δ against the shipped model with its 95% interval and p over "
             "the half's queries (the paired sign-flip randomization test, the interval the test inverted). "
             f"**Many rows**: the {len(trained)} trained rows are judged together on the confirmation half, so each "
             "row's p is adjusted for them by Holm's step-down rule and the verdict is read off the adjusted p at 5% "
             "(5% for the table as a whole); the interval stays the row's own, so it can exclude zero beside a "
             "verdict of within noise. BM25 and the hybrid are reference lines, not in the family: their verdict is "
             "their own p's.", "",
             "| row | whole test | STS-B dev | selection Δ | confirmation Δ | Holm p | confirmation verdict | "
             "teacher + training s |", "|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        sts = row.get("stsb_dev")
        mark = " (chosen on the selection half: the claim)" if name == chosen else ""
        cells = [name + mark, f"{100 * row['ndcg@10']:.2f}", f"{100 * sts:.2f}" if sts == sts and sts is not None else "-"]
        if name == "shipped":
            cells += ["-"] * 4
        else:
            for half in halves:
                change = changes[name][half]
                p = "p < 0.001" if change.p < 0.001 else f"p = {change.p:.3f}"
                cells.append(f"{change.delta:+.2f} ({change.low:+.2f} to {change.high:+.2f}, {p})")
            confirm = changes[name]["confirmation"]
            if name in adjusted:
                p_holm = adjusted[name]
                cells += ["p < 0.001" if p_holm < 0.001 else f"p = {p_holm:.3f}", replace(confirm, p=p_holm).verdict]
            else:
                cells += ["-", confirm.verdict]
        seconds = row.get("teacher_seconds", 0) + row.get("train_seconds", 0)
        cells.append(f"{seconds:.0f}" if seconds else "-")
        lines.append("| " + " | ".join(cells) + " |")
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
